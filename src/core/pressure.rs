//! The pressure state machine: observations and thresholds in, which thresholds are met and which
//! owned conditions are under pressure out. This mirrors the kubelet's eviction manager
//! `synchronize` loop (docs/semantics.md §7.4–7.5):
//!
//! 1. a threshold is met when `available < threshold` (strict);
//! 2. a threshold met in the previous cycle stays met until `available ≥ threshold + minReclaim`;
//! 3. conditions come from met thresholds *ignoring* grace periods (a soft threshold sets its
//!    condition at once);
//! 4. a condition is reported under pressure while it was last observed less than
//!    `evictionPressureTransitionPeriod` ago: hysteresis on the way out only, none on entry;
//! 5. a threshold whose grace period has elapsed since it was first observed is an eviction
//!    candidate (reported for visibility; nodewarden itself never evicts for pressure).
//!
//! PSI thresholds are ours: met when the PSI average is strictly above the threshold, no minimum
//! reclaim, no grace; they feed conditions with the same transition-period rule. They are not
//! KEP-5394's PSI node conditions, which the kubelet would own (docs/semantics.md §7.6):
//! [`KEP_5394_CONDITION_TYPES`] and [`KEP_5394_TAINT_KEYS`] are the names it gives them, which a
//! condition of ours should not take.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::core::signal::{Observations, PsiSignal, Signal, SignalRef};
use crate::core::threshold::{PsiThreshold, Threshold};

/// The node condition types KEP-5394 ("PSI Based Node Conditions", feature gate
/// `PSINodeCondition`, alpha targeted at 1.35) has the kubelet set from the PSI of the system and
/// kubepods cgroups (kubernetes/enhancements `keps/sig-node/5394-psi-node-conditions/README.md`,
/// Design Details 2). With that gate on the kubelet writes them; a condition of ours with one of
/// these types would be written by two owners (docs/semantics.md §7.6).
pub const KEP_5394_CONDITION_TYPES: [&str; 4] = [
    "SystemMemoryContentionPressure",
    "SystemDiskContentionPressure",
    "KubepodsMemoryContentionPressure",
    "KubepodsDiskContentionPressure",
];

/// The NoSchedule taints KEP-5394 proposes for its conditions (Design Details 4), applied by the
/// control plane, not by the kubelet.
pub const KEP_5394_TAINT_KEYS: [&str; 3] = [
    "node.kubernetes.io/memory-contention-pressure",
    "node.kubernetes.io/cpu-contention-pressure",
    "node.kubernetes.io/disk-contention-pressure",
];

/// What the state machine needs from the configuration.
#[derive(Clone, Debug)]
pub struct PressurePolicy {
    pub thresholds: Vec<Threshold>,
    pub psi_thresholds: Vec<PsiThreshold>,
    /// Condition type → the signals that feed it.
    pub conditions: Vec<(String, Vec<SignalRef>)>,
    pub transition_period: Duration,
}

/// What is carried from one cycle to the next. Indexes follow `PressurePolicy::thresholds` and
/// `psi_thresholds`, so a state is only meaningful with the policy that produced it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PressureState {
    /// Thresholds met at the end of the last cycle (min-reclaim hysteresis needs them).
    met: Vec<bool>,
    /// When each currently met threshold was first observed met (monotonic).
    first_observed: Vec<Option<Duration>>,
    psi_met: Vec<bool>,
    /// Condition type → the last moment (monotonic) its pressure was observed.
    last_observed: BTreeMap<String, Duration>,
}

impl PressureState {
    /// The state to carry into a new set of thresholds (a configuration reload): per-threshold
    /// bookkeeping (minimum reclaim, grace periods) starts over, but when each condition was last
    /// under pressure is kept, so a reload never ends a transition period early.
    pub fn for_new_thresholds(&self) -> PressureState {
        PressureState {
            met: Vec::new(),
            first_observed: Vec::new(),
            psi_met: Vec::new(),
            last_observed: self.last_observed.clone(),
        }
    }
}

/// The evaluation of one threshold in one cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdStatus {
    pub signal: Signal,
    pub soft: bool,
    /// The threshold resolved against capacity (bytes, inodes or PIDs).
    pub threshold: i64,
    /// `None` when the signal was not observed this cycle.
    pub available: Option<i64>,
    /// Met now, counting minimum-reclaim hysteresis.
    pub met: bool,
    /// Met for at least its grace period: what the kubelet would act on.
    pub grace_elapsed: bool,
}

/// The evaluation of one PSI threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct PsiStatus {
    pub signal: PsiSignal,
    pub above_percent: f64,
    pub value: Option<f64>,
    pub met: bool,
}

/// The outcome of one cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub thresholds: Vec<ThresholdStatus>,
    pub psi: Vec<PsiStatus>,
    /// Condition type → under pressure (after the transition period), for every owned condition.
    pub pressure: BTreeMap<String, bool>,
    /// Condition type → pressure observed in this very cycle (before the transition period).
    pub observed_now: BTreeMap<String, bool>,
}

impl PressurePolicy {
    /// One cycle. `now` is monotonic time; the previous state comes in and the next goes out.
    /// The same cycle as [`Evaluator::step`], which the agent runs in place.
    pub fn evaluate(
        &self,
        observations: &Observations,
        prev: &PressureState,
        now: Duration,
    ) -> (PressureState, Evaluation) {
        let mut evaluator = Evaluator::new(self.clone(), prev);
        evaluator.step(observations, now);
        let state = evaluator.state();
        let evaluation = Arc::unwrap_or_clone(evaluator.evaluation);
        (state, evaluation)
    }
}

/// A policy evaluated cycle after cycle, as the agent's decide loop does: which thresholds feed
/// each condition is resolved once, and the state and the evaluation are updated in place, so a
/// cycle allocates nothing (the loop runs every update period for the life of the node).
#[derive(Clone, Debug)]
pub struct Evaluator {
    policy: PressurePolicy,
    /// Per condition: the thresholds and the PSI thresholds (indexes) that feed it.
    feeds: Vec<(Vec<usize>, Vec<usize>)>,
    /// Per condition: its place among the distinct condition types in name order, which is the
    /// order of the evaluation's maps.
    slots: Vec<usize>,
    /// The distinct condition types in name order.
    names: Vec<String>,
    /// Per threshold, what the last cycle left.
    held: Vec<Held>,
    psi_met: Vec<bool>,
    /// Per slot: the last moment the condition's pressure was observed, and its next value
    /// (filled during a cycle, then swapped in).
    last_observed: Vec<Option<Duration>>,
    next_observed: Vec<Option<Duration>>,
    /// Per slot: the last cycle's verdicts, as the evaluation's maps hold them.
    reported: Vec<bool>,
    observed: Vec<bool>,
    /// The last cycle's evaluation, shared with whoever reads it; updated in place when no one
    /// else holds it any more.
    evaluation: Arc<Evaluation>,
}

/// A threshold's state between cycles: whether it was met and since when, and its quantity and
/// minimum reclaim resolved against the capacity last seen (a percentage is recomputed only when
/// the capacity moves, which a filesystem's or the memory's nearly never does).
#[derive(Clone, Copy, Debug)]
struct Held {
    met: bool,
    first_observed: Option<Duration>,
    capacity: i64,
    quantity: i64,
    reclaim: i64,
}

impl Held {
    fn new(threshold: &Threshold, met: bool, first_observed: Option<Duration>) -> Held {
        let mut held = Held {
            met,
            first_observed,
            capacity: 0,
            quantity: 0,
            reclaim: 0,
        };
        held.resolve(threshold, 0);
        held
    }

    fn resolve(&mut self, threshold: &Threshold, capacity: i64) {
        self.capacity = capacity;
        self.quantity = threshold.value.resolve(capacity);
        self.reclaim = threshold
            .min_reclaim
            .as_ref()
            .map_or(0, |r| r.resolve(capacity));
    }
}

impl Evaluator {
    /// Resumes from `prev`, as `PressurePolicy::evaluate` does.
    pub fn new(policy: PressurePolicy, prev: &PressureState) -> Evaluator {
        let mut names: Vec<String> = policy.conditions.iter().map(|(c, _)| c.clone()).collect();
        names.sort();
        names.dedup();
        let slots = policy
            .conditions
            .iter()
            .map(|(c, _)| names.binary_search(c).unwrap_or(0))
            .collect();
        let feeds = policy
            .conditions
            .iter()
            .map(|(_, signals)| {
                let eviction = (0..policy.thresholds.len())
                    .filter(|&i| {
                        signals.contains(&SignalRef::Eviction(policy.thresholds[i].signal))
                    })
                    .collect();
                let psi = (0..policy.psi_thresholds.len())
                    .filter(|&i| signals.contains(&SignalRef::Psi(policy.psi_thresholds[i].signal)))
                    .collect();
                (eviction, psi)
            })
            .collect();
        let held = policy
            .thresholds
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let met = prev.met.get(i).copied().unwrap_or(false);
                Held::new(t, met, prev.first_observed.get(i).copied().flatten())
            })
            .collect();
        let last_observed: Vec<Option<Duration>> = names
            .iter()
            .map(|c| prev.last_observed.get(c).copied())
            .collect();
        let evaluation = Evaluation {
            thresholds: policy
                .thresholds
                .iter()
                .map(|t| ThresholdStatus {
                    signal: t.signal,
                    soft: t.soft,
                    threshold: 0,
                    available: None,
                    met: false,
                    grace_elapsed: false,
                })
                .collect(),
            psi: policy
                .psi_thresholds
                .iter()
                .map(|t| PsiStatus {
                    signal: t.signal,
                    above_percent: t.above_percent,
                    value: None,
                    met: false,
                })
                .collect(),
            pressure: names.iter().map(|c| (c.clone(), false)).collect(),
            observed_now: names.iter().map(|c| (c.clone(), false)).collect(),
        };
        Evaluator {
            psi_met: vec![false; policy.psi_thresholds.len()],
            next_observed: vec![None; names.len()],
            reported: vec![false; names.len()],
            observed: vec![false; names.len()],
            policy,
            feeds,
            slots,
            names,
            held,
            last_observed,
            evaluation: Arc::new(evaluation),
        }
    }

    pub fn policy(&self) -> &PressurePolicy {
        &self.policy
    }

    /// The state to carry into the next cycle, as `PressurePolicy::evaluate` returns it.
    pub fn state(&self) -> PressureState {
        PressureState {
            met: self.held.iter().map(|h| h.met).collect(),
            first_observed: self.held.iter().map(|h| h.first_observed).collect(),
            psi_met: self.psi_met.clone(),
            last_observed: self
                .names
                .iter()
                .zip(&self.last_observed)
                .filter_map(|(c, l)| l.map(|l| (c.clone(), l)))
                .collect(),
        }
    }

    /// The last cycle's evaluation (before the first cycle: nothing met, nothing observed).
    pub fn evaluation(&self) -> &Arc<Evaluation> {
        &self.evaluation
    }

    /// Whether the condition at `slot` (see [`Evaluator::slot`]) is reported under pressure.
    pub fn reported(&self, slot: usize) -> bool {
        self.reported.get(slot).copied().unwrap_or(false)
    }

    /// Where a condition type's verdict is kept, when the policy has that condition.
    pub fn slot(&self, condition_type: &str) -> Option<usize> {
        self.names
            .binary_search_by(|n| n.as_str().cmp(condition_type))
            .ok()
    }

    /// One cycle, the same as `PressurePolicy::evaluate` from the state this one carries.
    pub fn step(&mut self, observations: &Observations, now: Duration) {
        let ev = Arc::make_mut(&mut self.evaluation);
        let thresholds = self.policy.thresholds.iter().zip(&mut ev.thresholds);
        for ((threshold, status), held) in thresholds.zip(&mut self.held) {
            // The kubelet skips a threshold whose signal has no observation (resolved against
            // a capacity of 0 for the evaluation).
            let observation = observations.eviction.get(&threshold.signal);
            let capacity = observation.map_or(0, |o| o.capacity);
            if capacity != held.capacity {
                held.resolve(threshold, capacity);
            }
            let met = observation.is_some_and(|o| {
                // §7.4: met when quantity > available (strictly); a previously met threshold
                // stays met until available reaches threshold + minimum reclaim (resolved
                // against the same capacity).
                held.quantity > o.available
                    || (held.met && held.quantity.saturating_add(held.reclaim) > o.available)
            });
            if !met {
                held.first_observed = None;
            } else if !held.met || held.first_observed.is_none() {
                held.first_observed = Some(now);
            }
            held.met = met;
            status.threshold = held.quantity;
            status.available = observation.map(|o| o.available);
            status.met = met;
            status.grace_elapsed = held
                .first_observed
                .is_some_and(|f| now.saturating_sub(f) >= threshold.grace_period);
        }

        for (i, t) in self.policy.psi_thresholds.iter().enumerate() {
            let value = observations.psi.get(&t.signal).copied();
            let met = value.is_some_and(|v| v > t.above_percent);
            self.psi_met[i] = met;
            let status = &mut ev.psi[i];
            status.value = value;
            status.met = met;
        }

        self.next_observed.fill(None);
        let mut moved = false;
        for ((eviction, psi), &slot) in self.feeds.iter().zip(&self.slots) {
            // §7.5 step 4: conditions from met thresholds, ignoring grace periods.
            let observed =
                eviction.iter().any(|&i| self.held[i].met) || psi.iter().any(|&i| self.psi_met[i]);
            let last = if observed {
                Some(now)
            } else {
                self.last_observed[slot]
            };
            if last.is_some() {
                self.next_observed[slot] = last;
            }
            // §7.5 step 5: reported while last observed less than the transition period ago.
            let reported = last
                .is_some_and(|l| now.saturating_sub(l) < self.policy.transition_period)
                || observed;
            moved |= self.observed[slot] != observed || self.reported[slot] != reported;
            self.observed[slot] = observed;
            self.reported[slot] = reported;
        }
        std::mem::swap(&mut self.last_observed, &mut self.next_observed);
        // The maps hold what `reported` and `observed` held before this cycle: walked only when
        // a verdict moved.
        if moved {
            for (v, r) in ev.pressure.values_mut().zip(&self.reported) {
                *v = *r;
            }
            for (v, o) in ev.observed_now.values_mut().zip(&self.observed) {
                *v = *o;
            }
        }
    }
}
