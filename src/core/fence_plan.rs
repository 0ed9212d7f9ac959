//! The fence planner (DESIGN §6): when the control plane cannot hear from this node, when will it
//! delete each pod, and so when must the pod be stopped here. Pure: pods, last contact, policy,
//! the peers' quorum verdict and `now` in; one plan per pod out, each with a reason.
//!
//! Facts mirrored (SEMANTICS §4–5, §9–10): after `nodeMonitorGracePeriod` without a heartbeat the
//! node is Unknown and gets `node.kubernetes.io/unreachable:NoExecute`; the taint-eviction
//! controller deletes a pod after the NoExecute delay of its tolerations for that taint (the same
//! `no_execute_outcome` `explain` uses). Both only ever add delay (monitor period, rate limits),
//! so `last contact + grace + delay` is the earliest deletion: stopping the pod by then is never
//! late.

use std::time::Duration;

use crate::core::qos::QosClass;
use crate::core::taint::{NoExecuteOutcome, Toleration, unreachable_delay};

/// Where fence planning counts monotonic instants from: this far before the present, so a last
/// contact made before the process began (read back after a restart) still maps to its true
/// instant on the monotonic scale.
pub const MONO_BASE: Duration = Duration::from_secs(400 * 24 * 3600);

/// Annotation with which a pod opts out of fencing (value `"false"` or `"disabled"`).
pub const OPT_OUT_ANNOTATION: &str = "nodewarden.io/fence";

/// What the planner knows of a pod bound to this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencePod {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub tolerations: Vec<Toleration>,
    /// `spec.terminationGracePeriodSeconds` (the API defaults it to 30).
    pub termination_grace_seconds: i64,
    /// The controller owner's kind, e.g. `ReplicaSet`, `DaemonSet`.
    pub owner_kind: Option<String>,
    /// A mirror of a static pod (`kubernetes.io/config.mirror`) or otherwise not from the API.
    pub static_or_mirror: bool,
    pub qos: QosClass,
    pub opted_out: bool,
    /// Succeeded or Failed: nothing runs.
    pub terminal: bool,
}

/// How the fence acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Enforce,
    /// Plans, logs and counts what it would do; kills nothing.
    DryRun,
    Off,
}

/// What the peers in this zone say (DESIGN §6 rule 6, `core::quorum`). `NotConsulted` plans what
/// a partition starting now would do (while connected, for the metrics), as `Enforce` would.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuorumVerdict {
    NotConsulted,
    /// The control plane evicts this node's pods: stop them on time. After a hold, the control
    /// plane taints nothing before `not_before`, so eviction times count from there.
    Enforce {
        not_before: Option<Duration>,
    },
    /// The control plane keeps this node's pods: nothing may be killed.
    Hold {
        reason: String,
    },
}

/// The planner's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FencePolicy {
    /// The control plane's `node-monitor-grace-period` (40s by default here: never late).
    pub node_monitor_grace_period: Duration,
    /// Stop this much before the eviction time.
    pub safety_margin: Duration,
    /// Cap on the SIGTERM grace given to a pod.
    pub grace_cap: Duration,
    pub mode: Mode,
}

/// When to stop one pod, on the monotonic clock of the caller (the same clock `last_contact`
/// and `now` are on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The earliest moment the control plane can delete the pod.
    pub eviction_time: Duration,
    pub sigterm_at: Duration,
    pub kill_at: Duration,
}

/// The planner's verdict for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Never fenced.
    Never { reason: String },
    /// Fenced on this schedule (in dry-run: only logged and counted).
    Stop {
        schedule: Schedule,
        dry_run: bool,
        reason: String,
    },
    /// Would be fenced, but the quorum verdict or the mode holds it.
    Hold { schedule: Schedule, reason: String },
}

/// One pod's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodPlan {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub plan: Plan,
}

fn never(reason: impl Into<String>) -> Plan {
    Plan::Never {
        reason: reason.into(),
    }
}

/// Plans every pod. `last_contact` is the latest moment the control plane provably heard from
/// this node (DESIGN §6 rule 1).
pub fn plan(
    pods: &[FencePod],
    last_contact: Duration,
    policy: &FencePolicy,
    quorum: &QuorumVerdict,
) -> Vec<PodPlan> {
    pods.iter()
        .map(|p| PodPlan {
            uid: p.uid.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            plan: plan_one(p, last_contact, policy, quorum),
        })
        .collect()
}

fn plan_one(
    pod: &FencePod,
    last_contact: Duration,
    policy: &FencePolicy,
    quorum: &QuorumVerdict,
) -> Plan {
    if policy.mode == Mode::Off {
        return never("fencing is off");
    }
    if pod.terminal {
        return never("the pod has finished (Succeeded or Failed)");
    }
    if pod.static_or_mirror {
        // The kubelet exempts static pods from NoExecute admission (SEMANTICS §3); the control
        // plane cannot delete them either.
        return never("static or mirror pod: the control plane cannot delete it");
    }
    if pod.owner_kind.as_deref() == Some("DaemonSet") {
        return never("DaemonSet pod: the DaemonSet controller keeps one on every node");
    }
    if pod.opted_out {
        return never(format!("opted out ({OPT_OUT_ANNOTATION})"));
    }
    let delay = match unreachable_delay(&pod.tolerations) {
        NoExecuteOutcome::Never => {
            return never("tolerates node.kubernetes.io/unreachable:NoExecute forever");
        }
        NoExecuteOutcome::EvictNow => (Duration::ZERO, "no tolerationSeconds left".to_string()),
        NoExecuteOutcome::EvictAfter { seconds } => (
            Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
            format!("tolerates node.kubernetes.io/unreachable for {seconds}s"),
        ),
    };
    // The earliest moment the unreachable taint can be on the node: a grace period after last
    // contact, and after a hold no earlier than the control plane could resume tainting.
    let tainted_from = match quorum {
        QuorumVerdict::Enforce {
            not_before: Some(t),
        } => (last_contact + policy.node_monitor_grace_period).max(*t),
        _ => last_contact + policy.node_monitor_grace_period,
    };
    let eviction_time = tainted_from + delay.0;
    let grace = Duration::from_secs(u64::try_from(pod.termination_grace_seconds).unwrap_or(0))
        .min(policy.grace_cap);
    let kill_at = eviction_time.saturating_sub(policy.safety_margin);
    let sigterm_at = kill_at.saturating_sub(grace);
    let schedule = Schedule {
        eviction_time,
        sigterm_at,
        kill_at,
    };
    let why = format!(
        "{}; the control plane can delete it {}s after last contact ({}s node-monitor grace + {}s); \
         SIGTERM with {}s grace, stopped {}s before",
        delay.1,
        (policy.node_monitor_grace_period + delay.0).as_secs(),
        policy.node_monitor_grace_period.as_secs(),
        delay.0.as_secs(),
        grace.as_secs(),
        policy.safety_margin.as_secs()
    );
    match quorum {
        QuorumVerdict::Hold { reason } => Plan::Hold {
            schedule,
            reason: format!("{why}; held: {reason}"),
        },
        QuorumVerdict::Enforce { .. } | QuorumVerdict::NotConsulted => {
            let quorum_note = match quorum {
                QuorumVerdict::Enforce {
                    not_before: Some(t),
                } if *t > last_contact + policy.node_monitor_grace_period => {
                    "the peers' quorum says the control plane evicts, counted from the end of its hold"
                }
                QuorumVerdict::Enforce { .. } => "the peers' quorum says the control plane evicts",
                _ => "peers not consulted",
            };
            Plan::Stop {
                schedule,
                dry_run: policy.mode == Mode::DryRun,
                reason: format!("{why}; {quorum_note}"),
            }
        }
    }
}
