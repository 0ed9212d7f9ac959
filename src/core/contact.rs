//! What counts as contact with the control plane (docs/fence.md §2), decided from the outcome of
//! each request. Only an answer that proves the control plane heard us is contact: a 2xx on one of
//! our own writes (the Lease, the Node's status or taints). An error status from a load balancer
//! or proxy in front of an unreachable control plane (502, 503, 504, or any 5xx, and 429) is the
//! typical edge partition, so it counts as a failure, like a timeout or a connection error. Other
//! answers (a 2xx on a read, a 404 or 409) neither prove nor disprove contact.
//!
//! Times are monotonic (`Duration` since an origin fixed by the caller), so a wall-clock step can
//! make a reachable node look neither cut off nor in contact.

use std::time::Duration;

/// How one request ended, as far as contact is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Success,
    /// An HTTP error status.
    Status(u16),
    /// No answer within the request timeout.
    Timeout,
    /// No HTTP answer at all (refused, reset, TLS, DNS).
    Transport,
}

/// Whether a 2xx on this request proves that the control plane heard this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A write of ours that the control plane stores (Lease renewal, Node status or taints).
    OwnWrite,
    /// Anything else: reads, and writes no controller looks at (Events).
    Other,
}

/// What one outcome says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The control plane heard us when the request was sent.
    Contact,
    /// The control plane could not be reached.
    Failure,
    /// Says nothing either way.
    Neutral,
}

/// The evidence of one request's outcome.
pub fn evidence(outcome: Outcome, request: Request) -> Evidence {
    match (outcome, request) {
        (Outcome::Success, Request::OwnWrite) => Evidence::Contact,
        (Outcome::Success, Request::Other) => Evidence::Neutral,
        // Throttling and server errors are what a proxy answers for an absent backend.
        (Outcome::Status(code), _) if code == 429 || code >= 500 => Evidence::Failure,
        // The API server itself answered (conflict, not found, forbidden…), but no write of ours
        // was stored: no proof, no failure.
        (Outcome::Status(_), _) => Evidence::Neutral,
        (Outcome::Timeout | Outcome::Transport, _) => Evidence::Failure,
    }
}

/// Reachability of the API server as the requests' outcomes show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Nothing proven or failed yet.
    Unknown,
    Reachable,
    Unreachable,
}

/// The contact state: one value per agent, updated by every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contact {
    pub reach: Reach,
    /// When the request behind the latest proof was sent: the control plane heard us no earlier
    /// than that, and the send time is the safe (earlier) bound for the fence.
    pub last_contact: Option<Duration>,
    /// When `reach` last changed.
    pub since: Option<Duration>,
}

impl Default for Contact {
    fn default() -> Contact {
        Contact {
            reach: Reach::Unknown,
            last_contact: None,
            since: None,
        }
    }
}

impl Contact {
    /// Folds in one request's evidence (the request was sent at `sent_at`, its outcome known at
    /// `now`); returns the previous state when reachability changed.
    ///
    /// A failure of a request sent before the latest proof is stale — it hung across the outage
    /// and only timed out after contact returned — and changes nothing.
    pub fn observe(
        &mut self,
        evidence: Evidence,
        sent_at: Duration,
        now: Duration,
    ) -> Option<Reach> {
        let next = match evidence {
            Evidence::Neutral => return None,
            Evidence::Contact => {
                self.last_contact = Some(self.last_contact.map_or(sent_at, |c| c.max(sent_at)));
                Reach::Reachable
            }
            Evidence::Failure => {
                if self.last_contact.is_some_and(|c| sent_at < c) {
                    return None;
                }
                Reach::Unreachable
            }
        };
        if next == self.reach {
            return None;
        }
        let previous = self.reach;
        self.reach = next;
        self.since = Some(now);
        Some(previous)
    }
}

/// Whether the latest contact is older than `after` at `now` (never contacted: not cut off, as
/// there is no moment to count from).
pub fn older_than(last_contact: Option<Duration>, now: Duration, after: Duration) -> bool {
    last_contact.is_some_and(|c| now.saturating_sub(c) > after)
}

/// Whether this node counts as cut off (docs/fence.md §2): its own contact (`own`, this run's)
/// is not within `after`, and neither is the latest contact known (`last`: own, persisted by a
/// previous run, or a Ready heartbeat seen). A run that began without a partition on record
/// (`started` is its start) first gives the API server its chance: until a request of this run
/// has failed (`failed`) or `after` has passed since the start, an old contact on disk only
/// means no agent was running — the control plane hears the kubelet, not us.
pub fn cut_off(
    own: Option<Duration>,
    last: Option<Duration>,
    started: Option<Duration>,
    failed: bool,
    now: Duration,
    after: Duration,
) -> bool {
    let reachable = own.is_some() && !older_than(own, now, after);
    let anchor = if failed { None } else { started };
    !reachable && older_than(last.max(anchor), now, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_off_needs_an_old_contact_and_after_a_clean_start_a_failure_or_time() {
        let after = s(15);
        // (own, last, started, failed, now) → cut off
        let table = [
            // Connected: own contact 5 s ago.
            (Some(s(95)), Some(s(95)), Some(s(0)), false, s(100), false),
            // Own contact 20 s ago: cut off.
            (Some(s(80)), Some(s(80)), Some(s(0)), true, s(100), true),
            // A Ready heartbeat 5 s ago keeps it from counting as cut off.
            (Some(s(80)), Some(s(95)), Some(s(0)), true, s(100), false),
            // Restarted 1 s ago, the contact on disk an hour old, nothing tried yet: not yet.
            (None, Some(s(0)), Some(s(3599)), false, s(3600), false),
            // ... the first request failed: cut off at once, deadlines from the old contact.
            (None, Some(s(0)), Some(s(3599)), true, s(3600), true),
            // ... or nothing answered for `after` since the start.
            (None, Some(s(0)), Some(s(3580)), false, s(3600), true),
            // A partition on record before the restart: at once.
            (None, Some(s(0)), None, false, s(3600), true),
            // Never any contact: nothing to count from.
            (None, None, Some(s(0)), true, s(3600), false),
        ];
        for (own, last, started, failed, now, want) in table {
            assert_eq!(
                cut_off(own, last, started, failed, now, after),
                want,
                "own {own:?} last {last:?} started {started:?} failed {failed} now {now:?}"
            );
        }
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn only_a_2xx_on_our_own_write_is_contact() {
        use Evidence::*;
        use Outcome::*;
        use Request::*;
        let table = [
            (Success, OwnWrite, Contact),
            (Success, Other, Neutral),
            (Status(500), OwnWrite, Failure),
            (Status(502), OwnWrite, Failure),
            (Status(503), Other, Failure),
            (Status(504), OwnWrite, Failure),
            (Status(429), OwnWrite, Failure),
            (Status(409), OwnWrite, Neutral),
            (Status(404), OwnWrite, Neutral),
            (Status(403), Other, Neutral),
            (Status(422), OwnWrite, Neutral),
            (Timeout, OwnWrite, Failure),
            (Transport, Other, Failure),
        ];
        for (outcome, request, want) in table {
            assert_eq!(
                evidence(outcome, request),
                want,
                "{outcome:?} on {request:?}"
            );
        }
    }

    #[test]
    fn error_answers_never_move_the_last_contact_nor_keep_the_server_reachable() {
        let mut c = Contact::default();
        assert_eq!(
            c.observe(Evidence::Contact, s(10), s(10)),
            Some(Reach::Unknown)
        );
        assert_eq!(c.last_contact, Some(s(10)));
        // Ten seconds of nothing but 500s: unreachable at the first, contact stays at 10.
        assert_eq!(
            c.observe(Evidence::Failure, s(11), s(11)),
            Some(Reach::Reachable)
        );
        for t in 12..=20 {
            assert_eq!(c.observe(Evidence::Failure, s(t), s(t)), None);
        }
        assert_eq!(c.reach, Reach::Unreachable);
        assert_eq!(c.last_contact, Some(s(10)));
        assert_eq!(c.since, Some(s(11)));
    }

    #[test]
    fn a_neutral_answer_changes_nothing() {
        let mut c = Contact::default();
        assert_eq!(c.observe(Evidence::Neutral, s(1), s(1)), None);
        assert_eq!(c, Contact::default());
        c.observe(Evidence::Failure, s(2), s(2));
        assert_eq!(c.observe(Evidence::Neutral, s(3), s(3)), None);
        assert_eq!(c.reach, Reach::Unreachable);
    }

    #[test]
    fn a_request_that_timed_out_during_the_outage_is_not_a_new_change_after_recovery() {
        let mut c = Contact::default();
        c.observe(Evidence::Contact, s(0), s(0));
        c.observe(Evidence::Failure, s(5), s(15)); // sent at 5, timed out at 15
        // Recovery: a renewal sent at 20 succeeds.
        assert_eq!(
            c.observe(Evidence::Contact, s(20), s(20)),
            Some(Reach::Unreachable)
        );
        // A request sent at 18 (still in the outage) times out at 28: stale, no change.
        assert_eq!(c.observe(Evidence::Failure, s(18), s(28)), None);
        assert_eq!(c.reach, Reach::Reachable);
        // One sent after the proof does count.
        assert_eq!(
            c.observe(Evidence::Failure, s(21), s(31)),
            Some(Reach::Reachable)
        );
    }

    #[test]
    fn contact_is_the_send_time_of_the_latest_proof_and_never_moves_back() {
        let mut c = Contact::default();
        c.observe(Evidence::Contact, s(30), s(31));
        // A slow write sent earlier that answered later proves nothing newer.
        c.observe(Evidence::Contact, s(20), s(35));
        assert_eq!(c.last_contact, Some(s(30)));
    }

    #[test]
    fn cut_off_counts_from_the_last_contact() {
        assert!(!older_than(None, s(100), s(15)));
        assert!(!older_than(Some(s(85)), s(100), s(15)));
        assert!(older_than(Some(s(84)), s(100), s(15)));
        // A contact "in the future" (clock origin quirks) is not older than anything.
        assert!(!older_than(Some(s(200)), s(100), s(15)));
    }
}
