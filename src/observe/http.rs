//! The health and metrics endpoint: `/healthz` (liveness: the sampling loop ticked recently),
//! `/readyz` (configuration loaded and first sample taken), `/metrics` (Prometheus text).
//!
//! A deliberately tiny HTTP/1.1 server: GET/HEAD only, one request per connection, request head
//! bounded in size and time, so a stuck or hostile client costs one short-lived task and nothing
//! else. It listens on loopback by default.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::observe::metrics::{Metrics, ProcessStats};

const MAX_HEAD: usize = 8 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

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
    pub metrics: Metrics,
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

    /// Ready after the first sample and, when connected, the first successful API round trip.
    pub fn is_ready(&self) -> bool {
        self.sampled()
            && (!self.needs_api.load(Ordering::Relaxed) || self.api_ok.load(Ordering::Relaxed))
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
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let health = health.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(READ_TIMEOUT, handle(stream, &health)).await;
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

async fn handle(mut stream: TcpStream, health: &Health) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buf.len() > MAX_HEAD {
            return respond(
                &mut stream,
                431,
                "text/plain",
                "request head too large\n",
                false,
            )
            .await;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return respond(
            &mut stream,
            405,
            "text/plain",
            "method not allowed\n",
            false,
        )
        .await;
    }
    match path {
        "/healthz" | "/livez" => {
            if health.is_live() {
                respond(&mut stream, 200, "text/plain", "ok\n", head_only).await
            } else {
                respond(
                    &mut stream,
                    503,
                    "text/plain",
                    "sampling loop has not ticked within its window\n",
                    head_only,
                )
                .await
            }
        }
        "/readyz" => {
            if health.is_ready() {
                respond(&mut stream, 200, "text/plain", "ok\n", head_only).await
            } else {
                let why = if health.sampled() {
                    "not ready: no successful API round trip yet\n"
                } else {
                    "not ready: no sample taken yet\n"
                };
                respond(&mut stream, 503, "text/plain", why, head_only).await
            }
        }
        "/metrics" => {
            let body = health.metrics.render(ProcessStats::read());
            respond(
                &mut stream,
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                &body,
                head_only,
            )
            .await
        }
        _ => respond(&mut stream, 404, "text/plain", "not found\n", head_only).await,
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        out.push_str(body);
    }
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}
