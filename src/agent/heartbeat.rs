//! The heartbeat task: renews our Lease every `nodeLeaseDurationSeconds / 4` (docs/semantics.md
//! §13), whatever else is going on; reachability records every outcome (a renewal stored is the
//! agent's main proof of contact). Each renewal is bounded by one renew interval, so a hung
//! request never pushes the next renewal later than that.
//!
//! After a failure (docs/fence.md §2):
//! - the next renewal goes out a second later (`core::fencing::RETRY_AFTER_FAILURE`, or a renew
//!   interval when that is shorter), not a renew interval later;
//! - while that renewal is not answered, the API server is probed every second
//!   (`core::fencing::PROBE_EVERY`); once a probe is answered, the hung renewal is dropped and
//!   another goes out at once. That one is not probed: an API server slow to store writes but
//!   quick to answer reads would otherwise see every renewal dropped;
//! - the first renewal stored is followed by the next one no sooner than the kubelet's lag
//!   (`core::fencing::next_renewal`): that one proves the kubelet renewed too;
//! - until that one goes out, the Lease is read every second, and a read not answered within
//!   its second is recorded as a failure, and a renewal goes out at once
//!   (`api::lease::LeaseProbe::unanswered`). The control plane may still count from the contact
//!   before the failure, so the fence counts the node cut off again at once
//!   (`core::fencing::Link::unproven`, docs/fence.md §2, *A relapse*).
//!   The reads go on while a renewal is in flight, which hangs until its bound if the link is cut
//!   again; after an unanswered read that renewal is probed as one sent after a failure. A renewal that ends the fence's partition with no failure seen (one that hung
//!   through a cut and was answered once the link came back) is a return too: the renewals keep
//!   their cadence, and the Lease is read every second until the one sent a kubelet's lag after
//!   it;
//! - while the Node as last seen is not Ready (its kubelet posted Ready=False, or it carries the
//!   not-ready taint: `agent::fence_task` says so), the Lease is read every second too, each read
//!   bounded by a second, and an unanswered one is recorded as a failure, which cuts such a node
//!   off at once (`core::fencing::Link::note_not_ready`, docs/fence.md §2, *A Node not Ready*);
//! - when the quorum task's own read of the Lease is answered after a peer said it reaches the
//!   API server again (`agent::quorum`, `renew_now`), the next renewal goes out at once, and a
//!   renewal hung after a failure is dropped as for a probe's answer.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff;
use tokio::sync::{Notify, watch};

use crate::agent::clock::Clock;
use crate::api::lease::LeaseKeeper;
use crate::api::reachability::Reachability;
use crate::core::contact::Request;
use crate::core::fencing::{PROBE_EVERY, RETRY_AFTER_FAILURE};
use crate::observe::http::Health;

/// The renew interval for a Lease duration: a quarter of it, as the kubelet renews.
pub fn renew_interval(lease_duration_seconds: u32) -> Duration {
    Duration::from_secs(u64::from(lease_duration_seconds)) / 4
}

/// Until when the Lease is read every second: while a return is watched (`watched`), and for as
/// long as the Node as last seen is not Ready (`not_ready`, docs/fence.md §2, *A Node not
/// Ready*): the controller may add the not-ready taint at any pass, or has, and deletes each pod
/// that tolerates it for a while once the while ends, whether or not the kubelet hears. A link
/// that hangs then is known within two seconds, not `unreachableAfter`.
fn watch_until(
    watched: Option<tokio::time::Instant>,
    not_ready: bool,
) -> Option<tokio::time::Instant> {
    // Far enough to be never: the readiness's next change restarts the reads anyway.
    const WHILE_NOT_READY: Duration = Duration::from_secs(365 * 24 * 3600);
    let while_not_ready = not_ready.then(|| tokio::time::Instant::now() + WHILE_NOT_READY);
    watched.max(while_not_ready)
}

/// Runs until the task is dropped. `kubelet_lag`: `FencePolicy::kubelet_lag`;
/// `not_ready`: whether the Node as last seen is not Ready (`agent::fence_task`).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    mut keeper: LeaseKeeper,
    interval: Duration,
    kubelet_lag: Duration,
    uid: watch::Receiver<Option<String>>,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    clock: Clock,
    renew_now: Arc<Notify>,
    mut not_ready: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(interval);
    // After a long stall (a black-holed request), renew once, not a burst.
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let probe = keeper.probe();
    let mut failing = false;
    // The renewal about to go out follows a probe's answer: it is not probed itself.
    let mut after_probe = false;
    // After a return (the first renewal stored past a failure, or one that ended the fence's
    // partition): until when the Lease is read every second, about when the renewal that proves
    // the kubelet renewed too goes out.
    let mut watched_until: Option<tokio::time::Instant> = None;
    loop {
        // Until the next renewal is due; a change of the Node's readiness restarts the reads.
        loop {
            let not_ready_now = *not_ready.borrow_and_update();
            let until = watch_until(watched_until, not_ready_now);
            let watch = async {
                match until {
                    Some(until) => probe.unanswered(PROBE_EVERY, until).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = ticker.tick() => {}
                () = renew_now.notified() => {}
                sent = watch => {
                    reach.record_unanswered(PROBE_EVERY, sent);
                    watched_until = None;
                    failing = true;
                    after_probe = false;
                }
                Ok(()) = not_ready.changed() => continue,
            }
            break;
        }
        let now =
            jiff::Timestamp::try_from(clock.now().wall).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let node_uid = uid.borrow().clone();
        let sent = tokio::time::Instant::now();
        let mut renewal = std::pin::pin!(keeper.renew(now, node_uid.as_deref()));
        // The return is watched while this renewal is in flight too: one sent into a link cut
        // again hangs until its bound. An unanswered read is a failure, and the renewal is then
        // probed as one sent after a failure.
        let mut answered = None;
        let probed = failing && !after_probe;
        let not_ready_now = *not_ready.borrow();
        if !probed && let Some(until) = watch_until(watched_until, not_ready_now) {
            tokio::select! {
                result = &mut renewal => answered = Some(result),
                sent = probe.unanswered(PROBE_EVERY, until) => {
                    reach.record_unanswered(PROBE_EVERY, sent);
                    watched_until = None;
                    failing = true;
                    after_probe = false;
                }
            }
        }
        let result = match answered {
            Some(result) => Some(result),
            None if failing && !after_probe => tokio::select! {
                result = &mut renewal => Some(result),
                () = probe.answered(PROBE_EVERY) => None,
                () = renew_now.notified() => None,
            },
            None => Some(renewal.await),
        };
        after_probe = result.is_none();
        let Some(result) = result else {
            // The API server answers again; the renewal hung on a dead connection is dropped (it
            // proves nothing, and its late failure would be stale) and another goes out now.
            ticker.reset_immediately();
            continue;
        };
        // A renewal that hung through a cut and was answered once the link came back ends a
        // partition with no failure seen: a return all the same.
        let ended = reach.record(&result, Request::OwnWrite, sent);
        match &result {
            Ok(_) => {
                health.set_api_ok();
                if failing {
                    log::info!("lease renewed again");
                    failing = false;
                    let next = crate::core::fencing::next_renewal(interval, kubelet_lag, true);
                    ticker.reset_after(next);
                    watched_until =
                        (!kubelet_lag.is_zero()).then(|| tokio::time::Instant::now() + next);
                } else if ended && !kubelet_lag.is_zero() {
                    // No failure seen: the cadence stands (on an API server slow to store
                    // writes, a kubelet's lag more would let the contact age past
                    // `unreachableAfter`), and the return is watched until the renewal that
                    // proves the kubelet, the first sent a kubelet's lag after this one.
                    watched_until = Some(sent + kubelet_lag + interval);
                }
            }
            Err(e) => {
                // One record per episode; reachability logs its own changes.
                if !failing && e.got_answer() {
                    log::warn!(error = e.to_string().as_str(); "lease renewal failed: {e}");
                }
                failing = true;
                // A Lease shorter than 4 s renews more often than that already.
                ticker.reset_after(RETRY_AFTER_FAILURE.min(interval));
            }
        }
    }
}
