//! What a request is likely to cost before it runs (from its body), and what it did cost once
//! its answer has ended (from the usage counts in it), pure.
//!
//! The estimate errs high: the prompt is a token for every four bytes of the whole request
//! body (the JSON around it included), and the answer is as long as the request allows
//! (`max_tokens`, `max_completion_tokens`, `options.num_predict`, times `n`), or, when it says
//! nothing, as long as the limit's largest reservation.

use memchr::memmem;
use serde_json::Value;

use crate::base::dialect::Dialect;
use crate::table::quota::Unit;

/// A request's likely cost. `None`: the request does not say (a limit's cap stands in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    pub input_tokens: u64,
    pub output_tokens: Option<u64>,
    pub credits: u64,
}

/// What an answer's usage counts said; `None` for a count it did not give.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub credits: Option<u64>,
}

/// Reads the usage counts of an answer's body as it passes, frame by frame: the last value
/// given for each of its dialect's keys.
#[derive(Debug, Clone)]
pub struct UsageScan {
    keys: [&'static [u8]; 3],
    found: [Option<u64>; 3],
    /// The end of the last frame, for a key split between two frames.
    tail: Vec<u8>,
}

/// The longest tail kept: a key, its colon, spaces and a number.
const TAIL: usize = 48;

// === impl Estimate ===

impl Estimate {
    /// A request without a body: it runs no model.
    pub const NOTHING: Estimate = Estimate {
        input_tokens: 0,
        output_tokens: Some(0),
        credits: 0,
    };

    /// The estimate of a request with `body` on a route that speaks `dialect` at `path`, and
    /// the model it names.
    pub fn of(dialect: Dialect, path: &str, body: &[u8]) -> (Estimate, Option<String>) {
        let json: Option<Value> = serde_json::from_slice(body).ok();
        let model = json
            .as_ref()
            .and_then(|j| j["model"].as_str())
            .map(str::to_owned);
        (
            Estimate::of_json(dialect, path, body.len(), json.as_ref()),
            model,
        )
    }

    fn of_json(dialect: Dialect, path: &str, length: usize, json: Option<&Value>) -> Estimate {
        let input_tokens = (length as u64).div_ceil(4);
        let field = |name: &str| json.and_then(|j| j.pointer(name));
        let number = |name: &str| field(name).and_then(Value::as_u64);
        match dialect {
            Dialect::WebData | Dialect::WebDataV2 => Estimate {
                input_tokens: 0,
                output_tokens: Some(0),
                // A crawl or a batch costs a credit a page.
                credits: number("/limit")
                    .or_else(|| {
                        field("/urls")
                            .and_then(Value::as_array)
                            .map(|u| u.len() as u64)
                    })
                    .unwrap_or(1)
                    .max(1),
            },
            _ if path.contains("embed") => Estimate {
                input_tokens,
                output_tokens: Some(0),
                credits: 0,
            },
            _ => {
                let most = number("/max_completion_tokens")
                    .or_else(|| number("/max_tokens"))
                    .or_else(|| number("/options/num_predict"));
                let choices = number("/n").unwrap_or(1).max(1);
                Estimate {
                    input_tokens,
                    output_tokens: most.map(|m| m.saturating_mul(choices)),
                    credits: 0,
                }
            }
        }
    }

    /// What a request reserves of `unit`, capped at `cap`.
    pub fn cost(&self, unit: Unit, cap: u64) -> u64 {
        let output = self.output_tokens.unwrap_or(cap);
        let cost = match unit {
            Unit::Requests => return 1,
            Unit::Tokens => self.input_tokens.saturating_add(output),
            Unit::InputTokens => self.input_tokens,
            Unit::OutputTokens => output,
            Unit::Credits => self.credits,
        };
        cost.min(cap)
    }
}

// === impl Used ===

impl Used {
    /// What the request cost in `unit`, a count it lacks standing at what was reserved for
    /// it; and whether one was lacking.
    pub fn cost(&self, unit: Unit, reserved: u64, estimate: &Estimate) -> (u64, bool) {
        let output_reserved = reserved.saturating_sub(estimate.input_tokens);
        match unit {
            Unit::Requests => (1, false),
            Unit::InputTokens => or_reserved(self.input_tokens, reserved),
            Unit::OutputTokens => or_reserved(self.output_tokens, reserved),
            Unit::Credits => or_reserved(self.credits, reserved),
            Unit::Tokens => {
                let input_reserved = reserved.min(estimate.input_tokens);
                let (input, a) = or_reserved(self.input_tokens, input_reserved);
                let (output, b) = or_reserved(self.output_tokens, output_reserved);
                (input.saturating_add(output), a || b)
            }
        }
    }
}

fn or_reserved(count: Option<u64>, reserved: u64) -> (u64, bool) {
    match count {
        Some(count) => (count, false),
        None => (reserved, true),
    }
}

// === impl UsageScan ===

impl UsageScan {
    /// A scan for the counts an answer in `dialect` gives.
    pub fn new(dialect: Dialect) -> UsageScan {
        let keys: [&'static [u8]; 3] = match dialect {
            Dialect::Chat => [b"\"prompt_tokens\"", b"\"completion_tokens\"", b"\x00"],
            Dialect::Native => [b"\"prompt_eval_count\"", b"\"eval_count\"", b"\x00"],
            Dialect::WebData | Dialect::WebDataV2 => [b"\x00", b"\x00", b"\"creditsUsed\""],
        };
        UsageScan {
            keys,
            found: [None; 3],
            tail: Vec::new(),
        }
    }

    /// Reads one frame of the body.
    pub fn frame(&mut self, data: &[u8]) {
        if !self.tail.is_empty() {
            // A key that starts in the last frame and ends in this one.
            let mut joined = std::mem::take(&mut self.tail);
            joined.extend_from_slice(&data[..data.len().min(TAIL)]);
            self.read(&joined);
        }
        self.read(data);
        self.tail = data[data.len().saturating_sub(TAIL)..].to_vec();
    }

    fn read(&mut self, text: &[u8]) {
        for (key, found) in self.keys.iter().zip(&mut self.found) {
            for at in memmem::find_iter(text, key) {
                if let Some(n) = number_after(&text[at + key.len()..]) {
                    *found = Some(n);
                }
            }
        }
    }

    /// The counts found.
    pub fn used(&self) -> Used {
        Used {
            input_tokens: self.found[0],
            output_tokens: self.found[1],
            credits: self.found[2],
        }
    }
}

/// The whole number after `:` (and spaces) at the start of `text`; `None` when it is not
/// there whole (another frame may hold its end).
fn number_after(text: &[u8]) -> Option<u64> {
    let text = text
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == text.len() {
        return None;
    }
    std::str::from_utf8(&text[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_read_what_the_request_allows() {
        let chat =
            br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"n":2}"#;
        let cases: &[(Dialect, &str, &[u8], Estimate)] = &[
            (
                Dialect::Chat,
                "/v1/chat/completions",
                chat,
                Estimate {
                    input_tokens: (chat.len() as u64).div_ceil(4),
                    output_tokens: Some(100),
                    credits: 0,
                },
            ),
            (
                Dialect::Native,
                "/api/generate",
                br#"{"prompt":"hi","options":{"num_predict":7}}"#,
                Estimate {
                    input_tokens: 11,
                    output_tokens: Some(7),
                    credits: 0,
                },
            ),
            (
                Dialect::Chat,
                "/v1/chat/completions",
                br#"{"messages":[]}"#,
                Estimate {
                    input_tokens: 4,
                    output_tokens: None,
                    credits: 0,
                },
            ),
            (
                Dialect::Chat,
                "/v1/embeddings",
                br#"{"input":"a b c","max_tokens":9}"#,
                Estimate {
                    input_tokens: 8,
                    output_tokens: Some(0),
                    credits: 0,
                },
            ),
            (
                Dialect::WebData,
                "/v2/crawl",
                br#"{"url":"https://x","limit":40}"#,
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits: 40,
                },
            ),
            (
                Dialect::WebData,
                "/v1/scrape",
                b"not json",
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits: 1,
                },
            ),
        ];
        for (dialect, path, body, want) in cases {
            assert_eq!(Estimate::of(*dialect, path, body).0, *want, "{path}");
        }
        let (_, model) = Estimate::of(Dialect::Chat, "/v1/chat/completions", chat);
        assert_eq!(model.as_deref(), Some("m"));
    }

    #[test]
    fn a_cost_is_capped_and_a_missing_count_stands_at_its_reservation() {
        let estimate = Estimate {
            input_tokens: 10,
            output_tokens: None,
            credits: 0,
        };
        assert_eq!(estimate.cost(Unit::Tokens, 100), 100);
        assert_eq!(estimate.cost(Unit::InputTokens, 100), 10);
        assert_eq!(estimate.cost(Unit::Requests, 100), 1);
        let cached = Used {
            input_tokens: None,
            output_tokens: Some(5),
            credits: None,
        };
        // The prompt's 10 stand; the answer's 5 are counted.
        assert_eq!(cached.cost(Unit::Tokens, 100, &estimate), (15, true));
        assert_eq!(cached.cost(Unit::OutputTokens, 90, &estimate), (5, false));
        assert_eq!(cached.cost(Unit::Credits, 3, &estimate), (3, true));
    }

    #[test]
    fn usage_counts_are_found_across_frames() {
        let body = br#"{"done":false}
{"done":true,"prompt_eval_count": 12,"eval_count":34}
"#;
        for split in 0..body.len() {
            let mut scan = UsageScan::new(Dialect::Native);
            scan.frame(&body[..split]);
            scan.frame(&body[split..]);
            let used = scan.used();
            assert_eq!(
                (used.input_tokens, used.output_tokens),
                (Some(12), Some(34)),
                "split at {split}"
            );
        }
        let mut chat = UsageScan::new(Dialect::Chat);
        chat.frame(
            br#"data: {"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        );
        assert_eq!(chat.used().output_tokens, Some(4));
        let mut web = UsageScan::new(Dialect::WebData);
        web.frame(br#"{"success":true,"creditsUsed":5}"#);
        assert_eq!(web.used().credits, Some(5));
    }
}
