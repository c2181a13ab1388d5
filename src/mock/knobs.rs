//! The mock's knobs: defaults from the table (`mock:`) or the command line, overridden per
//! request by an `X-Mock` header or a `@knob=value,...` suffix on the model name.
//!
//! `tokens=3,token_delay=20ms,first_token_delay=1s,embedding_size=8,status=503,
//! error_after=2,cut_after=2,speaks=chat-completions` (or `speaks=web-data-v2`)

use std::time::Duration;

use crate::base::dialect::Dialect;
use crate::table::MockSpec;

/// Everything that shapes one mock answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// Tokens per answer.
    pub tokens: u32,
    /// Delay before each token after the first.
    pub token_delay: Duration,
    /// Delay before the answer's head (a slow first byte).
    pub first_token_delay: Duration,
    pub embedding_size: u32,
    /// Answer this error status (with a native or web-data error body) instead.
    pub status: Option<u16>,
    /// Send a native `{"error": ...}` line after this many tokens.
    pub error_after: Option<u32>,
    /// Cut the connection after this many tokens.
    pub cut_after: Option<u32>,
    /// The dialect to answer in: a `mock:` upstream's `speaks`. `None` (the standalone
    /// `lingo mock`) answers `/api/*` natively and the rest as the web-data API.
    pub speaks: Option<Dialect>,
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
            speaks: None,
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
        for pair in spec
            .split([',', ';'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("mock knob `{pair}` is not key=value"))?;
            let (key, value) = (key.trim(), value.trim());
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
                "speaks" => self.speaks = Some(Dialect::parse(value).ok_or_else(bad)?),
                _ => return Err(format!("unknown mock knob `{key}`")),
            }
        }
        Ok(())
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
        assert_eq!(split_model("llama3.2:3b"), ("llama3.2:3b", None));
    }
}
