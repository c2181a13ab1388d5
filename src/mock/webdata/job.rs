//! A web-data job's life (crawl, batch scrape, extract): [`PAGES`] pages, one every
//! `page_delay` from its start, then the end: completed, or failed after `job_fail_after`
//! pages. Status responses and webhook events follow the same clock, so a page's event goes
//! out as its page appears in the status.
//!
//! With no delay a job has ended when its start gets a response, and nothing is kept: its
//! status is decided by its id alone, whose third group carries where it fails. A paced job
//! is remembered while it runs (process-wide, as job ids are unique process-wide); a job
//! with a webhook has a task that sends its events.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::PAGES;
use crate::mock::knobs::Knobs;
use crate::mock::webhook::{self, Delivery, Event, Kind, Webhook};

/// The jobs that are paced and may still be running, by id.
static RUNNING: Mutex<BTreeMap<String, Plan>> = Mutex::new(BTreeMap::new());

/// Past this many remembered jobs, ended ones are forgotten (at each power of two, so that
/// the sweeps cost a constant per job started).
const SWEEP_FROM: usize = 1024;

/// What decides a job's progress.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    started: Instant,
    page_delay: Duration,
    /// Fails after this many pages (fewer than [`PAGES`]).
    fail_after: Option<u64>,
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Completed,
    Failed,
}

/// How far a job has come: its pages so far, and its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub pages: u64,
    pub state: State,
}

/// What a job's page events carry: the document of page `i`, as its status gives it.
pub type JobPages = Box<dyn Fn(u64) -> Value + Send>;

/// A job with a webhook: what its events say.
struct Job {
    kind: Kind,
    id: String,
    page: JobPages,
}

/// Starts a job as `knobs` say: its id, whose fourth group carries `flags`. A `webhook`
/// (with what its events carry) gets its events sent as the job goes.
pub fn start(knobs: &Knobs, flags: u64, webhook: Option<(Webhook, Kind, JobPages)>) -> String {
    let fail_after = knobs.job_fail_after.map(u64::from).filter(|&f| f < PAGES);
    let id = job_id(flags, fail_after);
    let plan = Plan {
        started: Instant::now(),
        page_delay: knobs.page_delay,
        fail_after,
    };
    if !plan.page_delay.is_zero() {
        remember(&id, plan);
    }
    if let Some((hook, kind, page)) = webhook {
        let job = Job {
            kind,
            id: id.clone(),
            page,
        };
        drop(tokio::spawn(run(job, plan, hook, knobs.webhook.clone())));
    }
    id
}

/// How far job `id` has come now.
pub fn progress(id: &str) -> Progress {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(plan) = running.get(id).copied() else {
        return Plan::ended(fail_after(id)).at(Instant::now());
    };
    let progress = plan.at(Instant::now());
    if progress.state != State::Running {
        running.remove(id);
    }
    progress
}

fn remember(id: &str, plan: Plan) {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    if running.len() >= SWEEP_FROM && running.len().is_power_of_two() {
        let now = Instant::now();
        running.retain(|_, plan| plan.at(now).state == State::Running);
    }
    running.insert(id.to_owned(), plan);
}

/// Sends the job's events to `hook` as the job goes: started, each page when it appears (not
/// for extract, which has none), then completed or failed when it ends.
async fn run(job: Job, plan: Plan, hook: Webhook, delivery: Delivery) {
    let send = |event: Event, data: Value| {
        let payload = hook
            .wants(event)
            .then(|| hook.payload(job.kind, event, &job.id, data));
        let (hook, delivery) = (&hook, &delivery);
        async move {
            if let Some(payload) = payload {
                webhook::deliver(hook, delivery, &payload).await;
            }
        }
    };
    send(Event::Started, json!([])).await;
    if job.kind != Kind::Extract {
        for i in 0..plan.pages() {
            plan.wait_until(plan.page_delay.saturating_mul(page_number(i)))
                .await;
            send(Event::Page, json!([(job.page)(i)])).await;
        }
    }
    plan.wait_until(plan.duration()).await;
    match plan.fail_after {
        Some(_) => send(Event::Failed, json!([])).await,
        None if job.kind == Kind::Extract => {
            send(Event::Completed, json!([extracted(&job.id)])).await
        }
        None => send(Event::Completed, json!([])).await,
    }
}

/// An extract's result in its `completed` event, as the contract has it.
fn extracted(id: &str) -> Value {
    json!({"success": true, "data": super::extract_data(), "extractId": id, "llmUsage": 0,
        "totalUrlsScraped": PAGES, "sources": {}})
}

/// Page `i` counted from one, as a multiplier of the page delay.
fn page_number(i: u64) -> u32 {
    u32::try_from(i + 1).unwrap_or(u32::MAX)
}

// === impl Plan ===

impl Plan {
    /// A job that ended at once (the plan of a job not remembered).
    fn ended(fail_after: Option<u64>) -> Plan {
        Plan {
            started: Instant::now(),
            page_delay: Duration::ZERO,
            fail_after,
        }
    }

    /// The pages it makes before it ends.
    fn pages(&self) -> u64 {
        self.fail_after.unwrap_or(PAGES)
    }

    /// From its start to its end: its pages, and the page it fails on, if it does.
    fn duration(&self) -> Duration {
        let steps = self.fail_after.map_or(PAGES, |f| f + 1);
        self.page_delay.saturating_mul(page_number(steps - 1))
    }

    /// Sleeps until `offset` after its start (any offset: a sleep too long for the clock
    /// lasts as long as the process).
    async fn wait_until(&self, offset: Duration) {
        tokio::time::sleep(offset.saturating_sub(self.started.elapsed())).await;
    }

    fn at(&self, now: Instant) -> Progress {
        let elapsed = now.saturating_duration_since(self.started);
        if elapsed >= self.duration() {
            let state = match self.fail_after {
                Some(_) => State::Failed,
                None => State::Completed,
            };
            return Progress {
                pages: self.pages(),
                state,
            };
        }
        let pages = elapsed.as_nanos() / self.page_delay.as_nanos().max(1);
        Progress {
            pages: u64::try_from(pages).unwrap_or(u64::MAX).min(self.pages()),
            state: State::Running,
        }
    }
}

/// A new job id: UUID-shaped, unique in the process, its fourth group carrying `flags` and
/// its third where the job fails (one more than its pages then; zero when it does not).
pub fn job_id(flags: u64, fail_after: Option<u64>) -> String {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let fails = fail_after.map_or(0, |f| f + 1) & 0xfff;
    format!("00000000-0000-4{fails:03x}-{:04x}-{n:012x}", 0x8000 | flags)
}

/// Where job `id` fails, as its id says.
fn fail_after(id: &str) -> Option<u64> {
    let group = id.split('-').nth(2).unwrap_or_default();
    let fails = u64::from_str_radix(group, 16).map_or(0, |g| g & 0xfff);
    fails.checked_sub(1).filter(|&f| f < PAGES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_flags_and_where_the_job_fails() {
        let plain = job_id(0, None);
        assert!(plain.starts_with("00000000-0000-4000-8000-"), "{plain}");
        assert_eq!(fail_after(&plain), None);
        let failing = job_id(1, Some(2));
        assert!(failing.starts_with("00000000-0000-4003-8001-"), "{failing}");
        assert_eq!(fail_after(&failing), Some(2));
        assert_eq!(fail_after("not-an-id"), None);
        assert_ne!(job_id(0, None), plain);
    }

    #[test]
    fn a_plan_runs_page_by_page_then_ends() {
        let started = Instant::now();
        let ms = Duration::from_millis;
        let plan = Plan {
            started,
            page_delay: ms(100),
            fail_after: None,
        };
        let at = |t: u64| plan.at(started + ms(t));
        let running = |pages| Progress {
            pages,
            state: State::Running,
        };
        assert_eq!(at(0), running(0));
        assert_eq!(at(150), running(1));
        assert_eq!(at(299), running(2));
        assert_eq!(at(300).state, State::Completed);
        assert_eq!(at(300).pages, PAGES);
        let failing = Plan {
            fail_after: Some(1),
            ..plan
        };
        assert_eq!(failing.at(started + ms(150)), running(1));
        let failed = failing.at(started + ms(200));
        assert_eq!((failed.pages, failed.state), (1, State::Failed));
        let forever = Plan {
            page_delay: Duration::MAX,
            ..plan
        };
        assert_eq!(forever.at(started + ms(1) * u32::MAX), running(0));
        let at_once = Plan::ended(None).at(Instant::now());
        assert_eq!((at_once.pages, at_once.state), (PAGES, State::Completed));
    }
}
