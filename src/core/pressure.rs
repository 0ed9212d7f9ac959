//! The pressure state machine: observations and thresholds in, which thresholds are met and which
//! owned conditions are under pressure out. This mirrors the kubelet's eviction manager
//! `synchronize` loop (SEMANTICS §7.4–7.5):
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
//! reclaim, no grace; they feed conditions with the same transition-period rule.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::core::signal::{Observations, PsiSignal, Signal, SignalRef};
use crate::core::threshold::{PsiThreshold, Threshold};

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
    pub fn evaluate(
        &self,
        observations: &Observations,
        prev: &PressureState,
        now: Duration,
    ) -> (PressureState, Evaluation) {
        let mut next = PressureState {
            met: vec![false; self.thresholds.len()],
            first_observed: vec![None; self.thresholds.len()],
            psi_met: vec![false; self.psi_thresholds.len()],
            last_observed: BTreeMap::new(),
        };
        let mut statuses = Vec::with_capacity(self.thresholds.len());
        for (i, threshold) in self.thresholds.iter().enumerate() {
            let was_met = prev.met.get(i).copied().unwrap_or(false);
            let observation = observations.eviction.get(&threshold.signal);
            let (met, resolved, available) = match observation {
                // The kubelet skips a threshold whose signal has no observation.
                None => (false, threshold.value.resolve(0), None),
                Some(o) => {
                    let quantity = threshold.value.resolve(o.capacity);
                    // §7.4: met when quantity > available (strictly).
                    let met_now = quantity > o.available;
                    // §7.4: a previously met threshold stays met until available reaches
                    // threshold + minimum reclaim (resolved against the same capacity).
                    let not_yet_reclaimed = was_met && {
                        let reclaim = threshold
                            .min_reclaim
                            .as_ref()
                            .map_or(0, |r| r.resolve(o.capacity));
                        quantity.saturating_add(reclaim) > o.available
                    };
                    (met_now || not_yet_reclaimed, quantity, Some(o.available))
                }
            };
            let first = if met {
                Some(
                    prev.first_observed
                        .get(i)
                        .copied()
                        .flatten()
                        .filter(|_| was_met)
                        .unwrap_or(now),
                )
            } else {
                None
            };
            next.met[i] = met;
            next.first_observed[i] = first;
            let grace_elapsed =
                first.is_some_and(|f| now.saturating_sub(f) >= threshold.grace_period);
            statuses.push(ThresholdStatus {
                signal: threshold.signal,
                soft: threshold.soft,
                threshold: resolved,
                available,
                met,
                grace_elapsed,
            });
        }

        let mut psi = Vec::with_capacity(self.psi_thresholds.len());
        for (i, t) in self.psi_thresholds.iter().enumerate() {
            let value = observations.psi.get(&t.signal).copied();
            let met = value.is_some_and(|v| v > t.above_percent);
            next.psi_met[i] = met;
            psi.push(PsiStatus {
                signal: t.signal,
                above_percent: t.above_percent,
                value,
                met,
            });
        }

        let mut pressure = BTreeMap::new();
        let mut observed_now = BTreeMap::new();
        for (condition, signals) in &self.conditions {
            // §7.5 step 4: conditions from met thresholds, ignoring grace periods.
            let observed = signals.iter().any(|s| match s {
                SignalRef::Eviction(sig) => statuses.iter().any(|t| t.signal == *sig && t.met),
                SignalRef::Psi(p) => psi.iter().any(|t| t.signal == *p && t.met),
            });
            let last = if observed {
                Some(now)
            } else {
                prev.last_observed.get(condition).copied()
            };
            if let Some(last) = last {
                next.last_observed.insert(condition.clone(), last);
            }
            // §7.5 step 5: reported while last observed less than the transition period ago.
            let reported =
                last.is_some_and(|l| now.saturating_sub(l) < self.transition_period) || observed;
            observed_now.insert(condition.clone(), observed);
            pressure.insert(condition.clone(), reported);
        }

        (
            next,
            Evaluation {
                thresholds: statuses,
                psi,
                pressure,
                observed_now,
            },
        )
    }
}
