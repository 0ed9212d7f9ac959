//! The watches' HTTP exchanges, bounded and observed (issue 21). Each watch gets its own client
//! around the shared one ([`bounded_client`]): every request it makes — list pages, relists and
//! the watch request — must be answered within the request timeout (the agent's
//! [`crate::api::Requests::timeout`], passed in) like every other request, and a list's body
//! must arrive within it too; only an accepted watch stream keeps the client's longer read
//! timeout, since its BOOKMARKs prove it alive. A streaming list (`sendInitialEvents`) is a
//! watch whose initial events are a list: until they end, each of its frames must follow the one
//! before (or the acceptance) within the request timeout, as each list page must arrive within
//! it. What the exchanges show (a watch accepted, a
//! frame arriving, a stream ending) is told to the watch's [`ViewTracker`], which keeps
//! `core::pod_view`'s account of how current the view is, and which can drop everything the
//! watch has in flight ([`ViewTracker::reopen`]) when contact returns. Nothing here
//! wakes on its own: the cost is one lock per frame received.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::BoxError;

use crate::core::pod_view::{self, ViewLiveness};

/// One watch's liveness, shared by its HTTP exchanges, its task, the fence and `/readyz`.
#[derive(Debug)]
pub struct ViewTracker {
    origin: Instant,
    liveness: Mutex<ViewLiveness>,
    /// Requests sent before this instant are dropped ([`ViewTracker::reopen`]).
    abandon_before: watch::Sender<Option<Instant>>,
    /// Whether the view is current, sent at each change.
    current: watch::Sender<bool>,
}

impl ViewTracker {
    /// A view not yet current, in a run starting now.
    pub fn new() -> Arc<ViewTracker> {
        Arc::new(ViewTracker {
            origin: Instant::now(),
            liveness: Mutex::new(ViewLiveness::new(Duration::ZERO)),
            abandon_before: watch::Sender::new(None),
            current: watch::Sender::new(false),
        })
    }

    fn since_origin(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.origin)
    }

    fn update(&self, change: impl FnOnce(&mut ViewLiveness, Duration) -> bool) {
        let now = self.since_origin(Instant::now());
        let mut guard = self.liveness.lock().unwrap_or_else(|p| p.into_inner());
        if change(&mut guard, now) {
            // Under the lock: the channel follows changes in their order.
            self.current.send_replace(guard.is_current());
        }
    }

    fn liveness(&self) -> ViewLiveness {
        *self.liveness.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Contact with the control plane was lost: the open stream must show life again.
    pub fn contact_lost(&self) {
        self.update(|v, now| v.contact_lost(now));
    }

    /// Whether the view is current (`core::pod_view`).
    pub fn is_current(&self) -> bool {
        self.liveness().is_current()
    }

    /// Zero while current; else how long it has not been.
    pub fn age(&self) -> Duration {
        self.liveness().age(self.since_origin(Instant::now()))
    }

    /// Since when the view has not been current; `None` while it is.
    pub fn stale_since(&self) -> Option<Instant> {
        self.liveness().stale_since().map(|d| self.origin + d)
    }

    /// Whether the view lags contact by more than `bound` (`core::pod_view::lagging`).
    pub fn lagging(&self, reachable_since: Option<Instant>, bound: Duration) -> bool {
        pod_view::lagging(
            &self.liveness(),
            reachable_since.map(|t| self.since_origin(t)),
            self.since_origin(Instant::now()),
            bound,
        )
    }

    /// A receiver of every change of [`ViewTracker::is_current`].
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.current.subscribe()
    }

    /// The open streaming list's initial events ended (its watch task saw the BOOKMARK that
    /// marks their end): the view can be current (`ViewLiveness::listed`).
    pub fn initial_events_ended(&self) {
        self.update(|v, now| v.listed(now));
    }

    fn is_listing(&self) -> bool {
        self.liveness().is_listing()
    }

    /// With contact back: whether the watch must be re-opened (`ViewLiveness::needs_reopen`).
    pub fn needs_reopen(&self) -> bool {
        self.liveness().needs_reopen()
    }

    /// Drops every request of this watch sent before now: a hanging list page or watch request
    /// fails at once, an open stream ends (and the watcher resumes it from its resourceVersion).
    pub fn reopen(&self) {
        self.abandon_before.send_replace(Some(Instant::now()));
    }

    /// Resolves once a request sent at `sent` is to be dropped; never otherwise.
    fn abandoned(&self, sent: Instant) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut rx = self.abandon_before.subscribe();
        Box::pin(async move {
            if rx
                .wait_for(|before| before.is_some_and(|b| sent < b))
                .await
                .is_err()
            {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// Why a watch's request failed here rather than at the API server.
#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    /// No answer (or, for a list, no whole body) within the request timeout.
    #[error("no answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// Dropped when contact returned, to be sent again at once.
    #[error("dropped to re-open the watch after contact returned")]
    Abandoned,
}

/// A client for one watch: `inner`'s requests, each bounded by `timeout` (see the module doc)
/// and told to `view`.
pub fn bounded_client(
    inner: kube::Client,
    timeout: Duration,
    view: Arc<ViewTracker>,
) -> kube::Client {
    let namespace = inner.default_namespace().to_string();
    kube::Client::new(
        Bounded {
            inner,
            timeout,
            view,
        },
        namespace,
    )
}

#[derive(Clone)]
struct Bounded {
    inner: kube::Client,
    timeout: Duration,
    view: Arc<ViewTracker>,
}

/// Whether `uri`'s query holds one of `pairs` (`key=value`, as kube-client writes them).
fn query_has(uri: &http::Uri, pairs: &[&str]) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|p| pairs.contains(&p)))
}

/// Whether a watch request asks for a streaming list (`sendInitialEvents=true`).
fn is_streaming_list(uri: &http::Uri) -> bool {
    query_has(uri, &["sendInitialEvents=true"])
}

/// Makes a streaming list a consistent read. kube-runtime asks for one at `resourceVersion=0`:
/// with `NotOlderThan`, any revision the serving API server's cache holds, which after an outage
/// may be older than what the control plane has stored (another API server's write not yet in
/// this one's cache). Without `resourceVersion` the initial events are a consistent read
/// (docs/semantics.md §15), as client-go's reflector asks them and as the paged lists here are
/// read (kube's `ListSemantic::MostRecent`, its default).
fn as_consistent_read(request: &mut http::Request<kube::client::Body>) {
    const ANY: &str = "resourceVersion=0";
    let uri = request.uri();
    let Some(query) = uri.query().filter(|_| query_has(uri, &[ANY])) else {
        return;
    };
    let kept: Vec<&str> = query.split('&').filter(|p| *p != ANY).collect();
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = format!("{}?{}", uri.path(), kept.join("&")).parse().ok();
    if let Ok(uri) = http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

/// Whether a request asks for a watch (`watch=true` in its query, as kube-client sends it).
fn is_watch(uri: &http::Uri) -> bool {
    query_has(uri, &["watch=true", "watch=1"])
}

impl tower::Service<http::Request<kube::client::Body>> for Bounded {
    type Response = http::Response<Guarded>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // `kube::Client` queues in its own buffer.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<kube::client::Body>) -> Self::Future {
        let (inner, view) = (self.inner.clone(), self.view.clone());
        let watch = is_watch(request.uri());
        let listing = watch && is_streaming_list(request.uri());
        if listing {
            as_consistent_read(&mut request);
        }
        let timeout = self.timeout;
        let sent = Instant::now();
        let mut abandoned = view.abandoned(sent);
        Box::pin(async move {
            let deadline = sent + timeout;
            let response = tokio::select! {
                answer = tokio::time::timeout_at(deadline, inner.send(request)) => match answer {
                    Err(_) => return Err(BoundError::Timeout(timeout).into()),
                    Ok(r) => r.map_err(BoxError::from)?,
                },
                () = &mut abandoned => return Err(BoundError::Abandoned.into()),
            };
            let stream = watch && response.status().is_success();
            let listing = stream && listing;
            if listing {
                view.update(|v, now| v.opened_listing(now));
            } else if stream {
                view.update(|v, now| v.opened(now));
            }
            Ok(response.map(|body| Guarded {
                inner: Box::pin(body),
                // A list's whole body within the request's time; a streaming list's next frame
                // within it of the last while it lists; a watch stream lives on.
                deadline: (!watch || listing).then(|| {
                    Box::pin(tokio::time::sleep_until(if listing {
                        Instant::now() + timeout
                    } else {
                        deadline
                    }))
                }),
                listing,
                timeout,
                abandoned,
                view: stream.then_some(view),
                ended: false,
            }))
        })
    }
}

/// A response body of a watch's request, bounded and observed.
pub struct Guarded {
    inner: Pin<Box<kube::client::Body>>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A streaming list still sending its initial events: `deadline` is the next frame's.
    listing: bool,
    timeout: Duration,
    abandoned: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Set on an accepted watch stream: its frames and its end are told.
    view: Option<Arc<ViewTracker>>,
    ended: bool,
}

impl Guarded {
    fn end(&mut self) {
        self.ended = true;
        if let Some(view) = self.view.take() {
            view.update(|v, now| v.closed(now));
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.end();
    }
}

impl Body for Guarded {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        if this.abandoned.as_mut().poll(cx).is_ready() {
            let stream = this.view.is_some();
            this.end();
            // A stream ends as the server ends it, so the watcher resumes from where it was; a
            // list fails and is sent again.
            return Poll::Ready((!stream).then(|| Err(BoundError::Abandoned.into())));
        }
        if let Some(deadline) = this.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            if this.listing && this.view.as_ref().is_some_and(|v| !v.is_listing()) {
                // Its initial events ended since the last frame: a watch stream from now on.
                this.listing = false;
                this.deadline = None;
            } else {
                this.end();
                return Poll::Ready(Some(Err(BoundError::Timeout(this.timeout).into())));
            }
        }
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(view) = &this.view {
                    view.update(|v, now| v.frame(now));
                }
                if this.listing
                    && let Some(deadline) = this.deadline.as_mut()
                {
                    deadline.as_mut().reset(Instant::now() + this.timeout);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.end();
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                this.end();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_watch_query_is_a_watch() {
        let uri = |s: &str| s.parse::<http::Uri>().expect("uri");
        assert!(is_watch(&uri(
            "/api/v1/pods?fieldSelector=x&watch=true&resourceVersion=5"
        )));
        assert!(!is_watch(&uri("/api/v1/pods?limit=25")));
        assert!(is_streaming_list(&uri(
            "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        )));
        assert!(!is_streaming_list(&uri(
            "/api/v1/pods?watch=true&sendInitialEvents=false"
        )));
        assert!(!is_watch(&uri("/api/v1/pods?watchy=true")));
    }

    #[test]
    fn a_streaming_list_at_revision_0_is_asked_as_a_consistent_read() {
        // The URI `as_consistent_read` leaves a request for `uri` with.
        let asked = |uri: &str| {
            let mut request = http::Request::get(uri)
                .body(kube::client::Body::empty())
                .expect("request");
            as_consistent_read(&mut request);
            request.uri().to_string()
        };
        assert_eq!(
            asked(
                "https://api:6443/api/v1/pods?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0"
            ),
            "https://api:6443/api/v1/pods?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        );
        // Any other revision is kept.
        assert_eq!(
            asked("/api/v1/pods?watch=true&resourceVersion=10"),
            "/api/v1/pods?watch=true&resourceVersion=10"
        );
    }
}
