//! Taints and tolerations: the types, matching (SEMANTICS §2), where each effect is enforced
//! (§3) and the taint-eviction controller's NoExecute outcome (§4). Pure.

use std::fmt;

/// A taint effect (SEMANTICS §1). Required on node taints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }

    /// Exact, case-sensitive, as the API server compares.
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "NoSchedule" => Some(Effect::NoSchedule),
            "PreferNoSchedule" => Some(Effect::PreferNoSchedule),
            "NoExecute" => Some(Effect::NoExecute),
            _ => None,
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node taint. Unique on a node by (key, effect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: Effect,
    /// RFC 3339, kept verbatim so a rewrite never changes someone else's taint.
    pub time_added: Option<String>,
}

impl fmt::Display for Taint {
    /// The canonical `key=value:Effect` / `key:Effect` form (SEMANTICS §1).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// A toleration operator. `Lt`/`Gt` are alpha and gated off by default (SEMANTICS §2.1, §8.4):
/// validation rejects them, and the matcher never lets them tolerate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Equal,
    Exists,
}

/// A pod toleration, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// Empty means every key.
    pub key: String,
    pub operator: Operator,
    pub value: String,
    /// `None` means every effect.
    pub effect: Option<Effect>,
    /// Only meaningful for NoExecute; `None` tolerates forever, ≤ 0 means now.
    pub toleration_seconds: Option<i64>,
}

/// What the taint-eviction controller does with a pod on a node (SEMANTICS §4.2–4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoExecuteOutcome {
    /// Every NoExecute taint is tolerated forever (or there are none).
    Never,
    /// Some NoExecute taint is untolerated, or a chosen toleration has seconds ≤ 0.
    EvictNow,
    /// The minimum of the chosen positive `tolerationSeconds`.
    EvictAfter { seconds: i64 },
}
