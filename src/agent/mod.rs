//! The agent: what one decide cycle does (`Decider`), the sampling edge (`Source`), and the
//! tasks of `nodewarden run` — the sampling loop (`sampling`), and in connected mode the reporter
//! (status, taints, events), the heartbeat (Lease) and the watches (`connected`).
//!
//! Standalone mode writes nothing anywhere: it samples, decides, logs and serves metrics.

use std::sync::Arc;
use std::time::Duration;

use crate::config::{ConditionSpec, Config, TaintSpec};
use crate::core::clock::Moment;
use crate::core::condition::{
    self, ConditionStatus, ConditionTransition, NodeCondition, TaintChange,
};
use crate::core::pressure::{Evaluation, Evaluator, PressurePolicy, PressureState};
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
    pressure: Evaluator,
    /// Per spec: where the evaluator keeps its condition's verdict (`None`: the policy has no
    /// such condition, so it is never under pressure).
    slots: Vec<Option<usize>>,
    /// No two specs share a condition type (the configuration rejects it; a hand-built one may
    /// not): only then is `conditions[i]` the condition of `specs[i]` after a cycle.
    unique_specs: bool,
    /// `conditions` are as the last cycle left them: one per spec, in the specs' order.
    aligned: bool,
    /// Our conditions as decided. Callers read them; only `resume` and `decide` change them (a
    /// cycle relies on the order the previous one left them in).
    pub conditions: Vec<NodeCondition>,
    pub taints: Vec<TaintSpec>,
}

/// The result of one decide cycle.
pub struct Decision {
    /// Shared with the decider, which updates it in place at the next cycle when this decision
    /// is gone by then (and copies it otherwise).
    pub evaluation: Arc<Evaluation>,
    /// Empty (no allocation) when nothing flipped.
    pub transitions: Vec<ConditionTransition>,
    pub taint_changes: Vec<TaintChange>,
}

impl Decider {
    pub fn new(config: &Config) -> Decider {
        let specs = config.conditions.clone();
        let pressure = Evaluator::new(policy(config), &PressureState::default());
        let slots = slots(&specs, &pressure);
        let unique_specs = specs.iter().enumerate().all(|(i, s)| {
            specs[..i]
                .iter()
                .all(|o| o.condition_type != s.condition_type)
        });
        Decider {
            specs,
            pressure,
            slots,
            unique_specs,
            aligned: false,
            conditions: Vec::new(),
            taints: Vec::new(),
        }
    }

    /// Starts from the conditions our Node showed when last seen, so that a restart is not a
    /// transition: a first decision that agrees keeps the condition's `lastTransitionTime` and
    /// records no Event, as the kubelet, which compares with the stored Node (docs/semantics.md
    /// §6.3). Only conditions we own that say exactly what we would write are taken; another
    /// writer's wording is never adopted.
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
        self.aligned = false;
    }

    /// Takes the thresholds and transition period of a reloaded configuration, keeping the
    /// conditions as they are (a reload is not a transition). Minimum-reclaim and grace-period
    /// bookkeeping starts over, since it is indexed by threshold; transition periods go on.
    pub fn reload(&mut self, config: &Config) {
        let carried = self.pressure.state().for_new_thresholds();
        self.pressure = Evaluator::new(policy(config), &carried);
        self.slots = slots(&self.specs, &self.pressure);
    }

    /// One cycle of pure decisions over a reading. When no condition flips (nearly every
    /// cycle) it allocates nothing: the heartbeats are set in place, and the transitions and
    /// taint changes are empty.
    pub fn decide(&mut self, observations: &Observations, now: Moment) -> Decision {
        self.pressure.step(observations, now.mono);
        let aligned = self.aligned && self.conditions.len() == self.specs.len();
        debug_assert!(
            !aligned
                || self
                    .conditions
                    .iter()
                    .zip(&self.specs)
                    .all(|(c, s)| c.condition_type == s.condition_type)
        );
        let transitions = if aligned {
            self.update_in_place(now)
        } else {
            // The first cycle (or after a resume): the conditions are built from the specs.
            let evaluation = self.pressure.evaluation();
            let (conditions, transitions) = condition::update_conditions(
                &self.specs,
                &self.conditions,
                &evaluation.pressure,
                now.wall,
            );
            self.conditions = conditions;
            // `update_conditions` builds one condition per spec, in order.
            self.aligned = self.unique_specs;
            transitions
        };
        let taint_changes = if self.taints_hold(aligned) {
            Vec::new()
        } else {
            let taints = condition::desired_taints(&self.specs, &self.conditions);
            let changes = condition::taint_changes(&self.taints, &taints);
            self.taints = taints;
            changes
        };
        Decision {
            evaluation: Arc::clone(self.pressure.evaluation()),
            transitions,
            taint_changes,
        }
    }

    /// `condition::update_conditions` for conditions that already follow the specs one for
    /// one: a heartbeat in place, a new condition (and a transition) only where the status
    /// flips.
    fn update_in_place(&mut self, now: Moment) -> Vec<ConditionTransition> {
        let mut transitions = Vec::new();
        for ((spec, slot), c) in self.specs.iter().zip(&self.slots).zip(&mut self.conditions) {
            let status =
                ConditionStatus::from_bool(slot.is_some_and(|s| self.pressure.reported(s)));
            if c.status == status {
                c.last_heartbeat_time = now.wall;
                continue;
            }
            let (reason, message) = match status {
                ConditionStatus::True => (&spec.true_reason, &spec.true_message),
                _ => (&spec.false_reason, &spec.false_message),
            };
            transitions.push(ConditionTransition {
                condition_type: spec.condition_type.clone(),
                from: Some(c.status),
                to: status,
                reason: reason.clone(),
                message: message.clone(),
                event: condition::event_reason(spec, status),
            });
            *c = NodeCondition {
                condition_type: spec.condition_type.clone(),
                status,
                reason: reason.clone(),
                message: message.clone(),
                last_heartbeat_time: now.wall,
                last_transition_time: now.wall,
            };
        }
        transitions
    }

    /// Whether `taints` already is `condition::desired_taints` of the conditions (checked
    /// without building it). `aligned`: `conditions[i]` is the condition of `specs[i]`.
    fn taints_hold(&self, aligned: bool) -> bool {
        let mut have = self.taints.iter();
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(taint) = &spec.taint else { continue };
            let on = if aligned {
                self.conditions[i].status == ConditionStatus::True
            } else {
                self.conditions.iter().any(|c| {
                    c.condition_type == spec.condition_type && c.status == ConditionStatus::True
                })
            };
            if on && have.next() != Some(taint) {
                return false;
            }
        }
        have.next().is_none()
    }

    pub fn specs(&self) -> &[ConditionSpec] {
        &self.specs
    }
}

/// Where the evaluator keeps each spec's verdict.
fn slots(specs: &[ConditionSpec], pressure: &Evaluator) -> Vec<Option<usize>> {
    specs
        .iter()
        .map(|s| pressure.slot(&s.condition_type))
        .collect()
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
pub mod leader;
pub mod pod_cgroups;
pub mod quorum;
pub mod reporter;
pub mod sampling;
pub mod shutdown;
pub mod snapshot;
pub mod wake;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::signal::Observation;
    use proptest::prelude::*;
    use std::time::SystemTime;

    fn example() -> Config {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        match crate::config::load(&path) {
            Ok(config) => config,
            Err(e) => panic!("config.example.toml must load: {e}"),
        }
    }

    /// A reading from `levels` against `capacity`: each eviction threshold's signal at
    /// `level/4` of its threshold (so 0–3 are met, 4 is at it, above is not; 8 is no observation
    /// at all), each PSI signal at `level/4` of its level.
    fn reading(config: &Config, levels: &[u8], capacity: i64) -> Observations {
        let mut o = Observations::default();
        for (t, level) in config.thresholds.iter().zip(levels.iter().cycle()) {
            if *level == 8 {
                continue;
            }
            let available = t.value.resolve(capacity) / 4 * i64::from(*level);
            o.eviction.insert(
                t.signal,
                Observation {
                    available,
                    capacity,
                },
            );
        }
        for (t, level) in config
            .psi_thresholds
            .iter()
            .zip(levels.iter().rev().cycle())
        {
            o.psi
                .insert(t.signal, t.above_percent / 4.0 * f64::from(*level));
        }
        o
    }

    proptest! {
        /// The in-place cycle decides exactly what the pure functions decide from the same
        /// inputs, cycle after cycle: evaluation, conditions, transitions, taints and their
        /// changes — across a resume from the Node as seen, a configuration reload, capacities
        /// that move (a percentage resolved again) and signals that go unobserved.
        #[test]
        fn the_decider_in_place_is_the_pure_cycle(
            cycles in prop::collection::vec(
                (prop::collection::vec(0u8..9, 1..8), 1u64..400, 38u32..41),
                1..25,
            ),
            resume_true in any::<bool>(),
            reload_at in 0usize..30,
        ) {
            let config = example();
            let specs = config.conditions.clone();
            let mut decider = Decider::new(&config);
            // Resume from a Node that showed the first condition (ours, our wording).
            let first = &specs[0];
            let (status, reason, message) = if resume_true {
                (ConditionStatus::True, &first.true_reason, &first.true_message)
            } else {
                (ConditionStatus::False, &first.false_reason, &first.false_message)
            };
            let since = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
            let seen = vec![NodeCondition {
                condition_type: first.condition_type.clone(),
                status,
                reason: reason.clone(),
                message: message.clone(),
                last_heartbeat_time: since,
                last_transition_time: since,
            }];
            decider.resume(seen.clone());
            let mut policy = policy(&config);
            let mut state = PressureState::default();
            let mut conditions = seen;
            let mut taints = condition::desired_taints(&specs, &conditions);
            let mut mono = Duration::ZERO;
            for (i, (levels, step, capacity_log2)) in cycles.iter().enumerate() {
                if i == reload_at {
                    // A reload with the transition period shortened.
                    let mut reloaded = config.clone();
                    reloaded.eviction_pressure_transition_period = Duration::from_secs(30);
                    decider.reload(&reloaded);
                    policy = super::policy(&reloaded);
                    state = state.for_new_thresholds();
                }
                mono += Duration::from_secs(*step);
                let now = Moment { mono, wall: since + mono };
                let observations = reading(&config, levels, 1i64 << capacity_log2);
                let decision = decider.decide(&observations, now);

                let (next, evaluation) = policy.evaluate(&observations, &state, now.mono);
                state = next;
                let (next, transitions) = condition::update_conditions(
                    &specs,
                    &conditions,
                    &evaluation.pressure,
                    now.wall,
                );
                conditions = next;
                let next = condition::desired_taints(&specs, &conditions);
                let changes = condition::taint_changes(&taints, &next);
                taints = next;

                prop_assert_eq!(&*decision.evaluation, &evaluation, "cycle {}", i);
                prop_assert_eq!(&decision.transitions, &transitions, "cycle {}", i);
                prop_assert_eq!(&decision.taint_changes, &changes, "cycle {}", i);
                prop_assert_eq!(&decider.conditions, &conditions, "cycle {}", i);
                prop_assert_eq!(&decider.taints, &taints, "cycle {}", i);
                prop_assert_eq!(decider.pressure.state(), state.clone(), "cycle {}", i);
            }
        }
    }
}
