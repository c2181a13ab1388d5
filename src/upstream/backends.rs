//! An upstream's backends as requests use them: each one's client and state, the pick, and
//! the retry before the first byte.
//!
//! With one backend a request goes straight to its client. With several, a request's body is
//! kept whole when it is known to be small ([`REPLAY_LIMIT`]) so that it can be sent again;
//! its backend is picked (`pick`); the response's head and its first frame are awaited before
//! anything goes to the client; and a connect error, a timeout, a 5xx, a 429 or 503, or a
//! native `200` whose first line is an error is retried once on another backend while the
//! retry budget has a token. Each request adds `retry_budget` of a token (20%: one retry per
//! five requests), and at most the larger of 3 and that share of the requests in flight is
//! saved up, so an outage cannot multiply the load. A backend counts a request in flight
//! until its response's last byte.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde::de::IgnoredAny;

use super::health::{BackendState, Outcome};
use super::pick::{self, Candidate, ModelFit};
use super::pins::{self, Pins};
use super::{Sending, UpstreamClient, client_body};
use crate::base::clock;
use crate::base::dialect::Dialect;
use crate::error::{ProxyError, TimeoutKind};
use crate::http::body::{Body, BoxError, Prepend, read_all};
use crate::http::message::{HeaderView, Request, Response};
use crate::table::{Auth, Backend, Balance, Upstream};
use crate::translate::webdata;
use crate::upstream::headers::Forwarding;

/// The largest request body kept whole so that it can be sent to a second backend; a larger
/// one, or one of unknown length, is sent once.
pub const REPLAY_LIMIT: u64 = 1024 * 1024;

/// A retry token, in thousandths.
const TOKEN: i64 = 1000;

/// One upstream's backends, in the order of `Upstream::backends`.
pub struct Backends {
    members: Box<[Member]>,
    /// Requests in flight on any of them.
    in_flight: Arc<AtomicUsize>,
    /// Retry tokens saved up, in thousandths.
    bank: AtomicI64,
    /// The backend of each web-data job started through it.
    pins: Pins,
    /// Whether the backends' last probes named different models: only then can a request's
    /// model change the pick (else every backend fits it alike, and its body is not read).
    models_differ: AtomicBool,
    pub retries: Retries,
}

/// One backend as requests use it.
pub struct Member {
    pub client: Arc<UpstreamClient>,
    pub state: Arc<BackendState>,
    /// A hash of its label, for sticky sessions.
    name_hash: u64,
}

/// Retries, by why, and those the budget refused.
#[derive(Debug, Default)]
pub struct Retries {
    pub unreachable: AtomicU64,
    pub timeout: AtomicU64,
    pub server_error: AtomicU64,
    pub busy: AtomicU64,
    pub error_line: AtomicU64,
    pub budget_exhausted: AtomicU64,
}

/// What the pick reads of a request.
#[derive(Default)]
struct Hints {
    model: Option<String>,
    sticky: Option<u64>,
    /// A web-data job it starts, or the id of the job it asks about.
    job: Option<Job>,
}

#[derive(Debug)]
enum Job {
    Start,
    Of(String),
}

impl Backends {
    /// The backends of `upstream`, each with the client and state `kept` gives it (those of a
    /// table before), or new ones.
    pub fn new(
        upstream: &Upstream,
        mut kept: impl FnMut(&Backend) -> (Option<Arc<UpstreamClient>>, Option<Arc<BackendState>>),
    ) -> Backends {
        let members = (upstream.backends.iter())
            .map(|backend| {
                let (client, state) = kept(backend);
                Member {
                    client: client
                        .unwrap_or_else(|| Arc::new(UpstreamClient::new(upstream, backend))),
                    state: state.unwrap_or_default(),
                    name_hash: pick::hash(backend.label.as_bytes()),
                }
            })
            .collect();
        let backends = Backends {
            members,
            in_flight: Arc::default(),
            bank: AtomicI64::new(if upstream.retry_budget > 0.0 {
                3 * TOKEN
            } else {
                0
            }),
            pins: Pins::default(),
            models_differ: AtomicBool::new(false),
            retries: Retries::default(),
        };
        // Backends kept from the table before keep the models their probes named.
        backends.note_models();
        backends
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Notes whether the backends' last probes named different models (after each probe).
    pub fn note_models(&self) {
        let mut all = self.members.iter().map(|m| m.state.models());
        let differ = all
            .next()
            .is_some_and(|first| all.any(|m| m.loaded != first.loaded || m.listed != first.listed));
        self.models_differ.store(differ, Ordering::Relaxed);
    }

    /// Whether any backend is in service.
    pub fn any_in_service(&self) -> bool {
        self.members.iter().any(|m| m.state.in_service())
    }

    /// Sends `req` to one of the backends, as [`UpstreamClient::send`] does to one, and
    /// to a second when the first fails before its first byte and the request can be sent
    /// again (see the module's doc).
    pub fn send<'a>(
        &'a self,
        upstream: &'a Upstream,
        req: Request,
        rules: &Forwarding<'_>,
        body_limit: u64,
    ) -> Sending<'a> {
        if let [only] = &self.members[..] {
            return only
                .client
                .send(upstream, &upstream.backends[0], req, rules, body_limit);
        }
        let (head, body) = req.into_parts();
        let forwarded = Forwarded::of(rules);
        let header = match &upstream.balance {
            Balance::Sticky { header } => (rules.client.and_then(|c| c.get(header)))
                .or_else(|| head.headers().get(header))
                .map(pick::hash),
            Balance::LeastLoaded => None,
        };
        let job = job_of(upstream, &head);
        let head = Head::of(head);
        Box::pin(async move {
            let content = Content::read(body, body_limit).await?;
            let by_model =
                upstream.speaks == Dialect::Native && self.models_differ.load(Ordering::Relaxed);
            let by_messages =
                header.is_none() && matches!(upstream.balance, Balance::Sticky { .. });
            let mut hints = content.hints(by_model, by_messages);
            hints.sticky = header.or(hints.sticky);
            hints.job = job;
            self.attempts(upstream, head, content, &forwarded, &hints, body_limit)
                .await
        })
    }

    /// A backend for a request that cannot be sent twice (a WebSocket upgrade, on `path`):
    /// its job's, else the pick's.
    pub fn one(&self, upstream: &Upstream, path: &str) -> usize {
        match pins::job(&Method::GET, path) {
            Some(pins::Job::Of(id)) => self.pins.get(id),
            _ => None,
        }
        .or_else(|| self.pick_in(upstream, &[], &Hints::default()))
        .unwrap_or(0)
    }

    async fn attempts(
        &self,
        upstream: &Upstream,
        head: Head,
        mut content: Content,
        forwarded: &Forwarded,
        hints: &Hints,
        body_limit: u64,
    ) -> Result<Response, ProxyError> {
        let mut tried = self.not_pinned(hints);
        let mut attempts = 0;
        self.deposit(upstream.retry_budget);
        loop {
            let Some(at) = self.pick_in(upstream, &tried, hints) else {
                return Err(no_backend(upstream));
            };
            tried.push(at);
            attempts += 1;
            let (member, backend) = (&self.members[at], &upstream.backends[at]);
            let counted = Counted::new(self, at);
            let req = head.request(content.next());
            let rules = forwarded.rules(upstream.auth.as_ref(), &backend.host);
            let started = clock::now();
            let sent = (member.client).send(upstream, backend, req, &rules, body_limit);
            let (result, outcome, first) = first_frame(upstream, sent.await).await;
            if outcome == Outcome::Ok {
                let after = clock::now().saturating_duration_since(started);
                member.state.first_byte(after);
                self.note_job(hints, at, &result, &first);
            }
            let others =
                (self.members.iter().enumerate()).any(|(i, m)| i != at && m.state.in_service());
            member.state.ended(outcome, &upstream.health, others);
            let untried = tried.len() < self.members.len();
            let again = untried
                && content.again()
                && (self.searching(hints, &result)
                    || (outcome != Outcome::Ok
                        && attempts == 1
                        && unacted(upstream, &head.method, &result)
                        && self.withdraw(self.retries.reason(&result))));
            if !again {
                return result.map(|response| response.map(|body| counted.hold(body)));
            }
        }
    }

    /// The backends a request about a pinned job must not go to: all but its job's.
    fn not_pinned(&self, hints: &Hints) -> Vec<usize> {
        let pinned = match &hints.job {
            Some(Job::Of(id)) => self.pins.get(id),
            _ => None,
        };
        match pinned {
            Some(at) => (0..self.members.len()).filter(|&i| i != at).collect(),
            None => Vec::with_capacity(2),
        }
    }

    /// Notes the backend of the job a good response started or found.
    fn note_job(
        &self,
        hints: &Hints,
        at: usize,
        result: &Result<Response, ProxyError>,
        first: &[u8],
    ) {
        let Ok(response) = result else {
            return;
        };
        if !response.status().is_success() {
            return;
        }
        match &hints.job {
            Some(Job::Start) => {
                if let Some(id) = webdata::job_id(first) {
                    self.pins.pin(&id, at);
                }
            }
            Some(Job::Of(id)) if self.pins.get(id).is_none() => self.pins.pin(id, at),
            _ => {}
        }
    }

    /// Whether a request about a job lingo has not noted got a 404: the job may be on another
    /// backend.
    fn searching(&self, hints: &Hints, result: &Result<Response, ProxyError>) -> bool {
        let unpinned = matches!(&hints.job, Some(Job::Of(id)) if self.pins.get(id).is_none());
        unpinned && matches!(result, Ok(r) if r.status() == StatusCode::NOT_FOUND)
    }

    /// The index of the backend for a request of `upstream`, among those not `tried`.
    fn pick_in(&self, upstream: &Upstream, tried: &[usize], hints: &Hints) -> Option<usize> {
        let seen: Vec<Candidate> = (self.members.iter().zip(&upstream.backends).enumerate())
            .map(|(i, (member, backend))| Candidate {
                in_flight: member.state.in_flight.load(Ordering::Relaxed),
                weight: backend.weight,
                priority: backend.priority,
                in_service: member.state.in_service(),
                model: fit(&member.state, hints.model.as_deref()),
                tried: tried.contains(&i),
                name_hash: member.name_hash,
            })
            .collect();
        pick::pick(&seen, random(), hints.sticky)
    }

    /// A request's share of a token, saved up to the larger of 3 and the budget's share of
    /// the requests in flight.
    fn deposit(&self, budget: f64) {
        if budget <= 0.0 {
            return;
        }
        let share = (budget * TOKEN as f64) as i64;
        let in_flight = self.in_flight.load(Ordering::Relaxed) as f64;
        let most = (3 * TOKEN).max((budget * in_flight * TOKEN as f64) as i64);
        let _ = (self.bank).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bank| {
            Some((bank + share).min(most.max(bank)))
        });
    }

    /// Takes a token for a retry (counted under `why`), or counts the budget as exhausted.
    fn withdraw(&self, why: &AtomicU64) -> bool {
        let taken = (self.bank).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bank| {
            (bank >= TOKEN).then_some(bank - TOKEN)
        });
        match taken {
            Ok(_) => why.fetch_add(1, Ordering::Relaxed),
            Err(_) => self
                .retries
                .budget_exhausted
                .fetch_add(1, Ordering::Relaxed),
        };
        taken.is_ok()
    }
}

impl Retries {
    /// The count a retry after `result` goes under.
    fn reason(&self, result: &Result<Response, ProxyError>) -> &AtomicU64 {
        match result {
            Err(ProxyError::Timeout { .. }) => &self.timeout,
            Err(_) => &self.unreachable,
            Ok(r) if is_busy(r.status()) => &self.busy,
            Ok(r) if r.status().is_server_error() => &self.server_error,
            Ok(_) => &self.error_line,
        }
    }
}

/// Whether a failed attempt can be sent again without doing twice what it asked: a model's
/// answer can (it changes nothing but the time it takes), and so can any request the backend
/// refused before acting on it (429, 503, a connection refused or not made in time); a
/// web-data request that changes something (a job started, a page scraped, credits spent)
/// may have been acted on otherwise.
fn unacted(upstream: &Upstream, method: &Method, result: &Result<Response, ProxyError>) -> bool {
    if !upstream.speaks.is_web_data() || method == Method::GET || method == Method::HEAD {
        return true;
    }
    match result {
        Ok(response) => is_busy(response.status()),
        Err(ProxyError::Timeout { kind, .. }) => *kind == TimeoutKind::Connect,
        Err(ProxyError::Unreachable { reason, .. }) => reason == "connection refused",
        Err(_) => false,
    }
}

/// How well `state`'s backend has `model`.
fn fit(state: &BackendState, model: Option<&str>) -> ModelFit {
    let Some(model) = model else {
        return ModelFit::Unknown;
    };
    let models = state.models();
    if models.loaded.contains(model) {
        ModelFit::Loaded
    } else if models.listed.contains(model) {
        ModelFit::Listed
    } else {
        ModelFit::Unknown
    }
}

/// 429 and 503: the backend is busy, not broken (a native server says 503 when its queue is
/// full).
fn is_busy(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE
}

/// The job a web-data request starts or asks about.
fn job_of(upstream: &Upstream, head: &Request<()>) -> Option<Job> {
    if !upstream.speaks.is_web_data() {
        return None;
    }
    let path = head.uri().path();
    let path = path
        .strip_prefix(upstream.base_path.as_str())
        .unwrap_or(path);
    match pins::job(head.method(), path)? {
        pins::Job::Start => Some(Job::Start),
        pins::Job::Of(id) => Some(Job::Of(id.to_owned())),
    }
}

fn no_backend(upstream: &Upstream) -> ProxyError {
    ProxyError::Unreachable {
        upstream: upstream.name.to_string(),
        reason: "no backend is left to try".into(),
        detail: String::new(),
    }
}

/// An attempt's result once its first frame is in (for a response that may still be
/// retried), and how it went for its backend's health.
async fn first_frame(
    upstream: &Upstream,
    sent: Result<Response, ProxyError>,
) -> (Result<Response, ProxyError>, Outcome, Bytes) {
    let response = match sent {
        Ok(response) => response,
        // The client's body: not the backend's fault.
        Err(
            err @ (ProxyError::BodyTooLarge { .. }
            | ProxyError::BadBody { .. }
            | ProxyError::BodyTimeout { .. }),
        ) => return (Err(err), Outcome::Ok, Bytes::new()),
        Err(err) => return (Err(err), Outcome::Failed, Bytes::new()),
    };
    let status = response.status();
    if is_busy(status) {
        return (Ok(response), Outcome::Busy, Bytes::new());
    }
    if status.is_server_error() {
        return (Ok(response), Outcome::Failed, Bytes::new());
    }
    let (head, mut body) = response.into_parts();
    let first = match body.frame().await {
        None => {
            let response = Response::from_parts(head, Body::empty());
            return (Ok(response), Outcome::Ok, Bytes::new());
        }
        Some(Err(err)) => {
            let err = super::classify_body_error(upstream, err.as_ref());
            return (Err(err), Outcome::Failed, Bytes::new());
        }
        Some(Ok(frame)) => frame,
    };
    let data = match first.into_data() {
        Ok(data) => data,
        Err(_) => Bytes::new(),
    };
    let outcome = match upstream.speaks == Dialect::Native && is_error_line(&data) {
        true => Outcome::Failed,
        false => Outcome::Ok,
    };
    let body = Body::boxed(Prepend::new(data.clone(), body));
    (Ok(Response::from_parts(head, body)), outcome, data)
}

/// A native server's error, put on a `200` stream's first line: `{"error":...}`.
fn is_error_line(data: &[u8]) -> bool {
    let object = data.trim_ascii_start().strip_prefix(b"{");
    object.is_some_and(|rest| rest.trim_ascii_start().starts_with(b"\"error\""))
}

/// A request's head, kept to be sent again.
struct Head {
    method: hyper::Method,
    uri: hyper::Uri,
    version: hyper::Version,
    headers: hyper::HeaderMap,
}

impl Head {
    fn of(mut head: Request<()>) -> Head {
        Head {
            method: std::mem::take(head.method_mut()),
            uri: std::mem::take(head.uri_mut()),
            version: head.version(),
            headers: std::mem::take(head.headers_mut()),
        }
    }

    fn request(&self, body: Body) -> Request {
        let mut req = Request::new(body);
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// The header rules a request goes up by, kept to be applied again for another backend: what
/// they add, and the client's fields (kept raw when they were: sharing their bytes).
struct Forwarded {
    client: Option<crate::http::h1::raw::Headers>,
    raw_response: bool,
    /// The upstream's key goes up (every request to an upstream with one says so).
    auth: bool,
    client_ip: hyper::header::HeaderValue,
    proto: &'static str,
    client_host: Option<hyper::header::HeaderValue>,
    request_id: hyper::header::HeaderValue,
    upgrade: bool,
    identity: bool,
    json: bool,
}

impl Forwarded {
    fn of(rules: &Forwarding<'_>) -> Forwarded {
        Forwarded {
            client: rules.client.map(HeaderView::to_headers),
            raw_response: rules.raw_response,
            auth: rules.auth.is_some(),
            client_ip: rules.client_ip.clone(),
            proto: rules.proto,
            client_host: rules.client_host.cloned(),
            request_id: rules.request_id.clone(),
            upgrade: rules.upgrade,
            identity: rules.identity,
            json: rules.json,
        }
    }

    fn rules<'r>(
        &'r self,
        auth: Option<&'r Auth>,
        host: &'r hyper::header::HeaderValue,
    ) -> Forwarding<'r> {
        Forwarding {
            host,
            client_ip: &self.client_ip,
            proto: self.proto,
            client_host: self.client_host.as_ref(),
            request_id: &self.request_id,
            auth: auth.filter(|_| self.auth),
            upgrade: self.upgrade,
            identity: self.identity,
            json: self.json,
            raw_response: self.raw_response,
            client: self.client.as_ref().map(HeaderView::from),
        }
    }
}

/// A request's body: whole, to be sent as often as needed, or a stream sent once.
enum Content {
    Whole(Bytes),
    Once(Option<Body>),
}

impl Content {
    /// Reads `body` whole when its length is known and at most [`REPLAY_LIMIT`].
    async fn read(body: Body, body_limit: u64) -> Result<Content, ProxyError> {
        match body.size_hint().exact() {
            Some(n) if n <= REPLAY_LIMIT => {
                let read = read_all(body, usize::try_from(n).unwrap_or(usize::MAX)).await;
                let whole = read.map_err(|err| client_body(err.as_ref(), body_limit))?;
                Ok(Content::Whole(whole))
            }
            _ => Ok(Content::Once(Some(body))),
        }
    }

    /// The body for the next attempt.
    fn next(&mut self) -> Body {
        match self {
            Content::Whole(bytes) if bytes.is_empty() => Body::empty(),
            Content::Whole(bytes) => Body::full(bytes.clone()),
            Content::Once(body) => body.take().unwrap_or_default(),
        }
    }

    /// Whether it can be sent again.
    fn again(&self) -> bool {
        matches!(self, Content::Whole(_))
    }

    /// What the pick reads of a JSON body: the model it names (`by_model`: a native upstream
    /// whose backends' probes named different models; elsewhere the model cannot change the
    /// pick), and a hash of its first two messages, the conversation's start (its system
    /// prompt and first question), for a sticky balance without its session header
    /// (`by_messages`).
    fn hints(&self, by_model: bool, by_messages: bool) -> Hints {
        /// The model, and the messages when they are read (each is checked as it is kept;
        /// skipped, they are only scanned).
        #[derive(serde::Deserialize)]
        struct Named<'a, M> {
            #[serde(borrow)]
            model: Option<std::borrow::Cow<'a, str>>,
            messages: Option<M>,
        }
        type Messages<'a> = Vec<&'a serde_json::value::RawValue>;
        let Content::Whole(bytes) = self else {
            return Hints::default();
        };
        let (model, sticky) = match (by_messages, by_model) {
            (true, _) => match serde_json::from_slice::<Named<'_, Messages<'_>>>(bytes) {
                Ok(named) => (named.model, named.messages.as_deref().and_then(start_hash)),
                Err(_) => return Hints::default(),
            },
            (false, true) => match serde_json::from_slice::<Named<'_, IgnoredAny>>(bytes) {
                Ok(named) => (named.model, None),
                Err(_) => return Hints::default(),
            },
            (false, false) => return Hints::default(),
        };
        Hints {
            model: model.map(|m| m.into_owned()),
            sticky,
            job: None,
        }
    }
}

/// A hash of a conversation's first two messages (its system prompt and first question).
fn start_hash(messages: &[&serde_json::value::RawValue]) -> Option<u64> {
    let start = messages.iter().take(2).map(|m| m.get());
    (!messages.is_empty()).then(|| start.fold(0, |h, m| pick::mix(h ^ pick::hash(m.as_bytes()))))
}

/// A request counted in flight on its backend (and its upstream) until its response's body
/// ends or is dropped.
struct Counted {
    state: Arc<BackendState>,
    upstream: Arc<AtomicUsize>,
}

impl Counted {
    fn new(backends: &Backends, at: usize) -> Counted {
        let state = Arc::clone(&backends.members[at].state);
        state.in_flight.fetch_add(1, Ordering::Relaxed);
        backends.in_flight.fetch_add(1, Ordering::Relaxed);
        Counted {
            state,
            upstream: Arc::clone(&backends.in_flight),
        }
    }

    /// `body`, counted to its end; a failure in it is counted against the backend.
    fn hold(self, body: Body) -> Body {
        Body::boxed(CountedBody {
            body,
            counted: self,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.state.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.upstream.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body counted in flight.
struct CountedBody {
    body: Body,
    counted: Counted,
}

impl http_body::Body for CountedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Err(_))) = &polled {
            let counts = &self.counted.state.counts;
            counts
                .failed_after_first_byte
                .fetch_add(1, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Fresh random bits for the pick, from a per-thread sequence seeded once.
fn random() -> u64 {
    thread_local! {
        static NEXT: std::cell::Cell<u64> = std::cell::Cell::new({
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0_u64)
        });
    }
    NEXT.with(|next| {
        let x = next.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        next.set(x);
        pick::mix(x)
    })
}
