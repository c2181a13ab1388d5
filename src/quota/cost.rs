//! What a request is likely to cost before it runs (from its body), and what it did cost once
//! its answer has ended (from the usage counts in it), pure.
//!
//! The estimate errs high: the prompt is a token for every four bytes of the whole request
//! body (the JSON around it included), and the answer is as long as the request allows
//! (`max_completion_tokens`, `max_tokens`, `max_output_tokens`, `options.num_predict`, times
//! `n`; a legacy completion's default is 16), or, when it says nothing, as long as the limit's
//! largest reservation. A web-data call costs its `limit` (a crawl's pages), a credit for each
//! of its `urls`, the limit's largest reservation for a crawl that sets no `limit`, else (a
//! map included) one.

use memchr::memmem;
use serde::Deserialize;
use serde_json::Value;

use crate::base::dialect::Dialect;
use crate::table::quota::Unit;

/// A request's likely cost. `None`: the request does not say (a limit's cap stands in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    pub input_tokens: u64,
    pub output_tokens: Option<u64>,
    pub credits: Option<u64>,
}

/// What an answer's usage counts said; `None` for a count it did not give.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub credits: Option<u64>,
}

/// Reads the usage counts of an answer's body as it passes, frame by frame: the last value
/// given for any of each count's keys in its dialect.
#[derive(Debug, Clone)]
pub struct UsageScan {
    /// For the input tokens, the output tokens and the credits: the keys that give them.
    keys: [&'static [&'static [u8]]; 3],
    found: [Option<u64>; 3],
    /// The body's last bytes so far (`tail_len` of them), for a key split between frames:
    /// kept in place, so that a stream's frames cost no allocation.
    tail: [u8; TAIL],
    tail_len: usize,
}

/// The longest tail kept: a key, its colon, spaces and a number.
const TAIL: usize = 48;

// === impl Estimate ===

impl Estimate {
    /// A request without a body: it runs no model.
    pub const NOTHING: Estimate = Estimate {
        input_tokens: 0,
        output_tokens: Some(0),
        credits: Some(0),
    };

    /// The estimate of a request with `body` on a route that speaks `dialect` at `path`, and
    /// the model it names.
    pub fn of(dialect: Dialect, path: &str, body: &[u8]) -> (Estimate, Option<String>) {
        let asks: Asks = serde_json::from_slice(body).unwrap_or_default();
        let model = asks
            .model
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_owned);
        (Estimate::of_asks(dialect, path, body.len(), &asks), model)
    }

    fn of_asks(dialect: Dialect, path: &str, length: usize, asks: &Asks) -> Estimate {
        let input_tokens = (length as u64).div_ceil(4);
        let number = |field: &Option<Value>| field.as_ref().and_then(Value::as_u64);
        match dialect {
            Dialect::WebData | Dialect::WebDataV2 => {
                let urls = asks.urls.as_ref().and_then(Value::as_array);
                let urls = urls.map(|u| u.len() as u64);
                let credits = match number(&asks.limit).or(urls) {
                    // A map's `limit` counts links, not pages: a map costs a credit.
                    _ if path.ends_with("/map") => Some(1),
                    Some(pages) => Some(pages.max(1)),
                    // A crawl that sets no limit may take many pages.
                    None if path.contains("/crawl") => None,
                    None => Some(1),
                };
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits,
                }
            }
            _ if path.ends_with("/embed") || path.ends_with("/embeddings") => Estimate {
                input_tokens,
                output_tokens: Some(0),
                credits: Some(0),
            },
            _ => {
                let num_predict = (asks.options.as_ref()).and_then(|o| o.get("num_predict"));
                let most = number(&asks.max_completion_tokens)
                    .or_else(|| number(&asks.max_tokens))
                    .or_else(|| number(&asks.max_output_tokens))
                    .or_else(|| num_predict.and_then(Value::as_u64))
                    .or_else(|| legacy_completion(path).then_some(LEGACY_COMPLETION_TOKENS));
                let choices = number(&asks.n).unwrap_or(1).max(1);
                Estimate {
                    input_tokens,
                    output_tokens: most.map(|m| m.saturating_mul(choices)),
                    credits: Some(0),
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
            Unit::Credits => self.credits.unwrap_or(cap),
        };
        cost.min(cap)
    }
}

/// The fields of a request an estimate reads. The rest of the body (its messages, its
/// prompt) is skipped, not built: each field is kept as it came, and read for what it should
/// be (a number that is not one counts as said nothing).
#[derive(Debug, Default, Deserialize)]
struct Asks {
    model: Option<Value>,
    max_completion_tokens: Option<Value>,
    max_tokens: Option<Value>,
    max_output_tokens: Option<Value>,
    options: Option<Value>,
    n: Option<Value>,
    limit: Option<Value>,
    urls: Option<Value>,
}

/// What a legacy completion (`/v1/completions`) answers at most when it says nothing: the
/// chat-completions API's default `max_tokens` for it.
const LEGACY_COMPLETION_TOKENS: u64 = 16;

fn legacy_completion(path: &str) -> bool {
    path.ends_with("/completions") && !path.ends_with("/chat/completions")
}

// === impl Used ===

impl Used {
    /// What the request cost in `unit`, given `reserved` of it: a count the answer lacks
    /// stands at what was reserved for it.
    pub fn cost(&self, unit: Unit, reserved: u64, estimate: &Estimate) -> u64 {
        match unit {
            Unit::Requests => 1,
            Unit::InputTokens => self.input_tokens.unwrap_or(reserved),
            Unit::OutputTokens => self.output_tokens.unwrap_or(reserved),
            Unit::Credits => self.credits.unwrap_or(reserved),
            Unit::Tokens => {
                let input_reserved = reserved.min(estimate.input_tokens);
                let output_reserved = reserved - input_reserved;
                let input = self.input_tokens.unwrap_or(input_reserved);
                input.saturating_add(self.output_tokens.unwrap_or(output_reserved))
            }
        }
    }
}

// === impl UsageScan ===

impl UsageScan {
    /// A scan for the counts an answer in `dialect` gives.
    pub fn new(dialect: Dialect) -> UsageScan {
        let keys: [&'static [&'static [u8]]; 3] = match dialect {
            // The Responses API's `usage` says `input_tokens` and `output_tokens`.
            Dialect::Chat => [
                &[b"\"prompt_tokens\"", b"\"input_tokens\""],
                &[b"\"completion_tokens\"", b"\"output_tokens\""],
                &[],
            ],
            Dialect::Native => [&[b"\"prompt_eval_count\""], &[b"\"eval_count\""], &[]],
            Dialect::WebData | Dialect::WebDataV2 => [&[], &[], &[b"\"creditsUsed\""]],
        };
        UsageScan {
            keys,
            found: [None; 3],
            tail: [0; TAIL],
            tail_len: 0,
        }
    }

    /// Reads one frame of the body.
    pub fn frame(&mut self, data: &[u8]) {
        let kept = self.tail_len;
        if kept > 0 {
            // A key that starts in the frames before and ends in this one.
            let mut joined = [0; 2 * TAIL];
            let more = data.len().min(TAIL);
            joined[..kept].copy_from_slice(&self.tail[..kept]);
            joined[kept..kept + more].copy_from_slice(&data[..more]);
            self.read(&joined[..kept + more]);
        }
        self.read(data);
        // The last TAIL bytes of the body so far: of the tail kept, and of this frame.
        let from_data = data.len().min(TAIL);
        let from_tail = kept.min(TAIL - from_data);
        self.tail.copy_within(kept - from_tail..kept, 0);
        self.tail[from_tail..from_tail + from_data]
            .copy_from_slice(&data[data.len() - from_data..]);
        self.tail_len = from_tail + from_data;
    }

    fn read(&mut self, text: &[u8]) {
        for (keys, found) in self.keys.iter().zip(&mut self.found) {
            for key in *keys {
                for at in memmem::find_iter(text, key) {
                    if let Some(n) = number_after(&text[at + key.len()..]) {
                        *found = Some(n);
                    }
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
                    credits: Some(0),
                },
            ),
            (
                Dialect::Native,
                "/api/generate",
                br#"{"prompt":"hi","options":{"num_predict":7}}"#,
                Estimate {
                    input_tokens: 11,
                    output_tokens: Some(7),
                    credits: Some(0),
                },
            ),
            (
                Dialect::Chat,
                "/v1/chat/completions",
                br#"{"messages":[]}"#,
                Estimate {
                    input_tokens: 4,
                    output_tokens: None,
                    credits: Some(0),
                },
            ),
            (
                Dialect::Chat,
                "/v1/completions",
                br#"{"prompt":"hi"}"#,
                Estimate {
                    input_tokens: 4,
                    output_tokens: Some(16),
                    credits: Some(0),
                },
            ),
            (
                Dialect::Chat,
                "/v1/responses",
                br#"{"input":"hi","max_output_tokens":9}"#,
                Estimate {
                    input_tokens: 9,
                    output_tokens: Some(9),
                    credits: Some(0),
                },
            ),
            (
                Dialect::Chat,
                "/v1/embeddings",
                br#"{"input":"a b c","max_tokens":9}"#,
                Estimate {
                    input_tokens: 8,
                    output_tokens: Some(0),
                    credits: Some(0),
                },
            ),
            (
                Dialect::WebData,
                "/v2/crawl",
                br#"{"url":"https://x","limit":40}"#,
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits: Some(40),
                },
            ),
            (
                Dialect::WebData,
                "/v2/crawl",
                br#"{"url":"https://x"}"#,
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits: None,
                },
            ),
            (
                Dialect::WebData,
                "/v1/scrape",
                b"not json",
                Estimate {
                    input_tokens: 0,
                    output_tokens: Some(0),
                    credits: Some(1),
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
            credits: Some(0),
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
        assert_eq!(cached.cost(Unit::Tokens, 100, &estimate), 15);
        assert_eq!(cached.cost(Unit::OutputTokens, 90, &estimate), 5);
        assert_eq!(cached.cost(Unit::Credits, 3, &estimate), 3);
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
            // And a frame a byte at a time.
            let mut scan = UsageScan::new(Dialect::Native);
            for byte in body.chunks(1) {
                scan.frame(byte);
            }
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
        let mut responses = UsageScan::new(Dialect::Chat);
        responses.frame(br#"{"usage":{"input_tokens":8,"output_tokens":2,"total_tokens":10}}"#);
        assert_eq!(
            (
                responses.used().input_tokens,
                responses.used().output_tokens
            ),
            (Some(8), Some(2))
        );
        let mut web = UsageScan::new(Dialect::WebData);
        web.frame(br#"{"success":true,"creditsUsed":5}"#);
        assert_eq!(web.used().credits, Some(5));
    }
}
