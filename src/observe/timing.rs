//! A histogram of durations that a request observes without a lock.
//!
//! prometheus-client's `Histogram` takes a mutex and walks its buckets as `f64`s for each
//! observation, twice a request (lingo's own time at the response's head,
//! the whole duration at its end). Here the bucket is found among whole nanoseconds and
//! counted with one atomic add, and the sum (seconds, an `f64`) is added by compare and
//! swap. The count is the buckets' total when read, so `_count` and the `+Inf` bucket
//! always agree; the sum is added before the bucket and read after the buckets, so a scrape
//! that counts an observation has its time in the sum too (a scrape racing observations may
//! have the time of one it does not count yet).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A histogram of durations, in seconds; clones count into the same buckets.
#[derive(Clone, Debug)]
pub struct Timing(Arc<Cells>);

#[derive(Debug)]
struct Cells {
    /// Each finite bucket's upper bound: in seconds as written, in nanoseconds (rounded
    /// down: a whole number of nanoseconds is within the bound exactly when within this) as
    /// compared.
    bounds: Box<[(f64, u64)]>,
    /// Observations per bucket, not cumulative; one more than `bounds`, for `+Inf`.
    counts: Box<[AtomicU64]>,
    /// The observations' sum in seconds: an `f64`'s bits.
    sum: AtomicU64,
}

// === impl Timing ===

impl Timing {
    /// Buckets of `start * factor^i` seconds for `i` in `0..length` (prometheus-client's
    /// `exponential_buckets`, so that the bounds are written as they were), and `+Inf`.
    pub fn exponential(start: f64, factor: f64, length: u16) -> Timing {
        let bounds: Box<[(f64, u64)]> = exponential_buckets(start, factor, length)
            .map(|seconds| (seconds, nanos(seconds)))
            .collect();
        debug_assert!(bounds.iter().all(|(s, _)| s.is_finite()), "{bounds:?}");
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Timing(Arc::new(Cells {
            bounds,
            counts,
            sum: AtomicU64::new(0.0_f64.to_bits()),
        }))
    }

    /// Counts one duration: its time into the sum, then its bucket (see the module's doc).
    pub fn observe(&self, took: Duration) {
        let cells = &*self.0;
        let took_nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let at = cells
            .bounds
            .iter()
            .position(|&(_, bound)| took_nanos <= bound)
            .unwrap_or(cells.bounds.len());
        let seconds = took.as_secs_f64();
        let _ = cells
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + seconds).to_bits())
            });
        cells.counts[at].fetch_add(1, Ordering::Release);
    }
}

/// A bound in seconds as whole nanoseconds, rounded down.
fn nanos(seconds: f64) -> u64 {
    // `as` saturates: a bound past u64's nanoseconds (584 years) takes every duration.
    (seconds * 1e9).floor() as u64
}

impl TypedMetric for Timing {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Timing {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let cells = &*self.0;
        let bounds = cells.bounds.iter().map(|&(seconds, _)| seconds);
        let buckets: Vec<(f64, u64)> = bounds
            .chain(std::iter::once(f64::INFINITY))
            .zip(cells.counts.iter().map(|c| c.load(Ordering::Acquire)))
            .collect();
        let count = buckets.iter().map(|&(_, n)| n).sum();
        let sum = f64::from_bits(cells.sum.load(Ordering::Relaxed));
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    use super::*;

    /// The metrics' two kinds of buckets: start, factor, how many.
    const BUCKETS: [(f64, f64, u16); 2] = [(0.0001, 4.0, 11), (0.00001, 4.0, 10)];

    /// The text prometheus-client's own histogram writes for the same observations.
    fn as_prometheus_client_writes(
        (start, factor, n): (f64, f64, u16),
        observed: &[Duration],
    ) -> String {
        let mut registry = Registry::default();
        let theirs = Histogram::new(exponential_buckets(start, factor, n));
        registry.register("took", "help", theirs.clone());
        observed
            .iter()
            .for_each(|d| theirs.observe(d.as_secs_f64()));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    }

    fn as_timing_writes((start, factor, n): (f64, f64, u16), observed: &[Duration]) -> String {
        let mut registry = Registry::default();
        let ours = Timing::exponential(start, factor, n);
        registry.register("took", "help", ours.clone());
        observed.iter().for_each(|d| ours.observe(*d));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn writes_what_prometheus_clients_histogram_writes() {
        let ms = Duration::from_millis;
        let cases: &[&[Duration]] = &[
            &[],
            &[Duration::ZERO],
            // On a bound (100 µs, 400 µs), a nanosecond past one, in the middle, past the
            // last bound, and the largest duration.
            &[Duration::from_micros(100), Duration::from_micros(400)],
            &[Duration::from_nanos(100_001), ms(3), ms(3), ms(250)],
            &[Duration::from_secs(200), Duration::MAX],
            &[ms(1), ms(2), ms(30), ms(700), Duration::from_secs(9)],
            // On the overhead's first bounds (10 µs, 40 µs), and just past one.
            &[Duration::from_micros(10), Duration::from_micros(40)],
            &[Duration::from_nanos(10_001), Duration::from_nanos(39_999)],
        ];
        for (buckets, observed) in BUCKETS
            .iter()
            .flat_map(|b| cases.iter().map(move |c| (*b, c)))
        {
            assert_eq!(
                as_timing_writes(buckets, observed),
                as_prometheus_client_writes(buckets, observed),
                "{buckets:?} {observed:?}"
            );
        }
    }

    #[test]
    fn clones_count_together_from_many_threads() {
        let timing = Timing::exponential(0.0001, 4.0, 11);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let timing = timing.clone();
                scope.spawn(move || {
                    for _ in 0..1000 {
                        timing.observe(Duration::from_millis(1));
                    }
                });
            }
        });
        let counts: u64 = timing
            .0
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        assert_eq!(counts, 4000);
        let sum = f64::from_bits(timing.0.sum.load(Ordering::Relaxed));
        assert!((sum - 4.0).abs() < 1e-9, "{sum}");
    }
}
