//! How current the fence's pod view is (issue 21): whether the pod watch can be trusted to have
//! delivered every change, and since when it cannot. Pure: the watch's shell (`api::watch`)
//! feeds it what the HTTP exchanges of the watch showed and when contact was lost, on the
//! agent's monotonic scale, and asks.
//!
//! **Definition.** The view is *current* while a watch stream of it is open (the API server
//! accepted the watch request and the stream has not ended) and that stream has shown life — its
//! acceptance, an event or a BOOKMARK — since contact with the control plane was last lost. An
//! open, silent stream stays current: the API server sends a BOOKMARK about once a minute and the
//! client drops a stream silent for `api::READ_TIMEOUT`, so a stream that died without a word is
//! found then, as client-go finds it. Losing contact is what takes that trust away: the agent
//! cannot tell a stream that outlived an outage from one whose server is gone, so once contact
//! is lost the stream must show life again (or be replaced) before the view counts as current.
//! A completed list alone does not make the view current: the watch that follows it must be
//! accepted (one more request, bounded like every other). A streaming list (a watch with
//! `sendInitialEvents`, KEP-3157) is accepted before the pods it lists have arrived: its stream
//! makes the view current only once its initial events have ended (the BOOKMARK that marks their
//! end, which the watch's task sees).
//!
//! The view's *age* is zero while it is current, and otherwise the time since it stopped being
//! current (the stream ended or failed, or contact was lost with no word from it since), or since
//! the start of the run when it never was (the pods on disk are at least that old).
//!
//! **The bound.** When contact returns and the view is not current, the shell drops whatever the
//! watch has in flight and re-opens it at once (resuming from the last resourceVersion; the API
//! server's 410 makes it list again), every request bounded by the request timeout. So the view
//! is current again within [`bound`] of contact returning, unless the API server stores our
//! writes but fails the watch itself; `/readyz` then fails ([`lagging`]).

use std::time::Duration;

/// What the pod watch has shown, on the agent's monotonic scale (`Duration` since an origin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewLiveness {
    /// A watch stream is open: accepted, not yet ended.
    open: bool,
    /// The open stream is a streaming list whose initial events have not all arrived.
    listing: bool,
    /// The latest sign of life of the open stream: its acceptance or a frame's arrival.
    proof: Option<Duration>,
    /// When contact was last lost.
    lost: Option<Duration>,
    /// When the view last stopped being current, or the start of the run.
    stale_since: Duration,
}

impl ViewLiveness {
    /// A view that has not been current yet in a run that began at `start`.
    pub fn new(start: Duration) -> ViewLiveness {
        ViewLiveness {
            open: false,
            listing: false,
            proof: None,
            lost: None,
            stale_since: start,
        }
    }

    /// Whether the view is current (see the module doc).
    pub fn is_current(&self) -> bool {
        self.open
            && !self.listing
            && self
                .proof
                .is_some_and(|p| self.lost.is_none_or(|lost| p >= lost))
    }

    /// Since when the view has not been current; `None` while it is.
    pub fn stale_since(&self) -> Option<Duration> {
        (!self.is_current()).then_some(self.stale_since)
    }

    /// Zero while current; else the time since it stopped being current.
    pub fn age(&self, now: Duration) -> Duration {
        self.stale_since()
            .map_or(Duration::ZERO, |s| now.saturating_sub(s))
    }

    /// Applies `change` at `at`; returns whether the view went from current to not or back.
    fn apply(&mut self, at: Duration, change: impl FnOnce(&mut ViewLiveness)) -> bool {
        let was = self.is_current();
        change(self);
        let is = self.is_current();
        if was && !is {
            self.stale_since = at;
        }
        was != is
    }

    /// The API server accepted a watch request (its response headers arrived with a 2xx).
    pub fn opened(&mut self, at: Duration) -> bool {
        self.apply(at, |v| {
            v.open = true;
            v.proof = Some(at);
        })
    }

    /// The API server accepted a streaming list: open, but not current until
    /// [`ViewLiveness::listed`].
    pub fn opened_listing(&mut self, at: Duration) -> bool {
        self.apply(at, |v| {
            v.open = true;
            v.listing = true;
            v.proof = Some(at);
        })
    }

    /// The open streaming list's initial events ended: the stream now shows every pod.
    pub fn listed(&mut self, at: Duration) -> bool {
        self.apply(at, |v| {
            if v.open && v.listing {
                v.listing = false;
                v.proof = Some(at);
            }
        })
    }

    /// Whether the open stream is a streaming list still sending its initial events.
    pub fn is_listing(&self) -> bool {
        self.open && self.listing
    }

    /// Bytes of an event or a BOOKMARK arrived on the open stream.
    pub fn frame(&mut self, at: Duration) -> bool {
        self.apply(at, |v| {
            if v.open {
                v.proof = Some(at);
            }
        })
    }

    /// The stream ended, failed, or was dropped.
    pub fn closed(&mut self, at: Duration) -> bool {
        self.apply(at, |v| {
            v.open = false;
            v.listing = false;
            v.proof = None;
        })
    }

    /// Contact with the control plane was lost (reachability became Unreachable).
    pub fn contact_lost(&mut self, at: Duration) -> bool {
        self.apply(at, |v| v.lost = Some(at))
    }

    /// With contact back: whether the watch must be re-opened at once (dropping whatever it has
    /// in flight): it is not current, because its stream ended or showed nothing since contact
    /// was lost, or a request of it is hanging.
    pub fn needs_reopen(&self) -> bool {
        !self.is_current()
    }
}

/// The most the view may lag the last contact: the write that proved contact is answered within
/// one request timeout of its sending (the last contact), and the watch re-opened at once is
/// accepted within one more. Two request timeouts: 20 s at the defaults (typically one round trip
/// or two), never the client's minutes-long read timeout.
pub fn bound(request_timeout: Duration) -> Duration {
    request_timeout.saturating_mul(2)
}

/// Whether the view lags contact by more than `bound`: it is not current, and both it has not been
/// current and contact has been back (`reachable_since`, `None` while not reachable) for longer
/// than `bound`. What `/readyz` fails on.
pub fn lagging(
    view: &ViewLiveness,
    reachable_since: Option<Duration>,
    now: Duration,
    bound: Duration,
) -> bool {
    match (view.stale_since(), reachable_since) {
        (Some(stale), Some(back)) => now.saturating_sub(stale.max(back)) > bound,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_view_is_current_only_once_a_watch_is_accepted() {
        let mut v = ViewLiveness::new(s(0));
        assert!(!v.is_current());
        assert_eq!(v.age(s(7)), s(7), "never current: counted from the start");
        assert!(v.opened(s(8)));
        assert!(v.is_current());
        assert_eq!(v.age(s(100)), Duration::ZERO);
    }

    #[test]
    fn an_open_silent_stream_stays_current_while_contact_lasts() {
        let mut v = ViewLiveness::new(s(0));
        v.opened(s(1));
        // No frame for minutes: the read timeout, not this model, finds a dead stream.
        assert!(v.is_current());
        assert!(!v.needs_reopen());
    }

    #[test]
    fn losing_contact_takes_the_trust_away_until_the_stream_shows_life() {
        let mut v = ViewLiveness::new(s(0));
        v.opened(s(1));
        assert!(v.contact_lost(s(10)));
        assert!(!v.is_current());
        assert_eq!(v.stale_since(), Some(s(10)));
        assert!(v.needs_reopen());
        // A BOOKMARK after the loss: the stream outlived the outage.
        assert!(v.frame(s(12)));
        assert!(v.is_current());
        assert!(!v.needs_reopen());
    }

    #[test]
    fn a_frame_before_the_loss_proves_nothing_after_it() {
        let mut v = ViewLiveness::new(s(0));
        v.opened(s(1));
        v.frame(s(9));
        v.contact_lost(s(10));
        assert!(v.needs_reopen());
        assert_eq!(v.stale_since(), Some(s(10)));
    }

    #[test]
    fn a_closed_stream_is_stale_from_its_end_and_a_frame_without_one_changes_nothing() {
        let mut v = ViewLiveness::new(s(0));
        v.opened(s(1));
        assert!(v.closed(s(5)));
        assert_eq!(v.age(s(8)), s(3));
        assert!(!v.frame(s(6)));
        assert!(!v.is_current());
        // Re-opened after contact was lost and came back: current again.
        v.contact_lost(s(7));
        assert!(v.opened(s(9)));
        assert!(v.is_current());
    }

    #[test]
    fn a_streaming_list_is_current_only_once_its_initial_events_end() {
        let mut v = ViewLiveness::new(s(0));
        assert!(!v.opened_listing(s(1)));
        assert!(v.is_listing());
        // Its frames are the pods arriving, not proof of a whole view.
        assert!(!v.frame(s(2)));
        assert!(!v.is_current());
        assert!(v.needs_reopen());
        assert_eq!(v.age(s(3)), s(3), "never current: counted from the start");
        assert!(v.listed(s(4)));
        assert!(v.is_current() && !v.is_listing());
        // A second end (or one from a list that was not streamed) changes nothing.
        assert!(!v.listed(s(5)));
        // Closed mid-list, the next stream starts over; an end then proves nothing.
        v.closed(s(6));
        v.opened_listing(s(7));
        v.closed(s(8));
        assert!(!v.listed(s(9)));
        assert!(!v.is_current() && !v.is_listing());
    }

    #[test]
    fn lagging_needs_contact_back_and_a_stale_view_both_for_longer_than_the_bound() {
        let b = s(20);
        let mut v = ViewLiveness::new(s(0));
        v.opened(s(1));
        v.contact_lost(s(10));
        // (reachable since, now) → lagging
        let table = [
            (None, s(100), false),
            // Back 5 s ago, the view stale for 90 s: it gets its chance first.
            (Some(s(95)), s(100), false),
            (Some(s(95)), s(116), true),
            (Some(s(5)), s(31), true),
            (Some(s(5)), s(29), false),
        ];
        for (back, now, want) in table {
            assert_eq!(lagging(&v, back, now, b), want, "{back:?} {now:?}");
        }
        v.frame(s(40));
        assert!(!lagging(&v, Some(s(5)), s(200), b));
    }

    #[test]
    fn the_bound_is_a_few_request_timeouts_not_the_read_timeout() {
        assert_eq!(bound(s(10)), s(20));
        // The client's read timeout for an open watch (`api::READ_TIMEOUT`) is 180 s: the bound
        // must be far below it (core names no shell, so the figure is written out here).
        assert!(bound(s(10)) < s(180));
    }
}
