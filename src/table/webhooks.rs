//! An upstream's webhook relay, compiled (`upstreams.<name>.webhooks`): whether job
//! requests have their `webhook` rewritten to lingo's receiver, the secrets on both sides,
//! the delivery schedule and reply time, where deliveries may go, and where events are kept.

use std::path::PathBuf;
use std::time::Duration;

use hyper::Uri;

use crate::base::cidr::Cidr;
use crate::base::secret::Secret;

/// The web-data contract's retry schedule: 1, 5 and 15 minutes (four attempts in all).
pub const DEFAULT_RETRY: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(5 * 60),
    Duration::from_secs(15 * 60),
];

/// The web-data contract's reply time.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most retries a relay's schedule may have.
pub const MAX_RELAY_RETRIES: usize = 20;

/// The embedded store's file when `store:` is left out, beside the route table.
pub const DEFAULT_STORE_FILE: &str = "lingo-webhooks.redb";

/// `upstreams.<name>.webhooks`, checked.
#[derive(Debug)]
pub struct WebhookSpec {
    /// Job requests' `webhook` URLs are rewritten to lingo's receiver (`relay: true`).
    pub relay: bool,
    /// The base URL the upstream reaches lingo's receiver at; `None`: the listener's
    /// `public_url`, else the address the client used.
    pub receiver: Option<Uri>,
    /// The upstream's signing secret: events without its signature are refused.
    pub verify: Option<Secret>,
    /// lingo's signing secret toward clients that have none of their own.
    pub sign: Option<Secret>,
    /// What receiver tokens are sealed with: `seal`, else `sign`; `None` when neither is set
    /// (then `relay` is off: the table refuses it on).
    pub seal: Option<SealKey>,
    /// The successive delays between a delivery's attempts.
    pub retry: Vec<Duration>,
    /// A delivery without a 2xx response within this time has failed.
    pub timeout: Duration,
    /// Ranges deliveries may go to although they are not public addresses.
    pub allow: Vec<Cidr>,
    pub store: StoreAt,
    /// Deliveries also carry `X-Firecrawl-Signature`, made with the client's secret.
    pub firecrawl_signature: bool,
}

/// The secret receiver tokens are sealed with, and which key it is.
#[derive(Debug)]
pub struct SealKey {
    pub secret: Secret,
    /// `seal:` itself (or else `sign:`, which a key is derived from).
    pub own: bool,
}

/// Where a relay keeps its events.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreAt {
    /// The embedded store's file.
    File(PathBuf),
    /// A Redis server shared by replicas (`redis://...`).
    Redis(String),
}

// === impl StoreAt ===

impl std::fmt::Display for StoreAt {
    /// As logs and metric labels say it: a Redis URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreAt::File(path) => write!(f, "{}", path.display()),
            StoreAt::Redis(url) => f.write_str(&without_password(url)),
        }
    }
}

/// `redis://user:password@host/...` as `redis://user:***@host/...`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            let hidden = if credentials.contains(':') || !user.is_empty() {
                format!("{user}:***")
            } else {
                String::new()
            };
            format!("{scheme}://{hidden}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_urls_are_told_without_their_password() {
        let cases = [
            ("redis://h:6379", "redis://h:6379"),
            ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
            ("redis://u:pw@h/2", "redis://u:***@h/2"),
            ("redis://u:p@w@h/2", "redis://u:***@h/2"),
        ];
        for (url, shown) in cases {
            assert_eq!(StoreAt::Redis(url.into()).to_string(), shown, "{url}");
        }
    }
}
