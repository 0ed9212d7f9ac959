//! Fault injection per route (method + path pattern with `*` segments): fail the next N
//! requests with a status or a garbage 200 body, add latency, or black-hole requests (accepted,
//! never answered).

use serde_json::Value;
use std::time::Duration;

use super::ApiServer;

/// A route: an HTTP method and a path pattern where `*` matches one segment,
/// e.g. `("PATCH", "/api/v1/nodes/*/status")`. Two pseudo-methods tell the verbs that share a
/// GET path apart: `LIST` is a GET without `watch=true`, `WATCH` one with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    method: String,
    segments: Vec<String>,
}

impl Route {
    /// A route from a method and pattern.
    pub fn new(method: &str, pattern: &str) -> Route {
        Route {
            method: method.to_ascii_uppercase(),
            segments: pattern
                .trim_matches('/')
                .split('/')
                .map(String::from)
                .collect(),
        }
    }

    /// Whether a request (method, path without query) is on this route; `watch` is whether the
    /// query asks for a watch.
    pub fn matches(&self, method: &str, path: &str, watch: bool) -> bool {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let method_matches = match self.method.as_str() {
            "LIST" => method.eq_ignore_ascii_case("GET") && !watch,
            "WATCH" => method.eq_ignore_ascii_case("GET") && watch,
            own => own.eq_ignore_ascii_case(method),
        };
        method_matches
            && segs.len() == self.segments.len()
            && self
                .segments
                .iter()
                .zip(&segs)
                .all(|(p, s)| p == "*" || p == s)
    }
}

impl From<(&str, &str)> for Route {
    fn from((method, pattern): (&str, &str)) -> Route {
        Route::new(method, pattern)
    }
}

/// An injected failure answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// 500 InternalError.
    Status500,
    /// 429 TooManyRequests with `Retry-After: <secs>` (as the max-in-flight filter answers).
    Status429 {
        /// Seconds in the `Retry-After` header and `details.retryAfterSeconds`.
        retry_after_secs: u64,
    },
    /// 409 Conflict for the object on the path (as a lost optimistic-concurrency race).
    Status409,
    /// 503 ServiceUnavailable.
    Status503,
    /// 502 Bad Gateway with an HTML body: a reverse proxy or load balancer whose backend (the
    /// API server) is gone. Not an API server behaviour — a fault in front of it.
    Proxy502,
    /// 200 OK whose body is a JSON string of `bytes` bytes: valid JSON of the wrong type, as a
    /// misrouted proxy or a wrong server could answer. Not an API server behaviour — a fault.
    Garbage200 {
        /// Body size.
        bytes: usize,
    },
}

/// Fault rules.
#[derive(Debug, Default)]
pub struct FaultState {
    pub(crate) fail: Vec<(Route, u32, Fault)>,
    pub(crate) latency: Vec<(Route, Duration)>,
    pub(crate) black_hole: Vec<Route>,
    /// The next streaming list sends this many of its initial events, then nothing more.
    pub(crate) stall_initial_events: Option<usize>,
    /// Each live event on a watch of this resource (plural) reaches its client this much after
    /// the change.
    pub(crate) watch_lag: Vec<(String, Duration)>,
}

impl FaultState {
    /// The lag of live events on watches of `plural` (`Faults::watch_lag`).
    pub fn watch_lag(&self, plural: &str) -> Duration {
        self.watch_lag
            .iter()
            .find(|(p, _)| p == plural)
            .map_or(Duration::ZERO, |(_, d)| *d)
    }
}

/// What to do with a request before handling it.
#[derive(Debug, Default)]
pub struct FaultPlan {
    /// Delay first.
    pub delay: Option<Duration>,
    /// Never answer.
    pub black_hole: bool,
    /// Answer with this failure.
    pub fail: Option<Fault>,
}

impl FaultState {
    /// Decide (and consume one `fail_next` count) for a request.
    pub fn plan(&mut self, method: &str, path: &str, watch: bool) -> FaultPlan {
        let mut plan = FaultPlan {
            delay: self
                .latency
                .iter()
                .find(|(r, _)| r.matches(method, path, watch))
                .map(|(_, d)| *d),
            black_hole: self
                .black_hole
                .iter()
                .any(|r| r.matches(method, path, watch)),
            fail: None,
        };
        if !plan.black_hole {
            if let Some(rule) = self
                .fail
                .iter_mut()
                .find(|(r, n, _)| *n > 0 && r.matches(method, path, watch))
            {
                rule.1 -= 1;
                plan.fail = Some(rule.2);
            }
            self.fail.retain(|(_, n, _)| *n > 0);
        }
        plan
    }
}

/// Handle for configuring faults (`server.faults()`).
#[derive(Clone)]
pub struct Faults {
    pub(crate) server: ApiServer,
}

impl Faults {
    /// Fail the next `n` requests on `route` with `fault`.
    pub fn fail_next(&self, route: impl Into<Route>, n: u32, fault: Fault) -> &Self {
        self.server
            .with_state(|s| s.faults.fail.push((route.into(), n, fault)));
        self
    }

    /// Delay every request on `route` by `delay` (tokio time, so paused clocks apply).
    pub fn latency(&self, route: impl Into<Route>, delay: Duration) -> &Self {
        let route = route.into();
        self.server.with_state(|s| {
            s.faults.latency.retain(|(r, _)| *r != route);
            if !delay.is_zero() {
                s.faults.latency.push((route, delay));
            }
        });
        self
    }

    /// Accept but never answer requests on `route` (or stop doing so).
    pub fn black_hole(&self, route: impl Into<Route>, on: bool) -> &Self {
        let route = route.into();
        self.server.with_state(|s| {
            s.faults.black_hole.retain(|r| *r != route);
            if on {
                s.faults.black_hole.push(route);
            }
        });
        self
    }

    /// Deliver `kind` (`ADDED`, `MODIFIED` or `DELETED`) of `object`, exactly as given, on every
    /// open watch of `plural` whose namespace and selector take it: what a replaying cache or a
    /// faulty proxy in front of the real server delivers out of order (an old version of an object
    /// after a newer one). The store is not touched. Returns how many watches got it.
    pub fn replay_watch_event(&self, plural: &str, kind: &str, object: &Value) -> usize {
        let event = serde_json::json!({ "type": kind, "object": object });
        let ns = object["metadata"]["namespace"].as_str().map(str::to_string);
        self.server.with_state(|s| {
            s.store
                .watchers
                .iter()
                .filter(|w| {
                    w.plural == plural
                        && (w.namespace.is_none() || w.namespace == ns)
                        && w.selector.matches(object)
                })
                .filter(|w| w.tx.send(event.clone()).is_ok())
                .count()
        })
    }

    /// The next streaming list (`sendInitialEvents`) sends `after` of its initial events and then
    /// nothing, neither the rest, nor the BOOKMARK that ends them, nor live events, until it
    /// times out: a connection that hangs mid-list.
    pub fn stall_next_initial_events(&self, after: usize) -> &Self {
        self.server
            .with_state(|s| s.faults.stall_initial_events = Some(after));
        self
    }

    /// Delivers each live event on every watch of `plural` (open or opened later) `lag` after the
    /// change, in order, as a watch cache that has fallen behind does; a list is current all the
    /// same (it is read from storage). Zero ends it for events not yet held back.
    pub fn watch_lag(&self, plural: &str, lag: Duration) -> &Self {
        self.server.with_state(|s| {
            s.faults.watch_lag.retain(|(p, _)| p != plural);
            if !lag.is_zero() {
                s.faults.watch_lag.push((plural.to_string(), lag));
            }
        });
        self
    }

    /// Remove every fault rule.
    pub fn clear(&self) {
        self.server.with_state(|s| s.faults = FaultState::default());
    }
}
