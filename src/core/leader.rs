//! What the controller-manager's leader Lease tells the fence about the taint eviction
//! controller's timers (docs/fence.md §7, *The controller-manager's Lease*).
//!
//! The taint eviction controller keeps each pod's timer in the memory of the kube-controller-manager
//! process that leads, and a process that takes over starts every timer again. A leader unable to
//! renew its Lease for its renew deadline exits; a new one acquires the Lease once it has seen the
//! old record unchanged for `leaseDurationSeconds`. So a read of the Lease that shows its holder
//! stopped renewing longer ago than that, or no holder, proves that no timer runs at that moment:
//! every pod deleted later is deleted by a leader that acquired the Lease after the read, and
//! its timer started no earlier than the read.
//!
//! Nothing here compares this node's clock with the controller's. Each read of a holder's
//! `renewTime` answered at instant `A` of this run's monotonic clock bounds the holder's clock:
//! the renewal was written before the read was served, so it happened by `renewTime + (A −
//! renewTime)` on this clock, and the smallest `A − renewTime` over every read of the same holder
//! carries over to its later renewals. This assumes only that the holder's own clock does not
//! step back between two of its renewals, as the leader election's `renewTime` does.

use std::time::{Duration, SystemTime};

/// How often a connected agent reads the leader Lease while a process leads: what a later read
/// proves needs only the holder's identity and one of its renewals from before an outage. It
/// also reads it at once when contact returns. A GET of one object a node every five minutes
/// adds little to an API server that already takes every kubelet's renewal every ten seconds.
pub const READ_INTERVAL: Duration = Duration::from_secs(300);

/// How often while the latest read proved no process leads: each such read moves
/// [`Leader::timers_from`] on.
pub const LEADERLESS_READ_INTERVAL: Duration = Duration::from_secs(10);

/// How long after a return the fence waits for the first read of the Lease before it plans on
/// a taint its Node carries (`agent::fence_task`); the read takes one round trip.
pub const RETURN_READ_WAIT: Duration = Duration::from_secs(2);

/// How soon a read that failed on the way (a timeout, a 5xx) is tried again while it is the
/// return's read and the fence's wait for it lasts ([`retry_after`]).
pub const RETURN_READ_RETRY: Duration = Duration::from_millis(500);

/// How long after a read that failed on the way to read again. `since_return` is how long ago
/// the first read after a return left, while no read since came back with the Lease (`None`
/// otherwise). The fence waits for that read at most [`RETURN_READ_WAIT`], so within that wait
/// it is tried again every [`RETURN_READ_RETRY`]; after it, or away from a return, after
/// [`LEADERLESS_READ_INTERVAL`], which keeps a Lease the API server keeps failing from being
/// read more often than that.
pub fn retry_after(since_return: Option<Duration>) -> Duration {
    match since_return {
        Some(s) if s + RETURN_READ_RETRY < RETURN_READ_WAIT => RETURN_READ_RETRY,
        _ => LEADERLESS_READ_INTERVAL,
    }
}

/// One answered read of the leader Lease.
#[derive(Clone, Copy, Debug)]
pub struct Read<'a> {
    /// `spec.holderIdentity`: empty once the holder released the Lease.
    pub holder: &'a str,
    /// `spec.renewTime`, on the holder's clock.
    pub renewed: Option<SystemTime>,
    /// `spec.leaseDurationSeconds`.
    pub lease_duration: Duration,
    /// When the request left and when its answer came, on this run's monotonic clock.
    pub sent: Duration,
    pub answered: Duration,
}

/// What the reads of this run have shown: the latest holder, and the instant no timer that can
/// still delete a pod started before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leader {
    holder: Option<Holder>,
    timers_from: Option<Duration>,
    /// The latest read proved no process leads (lapsed or released).
    leaderless: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    identity: String,
    /// The least `answered − renewTime` of its reads, in nanoseconds (`None`: no `renewTime`
    /// read yet): its renewals happened by `renewTime` plus this on this run's clock.
    offset: Option<i128>,
    /// When the latest read that showed it left.
    sent: Duration,
}

/// Why a read moved [`Leader::timers_from`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The holder had not renewed for longer than the Lease's duration: it has exited.
    Lapsed,
    /// The Lease has no holder.
    Released,
    /// Another holder acquired the Lease since the previous read.
    TakenOver,
}

fn nanos(d: Duration) -> i128 {
    i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
}

fn wall_nanos(t: SystemTime) -> Option<i128> {
    t.duration_since(SystemTime::UNIX_EPOCH).ok().map(nanos)
}

impl Leader {
    /// The instant, on this run's monotonic clock, no taint eviction timer that can still delete
    /// a pod started before: `None` until a read proves one.
    pub fn timers_from(&self) -> Option<Duration> {
        self.timers_from
    }

    /// How long after this read to read again ([`READ_INTERVAL`], [`LEADERLESS_READ_INTERVAL`]).
    pub fn next_read(&self) -> Duration {
        if self.leaderless {
            LEADERLESS_READ_INTERVAL
        } else {
            READ_INTERVAL
        }
    }

    /// Whether the latest read proved that no process leads: its holder lapsed, or it had none.
    /// Cut off, that stays the last word until a read after the return.
    pub fn leaderless(&self) -> bool {
        self.leaderless
    }

    /// The holder of the latest read, if any.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_ref().map(|h| h.identity.as_str())
    }

    fn raise(&mut self, to: Duration) {
        self.timers_from = Some(self.timers_from.map_or(to, |t| t.max(to)));
    }

    /// Takes in one answered read; says whether and why it moved [`Leader::timers_from`].
    pub fn read(&mut self, r: &Read<'_>) -> Option<Moved> {
        let renewed = r.renewed.and_then(wall_nanos);
        let offset_now = renewed.map(|w| nanos(r.answered) - w);
        if r.holder.is_empty() {
            // Released: no process leads while the read is served, after the request left.
            self.holder = None;
            self.raise(r.sent);
            self.leaderless = true;
            return Some(Moved::Released);
        }
        let mut moved = None;
        match self.holder.as_mut() {
            Some(h) if h.identity == r.holder => {
                // Its latest renewal happened by `renewed + offset` on this clock; if the read
                // left more than a lease duration after that, the holder gave up before it.
                if let (Some(w), Some(off)) = (renewed, h.offset)
                    && nanos(r.sent) - (w + off) > nanos(r.lease_duration)
                {
                    moved = Some(Moved::Lapsed);
                }
                h.offset = match (h.offset, offset_now) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                h.sent = r.sent;
            }
            previous => {
                // A holder other than the one the previous read showed acquired the Lease after
                // that read was served, so after its request left.
                let since = previous.map(|p| p.sent);
                self.holder = Some(Holder {
                    identity: r.holder.to_string(),
                    offset: offset_now,
                    sent: r.sent,
                });
                if let Some(since) = since {
                    self.raise(since);
                    moved = Some(Moved::TakenOver);
                }
            }
        }
        self.leaderless = moved == Some(Moved::Lapsed);
        if self.leaderless {
            self.raise(r.sent);
        }
        moved
    }
}
