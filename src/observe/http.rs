//! The health and metrics endpoint: `/healthz` (liveness: the sampling loop ticked recently),
//! `/readyz` (configuration loaded and first sample taken; connected, also a pod view that keeps
//! up with contact: `core::pod_view`), `/metrics` (Prometheus text).
//!
//! HTTP/1.1 on hyper (already in the tree for the peer endpoint): GET/HEAD only, one request per
//! connection, the request head bounded in size (8 KiB: larger is answered 431) and time, each
//! connection bounded in time and their number capped, so a stuck or hostile client costs one
//! short-lived task and nothing else. It listens on loopback by default.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::observe::metrics::{Metrics, ProcessStats};

/// The request head at most (hyper's smallest read buffer).
const MAX_HEAD: usize = 8 * 1024;
/// Time to send the request head, and for the whole exchange.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once; more are closed at accept. A scraper and a probe or two is the
/// normal load.
const MAX_CONNECTIONS: usize = 64;

/// What the endpoints report, shared with the sampling loop.
#[derive(Debug)]
pub struct Health {
    /// Monotonic milliseconds of the last sampling-loop tick (0 = never).
    last_tick_ms: AtomicU64,
    /// The first sample has been taken.
    sampled: AtomicBool,
    /// Connected mode: readiness also needs one successful API round trip.
    needs_api: AtomicBool,
    api_ok: AtomicBool,
    /// A tick older than this means the loop is wedged.
    liveness_window: Duration,
    origin: tokio::time::Instant,
    /// Connected: how current the fence's pod view is.
    pod_view: std::sync::OnceLock<PodViewHealth>,
    pub metrics: Metrics,
}

/// What `/readyz` and `/metrics` read of the pod view, at each request (nothing wakes for it).
#[derive(Debug)]
pub struct PodViewHealth {
    pub view: Arc<crate::api::watch_view::ViewTracker>,
    pub reach: Arc<crate::api::reachability::Reachability>,
    /// `core::pod_view::bound` of the request timeout.
    pub bound: Duration,
}

impl PodViewHealth {
    /// Whether the view lags contact by more than the bound (`core::pod_view::lagging`).
    pub fn lagging(&self) -> bool {
        let reachable_since = (self.reach.state() == crate::api::reachability::State::Reachable)
            .then(|| self.reach.state_age())
            .flatten()
            .map(|age| tokio::time::Instant::now() - age);
        self.view.lagging(reachable_since, self.bound)
    }
}

impl Health {
    pub fn new(liveness_window: Duration) -> Health {
        Health {
            last_tick_ms: AtomicU64::new(0),
            sampled: AtomicBool::new(false),
            needs_api: AtomicBool::new(false),
            api_ok: AtomicBool::new(false),
            liveness_window,
            origin: tokio::time::Instant::now(),
            pod_view: std::sync::OnceLock::new(),
            metrics: Metrics::default(),
        }
    }

    /// Called by the sampling loop on every wake-up.
    pub fn tick(&self) {
        let ms = self.origin.elapsed().as_millis() as u64;
        self.last_tick_ms.store(ms.max(1), Ordering::Relaxed);
    }

    /// Called once the first sample has been taken.
    pub fn set_sampled(&self) {
        self.sampled.store(true, Ordering::Relaxed);
    }

    pub fn sampled(&self) -> bool {
        self.sampled.load(Ordering::Relaxed)
    }

    /// Connected mode: readiness waits for the first successful API round trip too.
    pub fn require_api(&self) {
        self.needs_api.store(true, Ordering::Relaxed);
    }

    /// Called after the first successful API round trip.
    pub fn set_api_ok(&self) {
        self.api_ok.store(true, Ordering::Relaxed);
    }

    /// Connected: readiness also needs a pod view that keeps up with contact.
    pub fn watch_pod_view(&self, pod_view: PodViewHealth) {
        let _ = self.pod_view.set(pod_view);
    }

    /// How long the fence's pod view has not been current (`nodewarden_pod_view_age_seconds`);
    /// `None` standalone.
    pub fn pod_view_age(&self) -> Option<Duration> {
        self.pod_view.get().map(|pv| pv.view.age())
    }

    /// The `/metrics` text: the agent's figures, the process's own, and (connected) the pod
    /// view's age and whether it lags.
    pub fn render_metrics(&self) -> String {
        let mut text = self.metrics.render(ProcessStats::read());
        if let Some(age) = self.pod_view_age() {
            use std::fmt::Write;
            let _ = write!(
                text,
                "# HELP nodewarden_pod_view_age_seconds How long the fence's pod view has not been current (0 while it is: a watch open that has shown life since contact was last lost).\n# TYPE nodewarden_pod_view_age_seconds gauge\nnodewarden_pod_view_age_seconds {:.3}\n",
                age.as_secs_f64()
            );
            // The age alone grows through every partition; what an operator must hear
            // about is the view lagging while the API server answers (what /readyz fails
            // on), so that is a series of its own.
            let _ = write!(
                text,
                "# HELP nodewarden_pod_view_lagging 1 while the API server answers but the fence's pod view has not caught up within its bound (what /readyz fails on), else 0.\n# TYPE nodewarden_pod_view_lagging gauge\nnodewarden_pod_view_lagging {}\n",
                u8::from(self.pod_view_lagging())
            );
        }
        text
    }

    /// Whether the pod view lags contact by more than its bound (never standalone).
    pub fn pod_view_lagging(&self) -> bool {
        self.pod_view.get().is_some_and(PodViewHealth::lagging)
    }

    /// Ready after the first sample and, when connected, the first successful API round trip,
    /// while the pod view keeps up with contact.
    pub fn is_ready(&self) -> bool {
        self.sampled()
            && (!self.needs_api.load(Ordering::Relaxed) || self.api_ok.load(Ordering::Relaxed))
            && !self.pod_view_lagging()
    }

    /// Live while the loop ticked within the liveness window.
    pub fn is_live(&self) -> bool {
        let last = self.last_tick_ms.load(Ordering::Relaxed);
        if last == 0 {
            // Not yet ticked: live during the first window after start.
            return self.origin.elapsed() < self.liveness_window;
        }
        let now = self.origin.elapsed().as_millis() as u64;
        now.saturating_sub(last) < self.liveness_window.as_millis() as u64
    }
}

/// Binds the listener. Separate from `serve` so a bind failure is a start-up error.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, health: Arc<Health>) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = listener.accept().await;
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok((stream, _)) if connections.len() >= MAX_CONNECTIONS => drop(stream),
            Ok((stream, _)) => {
                let health = health.clone();
                connections.spawn(async move {
                    let _ = tokio::time::timeout(READ_TIMEOUT, connection(stream, health)).await;
                });
            }
            Err(e) => {
                // Usually EMFILE; back off briefly instead of spinning.
                log::warn!(error = e.to_string().as_str(); "health endpoint: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection(stream: tokio::net::TcpStream, health: Arc<Health>) {
    let service = hyper::service::service_fn(move |request| {
        let response = answer(&request, &health);
        async move { Ok::<_, Infallible>(response) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(READ_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        // One request per connection; hyper says `Connection: close`.
        .keep_alive(false)
        .title_case_headers(true);
    // A client closing, timing out or sending garbage ends only this connection.
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

fn answer<B>(request: &Request<B>, health: &Health) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    match request.uri().path() {
        "/healthz" | "/livez" if health.is_live() => plain(StatusCode::OK, "ok\n"),
        "/healthz" | "/livez" => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "sampling loop has not ticked within its window\n",
        ),
        "/readyz" if health.is_ready() => plain(StatusCode::OK, "ok\n"),
        "/readyz" if health.pod_view_lagging() => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the API server answers but the pod watch has not caught up within its bound\n",
        ),
        "/readyz" if health.sampled() => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no successful API round trip yet\n",
        ),
        "/readyz" => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no sample taken yet\n",
        ),
        "/metrics" => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            health.render_metrics(),
        ),
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    respond(status, "text/plain", body.to_string())
}

/// A response with its length (also for HEAD, whose body hyper leaves out).
fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let length = HeaderValue::from(body.len());
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, length);
    response
}
