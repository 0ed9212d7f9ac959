//! `nodewarden explain --node NODE --pod POD`: what the taint and QoS rules say about one pod
//! on one node. A shell over the pure core: it reads two Kubernetes objects (YAML or JSON),
//! decodes and validates them as the API server would (docs/semantics.md §8), and reports the QoS
//! class (§11), the pod's cgroup paths (§12), who tolerates each taint (§2), the scheduler's
//! verdict (§3) and the taint-eviction controller's NoExecute outcome (§4).
//!
//! Malformed input never panics: wrong types are reported like a decode failure, invalid
//! values like the API server's `... is invalid: [...]`, every error at once, with field paths.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::core::api_validation::{
    self, FieldError, FieldErrorKind, RawTaint, RawToleration, format_aggregate, go_quote,
};
use crate::core::features::{FeatureGates, TAINT_TOLERATION_COMPARISON_OPERATORS};
use crate::core::qos::{self, ContainerResources, CpuMemory, QosClass};
use crate::core::quantity::Quantity;
use crate::core::taint::{self, NoExecuteOutcome, Taint, Toleration};

/// What `explain` found. Serializes to the documented JSON shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainReport {
    /// `status.qosClass` if set, else computed (§11).
    #[serde(serialize_with = "serialize_qos")]
    pub qos_class: QosClass,
    /// The pod's cgroup under both drivers (§12).
    pub cgroup: CgroupPaths,
    /// Every node taint in node order, with the first pod toleration that tolerates it.
    pub taints: Vec<TaintReport>,
    /// The scheduler filter: every NoSchedule/NoExecute taint tolerated (§3).
    pub schedulable: bool,
    /// PreferNoSchedule taints not tolerated by a PreferNoSchedule/empty-effect toleration (§3).
    pub untolerated_prefer_no_schedule: usize,
    /// The taint-eviction controller's decision (§4).
    #[serde(serialize_with = "serialize_outcome")]
    pub no_execute: NoExecuteOutcome,
    /// How each `Lt`/`Gt` toleration is read (KEP-5471, gate on); absent when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The pod cgroup path under each cgroup driver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CgroupPaths {
    /// `--cgroup-driver=systemd`.
    pub systemd: String,
    /// `--cgroup-driver=cgroupfs`.
    pub cgroupfs: String,
}

/// One node taint and who tolerates it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintReport {
    /// Canonical `key=value:Effect` form.
    pub taint: String,
    /// Index of the first pod toleration that tolerates it (the one the eviction controller
    /// uses, §4.1), or `None`.
    pub tolerated_by: Option<usize>,
}

fn serialize_qos<S: serde::Serializer>(q: &QosClass, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(q.as_str())
}

/// `{"outcome": "never" | "evictNow"}` or `{"outcome": "evictAfter", "seconds": N}`. The wire
/// shape lives here, not in the core type.
fn serialize_outcome<S: serde::Serializer>(o: &NoExecuteOutcome, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(tag = "outcome", rename_all = "camelCase")]
    enum Wire {
        Never,
        EvictNow,
        EvictAfter { seconds: i64 },
    }
    let wire = match *o {
        NoExecuteOutcome::Never => Wire::Never,
        NoExecuteOutcome::EvictNow => Wire::EvictNow,
        NoExecuteOutcome::EvictAfter { seconds } => Wire::EvictAfter { seconds },
    };
    wire.serialize(s)
}

/// Why one object was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Not parseable as YAML or JSON; the parser's message.
    Syntax(String),
    /// Parsed, but the document is not a mapping (names what it is).
    NotAnObject(&'static str),
    /// A field has the wrong type (or `kind` is wrong): the API server fails to decode it and
    /// never validates. All such errors are listed.
    Decode(Vec<FieldError>),
    /// Decoded but invalid (docs/semantics.md §8): every validation error.
    Invalid(Vec<FieldError>),
}

/// One rejected object: `Node "n1" is invalid: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectError {
    /// `Node` or `Pod`.
    pub kind: &'static str,
    /// `metadata.name`, or the caller's fallback when there is none.
    pub name: String,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, name) = (self.kind, go_quote(&self.name));
        match &self.problem {
            Problem::Syntax(msg) => write!(f, "{kind} {name} is not valid YAML or JSON: {msg}"),
            Problem::NotAnObject(found) => write!(
                f,
                "{kind} {name} cannot be handled as a {kind}: the document is {found}, not an object"
            ),
            Problem::Decode(errs) => write!(
                f,
                "{kind} {name} cannot be handled as a {kind}: {}",
                format_aggregate(errs)
            ),
            Problem::Invalid(errs) => {
                write!(f, "{kind} {name} is invalid: {}", format_aggregate(errs))?;
                // The API server's words stay as they are; why, and what nodewarden does, after.
                let comparison = errs.iter().any(|e| {
                    e.kind == FieldErrorKind::Unsupported
                        && e.path.ends_with(".operator")
                        && matches!(e.bad_value.as_deref(), Some("\"Lt\"") | Some("\"Gt\""))
                });
                if comparison {
                    write!(
                        f,
                        " (note: Lt and Gt need the {TAINT_TOLERATION_COMPARISON_OPERATORS} feature gate \
                         (KEP-5471, alpha since 1.35, off by default): an API server without it \
                         refuses this pod. If it was stored while the gate was on, the scheduler and \
                         the taint-eviction controller without the gate match such a toleration to no \
                         taint, and so does the fence (the unreachable taint's empty value is no \
                         integer, gate on or off). Set featureGates.{TAINT_TOLERATION_COMPARISON_OPERATORS} \
                         = true in the configuration and pass it with --config to explain as a \
                         cluster with the gate on.)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Why `explain` failed.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// A file could not be read.
    #[error("cannot read {kind} file {}: {source}", path.display())]
    Read {
        /// `Node` or `Pod`.
        kind: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// One or both objects were rejected; node first, one object per line (a syntax error
    /// also carries the parser's source snippet).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Rejected(Vec<ObjectError>),
}

/// Reads NODE and POD (YAML or JSON) and explains them. Error messages name each object by its
/// `metadata.name`, or by its file path when it has none.
pub fn explain_files(node: &Path, pod: &Path) -> Result<ExplainReport, ExplainError> {
    explain_files_gated(node, pod, &FeatureGates::default())
}

/// [`explain_files`] as a cluster with these feature gates (`featureGates`) decides.
pub fn explain_files_gated(
    node: &Path,
    pod: &Path,
    gates: &FeatureGates,
) -> Result<ExplainReport, ExplainError> {
    let read = |kind, path: &Path| {
        crate::bounded::read_to_string(path, crate::bounded::OBJECT).map_err(|source| {
            ExplainError::Read {
                kind,
                path: path.to_owned(),
                source,
            }
        })
    };
    let node_text = read("Node", node)?;
    let pod_text = read("Pod", pod)?;
    explain_str_gated(
        &node_text,
        &pod_text,
        &node.display().to_string(),
        &pod.display().to_string(),
        gates,
    )
}

/// Explains a node and a pod given as YAML or JSON text. `node_name_for_errors` and
/// `pod_name_for_errors` name the objects in error messages when they have no
/// `metadata.name`. Both objects are checked before failing, so every error is reported.
pub fn explain_str(
    node_text: &str,
    pod_text: &str,
    node_name_for_errors: &str,
    pod_name_for_errors: &str,
) -> Result<ExplainReport, ExplainError> {
    let gates = FeatureGates::default();
    explain_str_gated(
        node_text,
        pod_text,
        node_name_for_errors,
        pod_name_for_errors,
        &gates,
    )
}

/// [`explain_str`] as a cluster with these feature gates decides.
pub fn explain_str_gated(
    node_text: &str,
    pod_text: &str,
    node_name_for_errors: &str,
    pod_name_for_errors: &str,
    gates: &FeatureGates,
) -> Result<ExplainReport, ExplainError> {
    let node = decode_object(node_text, "Node", node_name_for_errors).and_then(node_from);
    let pod = decode_object(pod_text, "Pod", pod_name_for_errors).and_then(|p| pod_from(p, gates));
    match (node, pod) {
        (Ok(taints), Ok(pod)) => Ok(report(&taints, &pod)),
        (node, pod) => Err(ExplainError::Rejected(
            [node.err(), pod.err()].into_iter().flatten().collect(),
        )),
    }
}

fn report(taints: &[Taint], pod: &PodFacts) -> ExplainReport {
    let name = qos::pod_cgroup_name(&pod.uid, pod.qos_class);
    ExplainReport {
        qos_class: pod.qos_class,
        cgroup: CgroupPaths {
            systemd: qos::to_systemd(&name),
            cgroupfs: qos::to_cgroupfs(&name),
        },
        taints: taints
            .iter()
            .map(|t| TaintReport {
                taint: t.to_string(),
                tolerated_by: taint::first_tolerating(&pod.tolerations, t),
            })
            .collect(),
        schedulable: taint::schedulable(taints, &pod.tolerations),
        untolerated_prefer_no_schedule: taint::untolerated_prefer_no_schedule(
            taints,
            &pod.tolerations,
        ),
        no_execute: taint::no_execute_outcome(taints, &pod.tolerations),
        notes: comparison_notes(&pod.tolerations),
    }
}

/// What each `Lt`/`Gt` toleration compares (`compareNumericValues`): only canonical int64
/// values on both sides; anything else is matched to nothing.
fn comparison_notes(tolerations: &[Toleration]) -> Vec<String> {
    tolerations
        .iter()
        .enumerate()
        .filter(|(_, t)| t.operator.is_comparison())
        .map(|(i, t)| {
            let relation = if t.operator == taint::Operator::Lt {
                "less than"
            } else {
                "greater than"
            };
            match taint::comparison_value(&t.value) {
                Some(n) => format!(
                    "spec.tolerations[{i}] ({}): tolerates a taint whose value is a canonical \
                     64-bit integer {relation} {n}; a taint value that is not one (empty, as \
                     on node.kubernetes.io/unreachable, leading zeros, '+', past 64 bits) is \
                     not tolerated",
                    t.operator.as_str()
                ),
                None => format!(
                    "spec.tolerations[{i}] ({}): its value {} is not a canonical 64-bit \
                     integer, so it tolerates no taint",
                    t.operator.as_str(),
                    go_quote(&t.value)
                ),
            }
        })
        .collect()
}

/// A human summary of the report, a few lines.
pub fn render_text(report: &ExplainReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("QoS class:  {}\n", report.qos_class));
    out.push_str(&format!(
        "cgroup:     {} (cgroupfs)\n",
        report.cgroup.cgroupfs
    ));
    out.push_str(&format!(
        "            {} (systemd)\n",
        report.cgroup.systemd
    ));
    if report.taints.is_empty() {
        out.push_str("taints:     none\n");
    } else {
        out.push_str("taints:\n");
        for t in &report.taints {
            let who = match t.tolerated_by {
                Some(i) => format!("tolerated by spec.tolerations[{i}]"),
                None => "NOT tolerated".to_owned(),
            };
            out.push_str(&format!("  {}  {who}\n", t.taint));
        }
    }
    out.push_str(&format!(
        "schedulable: {}\n",
        if report.schedulable {
            "yes"
        } else {
            "no (a NoSchedule or NoExecute taint is not tolerated)"
        }
    ));
    out.push_str(&format!(
        "untolerated PreferNoSchedule taints: {}\n",
        report.untolerated_prefer_no_schedule
    ));
    let no_execute = match report.no_execute {
        NoExecuteOutcome::Never => "never evicted".to_owned(),
        NoExecuteOutcome::EvictNow => "evicted now".to_owned(),
        NoExecuteOutcome::EvictAfter { seconds } => format!("evicted after {seconds}s"),
    };
    out.push_str(&format!("NoExecute:  {no_execute}\n"));
    for note in &report.notes {
        out.push_str(&format!("note:       {note}\n"));
    }
    out
}

// ---- decoding ------------------------------------------------------------------------------

/// A parsed object that is at least a mapping of the right `kind`.
struct Decoded {
    kind: &'static str,
    name: String,
    root: Map<String, Value>,
}

fn decode_object(text: &str, kind: &'static str, fallback: &str) -> Result<Decoded, ObjectError> {
    let fail = |name: &str, problem| ObjectError {
        kind,
        name: name.to_owned(),
        problem,
    };
    // JSON is YAML, so one parser serves both.
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| fail(fallback, Problem::Syntax(e.to_string())))?;
    let root = match value {
        Value::Object(map) => map,
        other => return Err(fail(fallback, Problem::NotAnObject(type_name(&other)))),
    };
    let name = match root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
    {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => fallback.to_owned(),
    };
    let mut d = Decoder::default();
    if let Some(k) = d.string(&root, "kind", "kind")
        && k != kind
    {
        d.errors
            .push(FieldError::unsupported("kind".into(), &k, &[kind]));
    }
    if !d.errors.is_empty() {
        return Err(fail(&name, Problem::Decode(d.errors)));
    }
    Ok(Decoded { kind, name, root })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Extracts typed fields from a JSON value, collecting type errors instead of stopping, so all
/// of them are reported together. `null` counts as absent, as in Go's decoder.
#[derive(Default)]
struct Decoder {
    errors: Vec<FieldError>,
}

impl Decoder {
    fn type_error(&mut self, path: &str, v: &Value, expected: &str) {
        self.errors.push(FieldError::invalid(
            path.to_owned(),
            render_value(v),
            format!("must be {expected}"),
        ));
    }

    fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
        map.get(key).filter(|v| !v.is_null())
    }

    fn string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match Self::get(map, key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.type_error(path, other, "a string");
                None
            }
        }
    }

    /// A `metav1.Time`: RFC 3339, as the API server decodes it (it refuses the whole object
    /// otherwise).
    fn time(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        let s = self.string(map, key, path)?;
        if s.parse::<k8s_openapi::jiff::Timestamp>().is_err() {
            self.errors.push(FieldError::invalid(
                path.to_owned(),
                render_value(&Value::String(s)),
                "must be a time in RFC 3339 form, such as \"2024-01-02T03:04:05Z\"".to_string(),
            ));
            return None;
        }
        Some(s)
    }

    fn object<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<&'a Map<String, Value>> {
        match Self::get(map, key)? {
            Value::Object(m) => Some(m),
            other => {
                self.type_error(path, other, "an object");
                None
            }
        }
    }

    fn list<'a>(&mut self, map: &'a Map<String, Value>, key: &str, path: &str) -> &'a [Value] {
        match Self::get(map, key) {
            None => &[],
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.type_error(path, other, "a list");
                &[]
            }
        }
    }

    fn int64(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<i64> {
        let v = Self::get(map, key)?;
        match v.as_i64() {
            Some(n) => Some(n),
            None => {
                self.type_error(path, v, "an integer (int64)");
                None
            }
        }
    }

    fn item<'a>(&mut self, v: &'a Value, path: &str) -> Option<&'a Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            // A null list element decodes to the zero value upstream; treat it as empty.
            Value::Null => None,
            other => {
                self.type_error(path, other, "an object");
                None
            }
        }
    }
}

/// A bad value for a type error: strings quoted like Go, scalars as-is, containers as compact
/// JSON, shortened so one huge value cannot flood the message.
fn render_value(v: &Value) -> String {
    let s = match v {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        let short: String = s.chars().take(77).collect();
        format!("{short}...")
    } else {
        s
    }
}

fn reject(d: &Decoded, problem: Problem) -> ObjectError {
    ObjectError {
        kind: d.kind,
        name: d.name.clone(),
        problem,
    }
}

/// The Node's `spec.taints`, decoded then validated (§8.1).
fn node_from(node: Decoded) -> Result<Vec<Taint>, ObjectError> {
    let mut d = Decoder::default();
    let mut raw = Vec::new();
    if let Some(spec) = d.object(&node.root, "spec", "spec") {
        for (i, item) in d.list(spec, "taints", "spec.taints").iter().enumerate() {
            let path = format!("spec.taints[{i}]");
            let Some(m) = d.item(item, &path) else {
                raw.push(RawTaint::default());
                continue;
            };
            raw.push(RawTaint {
                key: d.string(m, "key", &format!("{path}.key")),
                value: d.string(m, "value", &format!("{path}.value")),
                effect: d.string(m, "effect", &format!("{path}.effect")),
                time_added: d.time(m, "timeAdded", &format!("{path}.timeAdded")),
            });
        }
    }
    if !d.errors.is_empty() {
        return Err(reject(&node, Problem::Decode(d.errors)));
    }
    api_validation::validate_taints(&raw, "spec.taints")
        .map_err(|e| reject(&node, Problem::Invalid(e)))
}

/// What explain needs from the Pod.
struct PodFacts {
    uid: String,
    tolerations: Vec<Toleration>,
    qos_class: QosClass,
}

/// One container's cpu/memory, as raw text with its field path, before checking.
#[derive(Default)]
struct RawResources {
    /// (field path, quantity text) for requests.cpu, requests.memory, limits.cpu, limits.memory.
    entries: [Option<(String, String)>; 4],
}

const RESOURCE_SLOTS: [(&str, &str); 4] = [
    ("requests", "cpu"),
    ("requests", "memory"),
    ("limits", "cpu"),
    ("limits", "memory"),
];

fn pod_from(pod: Decoded, gates: &FeatureGates) -> Result<PodFacts, ObjectError> {
    let mut d = Decoder::default();
    let root = &pod.root;

    let uid = d
        .object(root, "metadata", "metadata")
        .and_then(|m| d.string(m, "uid", "metadata.uid"));

    let mut raw_tolerations = Vec::new();
    let mut containers = Vec::new();
    let mut pod_level = None;
    if let Some(spec) = d.object(root, "spec", "spec") {
        for (i, item) in d
            .list(spec, "tolerations", "spec.tolerations")
            .iter()
            .enumerate()
        {
            let path = format!("spec.tolerations[{i}]");
            let Some(m) = d.item(item, &path) else {
                raw_tolerations.push(RawToleration::default());
                continue;
            };
            raw_tolerations.push(RawToleration {
                key: d.string(m, "key", &format!("{path}.key")),
                operator: d.string(m, "operator", &format!("{path}.operator")),
                value: d.string(m, "value", &format!("{path}.value")),
                effect: d.string(m, "effect", &format!("{path}.effect")),
                toleration_seconds: d.int64(
                    m,
                    "tolerationSeconds",
                    &format!("{path}.tolerationSeconds"),
                ),
            });
        }
        // §11 step 3: init containers count too; ephemeral containers do not.
        for list in ["initContainers", "containers"] {
            let list_path = format!("spec.{list}");
            for (i, item) in d.list(spec, list, &list_path).iter().enumerate() {
                let path = format!("{list_path}[{i}]");
                let Some(c) = d.item(item, &path) else {
                    continue;
                };
                let res_path = format!("{path}.resources");
                let resources = d.object(c, "resources", &res_path);
                containers.push(raw_resources(&mut d, resources, &res_path));
            }
        }
        // §11 step 2: pod-level resources, when set, decide alone.
        if let Some(res) = d.object(spec, "resources", "spec.resources") {
            pod_level = Some(raw_resources(&mut d, Some(res), "spec.resources"));
        }
    }
    let status_qos = d
        .object(root, "status", "status")
        .and_then(|s| d.string(s, "qosClass", "status.qosClass"));

    // Quantities are decoded, not validated, upstream: a malformed one fails decoding.
    let parsed_containers: Vec<Option<ContainerResources>> = containers
        .iter()
        .map(|r| parse_resources(&mut d, r))
        .collect();
    let parsed_pod_level = pod_level.as_ref().map(|r| parse_resources(&mut d, r));

    if !d.errors.is_empty() {
        return Err(reject(&pod, Problem::Decode(d.errors)));
    }

    // ---- validation: collect everything, then fail once ----
    let mut errors = Vec::new();
    let tolerations = api_validation::validate_tolerations_gated(
        &raw_tolerations,
        "spec.tolerations",
        gates.taint_toleration_comparison_operators,
    )
    .unwrap_or_else(|e| {
        errors.extend(e);
        Vec::new()
    });
    for (raw, parsed) in containers.iter().zip(&parsed_containers) {
        check_resources(raw, parsed.as_ref(), &mut errors);
    }
    if let (Some(raw), Some(parsed)) = (&pod_level, &parsed_pod_level) {
        check_resources(raw, parsed.as_ref(), &mut errors);
    }
    let uid = match uid {
        None => {
            errors.push(FieldError {
                message: "needed to name the pod's cgroup".into(),
                ..FieldError::required("metadata.uid".into())
            });
            String::new()
        }
        Some(u) if u.is_empty() || !u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            // Real UIDs are UUIDs. Anything else (`/`, `_`, empty) would break the cgroup
            // path or the reversible systemd escaping (§12.3).
            errors.push(FieldError::invalid(
                "metadata.uid".into(),
                go_quote(&u),
                "must be non-empty and consist of alphanumeric characters and '-' (a UUID)",
            ));
            u
        }
        Some(u) => u,
    };
    let status_class = match status_qos.as_deref() {
        None | Some("") => None,
        Some(s) => {
            let parsed = QosClass::parse(s);
            if parsed.is_none() {
                errors.push(FieldError::unsupported(
                    "status.qosClass".into(),
                    s,
                    &["Guaranteed", "Burstable", "BestEffort"],
                ));
            }
            parsed
        }
    };
    if !errors.is_empty() {
        return Err(reject(&pod, Problem::Invalid(errors)));
    }

    // §11: status.qosClass wins (the stored, post-defaulting answer); then pod-level
    // resources; then the per-container rule.
    let qos_class = match (status_class, parsed_pod_level.flatten()) {
        (Some(q), _) => q,
        (None, Some(pod_level)) => qos::container_qos(&pod_level),
        (None, None) => {
            let all: Vec<ContainerResources> = parsed_containers.into_iter().flatten().collect();
            qos::compute_qos(&all)
        }
    };
    Ok(PodFacts {
        uid,
        tolerations,
        qos_class,
    })
}

fn raw_resources(
    d: &mut Decoder,
    resources: Option<&Map<String, Value>>,
    path: &str,
) -> RawResources {
    let mut raw = RawResources::default();
    let Some(resources) = resources else {
        return raw;
    };
    for (slot, (map_name, resource)) in raw.entries.iter_mut().zip(RESOURCE_SLOTS) {
        let map_path = format!("{path}.{map_name}");
        let Some(map) = d.object(resources, map_name, &map_path) else {
            continue;
        };
        // Upstream names map entries by key: `resources.requests[cpu]`.
        let field = format!("{map_path}[{resource}]");
        // Quantities decode from a JSON string or a bare number (`cpu: 1`).
        *slot = match Decoder::get(map, resource) {
            None => None,
            Some(Value::String(s)) => Some((field, s.clone())),
            Some(Value::Number(n)) => Some((field, n.to_string())),
            Some(other) => {
                d.type_error(&field, other, "a quantity (string or number)");
                None
            }
        };
    }
    raw
}

/// The API server's message for a malformed quantity (apimachinery `resource.ParseQuantity`).
const QUANTITY_FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Parses the four quantities to nano-units; a malformed one is a decode error.
fn parse_resources(d: &mut Decoder, raw: &RawResources) -> Option<ContainerResources> {
    let mut nanos = [0i128; 4];
    let mut ok = true;
    for (slot, entry) in nanos.iter_mut().zip(&raw.entries) {
        if let Some((path, text)) = entry {
            match text.parse::<Quantity>() {
                Ok(q) => *slot = q.as_nanos(),
                Err(_) => {
                    d.errors.push(FieldError::invalid(
                        path.clone(),
                        go_quote(text),
                        QUANTITY_FORMAT_ERROR,
                    ));
                    ok = false;
                }
            }
        }
    }
    let [req_cpu, req_mem, lim_cpu, lim_mem] = nanos;
    ok.then_some(ContainerResources {
        requests: CpuMemory {
            cpu: req_cpu,
            memory: req_mem,
        },
        limits: CpuMemory {
            cpu: lim_cpu,
            memory: lim_mem,
        },
    })
}

/// The API server's resource checks for cpu and memory: non-negative, request ≤ limit when a
/// limit is set. Only these two, because only they matter for QoS (§11).
fn check_resources(
    raw: &RawResources,
    parsed: Option<&ContainerResources>,
    errors: &mut Vec<FieldError>,
) {
    let Some(p) = parsed else { return };
    let values = [
        p.requests.cpu,
        p.requests.memory,
        p.limits.cpu,
        p.limits.memory,
    ];
    for (entry, value) in raw.entries.iter().zip(values) {
        if let Some((path, text)) = entry
            && value < 0
        {
            errors.push(FieldError::invalid(
                path.clone(),
                go_quote(text),
                "must be greater than or equal to 0",
            ));
        }
    }
    // entries: [req cpu, req mem, lim cpu, lim mem]
    for (req, lim, name) in [(0, 2, "cpu"), (1, 3, "memory")] {
        if let (Some(Some((req_path, req_text))), Some(Some((_, lim_text)))) =
            (raw.entries.get(req), raw.entries.get(lim))
            && values.get(req) > values.get(lim)
        {
            errors.push(FieldError::invalid(
                req_path.clone(),
                go_quote(req_text),
                format!("must be less than or equal to {name} limit of {lim_text}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_file_that_never_ends_is_a_read_error_naming_the_file_and_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let endless = dir.path().join("node.yaml");
        std::os::unix::fs::symlink("/dev/zero", &endless).expect("symlink");
        let err = explain_files(&endless, &endless).expect_err("endless");
        assert!(
            matches!(&err, ExplainError::Read { kind: "Node", source, .. } if source.kind() == std::io::ErrorKind::FileTooLarge),
            "{err:?}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains(&endless.display().to_string()) && shown.contains("16777216 bytes"),
            "{shown}"
        );
    }
}
