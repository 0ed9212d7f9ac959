//! Watch streams: newline-delimited `{"type":..,"object":..}` events. Start from "now" with
//! synthetic ADDED events (no resourceVersion or "0"), or resume after a resourceVersion from
//! the history (a compacted one yields an ERROR event with a 410 Expired Status, then the end,
//! as the real server answers); with `sendInitialEvents=true`, the current state and then a
//! BOOKMARK that marks its end. BOOKMARKs when asked, `timeoutSeconds` ends the stream, and
//! `drop_watches` ends every open stream. All timers are `tokio::time`, so paused clocks apply.

use bytes::Bytes;
use futures_util::Stream;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::ApiServer;
use super::errors::{ApiError, Cause};
use super::handler::Target;
use super::select::{Query, Selector};
use super::store::{Watcher, watch_event_for};

/// The body of a watch response: one JSON event per chunk.
pub type WatchStream = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

/// Without `timeoutSeconds` the real server picks a timeout between 30 and 60 minutes.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct State {
    server: ApiServer,
    plural: &'static str,
    kind: &'static str,
    api_version: String,
    rx: Option<mpsc::UnboundedReceiver<Value>>,
    pending: VecDeque<Value>,
    /// Sends nothing once `pending` is drained (`stall_next_initial_events`).
    stalled: bool,
    deadline: Instant,
    bookmark_every: Option<Duration>,
    next_bookmark: Instant,
}

/// Open a watch for `t` with the query's parameters.
pub fn start(server: &ApiServer, t: &Target, q: &Query) -> Result<WatchStream, ApiError> {
    let selector = Selector::parse(t.res, q.get("fieldSelector"), q.get("labelSelector"))?;
    let timeout =
        match q.get("timeoutSeconds") {
            Some(s) if !s.is_empty() => Duration::from_secs(s.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("timeoutSeconds: invalid value {s:?}"))
            })?),
            _ => DEFAULT_TIMEOUT,
        };
    let rv = q.get("resourceVersion").unwrap_or("");
    let from: Option<u64> = match rv {
        "" | "0" => None,
        s => Some(s.parse().map_err(|_| {
            ApiError::bad_request(format!("resourceVersion: Invalid value: {s:?}"))
        })?),
    };
    // `validateWatchOptions`: a streaming list (`sendInitialEvents`, KEP-3157) needs
    // `resourceVersionMatch=NotOlderThan` and the WatchList feature gate (on by default from 1.34,
    // off in 1.33: `set_watch_list(false)`); `resourceVersionMatch` needs `sendInitialEvents`.
    let send_initial = q.get("sendInitialEvents").is_some();
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    let mut causes = Vec::new();
    if send_initial {
        if rv_match != "NotOlderThan" {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !server.with_state(|s| s.watch_list) {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    }
    if !rv_match.is_empty() {
        if !send_initial {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"NotOlderThan\"",
                    super::errors::quote(rv_match)
                ),
                field: "resourceVersionMatch".into(),
            });
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_list_options(causes));
    }
    // `sendInitialEvents=true`: the state at least as new as `resourceVersion` as ADDED events,
    // then a BOOKMARK annotated `k8s.io/initial-events-end` at the revision they show (sent
    // whether or not bookmarks were asked for), then live events. This store is always current,
    // so any revision it has reached is served at once; a later one is refused as a list would
    // refuse it. `sendInitialEvents=false` with a revision resumes from it, as without the flag.
    let initial_events = q.flag("sendInitialEvents");
    let current = server.resource_version();
    if initial_events
        && let Some(n) = from
        && n > current
    {
        return Err(ApiError::too_large_resource_version(n, current));
    }
    let from = if initial_events { None } else { from };
    let (tx, rx) = mpsc::unbounded_channel();
    let bookmark_every = q
        .flag("allowWatchBookmarks")
        .then(|| server.with_state(|s| s.bookmark_interval));
    let now = Instant::now();
    let mut pending = VecDeque::new();
    let mut rx = Some(rx);
    let mut stalled = false;
    server.with_state(|s| {
        let watcher = Watcher {
            plural: t.res.plural,
            namespace: t.namespace.clone(),
            selector: selector.clone(),
            tx,
        };
        let in_scope = |k: &super::store::Key| {
            k.0 == t.res.plural && t.namespace.as_ref().is_none_or(|ns| *ns == k.1)
        };
        match from {
            None => {
                // Synthetic ADDED events for the current state, then live events.
                for (k, o) in &s.store.objects {
                    if in_scope(k) && selector.matches(o) {
                        pending.push_back(json!({ "type": "ADDED", "object": o }));
                    }
                }
                if initial_events && let Some(after) = s.faults.stall_initial_events.take() {
                    pending.truncate(after);
                    stalled = true;
                } else if initial_events {
                    pending.push_back(json!({
                        "type": "BOOKMARK",
                        "object": {
                            "kind": t.res.kind,
                            "apiVersion": t.res.api_version(),
                            "metadata": {
                                "resourceVersion": s.store.rv.to_string(),
                                "annotations": { "k8s.io/initial-events-end": "true" },
                            },
                        },
                    }));
                }
                s.store.watchers.push(watcher);
            }
            Some(n) if !s.store.covers(n) => {
                let e = ApiError::expired(format!(
                    "too old resource version: {n} ({})",
                    s.store.compacted + 1
                ));
                pending.push_back(json!({ "type": "ERROR", "object": e.to_status() }));
                rx = None;
            }
            Some(n) => {
                for e in s
                    .store
                    .history
                    .iter()
                    .filter(|e| e.rv > n && in_scope(&e.key))
                {
                    if let Some(ev) = watch_event_for(&watcher, e) {
                        pending.push_back(ev);
                    }
                }
                s.store.watchers.push(watcher);
            }
        }
    });
    let state = State {
        server: server.clone(),
        plural: t.res.plural,
        kind: t.res.kind,
        api_version: t.res.api_version(),
        rx,
        pending,
        stalled,
        deadline: now
            .checked_add(timeout)
            .unwrap_or(now + DEFAULT_TIMEOUT * 1000),
        bookmark_every,
        next_bookmark: now + bookmark_every.unwrap_or(DEFAULT_TIMEOUT),
    };
    Ok(Box::pin(futures_util::stream::unfold(state, next)))
}

/// One event line as the API server writes it: `type` before `object`, the order in which Go
/// encodes `metav1.WatchEvent`'s fields (a `serde_json` map sorts its keys, which put `object`
/// first). The order matters to a client: an adjacently tagged decoder (kube's `WatchEvent`)
/// reads the object straight into its type only once it has seen the tag, and buffers the
/// whole object as untyped content when the object comes first.
fn encode(v: &Value) -> Bytes {
    let mut b = Vec::with_capacity(256);
    b.extend_from_slice(b"{\"type\":");
    let written = serde_json::to_writer(&mut b, &v["type"]).and_then(|()| {
        b.extend_from_slice(b",\"object\":");
        serde_json::to_writer(&mut b, &v["object"])
    });
    if written.is_err() {
        // A `Value` always serializes; nothing is sent rather than half a line.
        return Bytes::new();
    }
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

async fn next(mut st: State) -> Option<(Bytes, State)> {
    loop {
        if let Some(v) = st.pending.pop_front() {
            return Some((encode(&v), st));
        }
        if st.stalled {
            tokio::time::sleep_until(st.deadline).await;
            return None;
        }
        let rx = st.rx.as_mut()?;
        let bookmarks = st.bookmark_every.is_some();
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(v) => {
                    // A lagging watch cache (`Faults::watch_lag`): held back from its arrival.
                    let lag = st.server.with_state(|s| s.faults.watch_lag(st.plural));
                    if !lag.is_zero() {
                        tokio::time::sleep(lag).await;
                    }
                    st.pending.push_back(v);
                }
                // The store dropped the sender: drop_watches.
                None => return None,
            },
            () = tokio::time::sleep_until(st.deadline) => return None,
            () = tokio::time::sleep_until(st.next_bookmark), if bookmarks => {
                // Drain under the lock what was sent up to the revision we read, so the
                // bookmark's resourceVersion never runs ahead of undelivered events.
                let pending = &mut st.pending;
                let rv = st.server.with_state(|s| {
                    while let Ok(v) = rx.try_recv() {
                        pending.push_back(v);
                    }
                    s.store.rv
                });
                st.pending.push_back(json!({
                    "type": "BOOKMARK",
                    "object": {
                        "kind": st.kind,
                        "apiVersion": st.api_version,
                        "metadata": { "resourceVersion": rv.to_string() },
                    },
                }));
                st.next_bookmark += st.bookmark_every.unwrap_or(DEFAULT_TIMEOUT);
            }
        }
    }
}

/// A `FieldValueForbidden` cause.
fn forbidden(field: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {why}"),
        field: field.into(),
    }
}
