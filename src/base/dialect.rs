//! The wire dialects lingo speaks: their names in `proxy.yaml`, and which one a path
//! implies when no route decided it.

/// A wire dialect: what a client or an upstream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models`.
    Chat,
    /// `/api/chat`, `/api/generate`, `/api/embed(dings)`, `/api/tags`, `/api/show`.
    Native,
    /// The scrape/crawl API (`/v1/...`, `/v2/...`).
    WebData,
    /// The scrape/crawl API, version 2 only (`/v2/...`): an upstream that no longer serves
    /// `/v1/...`. Clients of its routes still speak [`Dialect::WebData`]; lingo translates
    /// their `/v1/...` calls.
    WebDataV2,
}

// === impl Dialect ===

impl Dialect {
    /// The name used in `proxy.yaml`'s `speaks:`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat-completions",
            Dialect::Native => "native",
            Dialect::WebData => "web-data",
            Dialect::WebDataV2 => "web-data-v2",
        }
    }

    /// Parses a `speaks:` value; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "chat-completions" => Some(Dialect::Chat),
            "native" => Some(Dialect::Native),
            "web-data" => Some(Dialect::WebData),
            "web-data-v2" => Some(Dialect::WebDataV2),
            _ => None,
        }
    }

    /// All dialects, in the order they are documented.
    pub const ALL: [Dialect; 4] = [
        Dialect::Chat,
        Dialect::Native,
        Dialect::WebData,
        Dialect::WebDataV2,
    ];

    /// Whether this is the web-data API, in either version (same envelopes, same links).
    pub const fn is_web_data(self) -> bool {
        matches!(self, Dialect::WebData | Dialect::WebDataV2)
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The chat-completions dialect's inference paths, spelled once (everything else under `/v1`
/// is the web-data API's).
pub mod paths {
    pub const CHAT: &str = "/v1/chat/completions";
    pub const COMPLETIONS: &str = "/v1/completions";
    pub const EMBEDDINGS: &str = "/v1/embeddings";
    pub const MODELS: &str = "/v1/models";
    pub const ALL: [&str; 4] = [CHAT, COMPLETIONS, EMBEDDINGS, MODELS];
}

/// The dialect to respond in when no route decided it (no route matched, or the path was
/// refused before routing): guessed from the path the way the upstream services split `/v1`.
pub fn guess(path: &str) -> Dialect {
    let is_under = |p: &str| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if is_under("/api") {
        Dialect::Native
    } else if paths::ALL.iter().any(|p| is_under(p)) {
        Dialect::Chat
    } else if is_under("/v1") || is_under("/v2") {
        Dialect::WebData
    } else {
        Dialect::Chat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guess_follows_the_seeds_split_of_v1() {
        for (path, want) in [
            ("/api/tags", Dialect::Native),
            ("/api", Dialect::Native),
            ("/apix", Dialect::Chat),
            ("/v1/chat/completions", Dialect::Chat),
            ("/v1/models/llama3:8b", Dialect::Chat),
            ("/v1/scrape", Dialect::WebData),
            ("/v1/modelsx", Dialect::WebData),
            ("/v2/crawl/1", Dialect::WebData),
            ("/", Dialect::Chat),
        ] {
            assert_eq!(guess(path), want, "{path}");
        }
    }

    #[test]
    fn parse_round_trips() {
        for d in Dialect::ALL {
            assert_eq!(Dialect::parse(d.as_str()), Some(d));
        }
        assert_eq!(Dialect::parse("openai"), None);
    }
}
