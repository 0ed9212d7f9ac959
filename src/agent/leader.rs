//! The kube-controller-manager's leader Lease (`[fence] controllerManagerLease`), read every
//! `core::leader::READ_INTERVAL` while the API server answers (every
//! `LEADERLESS_READ_INTERVAL` while a read proves no process leads) and at once when contact
//! returns.
//! What the reads prove (`core::leader::Leader`) goes to the fence, which counts no eviction
//! from before the instant no running taint eviction timer started (docs/fence.md §7, *The
//! controller-manager's Lease*).

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::agent::clock::Clock;
use crate::api::{ApiError, Requests};
use crate::core::contact::Reach;
use crate::core::leader::{Leader, Moved, Read};

/// What the fence learns from the reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaderView {
    /// The instant no taint eviction timer that can still delete a pod started before
    /// (`core::leader::Leader::timers_from`).
    pub timers_from: Option<std::time::Duration>,
    /// Cut off while the Lease was readable, and not read since: after a return, the fence plans
    /// on a taint once this read is in, or `core::leader::RETURN_READ_WAIT` after the return
    /// (`agent::fence_task`).
    pub pending: bool,
    /// The latest read proved that no process leads (`core::leader::Leader::leaderless`): the
    /// quorum's rounds know that the next leader's first pass may taint a node recorded
    /// Ready=Unknown whatever its zone's recorded state
    /// (`core::quorum::Round::leaderless_unknown`).
    pub leaderless: bool,
}

/// Reads `namespace/name` through `client` for as long as the agent runs, publishing to `view`.
pub async fn run(
    client: kube::Client,
    requests: Requests,
    (namespace, name): (String, String),
    mut reach: watch::Receiver<Reach>,
    clock: Clock,
    view: watch::Sender<LeaderView>,
) {
    let api: Api<Lease> = Api::namespaced(client, &namespace);
    let what = format!("the controller-manager's leader Lease {namespace}/{name}");
    let resource = format!("leases/{namespace}/{name}");
    let mut failing: Option<String> = None;
    let mut leader = Leader::default();
    // Whether the latest read came back with the Lease: not before the first, nor while the API
    // server refuses it, has none, or does not answer.
    let mut readable = false;
    // When the first read after a return left, until a read comes back with the Lease.
    let mut returned: Option<Instant> = None;
    loop {
        // Cut off, nothing is read: the next read is the return's, which the fence waits for.
        if readable && *reach.borrow_and_update() == Reach::Unreachable {
            view.send_if_modified(|v| !std::mem::replace(&mut v.pending, true));
        }
        let mut was_cut_off = false;
        while *reach.borrow_and_update() == Reach::Unreachable {
            was_cut_off = true;
            if reach.changed().await.is_err() {
                break;
            }
        }
        let sent = Instant::now();
        if was_cut_off {
            returned = Some(sent);
        }
        let read = requests
            .call("get", resource.clone(), api.get_opt(&name))
            .await;
        let answered = Instant::now();
        // A read that failed on the way (a timeout, a 5xx) is tried again soon, and within the
        // fence's wait sooner still: the read after a return is the one it waits for
        // (`core::leader::retry_after`).
        let mut retry_soon = false;
        let problem = match read {
            Ok(Some(lease)) => {
                let spec = lease.spec.unwrap_or_default();
                let holder = spec.holder_identity.unwrap_or_default();
                let lease_duration = spec
                    .lease_duration_seconds
                    .and_then(|s| u64::try_from(s).ok())
                    .map(std::time::Duration::from_secs);
                match lease_duration {
                    Some(lease_duration) => {
                        let read = Read {
                            holder: &holder,
                            renewed: spec.renew_time.map(|t| std::time::SystemTime::from(t.0)),
                            lease_duration,
                            sent: clock.mono_of(sent),
                            answered: clock.mono_of(answered),
                        };
                        if let Some(moved) = leader.read(&read) {
                            log_moved(&what, moved, &holder);
                        }
                        let seen = LeaderView {
                            timers_from: leader.timers_from(),
                            pending: false,
                            leaderless: leader.leaderless(),
                        };
                        view.send_if_modified(|v| std::mem::replace(v, seen) != seen);
                        None
                    }
                    None => Some("it has no leaseDurationSeconds".to_string()),
                }
            }
            Ok(None) => Some(
                "it does not exist (set [fence] controllerManagerLease to where the controller-manager's --leader-elect-resource-namespace and -name put it, or to \"\" to read none)"
                    .to_string(),
            ),
            Err(e) => {
                retry_soon = e.is_transient();
                Some(describe(&e))
            }
        };
        match (&problem, &failing) {
            (Some(p), None) => log::warn!(
                lease = what.as_str();
                "cannot read {what}: {p}; until it can, the fence counts the unreachable taint from its timeAdded even where a new controller-manager restarted the tolerations"
            ),
            (None, Some(_)) => log::info!(lease = what.as_str(); "{what} read again"),
            _ => {}
        }
        readable = problem.is_none();
        failing = problem;
        if readable {
            returned = None;
        }
        let next = if retry_soon {
            crate::core::leader::retry_after(returned.map(|r| answered - r))
        } else {
            leader.next_read()
        };
        // The next read: after the interval, or, once cut off, at the return (the loop's head).
        let cut_off = async {
            if reach.wait_for(|r| *r == Reach::Unreachable).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(answered + next) => {}
            () = cut_off => {}
        }
    }
}

fn describe(e: &ApiError) -> String {
    match e.code() {
        Some(403) => format!(
            "refused ({}); grant get on it (the packaged Role nodewarden-controller-manager-lease does)",
            crate::api::excerpt(&e.to_string())
        ),
        _ => crate::api::excerpt(&e.to_string()),
    }
}

fn log_moved(what: &str, moved: Moved, holder: &str) {
    // Bounded: the identity is whatever the Lease holds.
    let holder = crate::api::excerpt(holder);
    let why = match moved {
        Moved::Lapsed => {
            format!("its holder {holder} stopped renewing longer ago than the Lease lasts")
        }
        Moved::Released => "it has no holder".to_string(),
        Moved::TakenOver => format!("{holder} took it over since the read before"),
    };
    log::info!(
        lease = what;
        "{what}: {why}, so no taint eviction timer running now started before this read: the fence counts no eviction from earlier"
    );
}
