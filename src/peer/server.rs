//! The peer endpoint: answers signed `POST /v1/contact` questions with this node's own view of
//! the API server (the `answer` closure), signed and bound to the question's nonce.
//!
//! Everything an unauthenticated stranger can make it do is bounded, cheapest check first: a
//! token bucket per source address on the request rate (before any HMAC work), 64 connections at most (8 per source), 5 s to send a
//! request head (idle keep-alive connections included), 4 KiB of body read at most (a longer
//! declared length is refused before reading any of it), and a replay cache of fixed size. Each
//! refusal is answered, counted by reason and logged — at most once per reason per minute, so a
//! flood cannot flood the journal.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::core::fence_plan::FencePod;
use crate::core::quorum::{NodeRead, PeerReport, ZoneRecord};
use crate::peer::auth::{self, Key};
use crate::peer::counters::{PeerCounters, Rejection};
use crate::peer::{Answer, MAX_ANSWER_BODY, MAX_BODY, Question};

/// What this node says when asked the (checked) question; called once per accepted question,
/// never for a refused one. Called on the server's task: it must return at once (read a snapshot,
/// never wait on I/O).
pub type AnswerFn = Arc<dyn Fn(&Question) -> PeerReport + Send + Sync>;

/// Reads the kubelet Lease of the node named (`kube-node-lease/<node>`) for a question that asks
/// for it (`Question::lease`): its `renewTime`, or `None` when the read failed or the Lease has
/// none. The server bounds it by [`Limits::lease_read`] and asks it only while its own answer
/// says "reachable".
pub type LeaseFn = Arc<
    dyn Fn(String) -> std::pin::Pin<Box<dyn Future<Output = Option<SystemTime>> + Send>>
        + Send
        + Sync,
>;

/// Reads the Node named for a question that asks for it (`Question::taint`): whether it carries
/// `node.kubernetes.io/unreachable:NoExecute`, with the taint's and the Ready=Unknown's times
/// (`core::quorum::NodeRead`), or `None` when the read failed. Bounded and asked as [`LeaseFn`]
/// is.
pub type TaintFn = Arc<
    dyn Fn(String) -> std::pin::Pin<Box<dyn Future<Output = Option<NodeRead>> + Send>>
        + Send
        + Sync,
>;

/// Lists the pods bound to the node named, for a question that asks about some of them
/// (`Question::pods`): those of the UIDs given that the list holds, or `None` when the list
/// failed or was not whole. Bounded and asked as [`LeaseFn`] is.
pub type PodsFn = Arc<
    dyn Fn(
            String,
            Vec<String>,
        ) -> std::pin::Pin<Box<dyn Future<Output = Option<Vec<FencePod>>> + Send>>
        + Send
        + Sync,
>;

/// Reads the zone of the node named, whose zone key is given, as the API server records it, for
/// a question that asks for it (`Question::zone_record`, `core::quorum::ZoneRecord`): `None` when
/// the list failed, was cut short, or did not hold the asker in that zone. Bounded by
/// [`Limits::zone_read`] and asked as [`LeaseFn`] is. The reader keeps each zone's list for a
/// moment and answers every asker of the zone from it (`api::node::NodeTaints::zone_record`):
/// the askers of a partition all choose the same few readers.
pub type ZoneFn = Arc<
    dyn Fn(String, String) -> std::pin::Pin<Box<dyn Future<Output = Option<ZoneRecord>> + Send>>
        + Send
        + Sync,
>;

/// What the server reads from the API server for an asker that asks (each optional: without
/// one, such a question is answered without that read).
#[derive(Clone, Default)]
pub struct Reads {
    pub lease: Option<LeaseFn>,
    pub taint: Option<TaintFn>,
    pub pods: Option<PodsFn>,
    pub zone: Option<ZoneFn>,
}

/// The server's bounds. [`Limits::default`] is what the agent runs with; tests and the benchmark
/// change one at a time.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Questions per second, sustained, from one source address. A zone asks each peer at most
    /// once per fence re-evaluation (every few seconds) per cut-off node. Per source, so that a
    /// flood from one address cannot silence the real peers (silence counts as health in the
    /// quorum: a flooder could otherwise turn a hold into enforce).
    pub rate_per_second: f64,
    /// Questions allowed at once above the rate, per source address.
    pub burst: u32,
    /// Source addresses with a bucket at most; when all are in use, questions from new
    /// addresses are refused until an idle bucket (full again) can be reused.
    pub max_sources: usize,
    /// Connections served at once; more are closed at accept.
    pub max_connections: usize,
    /// Connections served at once from one source address.
    pub max_connections_per_source: usize,
    /// Time to send a request head, and between requests on a kept-alive connection; also the
    /// time allowed to send the (small) body.
    pub idle_timeout: Duration,
    /// How long a used nonce is remembered. At least twice [`auth::MAX_SKEW`] plus the rounding
    /// of timestamps to seconds, so a question is stale before its nonce is forgotten.
    pub replay_window: Duration,
    /// Nonces remembered at most. With the default rate and window the cache never fills
    /// (50/s × 62 s + 100 = 3,200 < 4,096); if it does, questions are refused, never let through.
    pub replay_capacity: usize,
    /// Least time between two log records of one refusal reason.
    pub log_interval: Duration,
    /// How long a question that asks for the asker's kubelet Lease waits for its read before it
    /// is answered without it: well within the asker's `[peers] timeout` (1 s by default).
    pub lease_read: Duration,
    /// The same for the asker's Node (`Question::taint`), read beside the Lease. Every question
    /// of a round asks for it, so it is shorter: a peer whose own link to the API server has just
    /// begun to hang still says "reachable" for a while, and a read that waited as long as the
    /// Lease's would make its answer late, and the peer silent, to an asker with a short
    /// timeout. An API server that answers does so in milliseconds.
    pub node_read: Duration,
    /// The same for the list of the asker's pods (`Question::pods`), read beside the other two,
    /// and as short as the Node's for the same reason.
    pub pods_read: Duration,
    /// Lists of an asker's pods made at once at most: each is of every pod bound to a node (an
    /// honest asker has three peers list them in a round, once a partition), and a holder of the
    /// key must not turn a burst of questions into as many lists on the API server. A question
    /// that finds none free is answered without the list, and asked again next round.
    pub pod_lists_at_once: usize,
    /// How long a question that asks for the asker's zone as recorded waits for its list (of at
    /// most `zone::RECORD_SCAN` Nodes, in pages) before it is answered without it: as short as
    /// the Node's, for the same reason (the lab's test of the API server down in two zones caught
    /// a 500 ms bound making the one peer of the other zone, asked for the record, late and
    /// so silent to an asker with a 500 ms timeout, and silence counts as reaching the API
    /// server).
    pub zone_read: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            rate_per_second: 50.0,
            burst: 100,
            max_sources: 1024,
            max_connections: 64,
            max_connections_per_source: 8,
            idle_timeout: Duration::from_secs(5),
            replay_window: 2 * auth::MAX_SKEW + Duration::from_secs(2),
            replay_capacity: 4096,
            log_interval: Duration::from_secs(60),
            lease_read: Duration::from_millis(500),
            node_read: Duration::from_millis(200),
            pods_read: Duration::from_millis(200),
            pod_lists_at_once: 2,
            zone_read: Duration::from_millis(200),
        }
    }
}

/// Serves the peer endpoint on `listener` with the default [`Limits`] until the future is
/// dropped (or its task aborted); every connection task goes with it.
pub async fn serve(
    listener: TcpListener,
    key: Arc<Key>,
    answer: AnswerFn,
    counters: Arc<PeerCounters>,
) {
    serve_with_limits(listener, key, answer, counters, Limits::default()).await;
}

/// [`serve`] with other bounds.
pub async fn serve_with_limits(
    listener: TcpListener,
    key: Arc<Key>,
    answer: AnswerFn,
    counters: Arc<PeerCounters>,
    limits: Limits,
) {
    serve_reading(listener, key, answer, Reads::default(), counters, limits).await;
}

/// [`serve_with_limits`], reading an asker's kubelet Lease, Node and pods with `reads` for a
/// question that asks for them.
pub async fn serve_reading(
    listener: TcpListener,
    key: Arc<Key>,
    answer: AnswerFn,
    reads: Reads,
    counters: Arc<PeerCounters>,
    limits: Limits,
) {
    let shared = Arc::new(Shared {
        key,
        answer,
        reads,
        counters,
        buckets: Mutex::new(Buckets::default()),
        open: Mutex::new(HashMap::new()),
        replay: Mutex::new(ReplayCache::new(
            limits.replay_window,
            limits.replay_capacity,
        )),
        log: Mutex::new(LogLimiter::new(limits.log_interval)),
        pod_lists: Arc::new(tokio::sync::Semaphore::new(limits.pod_lists_at_once)),
        limits,
    });
    // Owned here so that dropping `serve` aborts every connection with it.
    let mut connections = JoinSet::new();
    loop {
        let accepted = listener.accept().await;
        while connections.try_join_next().is_some() {}
        let (stream, remote) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, mostly: retrying at once would spin on the CPU.
                if let Some(suppressed) = shared.admit_log("accept") {
                    log::warn!(error = e.to_string().as_str(); "peer endpoint: accept failed: {e}{}", more(suppressed));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if connections.len() >= shared.limits.max_connections {
            shared.refuse(Rejection::RateLimited, remote.ip(), "too many connections");
            drop(stream);
            continue;
        }
        let Some(slot) = Slot::take(&shared, remote.ip()) else {
            shared.refuse(
                Rejection::RateLimited,
                remote.ip(),
                "too many connections from this address",
            );
            drop(stream);
            continue;
        };
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            connection(stream, remote, shared).await;
            drop(slot);
        });
    }
}

/// What every connection task shares.
struct Shared {
    key: Arc<Key>,
    answer: AnswerFn,
    reads: Reads,
    counters: Arc<PeerCounters>,
    buckets: Mutex<Buckets>,
    /// Open connections per source address.
    open: Mutex<HashMap<IpAddr, usize>>,
    replay: Mutex<ReplayCache>,
    log: Mutex<LogLimiter>,
    /// One permit per list of an asker's pods made at once (`Limits::pod_lists_at_once`).
    pod_lists: Arc<tokio::sync::Semaphore>,
    limits: Limits,
}

/// A refusal: the reason counted and logged, the status answered, and a detail for the log.
struct Refusal {
    reason: Rejection,
    status: StatusCode,
    detail: &'static str,
}

fn refusal(reason: Rejection, status: StatusCode, detail: &'static str) -> Refusal {
    Refusal {
        reason,
        status,
        detail,
    }
}

async fn connection(stream: TcpStream, remote: SocketAddr, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let idle = shared.limits.idle_timeout;
    let peer = remote.ip();
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(shared.handle(request, peer).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        // hyper's smallest read buffer: a question's head and body fit many times over.
        .max_buf_size(8 * 1024);
    // The peer closing, timing out or sending garbage ends only this connection.
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

impl Shared {
    fn admit_log(&self, reason: &'static str) -> Option<u64> {
        lock(&self.log).admit(reason, Instant::now())
    }

    fn refuse(&self, reason: Rejection, peer: IpAddr, detail: &str) {
        self.counters.record_rejected(reason);
        if let Some(suppressed) = self.admit_log(reason.label()) {
            log::warn!(
                peer = peer.to_string().as_str(), reason = reason.label();
                "peer question from {peer} refused ({}): {detail}{}", reason.label(), more(suppressed)
            );
        }
    }

    async fn handle(&self, request: Request<Incoming>, peer: IpAddr) -> Response<Full<Bytes>> {
        match self.answer_to(request, peer).await {
            Ok(response) => {
                self.counters.record_accepted();
                response
            }
            Err(r) => {
                self.refuse(r.reason, peer, r.detail);
                plain(r.status, r.reason.label())
            }
        }
    }

    async fn answer_to(
        &self,
        request: Request<Incoming>,
        peer: IpAddr,
    ) -> Result<Response<Full<Bytes>>, Refusal> {
        use Rejection::*;
        // The rate first: it costs a lock and a subtraction, where everything after it may
        // cost an HMAC.
        if !lock(&self.buckets).try_take(peer, Instant::now(), &self.limits) {
            return Err(refusal(
                RateLimited,
                StatusCode::TOO_MANY_REQUESTS,
                "over the request rate",
            ));
        }
        if request.uri().path() != auth::PATH {
            return Err(refusal(BadRequest, StatusCode::NOT_FOUND, "unknown path"));
        }
        if request.method() != Method::POST {
            return Err(refusal(
                BadRequest,
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed",
            ));
        }
        let headers = request.headers();
        let (Some(timestamp), Some(nonce), Some(signature)) = (
            header(headers, auth::TIMESTAMP_HEADER).and_then(auth::parse_timestamp),
            header(headers, auth::NONCE_HEADER).filter(|n| auth::parse_nonce(n).is_some()),
            header(headers, auth::SIGNATURE_HEADER),
        ) else {
            return Err(refusal(
                Unsigned,
                StatusCode::UNAUTHORIZED,
                "signature headers missing or malformed",
            ));
        };
        let (nonce, signature) = (nonce.to_string(), signature.to_string());
        // A declared length over the limit is refused before a byte of the body is read.
        let declared = header(headers, CONTENT_LENGTH.as_str()).map(str::parse::<u64>);
        if matches!(declared, Some(Ok(n)) if n > MAX_BODY as u64) {
            return Err(refusal(
                TooLarge,
                StatusCode::PAYLOAD_TOO_LARGE,
                "declared body over 4 KiB",
            ));
        }
        let now = auth::unix_now(SystemTime::now());
        if !auth::is_fresh(timestamp, now) {
            return Err(refusal(
                Stale,
                StatusCode::UNAUTHORIZED,
                "timestamp more than 30 s from our clock",
            ));
        }
        let body = Limited::new(request.into_body(), MAX_BODY).collect();
        let body = match tokio::time::timeout(self.limits.idle_timeout, body).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return Err(refusal(
                    TooLarge,
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body over 4 KiB",
                ));
            }
            Ok(Err(_)) | Err(_) => {
                return Err(refusal(
                    BadRequest,
                    StatusCode::BAD_REQUEST,
                    "body not received whole",
                ));
            }
        };
        let message = auth::question_message(timestamp, &nonce, &body);
        if !self.key.verify(message.as_bytes(), &signature) {
            return Err(refusal(
                BadSignature,
                StatusCode::UNAUTHORIZED,
                "signature does not match (another key, or the question was altered)",
            ));
        }
        // Only signed questions reach the cache, so strangers cannot fill it.
        let seen =
            auth::parse_nonce(&nonce).map(|n| lock(&self.replay).remember(n, Instant::now()));
        match seen {
            Some(Remembered::New) => {}
            Some(Remembered::Replayed) => {
                return Err(refusal(
                    Replayed,
                    StatusCode::UNAUTHORIZED,
                    "nonce already used",
                ));
            }
            Some(Remembered::Full) | None => {
                return Err(refusal(
                    RateLimited,
                    StatusCode::TOO_MANY_REQUESTS,
                    "replay cache full",
                ));
            }
        }
        let question: Question = serde_json::from_slice(&body).map_err(|_| {
            refusal(
                BadRequest,
                StatusCode::BAD_REQUEST,
                "body is not a question",
            )
        })?;
        log::debug!(
            peer = peer.to_string().as_str(), from = question.from.as_str(), zone = question.zone.as_str(), back = question.back, lease = question.lease, taint = question.taint, zone_record = question.zone_record;
            "peer question from {} ({peer}) answered", question.from
        );
        let mut report = (self.answer)(&question);
        // The asker's kubelet Lease, Node and pods, read now that the question is here: only by
        // a node that reaches the API server, side by side, and never longer than their bounds.
        let limits = &self.limits;
        let (lease_bound, node_bound) = (limits.lease_read, limits.node_read);
        let lease = self
            .reads
            .lease
            .as_ref()
            .filter(|_| question.lease && report.reachable)
            .map(|read| read(question.from.clone()));
        let taint = self
            .reads
            .taint
            .as_ref()
            .filter(|_| question.taint && report.reachable)
            .map(|read| read(question.from.clone()));
        // A list only with a permit, held until the list ends or its bound does.
        let permit = (!question.pods.is_empty() && report.reachable)
            .then(|| Arc::clone(&self.pod_lists).try_acquire_owned().ok())
            .flatten();
        let pods = self
            .reads
            .pods
            .as_ref()
            .filter(|_| permit.is_some())
            .map(|read| read(question.from.clone(), question.pods.clone()));
        let zone = self
            .reads
            .zone
            .as_ref()
            .filter(|_| question.zone_record && report.reachable)
            .map(|read| read(question.from.clone(), question.zone.clone()));
        (
            report.kubelet_renewed,
            report.node_read,
            report.pods,
            report.zone_recorded,
        ) = tokio::join!(
            read_within(lease_bound, lease),
            read_within(node_bound, taint),
            read_within(limits.pods_read, pods),
            read_within(limits.zone_read, zone)
        );
        drop(permit);
        Ok(self.signed_answer(&mut report, &nonce))
    }

    /// The answer, signed. Pods listed for the asker that would take it past
    /// [`MAX_ANSWER_BODY`] are all left out, as if not listed: a part of them would tell the
    /// asker that the rest are not in the API.
    fn signed_answer(&self, report: &mut PeerReport, nonce: &str) -> Response<Full<Bytes>> {
        let mut body = serde_json::to_vec(&Answer::from(&*report));
        if body.as_ref().is_ok_and(|b| b.len() > MAX_ANSWER_BODY) && report.pods.take().is_some() {
            body = serde_json::to_vec(&Answer::from(&*report));
        }
        let Ok(body) = body else {
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal");
        };
        let timestamp = auth::unix_now(SystemTime::now());
        let signature = self
            .key
            .sign(auth::answer_message(nonce, timestamp, &body).as_bytes());
        let Ok(signature) = HeaderValue::try_from(signature) else {
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal");
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            HeaderName::from_static(auth::TIMESTAMP_HEADER),
            HeaderValue::from(timestamp),
        );
        headers.insert(HeaderName::from_static(auth::SIGNATURE_HEADER), signature);
        response
    }
}

/// A read for an asker ([`Reads`]), if asked, or nothing once `bound` has passed.
async fn read_within<T>(
    bound: Duration,
    read: Option<std::pin::Pin<Box<dyn Future<Output = Option<T>> + Send>>>,
) -> Option<T> {
    match read {
        Some(read) => tokio::time::timeout(bound, read).await.ok().flatten(),
        None => None,
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn more(suppressed: u64) -> String {
    if suppressed == 0 {
        String::new()
    } else {
        format!(" ({suppressed} more since the last record of this reason)")
    }
}

/// A poisoned lock only means a panic elsewhere mid-update; the bucket, cache and log times
/// stay usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// One open connection of a source address, given back when dropped.
struct Slot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl Slot {
    fn take(shared: &Arc<Shared>, ip: IpAddr) -> Option<Slot> {
        let mut open = lock(&shared.open);
        let n = open.entry(ip).or_default();
        if *n >= shared.limits.max_connections_per_source {
            return None;
        }
        *n += 1;
        Some(Slot {
            shared: Arc::clone(shared),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = lock(&self.shared.open);
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A token bucket per source address, at most `max_sources` of them.
#[derive(Debug, Default)]
struct Buckets {
    by_source: HashMap<IpAddr, TokenBucket>,
}

impl Buckets {
    fn try_take(&mut self, source: IpAddr, now: Instant, limits: &Limits) -> bool {
        if !self.by_source.contains_key(&source) && self.by_source.len() >= limits.max_sources {
            // A bucket that has filled up again holds no memory of a burst: forget those.
            self.by_source.retain(|_, b| !b.is_full(now));
            if self.by_source.len() >= limits.max_sources {
                return false;
            }
        }
        self.by_source
            .entry(source)
            .or_insert_with(|| TokenBucket::new(limits.rate_per_second, limits.burst, now))
            .try_take(now)
    }
}

/// A token bucket: `rate` tokens per second, at most `burst` saved.
#[derive(Debug)]
struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64, burst: u32, now: Instant) -> TokenBucket {
        TokenBucket {
            rate,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: now,
        }
    }

    /// Whether it would be back at `burst` tokens at `now`.
    fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens + elapsed * self.rate >= self.burst
    }

    /// Takes one token if there is one.
    fn try_take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What remembering a nonce found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Remembered {
    New,
    Replayed,
    /// The cache holds `capacity` nonces none of which has expired: refused, because evicting
    /// one would let its replay through.
    Full,
}

/// The nonces of accepted questions, each kept for the replay window, in arrival order.
#[derive(Debug)]
struct ReplayCache {
    window: Duration,
    capacity: usize,
    seen: HashSet<[u8; 16]>,
    order: VecDeque<(Instant, [u8; 16])>,
}

impl ReplayCache {
    fn new(window: Duration, capacity: usize) -> ReplayCache {
        ReplayCache {
            window,
            capacity,
            seen: HashSet::with_capacity(capacity.min(4096)),
            order: VecDeque::with_capacity(capacity.min(4096)),
        }
    }

    fn remember(&mut self, nonce: [u8; 16], now: Instant) -> Remembered {
        // Arrival order is time order, so the expired ones are at the front.
        while let Some(&(at, old)) = self.order.front() {
            if now.saturating_duration_since(at) < self.window {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&old);
        }
        if self.seen.contains(&nonce) {
            return Remembered::Replayed;
        }
        if self.order.len() >= self.capacity {
            return Remembered::Full;
        }
        self.seen.insert(nonce);
        self.order.push_back((now, nonce));
        Remembered::New
    }
}

/// At most one log record per reason per interval, counting the ones it held back.
#[derive(Debug)]
struct LogLimiter {
    interval: Duration,
    last: HashMap<&'static str, (Instant, u64)>,
}

impl LogLimiter {
    fn new(interval: Duration) -> LogLimiter {
        LogLimiter {
            interval,
            last: HashMap::new(),
        }
    }

    /// `Some(records held back since the last one)` when a record of `reason` may be written
    /// now; `None` (and one more held back) otherwise.
    fn admit(&mut self, reason: &'static str, now: Instant) -> Option<u64> {
        match self.last.get_mut(reason) {
            Some((at, held)) if now.saturating_duration_since(*at) < self.interval => {
                *held += 1;
                None
            }
            Some((at, held)) => {
                let suppressed = *held;
                *at = now;
                *held = 0;
                Some(suppressed)
            }
            None => {
                self.last.insert(reason, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_bucket_allows_the_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(50.0, 100, t0);
        let taken = (0..1000).filter(|_| b.try_take(t0)).count();
        assert_eq!(taken, 100, "the burst, all at once");
        // One second later: 50 more, not 100.
        let t1 = t0 + S;
        let taken = (0..1000).filter(|_| b.try_take(t1)).count();
        assert_eq!(taken, 50);
        // An hour idle saves no more than the burst.
        let t2 = t1 + 3600 * S;
        let taken = (0..1000).filter(|_| b.try_take(t2)).count();
        assert_eq!(taken, 100);
        // A clock read out of order between threads refills nothing and breaks nothing.
        assert!(!b.try_take(t1));
    }

    #[test]
    fn each_source_has_its_own_bucket_and_idle_ones_make_room() {
        let limits = Limits {
            max_sources: 2,
            ..Limits::default()
        };
        let (a, b, c): (IpAddr, IpAddr, IpAddr) = (
            "10.0.0.1".parse().expect("ip"),
            "10.0.0.2".parse().expect("ip"),
            "10.0.0.3".parse().expect("ip"),
        );
        let t0 = Instant::now();
        let mut buckets = Buckets::default();
        let taken = (0..1000)
            .filter(|_| buckets.try_take(a, t0, &limits))
            .count();
        assert_eq!(taken, 100, "a flood from a drains a's bucket only");
        assert!(buckets.try_take(b, t0, &limits), "b is served");
        // Two sources known, both mid-burst: a third is refused rather than let in unlimited.
        assert!(!buckets.try_take(c, t0, &limits));
        // Once a's and b's buckets are full again they are forgotten and c gets one.
        assert!(buckets.try_take(c, t0 + 3 * S, &limits));
        assert!(buckets.by_source.len() <= 2);
    }

    #[test]
    fn a_nonce_is_refused_again_within_the_window_and_forgotten_after() {
        let t0 = Instant::now();
        let mut c = ReplayCache::new(60 * S, 4096);
        assert_eq!(c.remember([1; 16], t0), Remembered::New);
        assert_eq!(c.remember([1; 16], t0 + 59 * S), Remembered::Replayed);
        assert_eq!(c.remember([2; 16], t0 + 59 * S), Remembered::New);
        assert_eq!(c.remember([1; 16], t0 + 60 * S), Remembered::New);
        assert_eq!(c.remember([2; 16], t0 + 60 * S), Remembered::Replayed);
    }

    #[test]
    fn a_full_cache_refuses_rather_than_forgetting_an_unexpired_nonce() {
        let t0 = Instant::now();
        let mut c = ReplayCache::new(60 * S, 3);
        for i in 0..3u8 {
            assert_eq!(c.remember([i; 16], t0), Remembered::New);
        }
        assert_eq!(c.remember([9; 16], t0 + S), Remembered::Full);
        // Every remembered nonce is still refused: none was evicted to make room.
        for i in 0..3u8 {
            assert_eq!(c.remember([i; 16], t0 + S), Remembered::Replayed);
        }
        // Once they expire there is room again.
        assert_eq!(c.remember([9; 16], t0 + 60 * S), Remembered::New);
        assert_eq!(c.order.len(), 1);
    }

    #[test]
    fn the_default_cache_never_fills_at_the_default_rate() {
        let l = Limits::default();
        let most = l.rate_per_second * l.replay_window.as_secs_f64() + f64::from(l.burst);
        assert!(most < l.replay_capacity as f64, "{most}");
        assert!(l.replay_window >= 2 * auth::MAX_SKEW + S);
    }

    #[test]
    fn a_reason_is_logged_once_per_interval_with_the_count_held_back() {
        let t0 = Instant::now();
        let mut l = LogLimiter::new(60 * S);
        assert_eq!(l.admit("stale", t0), Some(0));
        let held = (0..10_000)
            .filter(|_| l.admit("stale", t0 + 30 * S).is_none())
            .count();
        assert_eq!(held, 10_000);
        // Another reason has its own minute.
        assert_eq!(l.admit("replayed", t0 + 30 * S), Some(0));
        assert_eq!(l.admit("stale", t0 + 59 * S), None);
        assert_eq!(l.admit("stale", t0 + 60 * S), Some(10_001));
        assert_eq!(l.admit("stale", t0 + 61 * S), None);
    }
}
