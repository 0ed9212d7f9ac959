//! API-server validation of taints and tolerations (docs/semantics.md §8), with Kubernetes-style
//! field paths and messages. Pure.
//!
//! Input is the raw, string-typed shape of the API objects ([`RawTaint`], [`RawToleration`]);
//! output is either the typed [`Taint`]s / [`Toleration`]s or EVERY error found, like the API
//! server's aggregate (`Node "n1" is invalid: [a, b]`). Messages and field paths mirror
//! `pkg/apis/core/validation/validation.go` and `apimachinery/pkg/util/validation`, including
//! two upstream quirks kept on purpose so our text matches what `kubectl` users see:
//! a toleration's bad value is reported under `.operator`, and "value must be empty" carries
//! the whole toleration as its bad value.

use std::collections::HashSet;
use std::fmt;

use crate::core::names::{label_value_errors, qualified_name_errors};
use crate::core::taint::{Effect, Operator, Taint, Toleration};

/// What kind of problem a [`FieldError`] reports (apimachinery `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is missing or empty.
    Required,
    /// The value is malformed.
    Invalid,
    /// The value is not one of an enumerated set.
    Unsupported,
    /// The value repeats one that must be unique.
    Duplicate,
}

impl FieldErrorKind {
    /// The API server's wording (`field.ErrorType.String()`).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Unsupported => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
        }
    }
}

/// One validation error at one field path, displayed like the API server's `field.Error`:
/// `path: Kind[: badValue][: message]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// E.g. `spec.taints[1].effect`.
    pub path: String,
    /// Which kind of error.
    pub kind: FieldErrorKind,
    /// The offending value, already rendered the way the API server prints it (Go `%q` for
    /// strings, `%#v`-like for structs). `None` for `Required`, which prints no value.
    pub bad_value: Option<String>,
    /// The detail; may be empty.
    pub message: String,
}

impl FieldError {
    /// `field.Required(path, "")`.
    pub fn required(path: String) -> FieldError {
        FieldError {
            path,
            kind: FieldErrorKind::Required,
            bad_value: None,
            message: String::new(),
        }
    }

    /// `field.Invalid(path, value, detail)`; `bad_value` is already rendered (see [`go_quote`]).
    pub fn invalid(path: String, bad_value: String, message: impl Into<String>) -> FieldError {
        FieldError {
            path,
            kind: FieldErrorKind::Invalid,
            bad_value: Some(bad_value),
            message: message.into(),
        }
    }

    /// `field.NotSupported(path, value, supported)`: lists the supported values in the order given.
    pub fn unsupported(path: String, bad: &str, supported: &[&str]) -> FieldError {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        FieldError {
            path,
            kind: FieldErrorKind::Unsupported,
            bad_value: Some(go_quote(bad)),
            message: format!("supported values: {}", quoted.join(", ")),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind.as_str())?;
        if let Some(bad) = &self.bad_value {
            write!(f, ": {bad}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for FieldError {}

/// The API server's aggregate of several errors (`utilerrors.NewAggregate(...).Error()`): one
/// error prints alone; several print as `[a, b]`, with repeated messages shown once.
pub fn format_aggregate(errors: &[FieldError]) -> String {
    let mut seen = HashSet::new();
    let messages: Vec<String> = errors
        .iter()
        .map(ToString::to_string)
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A node taint as it appears in the API object, before validation. Absent fields are `None`
/// and behave like the empty string, as in Go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawTaint {
    /// `key`.
    pub key: Option<String>,
    /// `value`.
    pub value: Option<String>,
    /// `effect`.
    pub effect: Option<String>,
    /// `timeAdded`, kept verbatim.
    pub time_added: Option<String>,
}

/// A pod toleration as it appears in the API object, before validation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawToleration {
    /// `key`.
    pub key: Option<String>,
    /// `operator`.
    pub operator: Option<String>,
    /// `value`.
    pub value: Option<String>,
    /// `effect`.
    pub effect: Option<String>,
    /// `tolerationSeconds`; any int64 is accepted (§8.2: no range check).
    pub toleration_seconds: Option<i64>,
}

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const OPERATORS: [&str; 2] = ["Equal", "Exists"];

/// Validates node taints (docs/semantics.md §8.1) under `path` (e.g. `spec.taints`).
///
/// Key: a qualified name. Value: a label value. Effect: required, one of three. (key, effect)
/// pairs must be unique. Every error is reported, in field order.
pub fn validate_taints(raw: &[RawTaint], path: &str) -> Result<Vec<Taint>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut taints = Vec::with_capacity(raw.len());
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (i, t) in raw.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect_str = t.effect.as_deref().unwrap_or("");
        let before = errors.len();

        for msg in qualified_name_errors(key) {
            errors.push(FieldError::invalid(
                format!("{idx}.key"),
                go_quote(key),
                msg,
            ));
        }
        // Upstream joins the label-value messages with ";" into one error.
        let value_errs = label_value_errors(value);
        if !value_errs.is_empty() {
            errors.push(FieldError::invalid(
                format!("{idx}.value"),
                go_quote(value),
                value_errs.join(";"),
            ));
        }
        let effect = validate_effect(effect_str, false, format!("{idx}.effect"), &mut errors);

        // Uniqueness is by the raw (key, effect) strings, checked even when they are invalid,
        // and the duplicate is not remembered again (upstream `continue`s).
        if !seen.insert((key, effect_str)) {
            let mut dup = FieldError::invalid(idx, go_taint(t), "");
            dup.kind = FieldErrorKind::Duplicate;
            dup.message = "taints must be unique by key and effect pair".into();
            errors.push(dup);
            continue;
        }
        if let (Some(effect), true) = (effect, errors.len() == before) {
            taints.push(Taint {
                key: key.to_owned(),
                value: value.to_owned(),
                effect,
                time_added: t.time_added.clone(),
            });
        }
    }
    if errors.is_empty() {
        Ok(taints)
    } else {
        Err(errors)
    }
}

/// Validates pod tolerations (docs/semantics.md §8.2) under `path` (e.g. `spec.tolerations`).
///
/// Duplicates are accepted, as upstream. `Lt`/`Gt` are rejected as unsupported: the
/// comparison-operator gate is alpha and off by default (§8.4); see
/// [`validate_tolerations_gated`] for a server with the gate on.
pub fn validate_tolerations(
    raw: &[RawToleration],
    path: &str,
) -> Result<Vec<Toleration>, Vec<FieldError>> {
    validate_tolerations_gated(raw, path, false)
}

/// [`validate_tolerations`] on an API server whose `TaintTolerationComparisonOperators` gate is
/// `comparison_operators` (KEP-5471; `pkg/api/pod/util.go` `allowTaintTolerationComparisonOperators`
/// sets the validation option from the gate, or from an old pod spec that already uses them).
///
/// With the gate on, `Lt`/`Gt` are accepted with any value: a value that is not a canonical
/// int64 is then simply never matched (`compareNumericValues`). The KEP says the server also
/// rejects such values; the merged `ValidateTolerations` branch was not read (an open question in
/// docs/semantics.md §2), so that check is not made here and `explain` says how the matcher treats the value
/// instead.
pub fn validate_tolerations_gated(
    raw: &[RawToleration],
    path: &str,
    comparison_operators: bool,
) -> Result<Vec<Toleration>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut tolerations = Vec::with_capacity(raw.len());
    for (i, t) in raw.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        let operator_str = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect_str = t.effect.as_deref().unwrap_or("");
        let before = errors.len();

        if !key.is_empty() {
            for msg in qualified_name_errors(key) {
                errors.push(FieldError::invalid(
                    format!("{idx}.key"),
                    go_quote(key),
                    msg,
                ));
            }
        }
        // An empty key only makes sense as the "match everything" wildcard.
        if key.is_empty() && operator_str != "Exists" {
            errors.push(FieldError::invalid(
                format!("{idx}.operator"),
                go_quote(operator_str),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect_str != "NoExecute" {
            errors.push(FieldError::invalid(
                format!("{idx}.effect"),
                go_quote(effect_str),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let operator = match operator_str {
            "" | "Equal" => {
                let value_errs = label_value_errors(value);
                if !value_errs.is_empty() {
                    // Upstream reports the value under `.operator`; we keep its path.
                    errors.push(FieldError::invalid(
                        format!("{idx}.operator"),
                        go_quote(value),
                        value_errs.join(";"),
                    ));
                }
                Some(Operator::Equal)
            }
            "Exists" => {
                if !value.is_empty() {
                    // Upstream's bad value here is the whole toleration, printed with `%#v`.
                    errors.push(FieldError::invalid(
                        format!("{idx}.operator"),
                        go_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
                Some(Operator::Exists)
            }
            "Lt" if comparison_operators => Some(Operator::Lt),
            "Gt" if comparison_operators => Some(Operator::Gt),
            other => {
                errors.push(FieldError::unsupported(
                    format!("{idx}.operator"),
                    other,
                    &OPERATORS,
                ));
                None
            }
        };
        // An empty toleration effect means "every effect".
        let effect = if effect_str.is_empty() {
            None
        } else {
            validate_effect(effect_str, true, format!("{idx}.effect"), &mut errors)
        };

        if let (Some(operator), true) = (operator, errors.len() == before) {
            tolerations.push(Toleration {
                key: key.to_owned(),
                operator,
                value: value.to_owned(),
                effect,
                toleration_seconds: t.toleration_seconds,
            });
        }
    }
    if errors.is_empty() {
        Ok(tolerations)
    } else {
        Err(errors)
    }
}

/// `validateTaintEffect`: empty is `Required` unless allowed; unknown is `Unsupported`, listing
/// the three effects in upstream's declaration order.
fn validate_effect(
    effect: &str,
    allow_empty: bool,
    path: String,
    errors: &mut Vec<FieldError>,
) -> Option<Effect> {
    if effect.is_empty() && !allow_empty {
        errors.push(FieldError::required(path));
        return None;
    }
    let parsed = Effect::parse(effect);
    if parsed.is_none() {
        errors.push(FieldError::unsupported(path, effect, &EFFECTS));
    }
    parsed
}

/// Go's `%q` / `strconv.Quote`, close enough for the printable and control characters that
/// appear in API strings.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The duplicate taint as upstream prints it (`%#v` of `core.Taint`). Upstream prints a set
/// `timeAdded` as a pointer address; we print the timestamp instead.
fn go_taint(t: &RawTaint) -> String {
    let time = match &t.time_added {
        None => "(*v1.Time)(nil)".to_owned(),
        Some(s) => go_quote(s),
    };
    format!(
        "core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:{}}}",
        go_quote(t.key.as_deref().unwrap_or("")),
        go_quote(t.value.as_deref().unwrap_or("")),
        go_quote(t.effect.as_deref().unwrap_or("")),
        time
    )
}

/// The toleration as upstream prints it (`%#v` of `core.Toleration`). Upstream prints a set
/// `tolerationSeconds` as a pointer address; we print `&N`.
fn go_toleration(t: &RawToleration) -> String {
    let seconds = match t.toleration_seconds {
        None => "(*int64)(nil)".to_owned(),
        Some(s) => format!("&{s}"),
    };
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{}}}",
        go_quote(t.key.as_deref().unwrap_or("")),
        go_quote(t.operator.as_deref().unwrap_or("")),
        go_quote(t.value.as_deref().unwrap_or("")),
        go_quote(t.effect.as_deref().unwrap_or("")),
        seconds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's exact qualified-name regex message (apimachinery `IsQualifiedName`).
    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    /// Upstream's exact label-value regex message (`IsValidLabelValue`).
    const LABEL_VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn raw_taint(key: &str, value: &str, effect: &str) -> RawTaint {
        RawTaint {
            key: Some(key.into()),
            value: Some(value.into()),
            effect: Some(effect.into()),
            time_added: None,
        }
    }

    fn raw_tol(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> RawToleration {
        RawToleration {
            key: Some(key.into()),
            operator: Some(op.into()),
            value: Some(value.into()),
            effect: Some(effect.into()),
            toleration_seconds: secs,
        }
    }

    fn taint_errors(raw: &[RawTaint]) -> Vec<String> {
        match validate_taints(raw, "spec.taints") {
            Ok(_) => vec![],
            Err(errs) => errs.iter().map(ToString::to_string).collect(),
        }
    }

    fn toleration_errors(raw: &[RawToleration]) -> Vec<String> {
        match validate_tolerations(raw, "spec.tolerations") {
            Ok(_) => vec![],
            Err(errs) => errs.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn valid_taints_convert_to_typed_taints() {
        let raw = vec![
            raw_taint("node.kubernetes.io/unreachable", "", "NoExecute"),
            RawTaint {
                time_added: Some("2024-01-02T03:04:05Z".into()),
                ..raw_taint("dedicated", "gpu", "NoSchedule")
            },
            // Same key, different effect: distinct taints (§2.3).
            raw_taint("dedicated", "gpu", "PreferNoSchedule"),
        ];
        let taints = validate_taints(&raw, "spec.taints").expect("valid");
        assert_eq!(taints.len(), 3);
        assert_eq!(taints[0].effect, Effect::NoExecute);
        assert_eq!(
            taints[1].time_added.as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        assert_eq!(taints[2].to_string(), "dedicated=gpu:PreferNoSchedule");
    }

    #[test]
    fn taint_effect_must_be_one_of_three_listed_in_upstream_order() {
        assert_eq!(
            taint_errors(&[
                raw_taint("a", "", "NoSchedule"),
                raw_taint("b", "", "NoRun")
            ]),
            vec![
                "spec.taints[1].effect: Unsupported value: \"NoRun\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
            ]
        );
    }

    #[test]
    fn taint_effect_is_case_sensitive() {
        assert_eq!(taint_errors(&[raw_taint("a", "", "noexecute")]).len(), 1);
    }

    #[test]
    fn taint_effect_is_required_on_nodes() {
        let missing = RawTaint {
            key: Some("a".into()),
            ..RawTaint::default()
        };
        assert_eq!(
            taint_errors(&[missing]),
            vec!["spec.taints[0].effect: Required value"]
        );
        assert_eq!(
            taint_errors(&[raw_taint("a", "", "")]),
            vec!["spec.taints[0].effect: Required value"]
        );
    }

    #[test]
    fn taint_key_is_required_and_reports_both_upstream_messages() {
        assert_eq!(
            taint_errors(&[raw_taint("", "", "NoSchedule")]),
            vec![
                "spec.taints[0].key: Invalid value: \"\": name part must be non-empty".to_owned(),
                format!("spec.taints[0].key: Invalid value: \"\": {NAME_PART_MSG}"),
            ]
        );
    }

    #[test]
    fn taint_key_must_be_a_qualified_name() {
        assert_eq!(
            taint_errors(&[raw_taint("-bad", "", "NoSchedule")]),
            vec![format!(
                "spec.taints[0].key: Invalid value: \"-bad\": {NAME_PART_MSG}"
            )]
        );
        // A name part of 64 characters is too long; the charset is fine.
        let long = "a".repeat(64);
        assert_eq!(
            taint_errors(&[raw_taint(&long, "", "NoSchedule")]),
            vec![format!(
                "spec.taints[0].key: Invalid value: \"{long}\": name part must be no more than 63 characters"
            )]
        );
        // 63 is fine, and so is a prefix.
        assert!(taint_errors(&[raw_taint(&"a".repeat(63), "", "NoSchedule")]).is_empty());
        assert!(taint_errors(&[raw_taint("example.com/My_Name.1", "", "NoSchedule")]).is_empty());
    }

    #[test]
    fn taint_key_prefix_must_be_a_lowercase_dns_subdomain() {
        let errs = taint_errors(&[raw_taint("Example.com/a", "", "NoSchedule")]);
        assert_eq!(
            errs,
            vec![
                "spec.taints[0].key: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            taint_errors(&[raw_taint("/a", "", "NoSchedule")]),
            vec!["spec.taints[0].key: Invalid value: \"/a\": prefix part must be non-empty"]
        );
        let long_prefix = format!("{}/a", "a".repeat(254));
        assert_eq!(
            taint_errors(&[raw_taint(&long_prefix, "", "NoSchedule")]),
            vec![format!(
                "spec.taints[0].key: Invalid value: \"{long_prefix}\": prefix part must be no more than 253 characters"
            )]
        );
    }

    #[test]
    fn taint_key_with_two_slashes_is_not_a_qualified_name() {
        assert_eq!(
            taint_errors(&[raw_taint("a/b/c", "", "NoSchedule")]),
            vec![
                "spec.taints[0].key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
    }

    #[test]
    fn taint_value_must_be_a_label_value() {
        assert_eq!(
            taint_errors(&[raw_taint("a", "has space", "NoSchedule")]),
            vec![format!(
                "spec.taints[0].value: Invalid value: \"has space\": {LABEL_VALUE_REGEX_MSG}"
            )]
        );
        // Too long AND a bad charset: one error, messages joined with ";".
        let long_bad = format!("{}!", "a".repeat(63));
        assert_eq!(
            taint_errors(&[raw_taint("a", &long_bad, "NoSchedule")]),
            vec![format!(
                "spec.taints[0].value: Invalid value: \"{long_bad}\": must be no more than 63 characters;{LABEL_VALUE_REGEX_MSG}"
            )]
        );
        assert!(taint_errors(&[raw_taint("a", &"v".repeat(63), "NoSchedule")]).is_empty());
    }

    #[test]
    fn taints_must_be_unique_by_key_and_effect_pair() {
        assert_eq!(
            taint_errors(&[
                raw_taint("a", "x", "NoSchedule"),
                raw_taint("a", "x", "NoExecute"),
                raw_taint("a", "y", "NoSchedule"),
            ]),
            vec![
                "spec.taints[2]: Duplicate value: core.Taint{Key:\"a\", Value:\"y\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"
            ]
        );
    }

    #[test]
    fn all_taint_errors_are_reported_at_once() {
        let errs = taint_errors(&[
            raw_taint("ok", "", "NoRun"),
            raw_taint("", "", "NoSchedule"),
            raw_taint("b", "bad value", ""),
        ]);
        let paths: Vec<&str> = errs.iter().filter_map(|e| e.split(':').next()).collect();
        assert_eq!(
            paths,
            vec![
                "spec.taints[0].effect",
                "spec.taints[1].key",
                "spec.taints[1].key",
                "spec.taints[2].value",
                "spec.taints[2].effect",
            ]
        );
    }

    #[test]
    fn valid_tolerations_convert_with_defaults() {
        let raw = vec![
            raw_tol("", "Exists", "", "", None),
            RawToleration {
                key: Some("k".into()),
                value: Some("v".into()),
                ..RawToleration::default()
            },
            raw_tol(
                "node.kubernetes.io/unreachable",
                "Exists",
                "",
                "NoExecute",
                Some(-5),
            ),
        ];
        let tols = validate_tolerations(&raw, "spec.tolerations").expect("valid");
        assert_eq!(tols[0], Toleration::exists("", None));
        // An empty operator means Equal.
        assert_eq!(tols[1], Toleration::equal("k", "v", None));
        // No range check on tolerationSeconds (§8.2).
        assert_eq!(tols[2].toleration_seconds, Some(-5));
    }

    #[test]
    fn duplicate_tolerations_are_accepted() {
        let t = raw_tol("k", "Exists", "", "NoSchedule", None);
        assert!(toleration_errors(&[t.clone(), t]).is_empty());
    }

    #[test]
    fn empty_toleration_key_requires_exists() {
        let msg = "operator must be Exists when `key` is empty, which means \"match all values and all keys\"";
        assert_eq!(
            toleration_errors(&[raw_tol("", "Equal", "", "", None)]),
            vec![format!(
                "spec.tolerations[0].operator: Invalid value: \"Equal\": {msg}"
            )]
        );
        assert_eq!(
            toleration_errors(&[RawToleration::default()]),
            vec![format!(
                "spec.tolerations[0].operator: Invalid value: \"\": {msg}"
            )]
        );
    }

    #[test]
    fn toleration_key_if_set_must_be_a_qualified_name() {
        assert_eq!(
            toleration_errors(&[raw_tol("bad key", "Exists", "", "", None)]),
            vec![format!(
                "spec.tolerations[0].key: Invalid value: \"bad key\": {NAME_PART_MSG}"
            )]
        );
    }

    #[test]
    fn toleration_seconds_require_effect_no_execute() {
        let msg = "effect must be 'NoExecute' when `tolerationSeconds` is set";
        assert_eq!(
            toleration_errors(&[raw_tol("k", "Exists", "", "NoSchedule", Some(20))]),
            vec![format!(
                "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": {msg}"
            )]
        );
        // An empty effect ("all effects") is rejected too.
        assert_eq!(
            toleration_errors(&[raw_tol("k", "Exists", "", "", Some(20))]),
            vec![format!(
                "spec.tolerations[0].effect: Invalid value: \"\": {msg}"
            )]
        );
    }

    #[test]
    fn toleration_operator_must_be_equal_or_exists() {
        for op in ["Lt", "Gt", "exists", "In"] {
            assert_eq!(
                toleration_errors(&[raw_tol("k", op, "1", "", None)]),
                vec![format!(
                    "spec.tolerations[0].operator: Unsupported value: \"{op}\": supported values: \"Equal\", \"Exists\""
                )],
                "{op}"
            );
        }
    }

    #[test]
    fn toleration_value_with_equal_must_be_a_label_value_reported_under_operator() {
        assert_eq!(
            toleration_errors(&[raw_tol("k", "Equal", "a b", "", None)]),
            vec![format!(
                "spec.tolerations[0].operator: Invalid value: \"a b\": {LABEL_VALUE_REGEX_MSG}"
            )]
        );
    }

    #[test]
    fn toleration_value_must_be_empty_with_exists() {
        assert_eq!(
            toleration_errors(&[raw_tol("k", "Exists", "v", "NoExecute", None)]),
            vec![
                "spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"NoExecute\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"
            ]
        );
    }

    #[test]
    fn toleration_effect_if_set_must_be_one_of_three() {
        assert_eq!(
            toleration_errors(&[raw_tol("k", "Exists", "", "NoRun", None)]),
            vec![
                "spec.tolerations[0].effect: Unsupported value: \"NoRun\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
            ]
        );
    }

    #[test]
    fn all_toleration_errors_are_reported_at_once() {
        let errs = toleration_errors(&[raw_tol("", "Equal", "x", "Bad", Some(1))]);
        assert_eq!(
            errs.iter()
                .filter_map(|e| e.split(": ").nth(1))
                .collect::<Vec<_>>(),
            vec!["Invalid value", "Invalid value", "Unsupported value"]
        );
        assert_eq!(errs.len(), 3);
    }

    #[test]
    fn aggregate_prints_one_error_alone_and_several_in_brackets_deduplicated() {
        let a = FieldError::required("a".into());
        let b = FieldError::required("b".into());
        assert_eq!(
            format_aggregate(std::slice::from_ref(&a)),
            "a: Required value"
        );
        assert_eq!(
            format_aggregate(&[a.clone(), b, a]),
            "[a: Required value, b: Required value]"
        );
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }
}
