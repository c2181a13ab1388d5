//! The `x-ratelimit-*` fields of the chat-completions API, on every answer to a client with
//! limits: for requests and for tokens, the tightest limit's size, what is left of it and when
//! it is whole again (`6m0s`, `1.5s`, `20ms`, as the official API writes them).

use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};

use super::count::Check;
use crate::http::message::Response;
use crate::table::quota::{Limit, Unit};

/// The tightest request limit and the tightest token limit of one request.
#[derive(Debug, Default, Clone)]
pub struct RateHeaders {
    requests: Option<Line>,
    tokens: Option<Line>,
}

/// One limit as the fields tell it.
#[derive(Debug, Clone, Copy)]
struct Line {
    limit: u64,
    remaining: u64,
    reset_ms: u64,
}

const NAMES: [[HeaderName; 3]; 2] = [
    [
        HeaderName::from_static("x-ratelimit-limit-requests"),
        HeaderName::from_static("x-ratelimit-remaining-requests"),
        HeaderName::from_static("x-ratelimit-reset-requests"),
    ],
    [
        HeaderName::from_static("x-ratelimit-limit-tokens"),
        HeaderName::from_static("x-ratelimit-remaining-tokens"),
        HeaderName::from_static("x-ratelimit-reset-tokens"),
    ],
];

// === impl RateHeaders ===

impl RateHeaders {
    /// Notes what asking `limit` found; the one with least left is told.
    pub fn note(&mut self, limit: &Limit, check: &Check) {
        self.keep(limit, check.remaining, check.reset_ms);
    }

    /// Notes `limit` spent, whole again in `after`.
    pub fn note_spent(&mut self, limit: &Limit, after: Duration) {
        self.keep(limit, 0, after.as_millis() as u64);
    }

    fn keep(&mut self, limit: &Limit, remaining: u64, reset_ms: u64) {
        let slot = match limit.unit {
            Unit::Requests => &mut self.requests,
            unit if unit.is_tokens() => &mut self.tokens,
            _ => return,
        };
        let line = Line {
            limit: limit.ceiling(),
            remaining,
            reset_ms,
        };
        if slot.is_none_or(|kept| remaining < kept.remaining) {
            *slot = Some(line);
        }
    }

    /// Writes the fields into `response`.
    pub fn write(&self, response: &mut Response) {
        for (line, names) in [self.requests, self.tokens].iter().zip(&NAMES) {
            let Some(line) = line else { continue };
            let values = [
                line.limit.to_string(),
                line.remaining.to_string(),
                reset(line.reset_ms),
            ];
            for (name, value) in names.iter().zip(values) {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    response.insert_header(name.clone(), value);
                }
            }
        }
    }
}

/// A wait as the official API writes it: `20ms`, `1.5s`, `6m0s`, `1h2m3s`.
fn reset(ms: u64) -> String {
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let (hours, minutes) = (ms / 3_600_000, ms / 60_000 % 60);
    let seconds = match ms % 60_000 {
        s if s.is_multiple_of(1_000) => format!("{}s", s / 1_000),
        s => {
            let text = format!("{}.{:03}", s / 1_000, s % 1_000);
            format!("{}s", text.trim_end_matches('0'))
        }
    };
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

#[cfg(test)]
mod tests {
    use super::reset;

    #[test]
    fn resets_read_as_the_official_api_writes_them() {
        for (ms, text) in [
            (20, "20ms"),
            (1_000, "1s"),
            (1_500, "1.5s"),
            (360_000, "6m0s"),
            (3_723_000, "1h2m3s"),
            (86_400_000, "24h0m0s"),
        ] {
            assert_eq!(reset(ms), text);
        }
    }
}
