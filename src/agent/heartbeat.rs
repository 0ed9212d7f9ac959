//! The heartbeat task: renews our Lease every `nodeLeaseDurationSeconds / 4` (docs/semantics.md
//! §13), whatever else is going on. A failed renewal is retried at the next tick; reachability
//! records every outcome (a renewal stored is the agent's main proof of contact). Each renewal is
//! bounded by one renew interval, so a hung request never pushes the next renewal later than that.
//! The first renewal stored after a failure is followed by the next one no sooner than the
//! kubelet's lag (`core::fencing::next_renewal`): that one proves the kubelet renewed too.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff;
use tokio::sync::watch;

use crate::agent::clock::Clock;
use crate::api::lease::LeaseKeeper;
use crate::api::reachability::Reachability;
use crate::core::contact::Request;
use crate::observe::http::Health;

/// The renew interval for a Lease duration: a quarter of it, as the kubelet renews.
pub fn renew_interval(lease_duration_seconds: u32) -> Duration {
    Duration::from_secs(u64::from(lease_duration_seconds)) / 4
}

/// Runs until the task is dropped. `kubelet_lag`: `FencePolicy::kubelet_lag`.
pub async fn run(
    mut keeper: LeaseKeeper,
    interval: Duration,
    kubelet_lag: Duration,
    uid: watch::Receiver<Option<String>>,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    clock: Clock,
) {
    let mut ticker = tokio::time::interval(interval);
    // After a long stall (a black-holed request), renew once, not a burst.
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        ticker.tick().await;
        let now =
            jiff::Timestamp::try_from(clock.now().wall).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let node_uid = uid.borrow().clone();
        let sent = tokio::time::Instant::now();
        let result = keeper.renew(now, node_uid.as_deref()).await;
        reach.record(&result, Request::OwnWrite, sent);
        match &result {
            Ok(_) => {
                health.set_api_ok();
                if failing {
                    log::info!("lease renewed again");
                    failing = false;
                    ticker.reset_after(crate::core::fencing::next_renewal(
                        interval,
                        kubelet_lag,
                        true,
                    ));
                }
            }
            Err(e) => {
                // One record per episode; reachability logs its own changes.
                if !failing && e.got_answer() {
                    log::warn!(error = e.to_string().as_str(); "lease renewal failed: {e}");
                }
                failing = true;
            }
        }
    }
}
