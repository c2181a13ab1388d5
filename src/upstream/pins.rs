//! Web-data jobs kept on the backend that started them: a job's status, its errors, its
//! cancellation and its watcher go where the job is. A job start's response names the job
//! (`"id"`), and lingo notes the backend it came from; a request for a job lingo has not noted
//! (started through another replica, or before a reload) is sent to each backend in turn
//! until one does not answer 404.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use hyper::Method;

/// How many jobs an upstream remembers the backend of; the oldest are forgotten first.
pub const JOBS_PINNED: usize = 10_000;

/// What a web-data request has to do with a job.
#[derive(Debug, PartialEq, Eq)]
pub enum Job<'a> {
    /// It starts one (`POST /v2/crawl`, ...).
    Start,
    /// It asks about the job with this id (`GET /v2/crawl/{id}`, `DELETE`, its errors).
    Of(&'a str),
}

/// The job families of web-data v1 and v2: their paths under `/v1/` or `/v2/`.
const FAMILIES: &[&str] = &[
    "crawl/",
    "batch/scrape/",
    "extract/",
    "deep-research/",
    "llmstxt/",
];

/// Paths under a family that name no job.
const NOT_JOBS: &[&str] = &["active", "ongoing", "params-preview"];

/// What `method path` (the path without the upstream's base path) has to do with a job.
pub fn job<'a>(method: &Method, path: &'a str) -> Option<Job<'a>> {
    let rest = path
        .strip_prefix("/v1/")
        .or_else(|| path.strip_prefix("/v2/"))?;
    for family in FAMILIES {
        if *method == Method::POST && rest.trim_end_matches('/') == family.trim_end_matches('/') {
            return Some(Job::Start);
        }
        if let Some(tail) = rest.strip_prefix(family) {
            let id = tail.split('/').next().unwrap_or("");
            return (!id.is_empty() && !NOT_JOBS.contains(&id)).then_some(Job::Of(id));
        }
    }
    None
}

/// The backend (its index) each remembered job was started on.
#[derive(Debug, Default)]
pub struct Pins(Mutex<Remembered>);

#[derive(Debug, Default)]
struct Remembered {
    at: HashMap<String, usize>,
    order: VecDeque<String>,
}

impl Pins {
    pub fn get(&self, id: &str) -> Option<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .at
            .get(id)
            .copied()
    }

    /// Notes that job `id` is on backend `at`.
    pub fn pin(&self, id: &str, at: usize) {
        let mut pins = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if pins.at.insert(id.to_owned(), at).is_none() {
            pins.order.push_back(id.to_owned());
        }
        while pins.order.len() > JOBS_PINNED {
            if let Some(old) = pins.order.pop_front() {
                pins.at.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_paths_are_told_apart() {
        let cases = [
            (Method::POST, "/v2/crawl", Some(Job::Start)),
            (Method::POST, "/v1/batch/scrape", Some(Job::Start)),
            (Method::GET, "/v2/crawl", None),
            (Method::GET, "/v2/crawl/abc", Some(Job::Of("abc"))),
            (Method::GET, "/v2/crawl/abc/errors", Some(Job::Of("abc"))),
            (Method::DELETE, "/v1/crawl/abc", Some(Job::Of("abc"))),
            (Method::GET, "/v2/batch/scrape/x1", Some(Job::Of("x1"))),
            (Method::GET, "/v2/extract/e", Some(Job::Of("e"))),
            (Method::GET, "/v2/crawl/active", None),
            (Method::POST, "/v2/crawl/params-preview", None),
            (Method::POST, "/v2/scrape", None),
            (Method::GET, "/api/tags", None),
        ];
        for (method, path, want) in cases {
            assert_eq!(job(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn the_oldest_pins_are_forgotten_first() {
        let pins = Pins::default();
        for i in 0..=JOBS_PINNED {
            pins.pin(&i.to_string(), i % 3);
        }
        assert_eq!(pins.get("0"), None);
        assert_eq!(pins.get("1"), Some(1));
    }
}
