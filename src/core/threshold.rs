//! Eviction thresholds (SEMANTICS §7.2–7.4): the kubelet's threshold model, parsing of the four
//! `eviction*` maps with the Linux defaults, and resolution against a capacity. Also our own PSI
//! thresholds. Pure.

use std::time::Duration;

use crate::core::quantity::Quantity;
use crate::core::signal::{PsiSignal, Signal};

/// A threshold or minimum-reclaim value: a literal quantity or a fraction of capacity.
#[derive(Clone, Debug, PartialEq)]
pub enum ThresholdValue {
    Quantity(Quantity),
    /// A fraction of capacity in [0, 1], stored as float32 like the kubelet.
    Percentage(f32),
}

/// One eviction threshold, in the kubelet's model. The operator is always `LessThan`.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub signal: Signal,
    pub value: ThresholdValue,
    /// Zero for hard thresholds.
    pub grace_period: Duration,
    pub min_reclaim: Option<ThresholdValue>,
    /// From `evictionSoft` (true) or `evictionHard` (false).
    pub soft: bool,
}

/// Our own PSI threshold: met when the PSI average is strictly above `above_percent` (0–100).
#[derive(Clone, Debug, PartialEq)]
pub struct PsiThreshold {
    pub signal: PsiSignal,
    pub above_percent: f64,
}
impl ThresholdValue {
    /// Placeholder.
    pub fn resolve(&self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q.value(),
            ThresholdValue::Percentage(p) => (capacity as f64 * f64::from(*p)) as i64,
        }
    }
}
