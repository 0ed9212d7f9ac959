//! Eviction thresholds (docs/semantics.md §7.2–7.4): the kubelet's threshold model, parsing of the
//! four `eviction*` maps with the Linux defaults, and resolution against a capacity. Also our own
//! PSI thresholds, and the duration syntax the configuration uses. Pure.
//!
//! Parsing mirrors the kubelet's `ParseThresholdConfig` rule for rule, with three deliberate
//! differences, all of which turn a silent surprise into an error or a warning:
//! - every problem is collected, instead of stopping at the first;
//! - `allocatableMemory.available` is rejected: the kubelet derives it from the pods cgroup
//!   (`kubepods`), which nodewarden does not observe;
//! - a percentage must be a finite number (upstream `ParseFloat` lets `"NaN%"` through), and a
//!   minimum-reclaim percentage above 100% is an error (it could never be satisfied).

use std::collections::BTreeMap;
use std::fmt;
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

impl ThresholdValue {
    /// The threshold as an amount of the signal's unit, for a given capacity (docs/semantics.md
    /// §7.4).
    ///
    /// A percentage is computed as the kubelet's `GetThresholdQuantity` does:
    /// `int64(float64(capacity) * float64(fraction))`, truncated toward zero (saturating in Rust
    /// where Go's conversion is undefined). A quantity is its whole-unit value, rounded up.
    pub fn resolve(&self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q.value(),
            ThresholdValue::Percentage(fraction) => (capacity as f64 * f64::from(*fraction)) as i64,
        }
    }
}

impl fmt::Display for ThresholdValue {
    /// `100Mi` (canonical quantity) or `10%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdValue::Quantity(q) => write!(f, "{q}"),
            ThresholdValue::Percentage(fraction) => {
                let percent = format!("{:.6}", f32_as_shortest_f64(*fraction) * 100.0);
                let percent = percent.trim_end_matches('0').trim_end_matches('.');
                write!(f, "{percent}%")
            }
        }
    }
}

/// The `f64` whose shortest decimal form equals the `f32`'s shortest form, so that `0.1f32`
/// becomes `0.1` rather than `0.10000000149011612`. The kubelet serialises its float32
/// fractions with 32-bit precision; this lets JSON output show the same digits.
pub fn f32_as_shortest_f64(value: f32) -> f64 {
    format!("{value}").parse().unwrap_or(f64::from(value))
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

/// The Linux default hard thresholds (docs/semantics.md §7.3, current tree: five entries).
/// `pid.available` has no default.
pub const LINUX_DEFAULT_EVICTION_HARD: [(Signal, &str); 5] = [
    (Signal::MemoryAvailable, "100Mi"),
    (Signal::NodeFsAvailable, "10%"),
    (Signal::NodeFsInodesFree, "5%"),
    (Signal::ImageFsAvailable, "15%"),
    (Signal::ImageFsInodesFree, "5%"),
];

/// Which configuration map an entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThresholdMap {
    EvictionHard,
    EvictionSoft,
    EvictionSoftGracePeriod,
    EvictionMinimumReclaim,
    PsiThresholds,
}

impl ThresholdMap {
    /// The configuration key of the map, e.g. `evictionHard`.
    pub fn key(self) -> &'static str {
        match self {
            ThresholdMap::EvictionHard => "evictionHard",
            ThresholdMap::EvictionSoft => "evictionSoft",
            ThresholdMap::EvictionSoftGracePeriod => "evictionSoftGracePeriod",
            ThresholdMap::EvictionMinimumReclaim => "evictionMinimumReclaim",
            ThresholdMap::PsiThresholds => "psiThresholds",
        }
    }
}

/// Whether a problem is about an entry's key (the signal name) or its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Key,
    Value,
}

/// A problem with one entry of one map. `signal` is the key exactly as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThresholdError {
    pub map: ThresholdMap,
    pub signal: String,
    pub site: Site,
    pub message: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}: {}", self.map.key(), self.signal, self.message)
    }
}

/// Something accepted but ignored, which the user probably wants to know about.
pub type ThresholdWarning = ThresholdError;

/// The four `eviction*` maps as written (signal name → raw string, in file order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictionInput {
    pub hard: Vec<(String, String)>,
    pub soft: Vec<(String, String)>,
    pub soft_grace_period: Vec<(String, String)>,
    pub minimum_reclaim: Vec<(String, String)>,
    /// Whether `evictionHard` was present, even as an empty table: the kubelet fills its defaults
    /// only when the map is absent (nil), so an explicit empty one means no hard thresholds. (TOML
    /// has no `omitempty`: an empty table is written, not omitted; see the note on
    /// docs/semantics.md §7.3 in `config::load`.) A non-empty `hard` also counts as set.
    pub hard_set: bool,
    /// `mergeDefaultEvictionSettings`.
    pub merge_defaults: bool,
}

/// The result of parsing: the effective thresholds and what was ignored along the way.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedThresholds {
    /// Hard thresholds in `Signal::ALL` order, then soft ones in the same order.
    pub thresholds: Vec<Threshold>,
    pub warnings: Vec<ThresholdWarning>,
}

/// Collects errors and warnings while parsing.
#[derive(Default)]
struct Issues {
    errors: Vec<ThresholdError>,
    warnings: Vec<ThresholdWarning>,
}

impl Issues {
    fn error(&mut self, map: ThresholdMap, signal: &str, site: Site, message: String) {
        self.errors.push(ThresholdError {
            map,
            signal: signal.to_string(),
            site,
            message,
        });
    }

    fn warn(&mut self, map: ThresholdMap, signal: &str, message: String) {
        self.warnings.push(ThresholdError {
            map,
            signal: signal.to_string(),
            site: Site::Key,
            message,
        });
    }
}

fn signal_names() -> String {
    Signal::ALL
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves a map key to a signal. `None` means "skip this entry" (an error or warning has been
/// recorded).
fn signal_for_key(issues: &mut Issues, map: ThresholdMap, key: &str) -> Option<Signal> {
    if let Some(signal) = Signal::from_name(key) {
        return Some(signal);
    }
    match key {
        // docs/semantics.md §7.1: the kubelet ignores user values for these with a warning.
        "containerfs.available" | "containerfs.inodesFree" => {
            issues.warn(
                map,
                key,
                format!(
                    "{key} is ignored, as the kubelet ignores it: it always copies the nodefs or imagefs threshold"
                ),
            );
        }
        "allocatableMemory.available" => issues.error(
            map,
            key,
            Site::Key,
            "allocatableMemory.available is the kubelet's signal for the pods cgroup (kubepods), which nodewarden does not observe; use memory.available".to_string(),
        ),
        _ => issues.error(
            map,
            key,
            Site::Key,
            format!("unsupported eviction signal {key}; expected one of: {}", signal_names()),
        ),
    }
    None
}

/// Parses the number in front of `%` into a float32 fraction, as the kubelet's `parsePercentage`
/// (float32 parse, then divide by 100 in float32).
fn parse_fraction(raw: &str) -> Result<f32, String> {
    let number = raw.strip_suffix('%').unwrap_or(raw);
    match number.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v / 100.0),
        _ => Err(format!(
            "expected a percentage such as \"10%\", found \"{raw}\""
        )),
    }
}

fn parse_quantity(raw: &str) -> Result<Quantity, String> {
    raw.parse::<Quantity>().map_err(|e| {
        format!("expected a quantity such as \"100Mi\" or a percentage such as \"10%\": {e}")
    })
}

/// One `evictionHard`/`evictionSoft` value (docs/semantics.md §7.2). `Ok(None)`: the threshold is
/// dropped.
fn parse_threshold_value(signal: Signal, raw: &str) -> Result<Option<ThresholdValue>, String> {
    if raw.ends_with('%') {
        // Only these exact strings disable a threshold; "0.0%" is a real (never met) threshold.
        if raw == "0%" || raw == "100%" {
            return Ok(None);
        }
        let fraction = parse_fraction(raw)?;
        if !(0.0..=1.0).contains(&fraction) {
            return Err(format!(
                "eviction percentage threshold {signal} must be between 0% and 100%, found \"{raw}\""
            ));
        }
        return Ok(Some(ThresholdValue::Percentage(fraction)));
    }
    let quantity = parse_quantity(raw)?;
    if !quantity.is_positive() {
        return Err(format!(
            "eviction threshold {signal} must be positive (or \"0%\" to disable it), found \"{raw}\""
        ));
    }
    Ok(Some(ThresholdValue::Quantity(quantity)))
}

/// One `evictionMinimumReclaim` value (docs/semantics.md §7.2): a percentage > 0, or a quantity ≥
/// 0.
fn parse_min_reclaim(signal: Signal, raw: &str) -> Result<ThresholdValue, String> {
    if raw.ends_with('%') {
        let fraction = parse_fraction(raw)?;
        if fraction <= 0.0 {
            return Err(format!(
                "eviction percentage minimum reclaim {signal} must be greater than 0% (use \"0\" for none), found \"{raw}\""
            ));
        }
        if fraction > 1.0 {
            return Err(format!(
                "eviction percentage minimum reclaim {signal} must be at most 100%, found \"{raw}\""
            ));
        }
        return Ok(ThresholdValue::Percentage(fraction));
    }
    let quantity = parse_quantity(raw)?;
    if quantity.is_negative() {
        return Err(format!(
            "eviction minimum reclaim {signal} must not be negative, found \"{raw}\""
        ));
    }
    Ok(ThresholdValue::Quantity(quantity))
}

/// Parses one map into signal → value, reporting bad keys, bad values and duplicates.
fn parse_map<T>(
    issues: &mut Issues,
    map: ThresholdMap,
    entries: &[(String, String)],
    mut parse: impl FnMut(Signal, &str) -> Result<T, String>,
) -> BTreeMap<Signal, T> {
    let mut out = BTreeMap::new();
    for (key, raw) in entries {
        let Some(signal) = signal_for_key(issues, map, key) else {
            continue;
        };
        if out.contains_key(&signal) {
            issues.error(
                map,
                key,
                Site::Key,
                format!("{signal} is specified more than once"),
            );
            continue;
        }
        match parse(signal, raw) {
            Ok(value) => {
                out.insert(signal, value);
            }
            Err(message) => issues.error(map, key, Site::Value, message),
        }
    }
    out
}

/// Parses the four `eviction*` maps into the effective thresholds (docs/semantics.md §7.2–7.3).
///
/// - Hard thresholds: the user's `evictionHard`; the Linux defaults apply only when it is unset,
///   or, with `merge_defaults`, to each default signal the user did not list. `"0%"`/`"100%"`
///   drops a threshold (including a default, when merging).
/// - Soft thresholds need a grace period each; grace entries for signals without a soft threshold
///   are ignored with a warning.
/// - Minimum reclaim attaches to both the hard and the soft threshold of its signal.
/// - Grace periods use [`parse_duration`].
pub fn parse_thresholds(input: &EvictionInput) -> Result<ParsedThresholds, Vec<ThresholdError>> {
    let mut issues = Issues::default();

    let user_hard = parse_map(
        &mut issues,
        ThresholdMap::EvictionHard,
        &input.hard,
        parse_threshold_value,
    );
    let soft = parse_map(
        &mut issues,
        ThresholdMap::EvictionSoft,
        &input.soft,
        parse_threshold_value,
    );
    let grace = parse_map(
        &mut issues,
        ThresholdMap::EvictionSoftGracePeriod,
        &input.soft_grace_period,
        |_, raw| parse_duration(raw).map_err(|e| e.to_string()),
    );
    let min_reclaim = parse_map(
        &mut issues,
        ThresholdMap::EvictionMinimumReclaim,
        &input.minimum_reclaim,
        parse_min_reclaim,
    );

    // docs/semantics.md §7.3: defaults only when evictionHard is unset, unless merging.
    let hard_set = input.hard_set || !input.hard.is_empty();
    let mut hard: BTreeMap<Signal, Option<ThresholdValue>> = BTreeMap::new();
    if !hard_set || input.merge_defaults {
        for (signal, raw) in LINUX_DEFAULT_EVICTION_HARD {
            if let Ok(value) = parse_threshold_value(signal, raw) {
                hard.insert(signal, value);
            }
        }
    }
    hard.extend(user_hard);

    let soft_key = |signal: Signal| -> &str {
        input
            .soft
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| *k == signal.name())
            .unwrap_or(signal.name())
    };
    for (signal, value) in &soft {
        // A grace entry that failed to parse has its own error; don't report it missing too.
        let grace_written = input
            .soft_grace_period
            .iter()
            .any(|(k, _)| k == signal.name());
        if value.is_some() && !grace_written {
            issues.error(
                ThresholdMap::EvictionSoft,
                soft_key(*signal),
                Site::Value,
                format!("grace period must be specified for the soft eviction threshold {signal} (in evictionSoftGracePeriod)"),
            );
        }
    }
    for signal in grace.keys() {
        if !matches!(soft.get(signal), Some(Some(_))) {
            issues.warn(
                ThresholdMap::EvictionSoftGracePeriod,
                signal.name(),
                format!("{signal} has no soft eviction threshold, so this grace period is ignored"),
            );
        }
    }
    for signal in min_reclaim.keys() {
        let has_threshold =
            matches!(hard.get(signal), Some(Some(_))) || matches!(soft.get(signal), Some(Some(_)));
        if !has_threshold {
            issues.warn(
                ThresholdMap::EvictionMinimumReclaim,
                signal.name(),
                format!("{signal} has no hard or soft eviction threshold, so this minimum reclaim is ignored"),
            );
        }
    }

    if !issues.errors.is_empty() {
        return Err(issues.errors);
    }

    let mut thresholds = Vec::new();
    for (is_soft, values) in [(false, &hard), (true, &soft)] {
        for signal in Signal::ALL {
            let Some(Some(value)) = values.get(&signal) else {
                continue;
            };
            thresholds.push(Threshold {
                signal,
                value: value.clone(),
                grace_period: if is_soft {
                    grace.get(&signal).copied().unwrap_or_default()
                } else {
                    Duration::ZERO
                },
                min_reclaim: min_reclaim.get(&signal).cloned(),
                soft: is_soft,
            });
        }
    }
    Ok(ParsedThresholds {
        thresholds,
        warnings: issues.warnings,
    })
}

/// Parses `[psiThresholds]`: keys name a PSI average without the `psi.` prefix
/// (`"memory.full.avg10"`), values are the percentage of stall time above which the threshold is
/// met, in (0, 100]. Output is in `PsiSignal` order.
pub fn parse_psi_thresholds(
    entries: &[(String, f64)],
) -> Result<Vec<PsiThreshold>, Vec<ThresholdError>> {
    let mut issues = Issues::default();
    let mut out: BTreeMap<PsiSignal, f64> = BTreeMap::new();
    let map = ThresholdMap::PsiThresholds;
    for (key, value) in entries {
        let Some(signal) = PsiSignal::from_name(&format!("psi.{key}")) else {
            let hint = match key.strip_prefix("psi.") {
                Some(rest) => format!("; write \"{rest}\" without the psi. prefix"),
                None => String::new(),
            };
            issues.error(
                map,
                key,
                Site::Key,
                format!(
                    "unsupported PSI signal {key}; expected <memory|io|cpu>.<some|full>.<avg10|avg60|avg300>, such as memory.full.avg10{hint}"
                ),
            );
            continue;
        };
        if out.contains_key(&signal) {
            issues.error(
                map,
                key,
                Site::Key,
                format!("{key} is specified more than once"),
            );
            continue;
        }
        if !(value.is_finite() && *value > 0.0 && *value <= 100.0) {
            issues.error(
                map,
                key,
                Site::Value,
                format!("expected a percentage of stall time greater than 0 and at most 100, found {value}"),
            );
            continue;
        }
        out.insert(signal, *value);
    }
    if !issues.errors.is_empty() {
        return Err(issues.errors);
    }
    Ok(out
        .into_iter()
        .map(|(signal, above_percent)| PsiThreshold {
            signal,
            above_percent,
        })
        .collect())
}

/// Why a string is not an acceptable duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("expected a duration such as \"10s\" or \"5m\", found \"{0}\"")]
    Invalid(String),
    #[error("expected a duration that is not negative, found \"{0}\"")]
    Negative(String),
    #[error(
        "expected a duration of at most 2562047h47m16.854775807s (the longest a Kubernetes duration can be), found \"{0}\""
    )]
    TooLong(String),
}

/// The longest duration Go's `time.Duration` (int64 nanoseconds) holds: the kubelet refuses a
/// longer one in its configuration, and so do we.
pub const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// Parses a duration in Go `time.ParseDuration` syntax or humantime syntax.
///
/// Accepted: a sequence of number+unit pairs with optional spaces between them, units
/// `ns`, `us`/`µs`, `ms`, `s`, `m`, `h` (and humantime's longer spellings such as `min`, `sec`,
/// `hours`, `d`); decimal fractions (`1.5h`, `.5s`); a leading `+`; and the bare `0`. So
/// `1m30s`, `90s`, `1h2m3.5s`, `300ms`, `1m 30s` are all accepted. A leading `-` is an error, since
/// every duration in the configuration must be ≥ 0.
pub fn parse_duration(raw: &str) -> Result<Duration, DurationError> {
    if let Some(rest) = raw.strip_prefix('-') {
        // Distinguish "-5s" (negative) from "-ten" (garbage) for a clearer message.
        return Err(match parse_duration(rest) {
            Ok(d) if d.is_zero() => return Ok(d),
            Ok(_) | Err(DurationError::TooLong(_)) => DurationError::Negative(raw.to_string()),
            Err(_) => DurationError::Invalid(raw.to_string()),
        });
    }
    let unsigned = raw.strip_prefix('+').unwrap_or(raw);
    // Go accepts ".5s"; humantime needs a leading digit.
    let text = if unsigned.starts_with('.') {
        format!("0{unsigned}")
    } else {
        unsigned.to_string()
    };
    if text.is_empty() || text.starts_with(['+', '-']) {
        return Err(DurationError::Invalid(raw.to_string()));
    }
    let d =
        humantime::parse_duration(&text).map_err(|_| DurationError::Invalid(raw.to_string()))?;
    if d > MAX_DURATION {
        return Err(DurationError::TooLong(raw.to_string()));
    }
    Ok(d)
}

/// Formats a duration in the compact Go-like form used throughout our output: components `h`,
/// `m`, `s`, `ms`, `us`, `ns`, zero components left out (`10s`, `5m`, `1m30s`, `1s500ms`), and
/// `0s` for zero. [`parse_duration`] reads it back exactly.
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    let parts = [
        (secs / 3600, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
        (u64::from(nanos / 1_000_000), "ms"),
        (u64::from(nanos / 1_000 % 1_000), "us"),
        (u64::from(nanos % 1_000), "ns"),
    ];
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_longer_than_go_can_hold_is_refused() {
        assert_eq!(
            parse_duration("2562047h"),
            Ok(Duration::from_secs(2_562_047 * 3600))
        );
        assert_eq!(parse_duration("2562047h47m16.854775807s"), Ok(MAX_DURATION));
        for raw in ["2562047h47m16.854775808s", "2562048h", "99999999999h"] {
            assert_eq!(
                parse_duration(raw),
                Err(DurationError::TooLong(raw.to_string())),
                "{raw}"
            );
        }
        // Negative beats too long: the sign is what is wrong first.
        assert_eq!(
            parse_duration("-99999999999h"),
            Err(DurationError::Negative("-99999999999h".to_string()))
        );
    }

    fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn hard(pairs: &[(&str, &str)]) -> EvictionInput {
        EvictionInput {
            hard: entries(pairs),
            hard_set: !pairs.is_empty(),
            ..EvictionInput::default()
        }
    }

    fn parse_ok(input: &EvictionInput) -> ParsedThresholds {
        match parse_thresholds(input) {
            Ok(p) => p,
            Err(e) => panic!("unexpected errors: {e:?}"),
        }
    }

    fn parse_err(input: &EvictionInput) -> Vec<ThresholdError> {
        match parse_thresholds(input) {
            Ok(p) => panic!("expected errors, got {p:?}"),
            Err(e) => e,
        }
    }

    fn quantity(s: &str) -> ThresholdValue {
        ThresholdValue::Quantity(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
    }

    /// (signal, soft, value) of each threshold, in output order.
    fn summary(p: &ParsedThresholds) -> Vec<(Signal, bool, String)> {
        p.thresholds
            .iter()
            .map(|t| (t.signal, t.soft, t.value.to_string()))
            .collect()
    }

    #[test]
    fn defaults_only_when_eviction_hard_is_unset() {
        let p = parse_ok(&EvictionInput::default());
        assert_eq!(
            summary(&p),
            vec![
                (Signal::MemoryAvailable, false, "100Mi".to_string()),
                (Signal::NodeFsAvailable, false, "10%".to_string()),
                (Signal::NodeFsInodesFree, false, "5%".to_string()),
                (Signal::ImageFsAvailable, false, "15%".to_string()),
                (Signal::ImageFsInodesFree, false, "5%".to_string()),
            ]
        );
        let p = parse_ok(&hard(&[("memory.available", "1Gi")]));
        assert_eq!(
            summary(&p),
            vec![(Signal::MemoryAvailable, false, "1Gi".to_string())]
        );
    }

    #[test]
    fn an_absent_eviction_hard_gets_the_defaults() {
        let input = EvictionInput {
            hard_set: false,
            ..EvictionInput::default()
        };
        assert_eq!(parse_ok(&input).thresholds.len(), 5);
    }

    #[test]
    fn a_present_but_empty_eviction_hard_has_no_hard_thresholds_unless_merging() {
        let input = EvictionInput {
            hard_set: true,
            ..EvictionInput::default()
        };
        assert_eq!(parse_ok(&input).thresholds, vec![]);
        let merged = EvictionInput {
            hard_set: true,
            merge_defaults: true,
            ..EvictionInput::default()
        };
        assert_eq!(parse_ok(&merged).thresholds.len(), 5);
    }

    #[test]
    fn defaults_are_exact_float32_fractions() {
        let p = parse_ok(&EvictionInput::default());
        assert_eq!(p.thresholds[0].value, quantity("100Mi"));
        assert_eq!(p.thresholds[1].value, ThresholdValue::Percentage(0.1f32));
        assert_eq!(p.thresholds[2].value, ThresholdValue::Percentage(0.05f32));
        assert_eq!(p.thresholds[3].value, ThresholdValue::Percentage(0.15f32));
        assert!(
            p.thresholds
                .iter()
                .all(|t| !t.soft && t.grace_period.is_zero() && t.min_reclaim.is_none())
        );
    }

    #[test]
    fn merge_keeps_defaults_for_unset_signals() {
        let mut input = hard(&[("nodefs.available", "20%"), ("imagefs.inodesFree", "0%")]);
        input.merge_defaults = true;
        let p = parse_ok(&input);
        assert_eq!(
            summary(&p),
            vec![
                (Signal::MemoryAvailable, false, "100Mi".to_string()),
                (Signal::NodeFsAvailable, false, "20%".to_string()),
                (Signal::NodeFsInodesFree, false, "5%".to_string()),
                (Signal::ImageFsAvailable, false, "15%".to_string()),
            ]
        );
    }

    #[test]
    fn pid_available_has_no_default() {
        let p = parse_ok(&EvictionInput::default());
        assert!(
            p.thresholds
                .iter()
                .all(|t| t.signal != Signal::PidAvailable)
        );
        let mut input = hard(&[("pid.available", "10%")]);
        input.merge_defaults = true;
        let p = parse_ok(&input);
        assert_eq!(p.thresholds.len(), 6);
        assert_eq!(p.thresholds[5].signal, Signal::PidAvailable);
    }

    #[test]
    fn zero_percent_drops_the_threshold() {
        let p = parse_ok(&hard(&[
            ("memory.available", "0%"),
            ("nodefs.available", "10%"),
        ]));
        assert_eq!(
            summary(&p),
            vec![(Signal::NodeFsAvailable, false, "10%".to_string())]
        );
    }

    #[test]
    fn hundred_percent_drops_the_threshold() {
        let p = parse_ok(&hard(&[
            ("memory.available", "100%"),
            ("nodefs.available", "10%"),
        ]));
        assert_eq!(
            summary(&p),
            vec![(Signal::NodeFsAvailable, false, "10%".to_string())]
        );
    }

    #[test]
    fn zero_point_zero_percent_does_not_drop() {
        let p = parse_ok(&hard(&[
            ("memory.available", "0.0%"),
            ("nodefs.available", "100.0%"),
        ]));
        assert_eq!(p.thresholds.len(), 2);
        assert_eq!(p.thresholds[0].value, ThresholdValue::Percentage(0.0));
        assert_eq!(p.thresholds[1].value, ThresholdValue::Percentage(1.0));
    }

    #[test]
    fn percentages_are_float32_divided_by_100() {
        let p = parse_ok(&hard(&[("nodefs.available", "7.5%")]));
        assert_eq!(
            p.thresholds[0].value,
            ThresholdValue::Percentage(7.5f32 / 100f32)
        );
    }

    #[test]
    fn value_errors_name_the_map_and_signal() {
        let cases: &[(&str, &str)] = &[
            ("150%", "between 0% and 100%"),
            ("-5%", "between 0% and 100%"),
            ("abc%", "expected a percentage such as \"10%\""),
            ("NaN%", "expected a percentage"),
            ("0", "must be positive"),
            ("-1Mi", "must be positive"),
            ("100MB", "unknown suffix \"MB\""),
            ("", "empty quantity"),
        ];
        for (raw, needle) in cases {
            let errors = parse_err(&hard(&[("memory.available", raw)]));
            assert_eq!(errors.len(), 1, "{raw}");
            let e = &errors[0];
            assert_eq!(
                (e.map, e.signal.as_str(), e.site),
                (ThresholdMap::EvictionHard, "memory.available", Site::Value)
            );
            assert!(
                e.message.contains(needle),
                "{raw}: {} lacks {needle}",
                e.message
            );
        }
    }

    #[test]
    fn unknown_signal_is_unsupported() {
        let errors = parse_err(&hard(&[("memory.free", "1Gi")]));
        assert_eq!(errors[0].site, Site::Key);
        assert!(
            errors[0]
                .message
                .starts_with("unsupported eviction signal memory.free")
        );
    }

    #[test]
    fn allocatable_memory_is_rejected_with_a_reason() {
        let errors = parse_err(&hard(&[("allocatableMemory.available", "1Gi")]));
        assert!(errors[0].message.contains("does not observe"));
    }

    #[test]
    fn containerfs_is_ignored_with_a_warning() {
        let p = parse_ok(&hard(&[
            ("containerfs.available", "10%"),
            ("memory.available", "1Gi"),
        ]));
        assert_eq!(
            summary(&p),
            vec![(Signal::MemoryAvailable, false, "1Gi".to_string())]
        );
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.warnings[0].signal, "containerfs.available");
    }

    #[test]
    fn soft_threshold_without_grace_period_is_an_error() {
        let input = EvictionInput {
            soft: entries(&[("memory.available", "300Mi")]),
            ..EvictionInput::default()
        };
        let errors = parse_err(&input);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].map, ThresholdMap::EvictionSoft);
        assert!(errors[0].message.contains(
            "grace period must be specified for the soft eviction threshold memory.available"
        ));
    }

    #[test]
    fn soft_threshold_gets_its_grace_period_and_comes_after_hard_ones() {
        let input = EvictionInput {
            hard: entries(&[("pid.available", "5%"), ("memory.available", "100Mi")]),
            hard_set: true,
            soft: entries(&[("memory.available", "300Mi")]),
            soft_grace_period: entries(&[("memory.available", "1m30s")]),
            ..EvictionInput::default()
        };
        let p = parse_ok(&input);
        assert_eq!(
            summary(&p),
            vec![
                (Signal::MemoryAvailable, false, "100Mi".to_string()),
                (Signal::PidAvailable, false, "5%".to_string()),
                (Signal::MemoryAvailable, true, "300Mi".to_string()),
            ]
        );
        assert_eq!(p.thresholds[2].grace_period, Duration::from_secs(90));
        assert_eq!(p.thresholds[0].grace_period, Duration::ZERO);
    }

    #[test]
    fn dropped_soft_threshold_needs_no_grace_period() {
        let input = EvictionInput {
            soft: entries(&[("memory.available", "0%")]),
            ..EvictionInput::default()
        };
        assert_eq!(parse_ok(&input).thresholds.len(), 5);
    }

    #[test]
    fn negative_grace_period_is_an_error() {
        let input = EvictionInput {
            soft: entries(&[("memory.available", "300Mi")]),
            soft_grace_period: entries(&[("memory.available", "-1m")]),
            ..EvictionInput::default()
        };
        let errors = parse_err(&input);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].map, ThresholdMap::EvictionSoftGracePeriod);
        assert!(errors[0].message.contains("not negative"));
    }

    #[test]
    fn grace_period_without_soft_threshold_is_ignored_with_a_warning() {
        let input = EvictionInput {
            soft_grace_period: entries(&[("nodefs.available", "1m")]),
            ..EvictionInput::default()
        };
        let p = parse_ok(&input);
        assert_eq!(p.thresholds.len(), 5);
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.warnings[0].map, ThresholdMap::EvictionSoftGracePeriod);
    }

    #[test]
    fn grace_period_for_an_unknown_signal_is_an_error() {
        let input = EvictionInput {
            soft_grace_period: entries(&[("memory.free", "1m")]),
            ..EvictionInput::default()
        };
        assert!(
            parse_err(&input)[0]
                .message
                .starts_with("unsupported eviction signal")
        );
    }

    #[test]
    fn minimum_reclaim_zero_percent_is_an_error() {
        let input = EvictionInput {
            minimum_reclaim: entries(&[("nodefs.available", "0%")]),
            ..EvictionInput::default()
        };
        let errors = parse_err(&input);
        assert_eq!(errors[0].map, ThresholdMap::EvictionMinimumReclaim);
        assert!(errors[0].message.contains("greater than 0%"));
    }

    #[test]
    fn minimum_reclaim_zero_is_allowed() {
        let input = EvictionInput {
            minimum_reclaim: entries(&[("nodefs.available", "0")]),
            ..EvictionInput::default()
        };
        let p = parse_ok(&input);
        assert_eq!(p.thresholds[1].min_reclaim, Some(quantity("0")));
    }

    #[test]
    fn minimum_reclaim_negative_or_over_100_percent_is_an_error() {
        for raw in ["-1Mi", "101%"] {
            let input = EvictionInput {
                minimum_reclaim: entries(&[("nodefs.available", raw)]),
                ..EvictionInput::default()
            };
            assert_eq!(parse_err(&input).len(), 1, "{raw}");
        }
    }

    #[test]
    fn minimum_reclaim_attaches_to_hard_and_soft() {
        let input = EvictionInput {
            hard: entries(&[("memory.available", "100Mi")]),
            hard_set: true,
            soft: entries(&[("memory.available", "300Mi")]),
            soft_grace_period: entries(&[("memory.available", "30s")]),
            minimum_reclaim: entries(&[("memory.available", "5%")]),
            ..EvictionInput::default()
        };
        let p = parse_ok(&input);
        assert_eq!(p.thresholds.len(), 2);
        for t in &p.thresholds {
            assert_eq!(t.min_reclaim, Some(ThresholdValue::Percentage(0.05)));
        }
    }

    #[test]
    fn minimum_reclaim_without_threshold_warns() {
        let input = EvictionInput {
            minimum_reclaim: entries(&[("pid.available", "1k")]),
            ..EvictionInput::default()
        };
        assert_eq!(parse_ok(&input).warnings.len(), 1);
    }

    #[test]
    fn every_error_is_collected() {
        let input = EvictionInput {
            hard: entries(&[
                ("memory.available", "0"),
                ("bogus", "1"),
                ("nodefs.available", "200%"),
            ]),
            hard_set: true,
            soft: entries(&[("pid.available", "1k")]),
            minimum_reclaim: entries(&[("nodefs.available", "0%")]),
            ..EvictionInput::default()
        };
        assert_eq!(parse_err(&input).len(), 5);
    }

    #[test]
    fn resolve_truncates_like_the_kubelet() {
        assert_eq!(ThresholdValue::Percentage(0.1).resolve(1000), 100);
        // float32(0.1) is slightly above 0.1, so 10 × it is slightly above 1 and truncates to 1.
        assert_eq!(ThresholdValue::Percentage(0.1).resolve(10), 1);
        // float32(0.7) is 0.699999988…, so 10 × it truncates to 6, as the kubelet computes.
        assert_eq!(ThresholdValue::Percentage(0.7).resolve(10), 6);
        assert_eq!(ThresholdValue::Percentage(0.15).resolve(7), 1);
        assert_eq!(ThresholdValue::Percentage(0.05).resolve(0), 0);
        assert_eq!(quantity("100Mi").resolve(1), 104_857_600);
        assert_eq!(quantity("0.5").resolve(1), 1);
    }

    #[test]
    fn psi_thresholds_take_keys_without_prefix_and_values_in_range() {
        let ok = parse_psi_thresholds(&[
            ("memory.full.avg10".to_string(), 10.0),
            ("cpu.some.avg60".to_string(), 100.0),
        ]);
        let ok = ok.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].signal.name(), "psi.memory.full.avg10");
        assert_eq!(ok[0].above_percent, 10.0);
        assert_eq!(ok[1].signal.name(), "psi.cpu.some.avg60");
        for (key, value, needle) in [
            ("memory.full.avg10", 0.0, "greater than 0 and at most 100"),
            ("memory.full.avg10", 100.5, "greater than 0 and at most 100"),
            (
                "memory.full.avg10",
                f64::NAN,
                "greater than 0 and at most 100",
            ),
            ("memory.full.avg5", 1.0, "unsupported PSI signal"),
            ("psi.memory.full.avg10", 1.0, "without the psi. prefix"),
        ] {
            let errors = parse_psi_thresholds(&[(key.to_string(), value)])
                .err()
                .unwrap_or_default();
            assert_eq!(errors.len(), 1, "{key} {value}");
            assert!(errors[0].message.contains(needle), "{}", errors[0].message);
        }
    }

    #[test]
    fn durations_accept_go_and_humantime_syntax() {
        let cases: &[(&str, Duration)] = &[
            ("10s", Duration::from_secs(10)),
            ("1m30s", Duration::from_secs(90)),
            ("90s", Duration::from_secs(90)),
            ("1h2m3.5s", Duration::from_millis(3_723_500)),
            ("300ms", Duration::from_millis(300)),
            ("1.5h", Duration::from_secs(5400)),
            (".5s", Duration::from_millis(500)),
            ("+5s", Duration::from_secs(5)),
            ("5us", Duration::from_micros(5)),
            ("5µs", Duration::from_micros(5)),
            ("1m 30s", Duration::from_secs(90)),
            ("0", Duration::ZERO),
            ("-0s", Duration::ZERO),
            ("5m0s", Duration::from_secs(300)),
        ];
        for (raw, expected) in cases {
            assert_eq!(parse_duration(raw), Ok(*expected), "{raw}");
        }
        for raw in ["", "ten", "10", "1m30", "s", "--1s", "+-1s"] {
            assert_eq!(
                parse_duration(raw),
                Err(DurationError::Invalid(raw.to_string())),
                "{raw}"
            );
        }
        assert_eq!(
            parse_duration("-1s"),
            Err(DurationError::Negative("-1s".to_string()))
        );
    }

    #[test]
    fn durations_format_compactly_and_read_back() {
        let cases: &[(Duration, &str)] = &[
            (Duration::ZERO, "0s"),
            (Duration::from_secs(10), "10s"),
            (Duration::from_secs(300), "5m"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h"),
            (Duration::from_secs(90_000), "25h"),
            (Duration::from_millis(1500), "1s500ms"),
            (Duration::from_nanos(1_001), "1us1ns"),
        ];
        for (d, text) in cases {
            assert_eq!(format_duration(*d), *text);
            assert_eq!(parse_duration(text), Ok(*d), "{text}");
        }
    }

    #[test]
    fn percentage_display_is_short() {
        assert_eq!(ThresholdValue::Percentage(0.1).to_string(), "10%");
        assert_eq!(ThresholdValue::Percentage(0.075).to_string(), "7.5%");
        assert_eq!(ThresholdValue::Percentage(0.07).to_string(), "7%");
        assert_eq!(f32_as_shortest_f64(0.1), 0.1f64);
    }
}
