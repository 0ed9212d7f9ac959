//! Whether the API server answers, as seen by every request the agent makes. A round trip counts
//! as success when the server answered at all — any HTTP status, even 404 or 409, proves it is
//! reachable; a timeout or a transport error (no HTTP answer) counts as failure. The state changes
//! to unreachable on a failure after which no answer came, and back on the next answer; each
//! change is logged once, never each attempt.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::api::ApiError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No request has completed yet.
    Unknown,
    Reachable,
    Unreachable,
}

#[derive(Debug)]
struct Inner {
    state: State,
    since: Option<SystemTime>,
    last_success: Option<SystemTime>,
    failures: u64,
}

/// Shared by every task that calls the API server.
#[derive(Debug)]
pub struct Reachability {
    inner: Mutex<Inner>,
    node: String,
    /// Every change of state, for tasks that wait to retry (they retry at once on return).
    changes: tokio::sync::watch::Sender<State>,
}

impl Reachability {
    pub fn new(node: &str) -> Reachability {
        Reachability {
            inner: Mutex::new(Inner {
                state: State::Unknown,
                since: None,
                last_success: None,
                failures: 0,
            }),
            node: node.to_string(),
            changes: tokio::sync::watch::Sender::new(State::Unknown),
        }
    }

    /// A receiver that sees every change of state.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<State> {
        self.changes.subscribe()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut guard)
    }

    /// Records the outcome of one request; logs when reachability changes.
    pub fn record<T>(&self, result: &Result<T, ApiError>, now: SystemTime) {
        let answered = match result {
            Ok(_) => true,
            Err(e) => e.got_answer(),
        };
        let change = self.with(|i| {
            if answered {
                i.last_success = Some(now);
            } else {
                i.failures += 1;
            }
            let next = if answered {
                State::Reachable
            } else {
                State::Unreachable
            };
            if next != i.state {
                let previous = i.state;
                i.state = next;
                i.since = Some(now);
                Some((previous, i.last_success))
            } else {
                None
            }
        });
        if let Some((previous, last_success)) = change {
            self.changes.send_replace(if answered {
                State::Reachable
            } else {
                State::Unreachable
            });
            match (previous, result) {
                (_, Err(e)) if !answered => {
                    let last = last_success
                        .map(crate::core::clock::rfc3339)
                        .unwrap_or_else(|| "never".to_string());
                    log::warn!(
                        node = self.node.as_str(), reachable = "false", error = e.to_string().as_str(),
                        last_contact = last.as_str();
                        "API server unreachable: {e} (last answer: {last})"
                    );
                }
                (State::Unknown, _) => log::info!(
                    node = self.node.as_str(), reachable = "true";
                    "API server reachable"
                ),
                _ => log::info!(
                    node = self.node.as_str(), reachable = "true";
                    "API server reachable again"
                ),
            }
        }
    }

    pub fn state(&self) -> State {
        self.with(|i| i.state)
    }

    /// The last moment the server answered any request.
    pub fn last_success(&self) -> Option<SystemTime> {
        self.with(|i| i.last_success)
    }

    /// How long the current state has lasted.
    pub fn state_age(&self, now: SystemTime) -> Option<Duration> {
        self.with(|i| i.since.and_then(|s| now.duration_since(s).ok()))
    }

    pub fn failures(&self) -> u64 {
        self.with(|i| i.failures)
    }
}
