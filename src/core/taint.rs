//! Taints and tolerations: the types, matching (docs/semantics.md §2), where each effect is
//! enforced (§3) and the taint-eviction controller's NoExecute outcome (§4). Pure.

use std::fmt;

// Tolerations, their operators and effects are kept in the state file as part of a
// `fence_plan::FencePod` (which says why serde is here); each word is the API's spelling, the
// same as `as_str`, and a word no variant spells is refused.
use serde::{Deserialize, Serialize};

/// A taint effect (docs/semantics.md §1). Required on node taints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Effect {
    /// The scheduler does not place pods that do not tolerate it (§3).
    NoSchedule,
    /// The scheduler prefers other nodes; only scoring looks at it (§3).
    PreferNoSchedule,
    /// Not scheduled, and running pods are deleted by the taint-eviction controller (§4).
    NoExecute,
}

impl Effect {
    /// The API spelling.
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
    /// A qualified name (validated, §8.1).
    pub key: String,
    /// A label value; may be empty.
    pub value: String,
    /// Required on node taints.
    pub effect: Effect,
    /// RFC 3339, kept verbatim so a rewrite never changes someone else's taint.
    pub time_added: Option<String>,
}

impl fmt::Display for Taint {
    /// The canonical `key=value:Effect` / `key:Effect` form (docs/semantics.md §1).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// A toleration operator (docs/semantics.md §2.1 step 3).
///
/// `Lt`/`Gt` (KEP-5471) exist behind the `TaintTolerationComparisonOperators` gate, alpha and off
/// by default. With the gate off the API server refuses them (`explain` does too,
/// `api_validation::validate_tolerations`), and upstream's matcher never lets them tolerate
/// (`ToleratesTaint(..., enableComparisonOperators=false)` returns false). A pod stored while the
/// gate was on keeps them (validation ratchets: `allowTaintTolerationComparisonOperators` in
/// `pkg/api/pod/util.go`). The matcher here compares them as the gate-on code does; the gate-off
/// answer differs only for a taint whose value is a canonical integer, never for the fence's
/// `unreachable` taint, whose value is empty and never parses (see [`Toleration::tolerates`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    /// Values must be byte-for-byte equal (also what an empty operator means).
    Equal,
    /// Any value.
    Exists,
    /// Tolerates when the taint's value is less than the toleration's, both canonical int64.
    Lt,
    /// Tolerates when the taint's value is greater than the toleration's, both canonical int64.
    Gt,
}

impl Operator {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equal => "Equal",
            Operator::Exists => "Exists",
            Operator::Lt => "Lt",
            Operator::Gt => "Gt",
        }
    }

    /// Exact, case-sensitive; the empty operator means `Equal` (`ToleratesTaint`'s `case ""`).
    pub fn parse(s: &str) -> Option<Operator> {
        match s {
            "" | "Equal" => Some(Operator::Equal),
            "Exists" => Some(Operator::Exists),
            "Lt" => Some(Operator::Lt),
            "Gt" => Some(Operator::Gt),
            _ => None,
        }
    }

    /// `Lt` or `Gt`: the operators behind `TaintTolerationComparisonOperators`.
    pub fn is_comparison(self) -> bool {
        matches!(self, Operator::Lt | Operator::Gt)
    }
}

/// A toleration or taint value as `Lt`/`Gt` read it: a decimal integer in canonical form that
/// fits in 64 bits, else `None`. Mirrors `compareNumericValues` in
/// `staging/src/k8s.io/api/core/v1/toleration.go`: first `content.IsDecimalInteger`
/// (`apimachinery/pkg/api/validate/content`: `"0"`, or an optional `-` then a digit 1–9 then
/// digits; so no `+`, no leading zero, no `-0`, no spaces, not empty), then
/// `strconv.ParseInt(v, 10, 64)`, which refuses what is past the 64-bit range.
pub fn comparison_value(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let canonical = match digits.as_bytes() {
        [] => false,
        // "0" alone; "-0" and "0…" are not canonical.
        [b'0'] => digits.len() == value.len(),
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    };
    if !canonical {
        return None;
    }
    value.parse::<i64>().ok()
}

/// A pod toleration, after validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Empty means every key.
    pub key: String,
    /// How the value is compared.
    pub operator: Operator,
    /// Compared with `Equal`; ignored with `Exists`.
    pub value: String,
    /// `None` means every effect.
    pub effect: Option<Effect>,
    /// Only meaningful for NoExecute; `None` tolerates forever, ≤ 0 means now.
    pub toleration_seconds: Option<i64>,
}

/// What the taint-eviction controller does with a pod on a node (docs/semantics.md §4.2–4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoExecuteOutcome {
    /// Every NoExecute taint is tolerated forever (or there are none).
    Never,
    /// Some NoExecute taint is untolerated, or a chosen toleration has seconds ≤ 0.
    EvictNow,
    /// The minimum of the chosen positive `tolerationSeconds`.
    EvictAfter {
        /// Always > 0.
        seconds: i64,
    },
}

/// Well-known taint keys (docs/semantics.md §1), spelled once so a typo cannot silently stop
/// matching.
pub mod keys {
    /// Ready=False.
    pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
    /// Ready=Unknown: the node controller lost contact with the kubelet.
    pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
    /// MemoryPressure=True.
    pub const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
    /// DiskPressure=True.
    pub const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
    /// PIDPressure=True.
    pub const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
    /// NetworkUnavailable=True.
    pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
    /// `spec.unschedulable` (cordon).
    pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
    /// Set by an administrator for non-graceful shutdown (§14); never by us on a running node.
    pub const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
}

impl Taint {
    /// A taint without `timeAdded`.
    pub fn new(key: impl Into<String>, value: impl Into<String>, effect: Effect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
            time_added: None,
        }
    }
}

impl Toleration {
    /// `{key, operator: Exists, effect}` with no `tolerationSeconds`.
    pub fn exists(key: impl Into<String>, effect: Option<Effect>) -> Toleration {
        Toleration {
            key: key.into(),
            operator: Operator::Exists,
            value: String::new(),
            effect,
            toleration_seconds: None,
        }
    }

    /// `{key, operator: Equal, value, effect}` with no `tolerationSeconds`.
    pub fn equal(
        key: impl Into<String>,
        value: impl Into<String>,
        effect: Option<Effect>,
    ) -> Toleration {
        Toleration {
            key: key.into(),
            operator: Operator::Equal,
            value: value.into(),
            effect,
            toleration_seconds: None,
        }
    }

    /// The same toleration with `tolerationSeconds` set.
    pub fn with_seconds(mut self, seconds: i64) -> Toleration {
        self.toleration_seconds = Some(seconds);
        self
    }

    /// Whether this toleration tolerates `taint` (docs/semantics.md §2.1): effect first, then key,
    /// then operator. `tolerationSeconds` never affects matching (§2.3). `Lt`/`Gt` compare as with
    /// the comparison gate on (`ToleratesTaint` in `staging/src/k8s.io/api/core/v1/toleration.go`);
    /// callers for whom the gate is off refuse such tolerations before matching (see [`Operator`]).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        // §2.1 step 1: an empty effect matches every effect, PreferNoSchedule and NoExecute too.
        if let Some(effect) = self.effect
            && effect != taint.effect
        {
            return false;
        }
        // §2.1 step 2: an empty key matches every key.
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        // §2.1 step 3.
        match self.operator {
            // Byte-for-byte, so case-sensitive; empty equals empty.
            Operator::Equal => self.value == taint.value,
            // The matcher ignores the value even if someone put one there.
            Operator::Exists => true,
            // `compareNumericValues`: a value that does not parse, on either side, means the
            // toleration does not match (upstream logs it and returns false). Both strict.
            Operator::Lt | Operator::Gt => {
                match (
                    comparison_value(&self.value),
                    comparison_value(&taint.value),
                ) {
                    (Some(toleration), Some(taint)) if self.operator == Operator::Lt => {
                        taint < toleration
                    }
                    (Some(toleration), Some(taint)) => taint > toleration,
                    _ => false,
                }
            }
        }
    }
}

/// Index (in pod order) of the first toleration that tolerates `taint`. The taint-eviction
/// controller uses only this one (§4.1), which is why list order matters.
pub fn first_tolerating(tolerations: &[Toleration], taint: &Taint) -> Option<usize> {
    tolerations.iter().position(|t| t.tolerates(taint))
}

/// The scheduler's filter (docs/semantics.md §3): every `NoSchedule` and `NoExecute` taint must be
/// tolerated. `PreferNoSchedule` taints never block placement.
pub fn schedulable(taints: &[Taint], tolerations: &[Toleration]) -> bool {
    taints
        .iter()
        .filter(|t| matches!(t.effect, Effect::NoSchedule | Effect::NoExecute))
        .all(|t| first_tolerating(tolerations, t).is_some())
}

/// The scheduler's score input (docs/semantics.md §3): how many `PreferNoSchedule` taints are not
/// tolerated. Only tolerations with effect `PreferNoSchedule` or empty are considered, so a
/// `NoSchedule` toleration does not help here even though its key matches.
pub fn untolerated_prefer_no_schedule(taints: &[Taint], tolerations: &[Toleration]) -> usize {
    let considered: Vec<&Toleration> = tolerations
        .iter()
        .filter(|t| matches!(t.effect, None | Some(Effect::PreferNoSchedule)))
        .collect();
    taints
        .iter()
        .filter(|t| t.effect == Effect::PreferNoSchedule)
        .filter(|taint| !considered.iter().any(|t| t.tolerates(taint)))
        .count()
}

/// What the taint-eviction controller does with a pod on a node with these taints
/// (docs/semantics.md §4.1–4.3). Only `NoExecute` taints count.
///
/// For each NoExecute taint in node order the FIRST tolerating toleration in pod order is
/// chosen (`GetMatchingTolerations`); an untolerated taint evicts now. Among the chosen ones
/// (`getMinTolerationTime`), the first with seconds ≤ 0 evicts now, all-nil never evicts, and
/// otherwise the minimum positive value is the delay. Upstream encodes this as 0 / −1 / n; we
/// return the enum instead (STYLE 3).
pub fn no_execute_outcome(taints: &[Taint], tolerations: &[Toleration]) -> NoExecuteOutcome {
    let mut no_execute = taints
        .iter()
        .filter(|t| t.effect == Effect::NoExecute)
        .peekable();
    // §4.3 step 1: no NoExecute taints → nothing scheduled. Upstream's `getMinTolerationTime`
    // would say "immediate" for the empty list, but the controller never gets that far.
    if no_execute.peek().is_none() {
        return NoExecuteOutcome::Never;
    }
    let mut chosen_seconds = Vec::new();
    for taint in no_execute {
        match first_tolerating(tolerations, taint).and_then(|i| tolerations.get(i)) {
            Some(toleration) => chosen_seconds.push(toleration.toleration_seconds),
            // §4.3 step 2: any untolerated NoExecute taint → delete now.
            None => return NoExecuteOutcome::EvictNow,
        }
    }
    // §4.2: seconds ≤ 0 means immediate; negatives behave like 0.
    if chosen_seconds.iter().flatten().any(|&s| s <= 0) {
        return NoExecuteOutcome::EvictNow;
    }
    match chosen_seconds.iter().flatten().min() {
        Some(&seconds) => NoExecuteOutcome::EvictAfter { seconds },
        // Every chosen toleration has nil seconds: tolerated forever.
        None => NoExecuteOutcome::Never,
    }
}

/// Whether a Node's taint, by its key and effect as the API spells them, is
/// `node.kubernetes.io/unreachable:NoExecute`: the taint the node controller adds when it loses
/// the kubelet (docs/semantics.md §5.3), whatever its value and `timeAdded`.
pub fn is_unreachable_no_execute(key: &str, effect: &str) -> bool {
    key == keys::UNREACHABLE && effect == "NoExecute"
}

/// Whether a Node's taint, by its key and effect as the API spells them, is
/// `node.kubernetes.io/not-ready:NoExecute`: the taint the node controller adds when the kubelet
/// posts Ready=False, and swaps for the unreachable one when Ready goes Unknown (docs/semantics.md
/// §4.3).
pub fn is_not_ready_no_execute(key: &str, effect: &str) -> bool {
    key == keys::NOT_READY && effect == "NoExecute"
}

/// Whether a Node's taint is one of the node controller's two NoExecute taints
/// ([`is_unreachable_no_execute`], [`is_not_ready_no_execute`]): a Node carries one at most, the
/// controller swapping them.
pub fn is_controller_no_execute(key: &str, effect: &str) -> bool {
    is_unreachable_no_execute(key, effect) || is_not_ready_no_execute(key, effect)
}

/// The outcome for the single taint `node.kubernetes.io/unreachable:NoExecute` (empty value),
/// the taint the node controller adds when it loses the kubelet (§5) and the one the local
/// fence mirrors (§4.6).
pub fn unreachable_delay(tolerations: &[Toleration]) -> NoExecuteOutcome {
    static UNREACHABLE: std::sync::LazyLock<Taint> =
        std::sync::LazyLock::new(|| Taint::new(keys::UNREACHABLE, "", Effect::NoExecute));
    controller_taint_delay(tolerations, &UNREACHABLE)
}

/// The outcome for the single taint `node.kubernetes.io/not-ready:NoExecute` (empty value): the
/// timer a pod's deletion keeps when the controller swaps that taint for the unreachable one
/// (§4.3), which the local fence counts from a not-ready taint seen on its Node.
pub fn not_ready_delay(tolerations: &[Toleration]) -> NoExecuteOutcome {
    static NOT_READY: std::sync::LazyLock<Taint> =
        std::sync::LazyLock::new(|| Taint::new(keys::NOT_READY, "", Effect::NoExecute));
    controller_taint_delay(tolerations, &NOT_READY)
}

/// `no_execute_outcome` of one taint, without building a list for every pod (the fence plans
/// every pod): the first toleration that matches it decides (§4.1–4.2).
fn controller_taint_delay(tolerations: &[Toleration], taint: &Taint) -> NoExecuteOutcome {
    match first_tolerating(tolerations, taint).and_then(|i| tolerations.get(i)) {
        None => NoExecuteOutcome::EvictNow,
        Some(t) => match t.toleration_seconds {
            Some(seconds) if seconds <= 0 => NoExecuteOutcome::EvictNow,
            Some(seconds) => NoExecuteOutcome::EvictAfter { seconds },
            None => NoExecuteOutcome::Never,
        },
    }
}

impl NoExecuteOutcome {
    /// Rank for ordering: smaller is earlier eviction.
    fn rank(self) -> (u8, i64) {
        match self {
            NoExecuteOutcome::EvictNow => (0, 0),
            NoExecuteOutcome::EvictAfter { seconds } => (1, seconds),
            NoExecuteOutcome::Never => (2, 0),
        }
    }
}

impl Ord for NoExecuteOutcome {
    /// Orders by when the pod is deleted: `EvictNow < EvictAfter{a} < EvictAfter{b} (a < b) <
    /// Never`. Lets callers (and the monotonicity properties) ask "is this earlier?".
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for NoExecuteOutcome {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::keys::*;
    use super::*;
    use proptest::prelude::*;

    use Effect::{NoExecute, NoSchedule, PreferNoSchedule};
    use NoExecuteOutcome::{EvictAfter, EvictNow, Never};

    fn taint(key: &str, value: &str, effect: Effect) -> Taint {
        Taint::new(key, value, effect)
    }

    fn exists(key: &str, effect: Option<Effect>) -> Toleration {
        Toleration::exists(key, effect)
    }

    fn equal(key: &str, value: &str, effect: Option<Effect>) -> Toleration {
        Toleration::equal(key, value, effect)
    }

    /// The tolerations the DefaultTolerationSeconds admission plugin adds (§9).
    fn default_tolerations() -> Vec<Toleration> {
        vec![
            exists(NOT_READY, Some(NoExecute)).with_seconds(300),
            exists(UNREACHABLE, Some(NoExecute)).with_seconds(300),
        ]
    }

    /// The tolerations the DaemonSet controller adds (§10), without hostNetwork.
    fn daemonset_tolerations() -> Vec<Toleration> {
        vec![
            exists(NOT_READY, Some(NoExecute)),
            exists(UNREACHABLE, Some(NoExecute)),
            exists(DISK_PRESSURE, Some(NoSchedule)),
            exists(MEMORY_PRESSURE, Some(NoSchedule)),
            exists(PID_PRESSURE, Some(NoSchedule)),
            exists(UNSCHEDULABLE, Some(NoSchedule)),
        ]
    }

    fn unreachable_taint() -> Taint {
        taint(UNREACHABLE, "", NoExecute)
    }

    fn not_ready_taint() -> Taint {
        taint(NOT_READY, "", NoExecute)
    }

    #[test]
    fn matching_rules_of_section_2() {
        let cases: &[(&str, Toleration, Taint, bool)] = &[
            (
                "empty key with Exists and no effect is the wildcard",
                exists("", None),
                taint("anything", "v", NoSchedule),
                true,
            ),
            (
                "the wildcard also matches PreferNoSchedule",
                exists("", None),
                taint("k", "", PreferNoSchedule),
                true,
            ),
            (
                "the wildcard also matches NoExecute",
                exists("", None),
                unreachable_taint(),
                true,
            ),
            (
                "empty effect matches NoExecute",
                exists(UNREACHABLE, None),
                unreachable_taint(),
                true,
            ),
            (
                "empty effect matches PreferNoSchedule",
                equal("k", "v", None),
                taint("k", "v", PreferNoSchedule),
                true,
            ),
            (
                "a different effect does not tolerate",
                exists(UNREACHABLE, Some(NoSchedule)),
                unreachable_taint(),
                false,
            ),
            (
                "a different key does not tolerate",
                exists(NOT_READY, Some(NoExecute)),
                unreachable_taint(),
                false,
            ),
            (
                "Equal needs the same value",
                equal("k", "v", Some(NoSchedule)),
                taint("k", "v", NoSchedule),
                true,
            ),
            (
                "Equal is case-sensitive",
                equal("k", "Value", Some(NoSchedule)),
                taint("k", "value", NoSchedule),
                false,
            ),
            (
                "Equal with empty value matches an empty taint value",
                equal("k", "", Some(NoSchedule)),
                taint("k", "", NoSchedule),
                true,
            ),
            (
                "Equal with empty value does not match a non-empty taint value",
                equal("k", "", Some(NoSchedule)),
                taint("k", "v", NoSchedule),
                false,
            ),
            (
                "Exists ignores the toleration's value",
                Toleration {
                    value: "ignored".into(),
                    ..exists("k", Some(NoSchedule))
                },
                taint("k", "other", NoSchedule),
                true,
            ),
            (
                "keys are case-sensitive",
                exists("K", None),
                taint("k", "", NoSchedule),
                false,
            ),
            (
                "empty key with Equal (invalid, but the matcher skips the key) matches empty values",
                equal("", "", None),
                taint("any", "", NoSchedule),
                true,
            ),
            (
                "tolerationSeconds never affects matching",
                exists("k", Some(NoSchedule)).with_seconds(-5),
                taint("k", "", NoSchedule),
                true,
            ),
            (
                "not-ready Equal with a value does not tolerate the real (empty-valued) taint",
                equal(NOT_READY, "x", Some(NoExecute)),
                not_ready_taint(),
                false,
            ),
        ];
        for (rule, toleration, taint, want) in cases {
            assert_eq!(toleration.tolerates(taint), *want, "{rule}");
        }
    }

    #[test]
    fn first_matching_toleration_is_reported_in_pod_order() {
        let tols = vec![
            exists("other", None),
            exists(UNREACHABLE, Some(NoExecute)),
            exists("", None),
        ];
        assert_eq!(first_tolerating(&tols, &unreachable_taint()), Some(1));
        assert_eq!(
            first_tolerating(&tols, &taint("x", "", NoSchedule)),
            Some(2)
        );
        assert_eq!(first_tolerating(&[], &unreachable_taint()), None);
    }

    #[test]
    fn same_key_different_effects_are_distinct_taints() {
        let taints = vec![
            taint(UNREACHABLE, "", NoSchedule),
            taint(UNREACHABLE, "", NoExecute),
        ];
        // Tolerating only the NoExecute one leaves the NoSchedule one blocking placement.
        let only_no_execute = vec![exists(UNREACHABLE, Some(NoExecute))];
        assert!(!schedulable(&taints, &only_no_execute));
        assert_eq!(no_execute_outcome(&taints, &only_no_execute), Never);
        // An empty effect covers both.
        let both = vec![exists(UNREACHABLE, None)];
        assert!(schedulable(&taints, &both));
        // Tolerating only the NoSchedule one: the NoExecute taint is untolerated.
        let only_no_schedule = vec![exists(UNREACHABLE, Some(NoSchedule))];
        assert_eq!(no_execute_outcome(&taints, &only_no_schedule), EvictNow);
    }

    #[test]
    fn scheduler_filter_checks_only_no_schedule_and_no_execute() {
        let cases: &[(&str, Vec<Taint>, Vec<Toleration>, bool)] = &[
            ("no taints is schedulable", vec![], vec![], true),
            (
                "an untolerated NoSchedule taint blocks",
                vec![taint("k", "", NoSchedule)],
                vec![],
                false,
            ),
            (
                "an untolerated NoExecute taint blocks",
                vec![unreachable_taint()],
                vec![],
                false,
            ),
            (
                "an untolerated PreferNoSchedule taint does not block",
                vec![taint("k", "", PreferNoSchedule)],
                vec![],
                true,
            ),
            (
                "every blocking taint must be tolerated",
                vec![taint("a", "", NoSchedule), taint("b", "", NoExecute)],
                vec![exists("a", None)],
                false,
            ),
            (
                "the wildcard tolerates everything",
                vec![taint("a", "", NoSchedule), taint("b", "", NoExecute)],
                vec![exists("", None)],
                true,
            ),
        ];
        for (rule, taints, tols, want) in cases {
            assert_eq!(schedulable(taints, tols), *want, "{rule}");
        }
    }

    #[test]
    fn only_prefer_no_schedule_or_empty_effect_tolerations_count_for_the_score() {
        let taints = vec![
            taint("a", "", PreferNoSchedule),
            taint("b", "", PreferNoSchedule),
            taint("c", "", NoSchedule),
        ];
        let cases: &[(&str, Vec<Toleration>, usize)] = &[
            (
                "no tolerations: both PreferNoSchedule taints count",
                vec![],
                2,
            ),
            (
                "a NoSchedule toleration does not help with PreferNoSchedule",
                vec![exists("a", Some(NoSchedule))],
                2,
            ),
            (
                "a PreferNoSchedule toleration helps",
                vec![exists("a", Some(PreferNoSchedule))],
                1,
            ),
            (
                "an empty-effect toleration helps",
                vec![exists("b", None)],
                1,
            ),
            ("the wildcard tolerates both", vec![exists("", None)], 0),
        ];
        for (rule, tols, want) in cases {
            assert_eq!(
                untolerated_prefer_no_schedule(&taints, tols),
                *want,
                "{rule}"
            );
        }
    }

    #[test]
    fn no_execute_outcome_rules_of_section_4() {
        let unreachable = || vec![unreachable_taint()];
        let cases: &[(&str, Vec<Taint>, Vec<Toleration>, NoExecuteOutcome)] = &[
            ("no taints → never", vec![], vec![], Never),
            (
                "only NoSchedule/PreferNoSchedule taints → never (only NoExecute counts)",
                vec![taint("a", "", NoSchedule), taint("b", "", PreferNoSchedule)],
                vec![],
                Never,
            ),
            (
                "pod without tolerations is evicted now",
                unreachable(),
                vec![],
                EvictNow,
            ),
            (
                "nil tolerationSeconds tolerates forever",
                unreachable(),
                vec![exists(UNREACHABLE, Some(NoExecute))],
                Never,
            ),
            (
                "zero tolerationSeconds evicts now",
                unreachable(),
                vec![exists(UNREACHABLE, Some(NoExecute)).with_seconds(0)],
                EvictNow,
            ),
            (
                "negative tolerationSeconds evicts now",
                unreachable(),
                vec![exists(UNREACHABLE, Some(NoExecute)).with_seconds(-10)],
                EvictNow,
            ),
            (
                "positive tolerationSeconds evicts after that delay",
                unreachable(),
                vec![exists(UNREACHABLE, Some(NoExecute)).with_seconds(42)],
                EvictAfter { seconds: 42 },
            ),
            (
                "first matching toleration wins: specific 600 s before wildcard 10 s",
                unreachable(),
                vec![
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(600),
                    exists("", None).with_seconds(10),
                ],
                EvictAfter { seconds: 600 },
            ),
            (
                "first matching toleration wins: reversed order gives 10 s",
                unreachable(),
                vec![
                    exists("", None).with_seconds(10),
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(600),
                ],
                EvictAfter { seconds: 10 },
            ),
            (
                "first matching toleration wins even if a later one says forever",
                unreachable(),
                vec![
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(5),
                    exists(UNREACHABLE, Some(NoExecute)),
                ],
                EvictAfter { seconds: 5 },
            ),
            (
                "[1, nil] → 1 s",
                vec![unreachable_taint(), not_ready_taint()],
                vec![
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(1),
                    exists(NOT_READY, Some(NoExecute)),
                ],
                EvictAfter { seconds: 1 },
            ),
            (
                "[nil, 1] → 1 s",
                vec![unreachable_taint(), not_ready_taint()],
                vec![
                    exists(UNREACHABLE, Some(NoExecute)),
                    exists(NOT_READY, Some(NoExecute)).with_seconds(1),
                ],
                EvictAfter { seconds: 1 },
            ),
            (
                "several NoExecute taints take the minimum",
                vec![
                    unreachable_taint(),
                    not_ready_taint(),
                    taint("c", "", NoExecute),
                ],
                vec![
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(300),
                    exists(NOT_READY, Some(NoExecute)).with_seconds(30),
                    exists("c", Some(NoExecute)).with_seconds(120),
                ],
                EvictAfter { seconds: 30 },
            ),
            (
                "a zero among positives evicts now",
                vec![unreachable_taint(), not_ready_taint()],
                vec![
                    exists(UNREACHABLE, Some(NoExecute)).with_seconds(300),
                    exists(NOT_READY, Some(NoExecute)).with_seconds(0),
                ],
                EvictNow,
            ),
            (
                "one untolerated NoExecute taint evicts now even if the others wait forever",
                vec![unreachable_taint(), taint("other", "", NoExecute)],
                vec![exists(UNREACHABLE, Some(NoExecute))],
                EvictNow,
            ),
            (
                "default 300 s tolerations: unreachable waits 300 s",
                unreachable(),
                default_tolerations(),
                EvictAfter { seconds: 300 },
            ),
            (
                "default 300 s tolerations: not-ready waits 300 s",
                vec![not_ready_taint()],
                default_tolerations(),
                EvictAfter { seconds: 300 },
            ),
            (
                "default 300 s tolerations do not cover other NoExecute taints",
                vec![taint(OUT_OF_SERVICE, "nodeshutdown", NoExecute)],
                default_tolerations(),
                EvictNow,
            ),
            (
                "DaemonSet pods tolerate unreachable forever",
                unreachable(),
                daemonset_tolerations(),
                Never,
            ),
            (
                "DaemonSet pods tolerate not-ready and unreachable forever",
                vec![not_ready_taint(), unreachable_taint()],
                daemonset_tolerations(),
                Never,
            ),
            (
                "not-ready Equal with a value does not tolerate the real taint: evict now (§9)",
                vec![not_ready_taint()],
                vec![equal(NOT_READY, "x", Some(NoExecute)).with_seconds(300)],
                EvictNow,
            ),
            (
                "a NoExecute toleration with an empty effect also counts",
                unreachable(),
                vec![exists(UNREACHABLE, None)],
                Never,
            ),
        ];
        for (rule, taints, tols, want) in cases {
            assert_eq!(no_execute_outcome(taints, tols), *want, "{rule}");
        }
    }

    #[test]
    fn unreachable_delay_is_the_outcome_for_the_unreachable_no_execute_taint() {
        assert_eq!(unreachable_delay(&[]), EvictNow);
        assert_eq!(
            unreachable_delay(&default_tolerations()),
            EvictAfter { seconds: 300 }
        );
        assert_eq!(unreachable_delay(&daemonset_tolerations()), Never);
        // An unreachable toleration with a value does not tolerate the empty-valued taint.
        assert_eq!(
            unreachable_delay(&[equal(UNREACHABLE, "x", Some(NoExecute))]),
            EvictNow
        );
        assert_eq!(unreachable_delay(&[exists("", None)]), Never);
    }

    #[test]
    fn not_ready_delay_is_the_outcome_for_the_not_ready_no_execute_taint() {
        assert_eq!(not_ready_delay(&[]), EvictNow);
        assert_eq!(
            not_ready_delay(&default_tolerations()),
            EvictAfter { seconds: 300 }
        );
        assert_eq!(not_ready_delay(&daemonset_tolerations()), Never);
        // Each key's own toleration decides: one for unreachable alone leaves not-ready at once.
        let only_unreachable = [exists(UNREACHABLE, Some(NoExecute)).with_seconds(60)];
        assert_eq!(not_ready_delay(&only_unreachable), EvictNow);
        assert_eq!(
            unreachable_delay(&only_unreachable),
            EvictAfter { seconds: 60 }
        );
        let first = [
            exists(NOT_READY, Some(NoExecute)).with_seconds(20),
            exists("", None).with_seconds(5),
        ];
        assert_eq!(not_ready_delay(&first), EvictAfter { seconds: 20 });
        assert_eq!(unreachable_delay(&first), EvictAfter { seconds: 5 });
        assert!(is_not_ready_no_execute(NOT_READY, "NoExecute"));
        assert!(!is_not_ready_no_execute(NOT_READY, "NoSchedule"));
        assert!(!is_not_ready_no_execute(UNREACHABLE, "NoExecute"));
        assert!(is_controller_no_execute(UNREACHABLE, "NoExecute"));
        assert!(is_controller_no_execute(NOT_READY, "NoExecute"));
        assert!(!is_controller_no_execute(NOT_READY, "NoSchedule"));
        assert!(!is_controller_no_execute(DISK_PRESSURE, "NoExecute"));
    }

    fn compare(op: Operator, key: &str, value: &str, effect: Option<Effect>) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op,
            value: value.into(),
            effect,
            toleration_seconds: None,
        }
    }

    /// `content.IsDecimalInteger` then `strconv.ParseInt(v, 10, 64)`, as `compareNumericValues`
    /// in `staging/src/k8s.io/api/core/v1/toleration.go` reads both values.
    #[test]
    fn comparison_values_are_canonical_int64() {
        let cases: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("7", Some(7)),
            ("-5", Some(-5)),
            ("950", Some(950)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            // past 64 bits: canonical but ParseInt's range error
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("18446744073709551616", None),
            // not canonical (IsDecimalInteger)
            ("", None),
            ("-", None),
            ("-0", None),
            ("00", None),
            ("0100", None),
            ("-07", None),
            ("+100", None),
            (" 200 ", None),
            ("100.5", None),
            ("1e3", None),
            ("0x10", None),
            ("high", None),
            ("١٢", None),
        ];
        for (value, want) in cases {
            assert_eq!(comparison_value(value), *want, "{value:?}");
        }
    }

    /// Upstream's own cases (`TestTolerationToleratesTaint` and `TestCompareNumericValues` in
    /// `staging/src/k8s.io/api/core/v1/toleration_test.go`), gate on, plus our boundaries.
    #[test]
    fn lt_and_gt_compare_the_taint_value_with_the_toleration_value() {
        use Operator::{Gt, Lt};
        let sla = "node.kubernetes.io/sla";
        let cases: &[(&str, Operator, &str, &str, bool)] = &[
            ("Gt: taint 800 is not > 950", Gt, "950", "800", false),
            ("Gt: taint 950 > 750", Gt, "750", "950", true),
            ("Lt: taint 950 is not < 800", Lt, "800", "950", false),
            ("Lt: taint 800 < 950", Lt, "950", "800", true),
            ("Gt is strict: equal values", Gt, "950", "950", false),
            ("Lt is strict: equal values", Lt, "100", "100", false),
            ("Gt: both zero", Gt, "0", "0", false),
            ("Lt: both zero", Lt, "0", "0", false),
            ("Gt: non-numeric taint value", Gt, "950", "high", false),
            (
                "Gt: negative, taint -200 not > -100",
                Gt,
                "-100",
                "-200",
                false,
            ),
            ("Gt: negative, taint -50 > -100", Gt, "-100", "-50", true),
            ("Lt: negative, taint -100 < -50", Lt, "-50", "-100", true),
            ("Lt: zero and negative", Lt, "0", "-1", true),
            ("Gt: zero and positive", Gt, "0", "1", true),
            (
                "Gt: large values, taint 100",
                Gt,
                "9223372036854775806",
                "100",
                false,
            ),
            (
                "Gt: max int64 taint",
                Gt,
                "9223372036854775806",
                "9223372036854775807",
                true,
            ),
            (
                "Gt: max int64 as taint over 0",
                Gt,
                "0",
                "9223372036854775807",
                true,
            ),
            (
                "Lt: min int64 as taint",
                Lt,
                "0",
                "-9223372036854775808",
                true,
            ),
            (
                "Gt: taint value past 64 bits",
                Gt,
                "0",
                "9223372036854775808",
                false,
            ),
            (
                "Lt: toleration value past 64 bits",
                Lt,
                "99999999999999999999",
                "1",
                false,
            ),
            (
                "Lt: taint value past 64 bits, negative",
                Lt,
                "0",
                "-9223372036854775809",
                false,
            ),
            (
                "Gt: leading zero on the toleration",
                Gt,
                "0100",
                "200",
                false,
            ),
            ("Gt: leading zero on the taint", Gt, "100", "0200", false),
            (
                "Lt: leading zero on the taint, even if smaller",
                Lt,
                "100",
                "050",
                false,
            ),
            ("Gt: '+' on the toleration", Gt, "+100", "200", false),
            ("Lt: '+' on the taint", Lt, "100", "+50", false),
            ("Lt: spaces on the taint", Lt, "100", " 50 ", false),
            ("Gt: '-0' is not canonical", Gt, "-1", "-0", false),
            ("Gt: floating point toleration", Gt, "100.5", "200", false),
            ("Gt: just a minus sign", Gt, "-", "100", false),
            ("Gt: empty toleration value", Gt, "", "100", false),
            ("Gt: empty taint value", Gt, "100", "", false),
            ("Lt: empty taint value", Lt, "100", "", false),
            ("Lt: both empty", Lt, "", "", false),
        ];
        for (rule, op, toleration_value, taint_value, want) in cases {
            let t = compare(*op, sla, toleration_value, Some(NoSchedule));
            assert_eq!(
                t.tolerates(&taint(sla, taint_value, NoSchedule)),
                *want,
                "{rule}"
            );
        }
    }

    /// `ToleratesTaint` checks effect and key before the operator, so `Lt`/`Gt` combine with
    /// them as `Equal` does: an empty effect covers every effect; a key is required (an empty
    /// key needs `Exists`, docs/semantics.md §8.2), and a different key never matches.
    #[test]
    fn lt_and_gt_combine_with_keys_and_effects_as_equal_does() {
        let t = |effect| compare(Operator::Gt, "k", "5", effect);
        assert!(t(None).tolerates(&taint("k", "6", NoSchedule)));
        assert!(t(None).tolerates(&taint("k", "6", PreferNoSchedule)));
        assert!(t(None).tolerates(&taint("k", "6", NoExecute)));
        assert!(!t(Some(NoSchedule)).tolerates(&taint("k", "6", NoExecute)));
        assert!(t(Some(NoExecute)).tolerates(&taint("k", "6", NoExecute)));
        assert!(!t(None).tolerates(&taint("other", "6", NoSchedule)));
        // NoExecute timing takes the chosen toleration's seconds as for any other operator.
        let taints = vec![taint("k", "6", NoExecute)];
        let tols = vec![t(Some(NoExecute)).with_seconds(30)];
        assert_eq!(
            no_execute_outcome(&taints, &tols),
            EvictAfter { seconds: 30 }
        );
        assert_eq!(
            no_execute_outcome(&[taint("k", "5", NoExecute)], &tols),
            EvictNow
        );
    }

    /// The fence's taint has an empty value, which no `Lt`/`Gt` toleration reads as a number:
    /// whatever the gate, such a toleration is passed over and the next one decides.
    #[test]
    fn lt_and_gt_never_tolerate_the_unreachable_taint() {
        for op in [Operator::Lt, Operator::Gt] {
            for value in [
                "0",
                "-1",
                "1",
                "9223372036854775807",
                "-9223372036854775808",
            ] {
                let tol = compare(op, UNREACHABLE, value, Some(NoExecute)).with_seconds(5);
                assert_eq!(unreachable_delay(std::slice::from_ref(&tol)), EvictNow);
                let then = exists(UNREACHABLE, Some(NoExecute)).with_seconds(300);
                assert_eq!(
                    unreachable_delay(&[tol, then]),
                    EvictAfter { seconds: 300 },
                    "{op:?} {value}"
                );
            }
        }
    }

    #[test]
    fn operators_round_trip_their_api_spelling() {
        for op in [
            Operator::Equal,
            Operator::Exists,
            Operator::Lt,
            Operator::Gt,
        ] {
            assert_eq!(Operator::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operator::parse(""), Some(Operator::Equal));
        for bad in ["lt", "GT", "In", "exists", "Gte"] {
            assert_eq!(Operator::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn outcomes_order_by_when_the_pod_is_deleted() {
        assert!(EvictNow < EvictAfter { seconds: 1 });
        assert!(EvictAfter { seconds: 1 } < EvictAfter { seconds: 2 });
        assert!(EvictAfter { seconds: i64::MAX } < Never);
    }

    #[test]
    fn taint_display_is_canonical() {
        assert_eq!(taint("k", "v", NoSchedule).to_string(), "k=v:NoSchedule");
        assert_eq!(
            unreachable_taint().to_string(),
            format!("{UNREACHABLE}:NoExecute")
        );
    }

    // ---- properties -----------------------------------------------------------------------

    fn arb_effect() -> impl Strategy<Value = Effect> {
        prop_oneof![Just(NoSchedule), Just(PreferNoSchedule), Just(NoExecute)]
    }

    fn arb_taint() -> impl Strategy<Value = Taint> {
        (
            prop::sample::select(vec!["a", "b", UNREACHABLE]),
            prop::sample::select(vec!["", "x", "X", "0", "-1", "7", "07"]),
            arb_effect(),
        )
            .prop_map(|(k, v, e)| taint(k, v, e))
    }

    fn arb_toleration() -> impl Strategy<Value = Toleration> {
        (
            prop::sample::select(vec!["", "a", "b", UNREACHABLE]),
            prop_oneof![
                Just(Operator::Equal),
                Just(Operator::Exists),
                Just(Operator::Lt),
                Just(Operator::Gt)
            ],
            prop::sample::select(vec!["", "x", "X", "0", "-1", "7", "07"]),
            prop::option::of(arb_effect()),
            prop::option::of(-3i64..700),
        )
            .prop_map(|(key, operator, value, effect, seconds)| Toleration {
                key: key.into(),
                operator,
                value: value.into(),
                effect,
                toleration_seconds: seconds,
            })
    }

    proptest! {
        /// The fence's shortcut for the unreachable taint decides exactly as the general rule
        /// does for that one taint.
        #[test]
        fn unreachable_delay_is_no_execute_outcome_of_the_unreachable_taint(
            tols in prop::collection::vec(arb_toleration(), 0..6),
        ) {
            prop_assert_eq!(
                unreachable_delay(&tols),
                no_execute_outcome(&[unreachable_taint()], &tols)
            );
        }

        /// Raising one toleration's `tolerationSeconds` (or making it nil = forever) never makes
        /// the eviction earlier: matching ignores seconds (§2.3), so the chosen tolerations stay
        /// the same, and the outcome is monotone in each chosen value (§4.2).
        #[test]
        fn raising_toleration_seconds_never_evicts_earlier(
            taints in prop::collection::vec(arb_taint(), 0..5),
            tols in prop::collection::vec(arb_toleration(), 1..6),
            pick in any::<prop::sample::Index>(),
            raise in prop::option::of(0i64..1000),
        ) {
            let i = pick.index(tols.len());
            let mut raised = tols.clone();
            let slot = &mut raised[i].toleration_seconds;
            *slot = match (*slot, raise) {
                (_, None) => None,
                (Some(s), Some(d)) => Some(s + d),
                // nil is already the largest value (forever); keep it.
                (None, Some(_)) => None,
            };
            prop_assert!(no_execute_outcome(&taints, &raised) >= no_execute_outcome(&taints, &tols));
        }

        /// Appending a toleration at the END of the list never changes which toleration is chosen
        /// for a taint that was already tolerated (first match wins, §4.1). Hence: (a) nothing
        /// tolerated becomes untolerated and the scheduler filter can only go from false to
        /// true; (b) the NoExecute outcome never gets earlier; (c) if every NoExecute taint was
        /// already tolerated, the outcome is exactly unchanged; (d) the PreferNoSchedule count
        /// never grows. (Prepending, by contrast, CAN make it earlier; see the table test.)
        #[test]
        fn appending_a_toleration_never_evicts_earlier_or_untolerates(
            taints in prop::collection::vec(arb_taint(), 0..5),
            tols in prop::collection::vec(arb_toleration(), 0..5),
            extra in arb_toleration(),
        ) {
            let mut appended = tols.clone();
            appended.push(extra);
            for t in &taints {
                if let Some(i) = first_tolerating(&tols, t) {
                    prop_assert_eq!(first_tolerating(&appended, t), Some(i));
                }
            }
            prop_assert!(schedulable(&taints, &appended) >= schedulable(&taints, &tols));
            let before = no_execute_outcome(&taints, &tols);
            let after = no_execute_outcome(&taints, &appended);
            prop_assert!(after >= before);
            let all_tolerated = taints
                .iter()
                .filter(|t| t.effect == NoExecute)
                .all(|t| first_tolerating(&tols, t).is_some());
            if all_tolerated {
                prop_assert_eq!(after, before);
            }
            prop_assert!(
                untolerated_prefer_no_schedule(&taints, &appended)
                    <= untolerated_prefer_no_schedule(&taints, &tols)
            );
        }
    }
}
