//! Whether the control plane hears us, as every request the agent makes shows it. The rule is
//! the core's (`core::contact`): only a 2xx on one of our own writes is contact; a timeout, a
//! transport error, a 5xx or a 429 is a failure (a proxy answering for an absent control plane is
//! an edge partition); anything else says nothing. Each change is logged once and mirrored at the
//! same instant into `nodewarden_api_reachable`, so the log and the metric never disagree. Times
//! are monotonic; the wall clock only labels the log.
//!
//! One outage, one story (issue 21): the first failure is one line, the fence's "cut off" (when
//! `unreachableAfter` has passed, a later moment) is the fence's own line, and the return is one
//! line that also ends the fence's partition: the fence tells this type when it counts the node
//! cut off ([`Reachability::set_cut_off`]), and says nothing of its own when contact returns.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::api::ApiError;
use crate::core::contact::{Contact, Evidence, Outcome, Reach, Request, evidence};

/// The reachability states, as the core names them.
pub type State = Reach;

/// Told of every change of state, under the same lock that made it (the metric).
type Observer = Box<dyn Fn(State) + Send + Sync>;

/// Shared by every task that calls the API server.
pub struct Reachability {
    inner: Mutex<Contact>,
    node: String,
    /// The monotonic origin of the core's times.
    origin: Instant,
    /// Every change of state, for tasks that wait to retry (they retry at once on return).
    changes: tokio::sync::watch::Sender<State>,
    /// Every move of the last contact, for the fence, which writes it down.
    contacts: tokio::sync::watch::Sender<Option<Duration>>,
    observer: Option<Observer>,
    /// When the fence's current partition began (wall time), while it counts this node cut off.
    cut_off_since: Mutex<Option<SystemTime>>,
}

impl std::fmt::Debug for Reachability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reachability")
            .field("node", &self.node)
            .field("contact", &self.contact())
            .finish_non_exhaustive()
    }
}

/// The outcome of one request in the core's terms.
pub fn outcome<T>(result: &Result<T, ApiError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(ApiError::Status { code, .. }) => Outcome::Status(*code),
        Err(ApiError::Timeout { .. }) => Outcome::Timeout,
        Err(ApiError::Transport { .. }) => Outcome::Transport,
    }
}

impl Reachability {
    pub fn new(node: &str) -> Reachability {
        Reachability {
            inner: Mutex::new(Contact::default()),
            node: node.to_string(),
            origin: Instant::now(),
            changes: tokio::sync::watch::Sender::new(State::Unknown),
            contacts: tokio::sync::watch::Sender::new(None),
            observer: None,
            cut_off_since: Mutex::new(None),
        }
    }

    /// Also calls `observer` with every change of state, at the instant of the change.
    pub fn with_observer(node: &str, observer: Observer) -> Reachability {
        Reachability {
            observer: Some(observer),
            ..Reachability::new(node)
        }
    }

    /// A receiver that sees every change of state.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<State> {
        self.changes.subscribe()
    }

    /// A receiver that sees every move of the last contact (each proving write, while the
    /// state stays Reachable).
    pub fn subscribe_contact(&self) -> tokio::sync::watch::Receiver<Option<Duration>> {
        self.contacts.subscribe()
    }

    fn contact(&self) -> Contact {
        *self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn since_origin(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.origin)
    }

    /// Records the outcome of one request sent at `sent_at`; logs when reachability changes.
    /// True when it proved contact that ended the fence's partition ([`Reachability::set_cut_off`]).
    pub fn record<T>(
        &self,
        result: &Result<T, ApiError>,
        request: Request,
        sent_at: Instant,
    ) -> bool {
        let error = result.as_ref().err().map(|e| e as &dyn std::fmt::Display);
        self.fold(evidence(outcome(result), request), sent_at, error)
    }

    /// Records that peers read this node's kubelet Lease last renewed `age` ago, long enough to
    /// prove the node's link cut (`core::quorum::kubelet_unheard`): a failure, as if a request
    /// sent at `sent_at` had timed out. Only a run with no answer of its own yet asks for it.
    pub fn record_kubelet_unheard(&self, age: Duration, sent_at: Instant) {
        let why = format!(
            "peers read this node's kubelet Lease last renewed {:.1}s ago",
            age.as_secs_f64()
        );
        let _ = self.fold(Evidence::Failure, sent_at, Some(&why));
    }

    /// Records that a read of our Lease sent at `sent_at`, after contact came back and before it
    /// proved the kubelet renewed too, went unanswered within `bound` (`agent::heartbeat`,
    /// docs/fence.md §2, *A relapse*): a failure, as if it had timed out.
    pub fn record_unanswered(&self, bound: Duration, sent_at: Instant) {
        let why = format!(
            "a read of our Lease went unanswered within {}s, before the contact that came back \
             proved the kubelet renewed",
            bound.as_secs_f64()
        );
        let _ = self.fold(Evidence::Failure, sent_at, Some(&why));
    }

    /// Folds in one piece of evidence; `error` says why a failure failed, formatted only for the
    /// line that logs a change (most failures change nothing).
    fn fold(
        &self,
        evidence: Evidence,
        sent_at: Instant,
        error: Option<&dyn std::fmt::Display>,
    ) -> bool {
        let (sent, now) = (
            self.since_origin(sent_at),
            self.since_origin(Instant::now()),
        );
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let before = guard.last_contact;
        let previous_since = guard.since;
        let changed = guard.observe(evidence, sent, now);
        if guard.last_contact != before {
            self.contacts.send_replace(guard.last_contact);
        }
        // A proof of contact ends the fence's partition, and this line says so, once. The fence
        // can count the node cut off before any request has failed (a request hung for its whole
        // timeout), so the partition may end without a change of state here.
        let ended = if guard.last_contact != before {
            self.cut_off_since
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
        } else {
            None
        };
        let wall_now = SystemTime::now();
        let fence = ended
            .map(|since| {
                format!(
                    "; cut off for {}s: fencing stops",
                    wall_now.duration_since(since).unwrap_or_default().as_secs()
                )
            })
            .unwrap_or_default();
        let Some(previous) = changed else {
            if ended.is_some() {
                log::info!(
                    reachable = "true";
                    "API server reachable again{fence}"
                );
            }
            return ended.is_some();
        };
        let next = guard.reach;
        let last_contact = guard.last_contact;
        // Under the lock: the metric, the channel and the log follow changes in their order.
        if let Some(observer) = &self.observer {
            observer(next);
        }
        self.changes.send_replace(next);
        let last = last_contact
            .map(|c| crate::core::clock::rfc3339(wall_now - now.saturating_sub(c)))
            .unwrap_or_else(|| "never".to_string());
        // How long the API server had not answered: since the state last changed.
        let silent = now.saturating_sub(previous_since.unwrap_or(now));
        match (next, previous, error) {
            (State::Unreachable, _, Some(e)) => log::warn!(
                reachable = "false", error = e.to_string().as_str(),
                last_contact = last.as_str();
                "API server unreachable: {e} (last contact: {last})"
            ),
            (State::Reachable, State::Unknown, _) => log::info!(
                reachable = "true";
                "API server reachable{fence}"
            ),
            (State::Reachable, _, _) => log::info!(
                reachable = "true";
                "API server reachable again after {}s without an answer{fence}",
                silent.as_secs()
            ),
            // A failure is always an error; Unknown is never entered.
            _ => {}
        }
        ended.is_some()
    }

    /// The fence's partition: `Some(since)` from the moment it counts this node cut off (or
    /// resumes a partition after a restart), `None` once it no longer does. The line that says
    /// the API server answers again also says that fencing stops.
    pub fn set_cut_off(&self, since: Option<SystemTime>) {
        *self.cut_off_since.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }

    pub fn state(&self) -> State {
        self.contact().reach
    }

    /// When the request behind the latest proof of contact was sent.
    pub fn last_contact(&self) -> Option<Instant> {
        self.contact().last_contact.map(|d| self.origin + d)
    }

    /// How long the current state has lasted.
    pub fn state_age(&self) -> Option<Duration> {
        let now = self.since_origin(Instant::now());
        self.contact().since.map(|s| now.saturating_sub(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn status(code: u16) -> Result<(), ApiError> {
        Err(ApiError::Status {
            verb: "update",
            resource: "leases/kube-node-lease/n".into(),
            code,
            reason: "x".into(),
            message: "x".into(),
            retry_after: None,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_observer_sees_each_change_once_and_agrees_with_the_state() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(AtomicUsize::new(0));
        let (s, c) = (seen.clone(), calls.clone());
        let reach = Reachability::with_observer(
            "n",
            Box::new(move |st| {
                c.fetch_add(1, Ordering::SeqCst);
                s.lock().unwrap().push(st);
            }),
        );
        let ok: Result<(), ApiError> = Ok(());
        reach.record(&ok, Request::OwnWrite, Instant::now());
        tokio::time::advance(Duration::from_secs(1)).await;
        for _ in 0..20 {
            reach.record(&status(503), Request::OwnWrite, Instant::now());
            assert_eq!(reach.state(), State::Unreachable);
            tokio::time::advance(Duration::from_millis(500)).await;
        }
        // A read answering 200 is no contact.
        reach.record(&ok, Request::Other, Instant::now());
        assert_eq!(reach.state(), State::Unreachable);
        reach.record(&ok, Request::OwnWrite, Instant::now());
        assert_eq!(
            *seen.lock().unwrap(),
            vec![State::Reachable, State::Unreachable, State::Reachable]
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn last_contact_is_the_send_time_of_the_proving_write() {
        let reach = Reachability::new("n");
        let sent = Instant::now();
        tokio::time::advance(Duration::from_secs(3)).await;
        let ok: Result<(), ApiError> = Ok(());
        reach.record(&ok, Request::OwnWrite, sent);
        assert_eq!(reach.last_contact(), Some(sent));
        reach.record(&status(500), Request::OwnWrite, Instant::now());
        assert_eq!(reach.last_contact(), Some(sent));
    }
}
