//! Token usage, and the one rule for adding up the usage of several upstream responses.
//!
//! One client request can become several native requests: the `n` choices of a chat
//! completion (one prompt, sent `n` times) and the prompts of a completions batch. The rule:
//! every prompt of a batch counts, once, however many choices it had; every completion
//! counts. The streamed usage chunk, the whole response's `usage` and lingo's token counters
//! all come from [`Tally`], so they cannot disagree.

use serde::Serialize;

/// The chat-completions `usage` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// The usage of one native response (its `prompt_eval_count` and `eval_count`).
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Usage {
            prompt_tokens,
            completion_tokens,
            // Counts come from the upstream: a huge one must not overflow.
            total_tokens: prompt_tokens.saturating_add(completion_tokens),
        }
    }
}

/// The usage of one request's native responses, added up by the rule above.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Per prompt (by its index in the request): its prompt tokens, counted once.
    prompts: Vec<(usize, u64)>,
    completion_tokens: u64,
}

impl Tally {
    /// Counts one native response to the prompt at `prompt`.
    pub fn add(&mut self, prompt: usize, usage: Usage) {
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(usage.completion_tokens);
        match self.prompts.iter_mut().find(|(p, _)| *p == prompt) {
            // Every choice of one prompt reports the same prompt; count it once.
            Some((_, tokens)) => *tokens = (*tokens).max(usage.prompt_tokens),
            None => self.prompts.push((prompt, usage.prompt_tokens)),
        }
    }

    /// Whether any response has been counted.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// The request's usage.
    pub fn total(&self) -> Usage {
        let prompt_tokens = self
            .prompts
            .iter()
            .fold(0u64, |sum, (_, tokens)| sum.saturating_add(*tokens));
        Usage::new(prompt_tokens, self.completion_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (prompt index, prompt tokens, completion tokens) per native response -> usage.
    type Case<'a> = (&'a [(usize, u64, u64)], (u64, u64));

    #[test]
    fn prompts_count_once_each_and_completions_all() {
        let cases: &[Case<'_>] = &[
            (&[], (0, 0)),
            (&[(0, 3, 5)], (3, 5)),
            // n = 3 choices of one prompt: the prompt once.
            (&[(0, 3, 5), (0, 3, 2), (0, 3, 1)], (3, 8)),
            // A batch of two prompts: both prompts.
            (&[(0, 3, 5), (1, 4, 6)], (7, 11)),
            // Responses arrive in any order.
            (&[(1, 4, 6), (0, 3, 5), (1, 4, 1)], (7, 12)),
            (&[(0, u64::MAX, 1), (1, 1, u64::MAX)], (u64::MAX, u64::MAX)),
        ];
        for (responses, (prompt, completion)) in cases {
            let mut tally = Tally::default();
            for (p, pt, ct) in *responses {
                tally.add(*p, Usage::new(*pt, *ct));
            }
            assert_eq!(
                tally.total(),
                Usage::new(*prompt, *completion),
                "{responses:?}"
            );
            assert_eq!(tally.is_empty(), responses.is_empty());
        }
    }
}
