//! What reads of the kube-controller-manager's leader Lease prove about the taint eviction
//! controller's timers (`core::leader`, docs/fence.md §7, *The controller-manager's Lease*): a
//! holder that stopped renewing longer ago than the Lease lasts, no holder, or a new holder.
//! Nothing compares this node's clock with the holder's.

use std::time::{Duration, SystemTime};

use nodewarden::core::leader::{Leader, Moved, Read};

const LEASE: Duration = Duration::from_secs(15);

fn s(secs: f64) -> Duration {
    Duration::from_secs_f64(secs)
}

/// The holder's clock at `secs` of its own: far from this node's on purpose.
fn theirs(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000) + s(secs)
}

/// A read of `holder` renewed at `renewed` (its clock), sent at `sent` and answered 50 ms
/// later (this run's monotonic clock).
fn read<'a>(holder: &'a str, renewed: Option<f64>, sent: f64) -> Read<'a> {
    Read {
        holder,
        renewed: renewed.map(theirs),
        lease_duration: LEASE,
        sent: s(sent),
        answered: s(sent + 0.05),
    }
}

#[test]
fn a_holder_that_renews_proves_nothing() {
    let mut l = Leader::default();
    // Renewed every 2 s, read every 10 s: each read shows a renewal within the last 2 s.
    for i in 0..30 {
        let at = 100.0 + 10.0 * f64::from(i);
        assert_eq!(l.read(&read("cm-a", Some(at - 1.0), at)), None, "read {i}");
    }
    assert_eq!(l.timers_from(), None);
    assert_eq!(l.holder(), Some("cm-a"));
}

#[test]
fn a_holder_silent_for_longer_than_the_lease_lasts_has_exited() {
    let mut l = Leader::default();
    // Renewed at 99 s (its clock) and read at 100 s: this bounds its clock by our 100.05 s.
    assert_eq!(l.read(&read("cm-a", Some(99.0), 100.0)), None);
    // The API server went down at 104 s, after a renewal at 103 s; back at 160 s, the Lease
    // still shows that renewal. It happened by 104.05 s here; 15 s later the holder had given up.
    assert_eq!(
        l.read(&read("cm-a", Some(103.0), 160.0)),
        Some(Moved::Lapsed)
    );
    assert_eq!(l.timers_from(), Some(s(160.0)));
    // Every read that finds it so moves the instant on.
    assert_eq!(
        l.read(&read("cm-a", Some(103.0), 170.0)),
        Some(Moved::Lapsed)
    );
    assert_eq!(l.timers_from(), Some(s(170.0)));
    // Its successor acquired the Lease after that read: nothing moves back.
    assert_eq!(
        l.read(&read("cm-b", Some(176.0), 180.0)),
        Some(Moved::TakenOver)
    );
    assert_eq!(l.timers_from(), Some(s(170.0)));
    assert_eq!(l.read(&read("cm-b", Some(188.0), 190.0)), None);
    assert_eq!(l.timers_from(), Some(s(170.0)));
}

#[test]
fn the_lapse_counts_from_the_renewal_as_bounded_by_earlier_reads_never_from_the_clocks() {
    // The read before the outage was answered 5 s after the renewal it showed: the holder's
    // clock maps to this one no later than 5 s on. A renewal 16 s before the return by its clock
    // may have happened 11 s before it here: no lapse proven.
    let mut l = Leader::default();
    l.read(&read("cm-a", Some(95.0), 99.95));
    assert_eq!(l.read(&read("cm-a", Some(144.0), 160.0)), None);
    assert_eq!(l.timers_from(), None);
    assert_eq!(l.read(&read("cm-a", Some(144.0), 163.9)), None);
    // Sent 15.5 s after the renewal as mapped, the same record lapses.
    assert_eq!(
        l.read(&read("cm-a", Some(144.0), 164.5)),
        Some(Moved::Lapsed)
    );
    assert_eq!(l.timers_from(), Some(s(164.5)));
    // A first read proves nothing, however old its renewal looks on this node's clock.
    let mut fresh = Leader::default();
    assert_eq!(fresh.read(&read("cm-a", Some(0.0), 5000.0)), None);
    assert_eq!(fresh.timers_from(), None);
    // Nor a holder whose renewals carry no time.
    let mut blank = Leader::default();
    blank.read(&read("cm-a", None, 100.0));
    assert_eq!(blank.read(&read("cm-a", None, 500.0)), None);
    assert_eq!(blank.timers_from(), None);
}

#[test]
fn a_released_lease_or_a_new_holder_bounds_the_timers() {
    let mut l = Leader::default();
    // A first read of a released Lease: no process leads while it is served.
    assert_eq!(l.read(&read("", Some(10.0), 50.0)), Some(Moved::Released));
    assert_eq!(l.timers_from(), Some(s(50.0)));
    // The next holder is the first one seen after a release: nothing new to prove.
    assert_eq!(l.read(&read("cm-a", Some(55.0), 60.0)), None);
    assert_eq!(l.read(&read("cm-a", Some(69.0), 70.0)), None);
    assert_eq!(l.timers_from(), Some(s(50.0)));
    // Another holder since the read at 70 s: it acquired the Lease after that read left.
    assert_eq!(
        l.read(&read("cm-b", Some(75.0), 80.0)),
        Some(Moved::TakenOver)
    );
    assert_eq!(l.timers_from(), Some(s(70.0)));
    // A first read of a held Lease proves nothing about when its holder acquired it.
    let mut fresh = Leader::default();
    assert_eq!(fresh.read(&read("cm-b", Some(75.0), 80.0)), None);
    assert_eq!(fresh.timers_from(), None);
}

#[test]
fn reads_come_every_five_minutes_and_every_ten_seconds_while_nobody_leads() {
    let mut l = Leader::default();
    assert_eq!(l.next_read(), s(300.0));
    l.read(&read("cm-a", Some(99.0), 100.0));
    assert_eq!(l.next_read(), s(300.0));
    l.read(&read("cm-a", Some(103.0), 160.0));
    assert_eq!(l.next_read(), s(10.0), "lapsed");
    l.read(&read("cm-b", Some(175.0), 176.0));
    assert_eq!(l.next_read(), s(300.0), "taken over");
    l.read(&read("", Some(180.0), 480.0));
    assert_eq!(l.next_read(), s(10.0), "released");
    l.read(&read("cm-c", Some(485.0), 490.0));
    assert_eq!(l.next_read(), s(300.0));
}

#[test]
fn a_failed_read_is_tried_again_within_the_fences_wait_after_a_return_and_after_ten_seconds_otherwise()
 {
    use nodewarden::core::leader::retry_after;
    // Away from a return, or once a read after it came back with the Lease.
    assert_eq!(retry_after(None), s(10.0));
    // The return's read failed at once: tried again every 500 ms while the fence's 2 s wait
    // leaves room for another read.
    assert_eq!(retry_after(Some(s(0.0))), s(0.5));
    assert_eq!(retry_after(Some(s(1.4))), s(0.5));
    // A retry would leave at or past the end of the wait: no read then changes what the fence
    // does, so the Lease is not read faster than every 10 s.
    assert_eq!(retry_after(Some(s(1.5))), s(10.0));
    assert_eq!(retry_after(Some(s(30.0))), s(10.0));
}
