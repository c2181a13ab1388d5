//! The mock's knobs: defaults from the table (`mock:`) or the command line, overridden per
//! request by an `X-Mock` header or a `@knob=value,...` suffix on the model name.
//!
//! `tokens=3,token_delay=20ms,first_token_delay=1s,embedding_size=8,status=503,
//! error_after=2,cut_after=2,speaks=chat-completions` (or `speaks=web-data-v2`), and for
//! web-data jobs `page_delay=100ms,job_fail_after=1,webhook_retry=1s,2s,3s,
//! webhook_timeout=500ms,webhook_secret=...`; `loaded=llama3.2,qwen2.5` names the models
//! `/api/ps` says are loaded, `busy=true` refuses every request that runs a model with a
//! native server's 503 for a full queue. A list knob (`webhook_retry`, `loaded`) takes every following
//! piece that is not `key=value`; an empty one (`webhook_retry=`) means no retries.

use std::sync::Arc;
use std::time::Duration;

use crate::base::dialect::Dialect;
use crate::base::secret::Secret;
use crate::mock::webhook::{CONTRACT_TIMEOUT, Delivery, Schedule};
use crate::table::{MAX_WEBHOOK_RETRIES, MockSpec};

/// Everything that shapes one mock response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// Tokens per response.
    pub tokens: u32,
    /// Delay before each token after the first.
    pub token_delay: Duration,
    /// Delay before the response's head (a slow first byte).
    pub first_token_delay: Duration,
    pub embedding_size: u32,
    /// Response this error status (with a native or web-data error body) instead.
    pub status: Option<u16>,
    /// Send a native `{"error": ...}` line after this many tokens.
    pub error_after: Option<u32>,
    /// Cut the connection after this many tokens.
    pub cut_after: Option<u32>,
    /// The models `/api/ps` lists as loaded in memory (none by default).
    pub loaded: Vec<String>,
    /// Refuse every request that runs a model with a 503 "server busy", as a native server
    /// whose queue is full does (its listings it still answers).
    pub busy: bool,
    /// The dialect to respond in: a `mock:` upstream's `speaks`. `None` (the standalone
    /// `lingo mock`) responds to `/api/*` natively and the rest as the web-data API.
    pub speaks: Option<Dialect>,
    /// Delay before each page of a web-data job (crawl, batch scrape, extract): its status
    /// says `scraping` (`processing`) until the last, and its webhook events follow it.
    pub page_delay: Duration,
    /// Each web-data job started fails after this many pages (below the job's page count).
    pub job_fail_after: Option<u32>,
    /// How web-data jobs' webhooks are delivered.
    pub webhook: Delivery,
}

pub const DEFAULT_TOKENS: u32 = 16;
pub const DEFAULT_EMBEDDING_SIZE: u32 = 16;

// === impl Knobs ===

impl Knobs {
    pub fn from_spec(spec: &MockSpec) -> Self {
        Knobs {
            tokens: spec.tokens.unwrap_or(DEFAULT_TOKENS),
            token_delay: spec.token_delay.unwrap_or_default(),
            first_token_delay: spec.first_token_delay.unwrap_or_default(),
            embedding_size: spec.embedding_size.unwrap_or(DEFAULT_EMBEDDING_SIZE),
            status: None,
            error_after: None,
            cut_after: None,
            loaded: Vec::new(),
            busy: false,
            speaks: None,
            page_delay: spec.page_delay.unwrap_or_default(),
            job_fail_after: None,
            webhook: Delivery {
                // The table refuses more delays than a schedule holds.
                retry: spec
                    .webhook_retry
                    .as_deref()
                    .and_then(Schedule::new)
                    .unwrap_or(Schedule::CONTRACT),
                timeout: spec.webhook_timeout.unwrap_or(CONTRACT_TIMEOUT),
                secret: spec.webhook_secret.clone().map(Arc::new),
            },
        }
    }

    /// The knobs of a `mock:` upstream that speaks `dialect`.
    pub fn speaking(self, dialect: Dialect) -> Self {
        Knobs {
            speaks: Some(dialect),
            ..self
        }
    }

    /// Applies `key=value` pairs separated by `,` or `;`. Unknown keys and bad values are
    /// errors, so a typo in a load test does not silently measure the wrong thing.
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        // The last key when it was a list, which a piece without `=` continues.
        let mut list = None;
        for pair in spec
            .split([',', ';'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let Some((key, value)) = pair.split_once('=') else {
                match list {
                    Some("webhook_retry") => self.retry_after(pair)?,
                    Some(_) => self.loaded.push(pair.to_owned()),
                    None => return Err(format!("mock knob `{pair}` is not key=value")),
                }
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            list = ["webhook_retry", "loaded"].into_iter().find(|&k| k == key);
            self.set(key, value)?;
        }
        Ok(())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = || format!("mock knob `{key}` has a bad value `{value}`");
        match key {
            "tokens" => self.tokens = value.parse().map_err(|_| bad())?,
            "token_delay" => self.token_delay = parse_duration(value).ok_or_else(bad)?,
            "first_token_delay" => {
                self.first_token_delay = parse_duration(value).ok_or_else(bad)?
            }
            "embedding_size" => self.embedding_size = value.parse().map_err(|_| bad())?,
            "status" => self.status = Some(value.parse().map_err(|_| bad())?),
            "error_after" => self.error_after = Some(value.parse().map_err(|_| bad())?),
            "cut_after" => self.cut_after = Some(value.parse().map_err(|_| bad())?),
            "loaded" => {
                self.loaded = (!value.is_empty())
                    .then(|| value.to_owned())
                    .into_iter()
                    .collect()
            }
            "busy" => self.busy = value.parse().map_err(|_| bad())?,
            "speaks" => self.speaks = Some(Dialect::parse(value).ok_or_else(bad)?),
            "page_delay" => self.page_delay = parse_duration(value).ok_or_else(bad)?,
            "job_fail_after" => self.job_fail_after = Some(value.parse().map_err(|_| bad())?),
            "webhook_retry" => {
                self.webhook.retry = Schedule::NONE;
                if !value.is_empty() {
                    self.retry_after(value)?;
                }
            }
            "webhook_timeout" => match parse_duration(value) {
                Some(d) if !d.is_zero() => self.webhook.timeout = d,
                _ => return Err(bad()),
            },
            "webhook_secret" if !value.is_empty() => {
                self.webhook.secret = Some(Arc::new(Secret::new(value)));
            }
            "webhook_secret" => return Err("mock knob `webhook_secret` is empty".to_owned()),
            _ => return Err(format!("unknown mock knob `{key}`")),
        }
        Ok(())
    }

    /// Adds one delay to the webhook retry schedule.
    fn retry_after(&mut self, value: &str) -> Result<(), String> {
        let delay = parse_duration(value)
            .ok_or_else(|| format!("mock knob `webhook_retry` has a bad delay `{value}`"))?;
        if self.webhook.retry.push(delay) {
            Ok(())
        } else {
            Err(format!(
                "mock knob `webhook_retry` has more than {MAX_WEBHOOK_RETRIES} delays"
            ))
        }
    }
}

/// `250ms`, `2s`, `1m`, or a bare number of milliseconds.
fn parse_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().ok()?;
    match unit {
        "" | "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

/// Splits `model@knobs` into the model name and its knobs.
pub fn split_model(model: &str) -> (&str, Option<&str>) {
    match model.split_once('@') {
        Some((name, knobs)) => (name, Some(knobs)),
        None => (model, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_parse_and_refuse() {
        let mut k = Knobs::from_spec(&MockSpec::default());
        k.apply("tokens=3, token_delay=20ms;first_token_delay=1s,status=503,error_after=2,cut_after=1,embedding_size=4")
            .unwrap();
        assert_eq!(k.tokens, 3);
        assert_eq!(k.token_delay, Duration::from_millis(20));
        assert_eq!(k.first_token_delay, Duration::from_secs(1));
        assert_eq!(
            (k.status, k.error_after, k.cut_after, k.embedding_size),
            (Some(503), Some(2), Some(1), 4)
        );
        assert_eq!(k.speaks, None);
        k.apply("speaks=chat-completions").unwrap();
        assert_eq!(k.speaks, Some(Dialect::Chat));
        k.apply("speaks=web-data-v2").unwrap();
        assert_eq!(k.speaks, Some(Dialect::WebDataV2));
        for bad in [
            "tokens",
            "tokens=x",
            "colour=red",
            "token_delay=5h",
            "token_delay=18446744073709551615m",
            "speaks=klingon",
        ] {
            assert!(k.apply(bad).is_err(), "{bad}");
        }
        assert_eq!(split_model("m@tokens=2"), ("m", Some("tokens=2")));
    }

    #[test]
    fn loaded_models_are_a_list() {
        let mut k = Knobs::from_spec(&MockSpec::default());
        assert!(k.loaded.is_empty());
        k.apply("loaded=llama3.2, qwen2.5:7b,tokens=2").unwrap();
        assert_eq!(k.loaded, ["llama3.2", "qwen2.5:7b"]);
        assert_eq!(k.tokens, 2, "a key=value ends the list");
        k.apply("loaded=").unwrap();
        assert!(k.loaded.is_empty());
        assert!(!k.busy);
        k.apply("busy=true").unwrap();
        assert!(k.busy);
        assert!(k.apply("busy=yes").is_err());
    }

    #[test]
    fn job_and_webhook_knobs() {
        let secs = Duration::from_secs;
        let mut k = Knobs::from_spec(&MockSpec::default());
        assert_eq!(k.webhook, Delivery::default());
        assert_eq!(k.webhook.retry, Schedule::CONTRACT);
        k.apply("page_delay=100ms,job_fail_after=1,webhook_retry=1s,2s, 3s;webhook_timeout=500ms,webhook_secret=s3,tokens=2")
            .unwrap();
        assert_eq!(k.page_delay, Duration::from_millis(100));
        assert_eq!(k.job_fail_after, Some(1));
        assert_eq!(k.webhook.retry.delays(), [secs(1), secs(2), secs(3)]);
        assert_eq!(k.webhook.timeout, Duration::from_millis(500));
        assert_eq!(k.webhook.secret.as_deref().map(Secret::expose), Some("s3"));
        assert_eq!(k.tokens, 2, "a key=value ends the list");
        k.apply("webhook_retry=").unwrap();
        assert!(k.webhook.retry.delays().is_empty());
        for bad in [
            "webhook_timeout=0",
            "webhook_retry=1s,soon",
            "webhook_retry=1,2,3,4,5,6,7,8,9",
            "webhook_secret=",
            "tokens=2,3",
            "job_fail_after=-1",
        ] {
            assert!(k.apply(bad).is_err(), "{bad}");
        }
        let spec = MockSpec {
            page_delay: Some(secs(1)),
            webhook_retry: Some(vec![secs(4)]),
            webhook_timeout: Some(secs(2)),
            webhook_secret: Some(Secret::new("t")),
            ..MockSpec::default()
        };
        let k = Knobs::from_spec(&spec);
        assert_eq!(k.page_delay, secs(1));
        assert_eq!(k.webhook.retry.delays(), [secs(4)]);
        assert_eq!(k.webhook.timeout, secs(2));
        assert_eq!(k.webhook.secret.as_deref().map(Secret::expose), Some("t"));
        assert_eq!(split_model("llama3.2:3b"), ("llama3.2:3b", None));
    }
}
