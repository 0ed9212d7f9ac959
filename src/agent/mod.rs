//! The agent: what one decide cycle does (`Decider`), the sampling edge (`Source`), and the
//! tasks of `nodewarden run` — the sampling loop (`sampling`), and in connected mode the reporter
//! (status, taints, events), the heartbeat (Lease) and the watches (`connected`).
//!
//! Standalone mode writes nothing anywhere: it samples, decides, logs and serves metrics.

use std::time::Duration;

use crate::config::{ConditionSpec, Config, TaintSpec};
use crate::core::clock::Moment;
use crate::core::condition::{
    self, ConditionStatus, ConditionTransition, NodeCondition, TaintChange,
};
use crate::core::pressure::{Evaluation, PressurePolicy, PressureState};
use crate::core::signal::Observations;

/// One reading of every signal, with what could not be read.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    pub observations: Observations,
    /// (what could not be read, why), e.g. ("imagefs", "statvfs /var/lib/containerd: ENOENT").
    pub errors: Vec<(String, String)>,
}

/// The sampling edge, so the loop can run against a double in tests.
pub trait Source {
    fn read(&mut self) -> Reading;
}

impl Source for crate::sample::Sampler {
    fn read(&mut self) -> Reading {
        let sample = self.sample();
        Reading {
            observations: sample.observations,
            errors: sample
                .errors
                .iter()
                .map(|e| (e.what().to_string(), e.to_string()))
                .collect(),
        }
    }
}

/// The pressure policy the configuration describes.
pub fn policy(config: &Config) -> PressurePolicy {
    PressurePolicy {
        thresholds: config.thresholds.clone(),
        psi_thresholds: config.psi_thresholds.clone(),
        conditions: config
            .conditions
            .iter()
            .map(|c| (c.condition_type.clone(), c.signals.clone()))
            .collect(),
        transition_period: config.eviction_pressure_transition_period,
    }
}

/// The node name: configured, else `$NODE_NAME`, else the host name.
pub fn node_name(config: &Config) -> String {
    if let Some(n) = &config.node_name {
        return n.clone();
    }
    if let Ok(n) = std::env::var("NODE_NAME")
        && !n.is_empty()
    {
        return n;
    }
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The decision state carried between cycles, and what one cycle decided.
pub struct Decider {
    specs: Vec<ConditionSpec>,
    policy: PressurePolicy,
    pressure: PressureState,
    pub conditions: Vec<NodeCondition>,
    pub taints: Vec<TaintSpec>,
}

/// The result of one decide cycle.
pub struct Decision {
    pub evaluation: Evaluation,
    pub transitions: Vec<ConditionTransition>,
    pub taint_changes: Vec<TaintChange>,
}

impl Decider {
    pub fn new(config: &Config) -> Decider {
        Decider {
            specs: config.conditions.clone(),
            policy: policy(config),
            pressure: PressureState::default(),
            conditions: Vec::new(),
            taints: Vec::new(),
        }
    }

    /// Starts from the conditions our Node showed when last seen, so that a restart is not a
    /// transition: a first decision that agrees keeps the condition's `lastTransitionTime` and
    /// records no Event, as the kubelet, which compares with the stored Node (SEMANTICS §6.3).
    /// Only conditions we own that say exactly what we would write are taken; another writer's
    /// wording is never adopted.
    pub fn resume(&mut self, seen: Vec<NodeCondition>) {
        let ours: Vec<NodeCondition> = seen
            .into_iter()
            .filter(|c| {
                self.specs.iter().any(|s| {
                    let (reason, message) = match c.status {
                        ConditionStatus::True => (&s.true_reason, &s.true_message),
                        ConditionStatus::False => (&s.false_reason, &s.false_message),
                        ConditionStatus::Unknown => return false,
                    };
                    s.condition_type == c.condition_type
                        && &c.reason == reason
                        && &c.message == message
                })
            })
            .collect();
        self.taints = condition::desired_taints(&self.specs, &ours);
        self.conditions = ours;
    }

    /// Takes the thresholds and transition period of a reloaded configuration, keeping the
    /// conditions as they are (a reload is not a transition). Minimum-reclaim and grace-period
    /// bookkeeping starts over, since it is indexed by threshold; transition periods go on.
    pub fn reload(&mut self, config: &Config) {
        self.policy = policy(config);
        self.pressure = self.pressure.for_new_thresholds();
    }

    /// One cycle of pure decisions over a reading.
    pub fn decide(&mut self, observations: &Observations, now: Moment) -> Decision {
        let (pressure, evaluation) = self.policy.evaluate(observations, &self.pressure, now.mono);
        self.pressure = pressure;
        let (conditions, transitions) = condition::update_conditions(
            &self.specs,
            &self.conditions,
            &evaluation.pressure,
            now.wall,
        );
        let taints = condition::desired_taints(&self.specs, &conditions);
        let taint_changes = condition::taint_changes(&self.taints, &taints);
        self.conditions = conditions;
        self.taints = taints;
        Decision {
            evaluation,
            transitions,
            taint_changes,
        }
    }

    pub fn specs(&self) -> &[ConditionSpec] {
        &self.specs
    }
}

/// How often the sampling loop wakes: every update period, and at least twice per systemd
/// watchdog interval so the watchdog is pinged from this loop and nowhere else.
pub fn wake_interval(update: Duration, watchdog: Option<Duration>) -> Duration {
    match watchdog {
        Some(w) if w / 2 < update => (w / 2).max(Duration::from_millis(50)),
        _ => update,
    }
}

pub mod clock;
pub mod connected;
pub mod fence_task;
pub mod heartbeat;
pub mod quorum;
pub mod reporter;
pub mod sampling;
pub mod shutdown;
pub mod snapshot;
pub mod wake;
