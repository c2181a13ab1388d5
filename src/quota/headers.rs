//! The `x-ratelimit-*` fields of the chat-completions API, on every answer to a client with
//! limits: for requests and for tokens, the tightest limit's size, what is left of it and when
//! it is whole again (`6m0s`, `1.5s`, `20ms`, as the official API writes them).

use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};

use super::Ask;
use super::count::Check;
use crate::base::units::format_wait;
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
    /// Notes what asking `limit` for `ask` found; of the enforced limits, the one with least
    /// left is told (a shadow limit refuses nothing, so it tells nothing either).
    pub fn note(&mut self, limit: &Limit, ask: &Ask, check: &Check) {
        if limit.shadow {
            return;
        }
        let size = ask.shape.capacity.unwrap_or(ask.shape.amount);
        self.keep(limit.unit, (size, check.remaining), check.reset_ms);
    }

    /// Notes `limit` (of `size`) spent, whole again in `after`.
    pub fn note_spent(&mut self, limit: &Limit, size: u64, after: Duration) {
        self.keep(limit.unit, (size, 0), after.as_millis() as u64);
    }

    fn keep(&mut self, unit: Unit, (size, remaining): (u64, u64), reset_ms: u64) {
        let slot = match unit {
            Unit::Requests => &mut self.requests,
            unit if unit.is_tokens() => &mut self.tokens,
            _ => return,
        };
        let line = Line {
            limit: size,
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
                format_wait(line.reset_ms),
            ];
            for (name, value) in names.iter().zip(values) {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    response.insert_header(name.clone(), value);
                }
            }
        }
    }
}
