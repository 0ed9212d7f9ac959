//! Reading the TOML file (docs/architecture.md §5): serde reads the raw shape (`raw.rs`), then one
//! pass checks every value and translates it into [`Config`], collecting every problem at once,
//! each with its line, column and dotted key.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::DeTable;

use crate::core::fence_plan::Mode;
use crate::core::names;
use crate::core::qos::{CgroupDriver, CgroupVersion};
use crate::core::quorum::Undecided;
use crate::core::signal::{Signal, SignalRef};
use crate::core::taint::Effect;
use crate::core::threshold::{
    EvictionInput, Site, ThresholdError, ThresholdMap, format_duration, parse_duration,
    parse_psi_thresholds, parse_thresholds,
};

use super::defaults::{StandardReasons, standard_reasons};
use super::raw::{
    Entries, RawCondition, RawConfig, RawFence, RawLogging, RawPeers, RawStaticPeer, Record,
    Shaped, Spans, Tables, Value, fields_of,
};
use super::{
    ConditionSpec, Config, ConfigError, ConfigErrors, ConfigWarning, Loaded, LogTarget, TaintSpec,
};

/// The words of each enumerated key, read here and printed by `json.rs`.
pub(super) const MODES: &[(&str, Mode)] = &[
    ("enforce", Mode::Enforce),
    ("dry-run", Mode::DryRun),
    ("off", Mode::Off),
];
pub(super) const CGROUP_DRIVERS: &[(&str, Option<CgroupDriver>)] = &[
    ("auto", None),
    ("systemd", Some(CgroupDriver::Systemd)),
    ("cgroupfs", Some(CgroupDriver::Cgroupfs)),
];
pub(super) const CGROUP_VERSIONS: &[(&str, Option<CgroupVersion>)] = &[
    ("auto", None),
    ("v1", Some(CgroupVersion::V1)),
    ("v2", Some(CgroupVersion::V2)),
];
pub(super) const LOG_TARGETS: &[(&str, LogTarget)] = &[
    ("auto", LogTarget::Auto),
    ("journald", LogTarget::Journald),
    ("stderr", LogTarget::Stderr),
];
const LOG_LEVELS: &[(&str, log::LevelFilter)] = &[
    ("error", log::LevelFilter::Error),
    ("warn", log::LevelFilter::Warn),
    ("info", log::LevelFilter::Info),
    ("debug", log::LevelFilter::Debug),
    ("trace", log::LevelFilter::Trace),
];
pub(super) const UNDECIDED: &[(&str, Undecided)] =
    &[("hold", Undecided::Hold), ("enforce", Undecided::Enforce)];

/// The word for `value` in `words` (every value has one).
pub(super) fn word_of<T: PartialEq>(words: &[(&'static str, T)], value: &T) -> &'static str {
    words
        .iter()
        .find(|(_, v)| v == value)
        .map_or("", |(w, _)| w)
}

/// The dotted key of a raw struct's field under `parent`: serde's name for it is the field's
/// name in camelCase (`rename_all`), so the key is spelt once, in the struct.
macro_rules! key {
    ($parent:expr, $field:ident) => {
        key_path($parent, &camel(stringify!($field)))
    };
}

/// Reads a raw struct's field with one of the `Walker`'s readers, under its key: the field is
/// named once. `read!(self, duration, "fence", raw.safety_margin)`.
macro_rules! read {
    ($w:ident, $read:ident, $parent:expr, $raw:ident . $field:ident $(, $extra:expr)* $(,)?) => {
        $w.$read(&key!($parent, $field), $raw.$field.as_ref() $(, $extra)*)
    };
}

/// `node_status_update_frequency` → `nodeStatusUpdateFrequency`; a trailing `_` (`type_`, a
/// keyword) is dropped.
fn camel(ident: &str) -> String {
    let mut out = String::with_capacity(ident.len());
    let mut upper = false;
    for c in ident.trim_end_matches('_').chars() {
        if c == '_' {
            upper = true;
        } else {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        }
    }
    out
}

/// `parent.key`, quoting the key unless it is a bare TOML key.
fn key_path(parent: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if bare {
        key.to_string()
    } else {
        format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// Replaces `target` when a value was read.
fn set<T>(target: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *target = v;
    }
}

/// `expected <what>, found "<text>"`: a string, but not a valid one.
fn found(expected: &str, s: &str) -> String {
    format!("expected {expected}, found \"{s}\"")
}

/// An empty string is an error of its own.
fn non_empty(expected: &str, s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err(format!("expected {expected}, found an empty string"));
    }
    Ok(s.to_string())
}

/// An API server's URL as a kubeconfig's `server` names one: `http` or `https`, a host, an
/// optional port, and nothing else (no user, path, query or fragment: the agent adds `/readyz`).
/// Returned without a trailing `/`.
fn server_url(expected: &str, s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("expected {expected}, found \"{s}\": {why}"));
    let Ok(uri) = s.parse::<http::Uri>() else {
        return bad("not a URL");
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return bad("the scheme must be https (or http)");
    }
    let Some(authority) = uri.authority() else {
        return bad("no host");
    };
    if authority.as_str().contains('@') {
        return bad("credentials in the URL are not read; the agent's own are sent");
    }
    if authority.host().is_empty() {
        return bad("no host");
    }
    if authority.as_str().ends_with(':') {
        return bad("an empty port");
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() || s.contains('#') {
        return bad("a path, query or fragment (the agent reads /readyz of the server itself)");
    }
    Ok(s.trim_end_matches('/').to_string())
}

/// Where each eviction-map entry sits (key, value), so threshold errors can be placed.
type EntrySpans = HashMap<(ThresholdMap, String), (Range<usize>, Range<usize>)>;

/// The pass's state: positions, and everything found so far.
struct Walker<'t> {
    text: &'t str,
    file: String,
    line_starts: Vec<usize>,
    errors: Vec<ConfigError>,
    warnings: Vec<ConfigWarning>,
    notes: Vec<ConfigWarning>,
}

impl<'t> Walker<'t> {
    fn new(text: &'t str, file: String) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect::<Vec<_>>();
        Walker {
            text,
            file,
            line_starts,
            errors: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .max(1);
        let start = self.line_starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        (line, column)
    }

    fn located(&self, span: Option<&Range<usize>>, key: &str, message: String) -> ConfigError {
        let (line, column) = span.map_or((0, 0), |s| self.position(s.start));
        let (file, key) = (self.file.clone(), key.to_string());
        ConfigError {
            file,
            line,
            column,
            key,
            message,
        }
    }

    fn error(&mut self, span: &Range<usize>, key: &str, message: impl Into<String>) {
        let e = self.located(Some(span), key, message.into());
        self.errors.push(e);
    }

    fn warn(&mut self, span: Option<&Range<usize>>, key: &str, message: impl Into<String>) {
        let e = self.located(span, key, message.into());
        self.warnings.push(ConfigWarning {
            file: e.file,
            line: e.line,
            column: e.column,
            key: e.key,
            message: e.message,
        });
    }

    /// Something about the built-in defaults, at no position (nobody wrote it).
    fn note(&mut self, key: &str, message: String) {
        let e = self.located(None, key, message);
        self.notes.push(ConfigWarning {
            file: e.file,
            line: e.line,
            column: e.column,
            key: e.key,
            message: e.message,
        });
    }

    /// A value of the wrong kind: `expected <what>, found <what it is>`. A number is shown as
    /// written (`0x10`, `1e3`; without '_' separators), from the text at its position.
    fn mismatch(&mut self, span: &Range<usize>, path: &str, expected: &str, found: &Value) {
        let literal = self.text.get(span.clone()).map(|l| l.replace('_', ""));
        let found = match (found, literal) {
            (Value::Integer(_), Some(literal)) => format!("integer {literal}"),
            (Value::Float(_), Some(literal)) => format!("float {literal}"),
            _ => found.to_string(),
        };
        self.error(span, path, format!("expected {expected}, found {found}"));
    }

    fn string<'v>(&mut self, path: &str, v: &'v Spanned<Value>, expected: &str) -> Option<&'v str> {
        let s = v.get_ref().as_str();
        if s.is_none() {
            self.mismatch(&v.span(), path, expected, v.get_ref());
        }
        s
    }

    /// A present string key turned into `T` by `parse`, whose `Err` is the whole message.
    fn text<T>(
        &mut self,
        path: &str,
        v: Option<&Spanned<Value>>,
        expected: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        let v = v?;
        let s = self.string(path, v, expected)?;
        parse(s).map_err(|e| self.error(&v.span(), path, e)).ok()
    }

    fn non_empty(
        &mut self,
        path: &str,
        v: Option<&Spanned<Value>>,
        expected: &str,
    ) -> Option<String> {
        self.text(path, v, expected, |s| non_empty(expected, s))
    }

    fn path(&mut self, path: &str, v: Option<&Spanned<Value>>) -> Option<PathBuf> {
        self.non_empty(path, v, "a path").map(PathBuf::from)
    }

    fn bool(&mut self, path: &str, v: Option<&Spanned<Value>>) -> Option<bool> {
        let v = v?;
        match v.get_ref() {
            Value::Boolean(b) => Some(*b),
            other => {
                self.mismatch(&v.span(), path, "a boolean (true or false)", other);
                None
            }
        }
    }

    fn duration(&mut self, path: &str, v: Option<&Spanned<Value>>) -> Option<Duration> {
        let expected = "a duration string such as \"10s\" or \"5m\"";
        self.text(path, v, expected, |s| {
            parse_duration(s).map_err(|e| e.to_string())
        })
    }

    fn address(
        &mut self,
        path: &str,
        v: Option<&Spanned<Value>>,
        expected: &str,
    ) -> Option<SocketAddr> {
        self.text(path, v, expected, |s| {
            s.parse().map_err(|_| found(expected, s))
        })
    }

    /// One of a fixed set of words, or an error saying which were expected.
    fn word<T: Copy>(
        &mut self,
        path: &str,
        v: Option<&Spanned<Value>>,
        words: &[(&str, T)],
    ) -> Option<T> {
        let quoted: Vec<String> = words.iter().map(|(w, _)| format!("\"{w}\"")).collect();
        let expected = format!("one of {}", quoted.join(", "));
        self.text(path, v, &expected, |s| {
            let word = words.iter().find(|(w, _)| *w == s);
            word.map(|(_, t)| *t).ok_or_else(|| found(&expected, s))
        })
    }

    /// A table or array as read, or an error saying what was found instead.
    fn shaped<'v, T>(
        &mut self,
        path: &str,
        v: &'v Spanned<Shaped<T>>,
        expected: &str,
    ) -> Option<&'v T> {
        match v.get_ref() {
            Shaped::Read(t) => Some(t),
            Shaped::Found(found) => {
                self.mismatch(&v.span(), path, expected, found);
                None
            }
        }
    }

    /// A table read into `T`; each unknown key is an error at the key, listing `T`'s fields.
    fn table<'v, T: DeserializeOwned>(
        &mut self,
        path: &str,
        v: &'v Spanned<Shaped<Record<T>>>,
        expected: &str,
    ) -> Option<&'v Record<T>> {
        let record = self.shaped(path, v, expected)?;
        self.unknown_keys(path, record);
        Some(record)
    }

    fn unknown_keys<T: DeserializeOwned>(&mut self, path: &str, record: &Record<T>) {
        let known = fields_of::<T>();
        for key in &record.unknown {
            let name = key.get_ref();
            let hint = known
                .iter()
                .find(|k| k.eq_ignore_ascii_case(name))
                .map(|k| format!("did you mean \"{k}\"? "))
                .unwrap_or_default();
            self.error(
                &key.span(),
                &key_path(path, name),
                format!("unknown key; {hint}expected one of: {}", known.join(", ")),
            );
        }
    }
}

/// Parses configuration text; `source` names the file in errors and in `Config::source`.
pub(crate) fn load_text(text: &str, source: Option<&Path>) -> Result<Loaded, ConfigErrors> {
    let file = source.map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let mut w = Walker::new(text, file);

    let (root, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        // The tree may be partial; checking it would add errors that are only echoes. For the
        // same reason only the first syntax error of each line is kept: the parser's recovery
        // tends to report the rest of a broken line again.
        for e in syntax_errors {
            let span = e.span().unwrap_or(0..0);
            let line = w.position(span.start).0;
            if w.errors.iter().any(|seen| seen.line == line) {
                continue;
            }
            w.error(&span, "", format!("invalid TOML: {}", e.message()));
        }
        return Err(ConfigErrors(w.errors));
    }

    // Every raw field accepts any value, so this fails only on a value toml itself cannot hand
    // over (a float too large for f64).
    match Shaped::<Record<RawConfig>>::deserialize(toml::de::Deserializer::from(root)) {
        Ok(Shaped::Read(raw)) => {
            let mut config = Config::defaults();
            config.source = source.map(PathBuf::from);
            let mut reading = Reading::default();
            w.unknown_keys("", &raw);
            w.root(&raw, &mut config, &mut reading);
            w.cross_checks(&mut config, &reading);
            if w.errors.is_empty() {
                w.coverage_warnings(&config, &reading);
                return Ok(Loaded {
                    config,
                    warnings: w.warnings,
                    notes: w.notes,
                });
            }
        }
        Ok(Shaped::Found(found)) => {
            w.error(&(0..0), "", format!("expected a table, found {found}"))
        }
        Err(e) => w.error(&e.span().unwrap_or(0..0), "", e.message()),
    }
    // File order, whichever check found them (stable: same-position errors keep their order).
    w.errors.sort_by_key(|e| (e.line, e.column));
    Err(ConfigErrors(w.errors))
}

/// What the checks across keys need from the pass over the keys.
#[derive(Default)]
struct Reading {
    eviction: EvictionInput,
    spans: EntrySpans,
    psi_entries: Vec<(String, f64)>,
    condition_spans: Vec<Range<usize>>,
    update_span: Option<Range<usize>>,
    report_span: Option<Range<usize>>,
    fence_span: Option<Range<usize>>,
}

impl Walker<'_> {
    fn root(&mut self, record: &Record<RawConfig>, config: &mut Config, r: &mut Reading) {
        let raw = &record.value;
        let c = config;
        let expected = "a node name";
        let node_name = read!(self, text, "", raw.node_name, expected, |s| {
            let s = non_empty(expected, s)?;
            if names::is_dns_subdomain(&s) {
                return Ok(s);
            }
            Err(format!(
                "expected a node name (a DNS subdomain: lowercase letters, digits, '-' and '.'), found \"{s}\""
            ))
        });
        set(&mut c.node_name, node_name.map(Some));
        let expected = "the path of a kubeconfig file";
        let kubeconfig = read!(self, non_empty, "", raw.kubeconfig, expected);
        set(
            &mut c.kubeconfig,
            kubeconfig.map(|k| Some(PathBuf::from(k))),
        );
        set(&mut c.standalone, read!(self, bool, "", raw.standalone));

        if let Some(d) = read!(self, duration, "", raw.node_status_update_frequency) {
            let span = raw.node_status_update_frequency.as_ref().map(Spanned::span);
            if d.is_zero() {
                let message = "expected a duration greater than 0, such as \"10s\", found \"0s\"";
                let path = key!("", node_status_update_frequency);
                self.error(&span.unwrap_or(0..0), &path, message);
            } else {
                c.node_status_update_frequency = d;
                r.update_span = span;
            }
        }
        if let Some(d) = read!(self, duration, "", raw.node_status_report_frequency) {
            c.node_status_report_frequency = d;
            r.report_span = raw.node_status_report_frequency.as_ref().map(Spanned::span);
        }
        if let Some(v) = &raw.node_lease_duration_seconds {
            let path = key!("", node_lease_duration_seconds);
            match v.get_ref() {
                Value::Integer(n) if *n > 0 && *n <= i128::from(u32::MAX) => {
                    c.node_lease_duration_seconds = *n as u32
                }
                // Beyond i64 is not a TOML integer: said as the wrong kind, below.
                Value::Integer(n) if i64::try_from(*n).is_ok() => self.error(
                    &v.span(),
                    &path,
                    format!("expected a whole number of seconds greater than 0, found {n}"),
                ),
                other => {
                    let expected = "a whole number of seconds such as 40";
                    self.mismatch(&v.span(), &path, expected, other)
                }
            }
        }
        let object_name = |s: &str| {
            let s = non_empty("an object name", s)?;
            if names::is_dns_subdomain(&s) {
                return Ok(s);
            }
            Err(format!(
                "expected a DNS subdomain (lowercase letters, digits, '-' and '.'), found \"{s}\""
            ))
        };
        let name = "an object name";
        let lease_name = read!(self, text, "", raw.lease_name, name, object_name);
        set(&mut c.lease_name, lease_name.map(Some));
        let namespace = read!(self, text, "", raw.lease_namespace, name, object_name);
        set(&mut c.lease_namespace, namespace);
        let only = read!(self, bool, "", raw.only_status_reporter);
        set(&mut c.only_status_reporter, only);

        self.eviction_maps(record, r);
        let period = read!(self, duration, "", raw.eviction_pressure_transition_period);
        set(&mut c.eviction_pressure_transition_period, period);
        if let Some(b) = read!(self, bool, "", raw.merge_default_eviction_settings) {
            c.merge_default_eviction_settings = b;
            r.eviction.merge_defaults = b;
        }
        if let Some(v) = &raw.psi_thresholds {
            let path = key!("", psi_thresholds);
            let expected = "a table of PSI signal names to percentages";
            for (k, v) in self.shaped(&path, v, expected).into_iter().flatten() {
                let signal = k.get_ref().clone();
                let n = match v.get_ref() {
                    Value::Float(x) => *x,
                    Value::Integer(i) => *i as f64,
                    other => {
                        let expected = "a percentage of stall time greater than 0 and at most 100, such as 10.0";
                        self.mismatch(&v.span(), &key_path(&path, &signal), expected, other);
                        continue;
                    }
                };
                let spans = (k.span(), v.span());
                r.spans
                    .insert((ThresholdMap::PsiThresholds, signal.clone()), spans);
                r.psi_entries.push((signal, n));
            }
        }
        if let Some(v) = &raw.feature_gates {
            self.feature_gates(&key!("", feature_gates), v, c);
        }
        set(
            &mut c.kube_reserved,
            read!(self, reserved, "", raw.kube_reserved),
        );
        set(
            &mut c.system_reserved,
            read!(self, reserved, "", raw.system_reserved),
        );
        // Renamed in the struct (`CPUs`), so spelt here as serde knows it.
        let (path, expected) = ("reservedSystemCPUs", "a CPU list such as \"0-1,8\"");
        let cpus = self.text(path, raw.reserved_system_cpus.as_ref(), expected, |s| {
            match crate::core::allocatable::count_cpu_list(s) {
                // The kubelet treats an empty list as unset.
                Ok(0) => Ok(None),
                Ok(count) => Ok(Some(super::ReservedCpus {
                    list: s.to_string(),
                    count,
                })),
                Err(problem) => Err(format!("expected {expected}: {problem}")),
            }
        });
        set(&mut c.reserved_system_cpus, cpus);
        set(&mut c.proc_path, read!(self, path, "", raw.proc_path));
        set(&mut c.cgroup_path, read!(self, path, "", raw.cgroup_path));
        set(&mut c.nodefs_path, read!(self, path, "", raw.nodefs_path));
        set(&mut c.imagefs_path, read!(self, path, "", raw.imagefs_path));
        set(
            &mut c.state_directory,
            read!(self, path, "", raw.state_directory),
        );
        let expected = "a socket address such as \"127.0.0.1:9842\" or \"[::1]:9842\"";
        let address = read!(self, address, "", raw.health_address, expected);
        set(&mut c.health_address, address);

        if let Some(v) = &raw.logging {
            let path = key!("", logging);
            if let Some(t) = self.table(&path, v, "a table with target and level") {
                self.logging(&path, &t.value, c);
            }
        }
        if let Some(v) = &raw.fence {
            let path = key!("", fence);
            r.fence_span = Some(v.span());
            if let Some(t) = self.table(&path, v, "a table of fence settings") {
                self.fence(&path, &t.value, c);
            }
        }
        if let Some(v) = &raw.peers {
            let path = key!("", peers);
            if let Some(t) = self.table(&path, v, "a table of peer settings") {
                self.peers(&path, &v.span(), &t.value, c);
            }
        }
        if let Some(v) = &raw.conditions {
            let conditions = self.conditions(&key!("", conditions), v);
            r.condition_spans = conditions.iter().map(|(_, s)| s.clone()).collect();
            c.conditions = conditions.into_iter().map(|(c, _)| c).collect();
        }
    }

    /// `evictionHard`, `evictionSoft`, `evictionSoftGracePeriod`, `evictionMinimumReclaim`: signal
    /// → string, parsed together by the core once all are read.
    fn eviction_maps(&mut self, record: &Record<RawConfig>, r: &mut Reading) {
        let raw = &record.value;
        let quantity = "a quantity such as \"100Mi\" or a percentage such as \"10%\"";
        let grace = "a duration string such as \"1m30s\"";
        let maps = [
            (ThresholdMap::EvictionHard, &raw.eviction_hard, quantity),
            (ThresholdMap::EvictionSoft, &raw.eviction_soft, quantity),
            (
                ThresholdMap::EvictionSoftGracePeriod,
                &raw.eviction_soft_grace_period,
                grace,
            ),
            (
                ThresholdMap::EvictionMinimumReclaim,
                &raw.eviction_minimum_reclaim,
                quantity,
            ),
        ];
        for (map, v, expected) in maps {
            let path = map.key();
            let table = v
                .as_ref()
                .and_then(|v| self.shaped(path, v, "a table of signal names to strings"));
            let Some(entries) = table else { continue };
            let target = match map {
                ThresholdMap::EvictionHard => &mut r.eviction.hard,
                ThresholdMap::EvictionSoft => &mut r.eviction.soft,
                ThresholdMap::EvictionSoftGracePeriod => &mut r.eviction.soft_grace_period,
                _ => &mut r.eviction.minimum_reclaim,
            };
            for (k, v) in entries {
                let signal = k.get_ref();
                if let Some(raw) = self.string(&key_path(path, signal), v, expected) {
                    target.push((signal.clone(), raw.to_string()));
                    r.spans.insert((map, signal.clone()), (k.span(), v.span()));
                }
            }
            if map == ThresholdMap::EvictionHard {
                // The kubelet fills its defaults only when evictionHard is absent (nil); an
                // explicit empty map is "no hard thresholds". docs/semantics.md §7.3 reads YAML
                // `{}` as unset because of `omitempty`, but that tag only drops an empty map when
                // one is encoded, and TOML has no such thing: an empty `[evictionHard]` was written
                // on purpose, so it is kept as written, and said so, because commenting out every
                // line leaves one behind.
                r.eviction.hard_set = true;
                if entries.is_empty() {
                    self.warn(
                        record.key_span(path).as_ref(),
                        path,
                        "an empty [evictionHard] table means no hard eviction thresholds, \
                         as an empty evictionHard does for the kubelet (its defaults apply \
                         only when evictionHard is absent); remove the table to get the \
                         defaults, or set mergeDefaultEvictionSettings = true",
                    );
                }
            }
        }
    }

    /// The rules between keys, and the thresholds parsed by the core.
    fn cross_checks(&mut self, config: &mut Config, r: &Reading) {
        // docs/architecture.md §5: our report frequency is never below the update frequency.
        if config.node_status_report_frequency < config.node_status_update_frequency {
            let (span, key) = match (&r.report_span, &r.update_span) {
                (Some(s), _) => (s.clone(), "nodeStatusReportFrequency"),
                (None, Some(s)) => (s.clone(), "nodeStatusUpdateFrequency"),
                (None, None) => (0..0, "nodeStatusReportFrequency"),
            };
            self.error(
                &span,
                key,
                format!(
                    "nodeStatusReportFrequency ({}) must be at least nodeStatusUpdateFrequency ({})",
                    format_duration(config.node_status_report_frequency),
                    format_duration(config.node_status_update_frequency),
                ),
            );
        }

        // Contact is proven by the Lease renewals: a window shorter than their interval would
        // declare the node cut off between two healthy renewals.
        let renew = Duration::from_secs(u64::from(config.node_lease_duration_seconds)) / 4;
        if config.fence.unreachable_after <= renew {
            self.error(
                &r.fence_span.clone().unwrap_or(0..0),
                "fence.unreachableAfter",
                format!(
                    "must be longer than the Lease renew interval ({}, a quarter of nodeLeaseDurationSeconds), found {}",
                    format_duration(renew),
                    format_duration(config.fence.unreachable_after),
                ),
            );
        }

        // With peers, the quorum's count is settled only this long after the last contact: a
        // pod whose kill time comes earlier waits for it, and is stopped late.
        let (_, settled) = crate::core::quorum::windows(renew, config.fence.unreachable_after);
        let lag = crate::core::fence_plan::FencePolicy::from(&*config).kubelet_lag;
        let first_kill = config
            .fence
            .node_monitor_grace_period
            .saturating_add(config.fence.node_monitor_period)
            .saturating_sub(config.fence.safety_margin)
            .saturating_sub(lag);
        let has_peers = config.peers.service.is_some() || !config.peers.static_peers.is_empty();
        if config.fence.mode == crate::core::fence_plan::Mode::Enforce
            && has_peers
            && settled > first_kill
        {
            self.warn(
                r.fence_span.as_ref(),
                "fence.nodeMonitorGracePeriod",
                format!(
                    "the peer quorum is settled {} after the last contact (a renew interval and the controller's 5s monitor period, then unreachableAfter), later than the first kill time ({} = nodeMonitorGracePeriod + nodeMonitorPeriod - safetyMargin - the kubelet's Lease renew interval with its jitter, unless onlyStatusReporter): a pod tolerating node.kubernetes.io/unreachable for less than {} is stopped after the control plane could delete it",
                    format_duration(settled),
                    format_duration(first_kill),
                    format_duration(settled - first_kill),
                ),
            );
        }
        // A zone record that holds only until a Node recorded not Ready posts Ready needs the
        // rounds to read it again within a monitor period.
        if config.fence.mode == crate::core::fence_plan::Mode::Enforce
            && has_peers
            && !crate::core::quorum::record_in_time(
                config.peers.interval,
                config.fence.node_monitor_period,
            )
        {
            self.warn(
                r.fence_span.as_ref(),
                "peers.interval",
                format!(
                    "peers.interval ({}) and the peer reader's {} list are not within fence.nodeMonitorPeriod ({}): a node still recorded Ready whose judgement would make its zone partially disrupted is not held on that record, and its pods are stopped on the count alone (docs/fence.md §5, *Judged into a partial disruption*)",
                    format_duration(config.peers.interval),
                    format_duration(crate::core::quorum::ZONE_RECORD_FRESH),
                    format_duration(config.fence.node_monitor_period),
                ),
            );
        }

        let threshold_issue = |w: &mut Self, issue: &ThresholdError, is_error: bool| {
            let path = key_path(issue.map.key(), &issue.signal);
            let span = r
                .spans
                .get(&(issue.map, issue.signal.clone()))
                .map(|(k, v)| match issue.site {
                    Site::Key => k.clone(),
                    Site::Value => v.clone(),
                });
            if is_error {
                w.error(&span.unwrap_or(0..0), &path, issue.message.clone());
            } else {
                w.warn(span.as_ref(), &path, issue.message.clone());
            }
        };
        match parse_thresholds(&r.eviction) {
            Ok(parsed) => {
                config.thresholds = parsed.thresholds;
                for warning in &parsed.warnings {
                    threshold_issue(self, warning, false);
                }
            }
            Err(errors) => {
                for e in &errors {
                    threshold_issue(self, e, true);
                }
            }
        }
        match parse_psi_thresholds(&r.psi_entries) {
            Ok(psi) => config.psi_thresholds = psi,
            Err(errors) => {
                for e in &errors {
                    threshold_issue(self, e, true);
                }
            }
        }
    }

    /// Warnings about thresholds and conditions that cannot affect each other.
    fn coverage_warnings(&mut self, config: &Config, r: &Reading) {
        let fed: Vec<SignalRef> = config
            .conditions
            .iter()
            .flat_map(|c| c.signals.iter().copied())
            .collect();
        let mut warned: Vec<Signal> = Vec::new();
        for t in &config.thresholds {
            if fed.contains(&SignalRef::Eviction(t.signal)) || warned.contains(&t.signal) {
                continue;
            }
            warned.push(t.signal);
            let map = if t.soft {
                ThresholdMap::EvictionSoft
            } else {
                ThresholdMap::EvictionHard
            };
            let span = r
                .spans
                .get(&(map, t.signal.name().to_string()))
                .map(|(k, _)| k.clone());
            let key = key_path(map.key(), t.signal.name());
            if span.is_none() {
                // A built-in threshold the user's [[conditions]] do not use: worth knowing,
                // but a warning names something the user wrote.
                self.note(
                    &key,
                    format!(
                        "{} has a default threshold but feeds no condition, so it has no effect",
                        t.signal
                    ),
                );
                continue;
            }
            self.warn(
                span.as_ref(),
                &key,
                format!(
                    "{} has a threshold but feeds no condition, so it has no effect",
                    t.signal
                ),
            );
        }
        for t in &config.psi_thresholds {
            if fed.contains(&SignalRef::Psi(t.signal)) {
                continue;
            }
            let key = t.signal.name().trim_start_matches("psi.").to_string();
            let span = r
                .spans
                .get(&(ThresholdMap::PsiThresholds, key.clone()))
                .map(|(k, _)| k.clone());
            self.warn(
                span.as_ref(),
                &key_path("psiThresholds", &key),
                format!(
                    "{} has a threshold but feeds no condition, so it has no effect",
                    t.signal
                ),
            );
        }
        for (i, c) in config.conditions.iter().enumerate() {
            let has_threshold = c.signals.iter().any(|s| match s {
                SignalRef::Eviction(e) => config.thresholds.iter().any(|t| t.signal == *e),
                SignalRef::Psi(p) => config.psi_thresholds.iter().any(|t| t.signal == *p),
            });
            if !has_threshold {
                let names: Vec<String> = c.signals.iter().map(|s| s.name()).collect();
                let span = r.condition_spans.get(i);
                let key = format!("conditions[{i}].signals");
                let message = format!(
                    "none of the signals of {} ({}) has a threshold, so it is never True",
                    c.condition_type,
                    names.join(", ")
                );
                // A warning names something the user wrote: a built-in condition that has no
                // built-in threshold either (PIDPressure: the kubelet sets no pid.available
                // default, docs/semantics.md §7.3) is how the defaults are, said as a note.
                if span.is_none() && !defaults_give_a_threshold(&c.signals) {
                    self.note(&key, format!("{message} (as with the kubelet's defaults)"));
                } else {
                    self.warn(span, &key, message);
                }
            }
        }
    }

    fn logging(&mut self, path: &str, raw: &RawLogging, config: &mut Config) {
        let logging = &mut config.logging;
        set(
            &mut logging.target,
            read!(self, word, path, raw.target, LOG_TARGETS),
        );
        set(
            &mut logging.level,
            read!(self, word, path, raw.level, LOG_LEVELS),
        );
    }

    fn fence(&mut self, path: &str, raw: &RawFence, config: &mut Config) {
        let f = &mut config.fence;
        set(&mut f.mode, read!(self, word, path, raw.mode, MODES));
        let node_monitor_grace_period = read!(self, duration, path, raw.node_monitor_grace_period);
        set(&mut f.node_monitor_grace_period, node_monitor_grace_period);
        let node_monitor_period = read!(self, duration, path, raw.node_monitor_period);
        set(&mut f.node_monitor_period, node_monitor_period);
        let unreachable_after = read!(self, duration, path, raw.unreachable_after);
        set(&mut f.unreachable_after, unreachable_after);
        let safety_margin = read!(self, duration, path, raw.safety_margin);
        set(&mut f.safety_margin, safety_margin);
        let grace_period_cap = read!(self, duration, path, raw.grace_period_cap);
        set(&mut f.grace_period_cap, grace_period_cap);
        let cgroup_driver = read!(self, word, path, raw.cgroup_driver, CGROUP_DRIVERS);
        set(&mut f.cgroup_driver, cgroup_driver);
        let cgroup_version = read!(self, word, path, raw.cgroup_version, CGROUP_VERSIONS);
        set(&mut f.cgroup_version, cgroup_version);
        let root = read!(self, path, path, raw.cgroup_root);
        set(&mut f.cgroup_root, root.map(Some));
        let expected =
            "the API server's URL as the kubelet reaches it, such as \"https://10.0.0.10:6443\"";
        let server = read!(self, text, path, raw.kubelet_server, expected, |s| {
            server_url(expected, s).map(Some)
        });
        set(&mut f.kubelet_server, server);
        let expected = "\"namespace/name\" of the kube-controller-manager's leader Lease, or \"\" to read none";
        let lease = read!(
            self,
            text,
            path,
            raw.controller_manager_lease,
            expected,
            |s| {
                match s.split_once('/') {
                    _ if s.is_empty() => Ok(None),
                    Some((ns, name))
                        if names::is_dns_label(ns) && names::is_dns_subdomain(name) =>
                    {
                        Ok(Some((ns.to_string(), name.to_string())))
                    }
                    _ => Err(format!(
                        "expected {expected}: a namespace (a DNS label) and a name (a DNS subdomain), found \"{s}\""
                    )),
                }
            }
        );
        set(&mut f.controller_manager_lease, lease);
    }

    fn peers(&mut self, path: &str, span: &Range<usize>, raw: &RawPeers, config: &mut Config) {
        let p = &mut config.peers;
        let expected = "\"namespace/name\" of the headless Service that selects the agents";
        let service = read!(self, text, path, raw.service, expected, |s| {
            match s.split_once('/') {
                Some((ns, name)) if names::is_dns_label(ns) && names::is_dns_label(name) => {
                    Ok(Some((ns.to_string(), name.to_string())))
                }
                _ => Err(format!(
                    "expected {expected}, each part a DNS label, found \"{s}\""
                )),
            }
        });
        set(&mut p.service, service);
        let expected = "an EndpointSlice port name";
        let port_name = read!(self, text, path, raw.port_name, expected, |s| {
            let s = non_empty(expected, s)?;
            if names::is_dns_label(&s) && s.len() <= 15 {
                return Ok(s);
            }
            Err(format!(
                "expected a port name (a DNS label of at most 15 characters), found \"{s}\""
            ))
        });
        set(&mut p.port_name, port_name);
        if let Some(v) = &raw.static_ {
            let key = key!(path, static_);
            let expected = "an array of { node, address, zone } tables";
            let items = self.shaped(&key, v, expected).into_iter().flatten();
            for (i, item) in items.enumerate() {
                let item_key = format!("{key}[{i}]");
                let table = self.table(&item_key, item, "a { node, address, zone } table");
                let Some(peer) = table.and_then(|t| self.static_peer(&item_key, item, &t.value))
                else {
                    continue;
                };
                if p.static_peers.iter().any(|known| known.node == peer.node) {
                    let message = format!("node \"{}\" is listed twice", peer.node);
                    self.error(&item.span(), &item_key, message);
                } else {
                    p.static_peers.push(peer);
                }
            }
        }
        let expected = "a socket address such as \"0.0.0.0:9843\"";
        let listen = read!(self, address, path, raw.listen, expected);
        set(&mut p.listen, listen.map(Some));
        let key_file = read!(self, path, path, raw.key_file);
        set(&mut p.key_file, key_file.map(Some));
        if let Some(v) = &raw.ask {
            match v.get_ref() {
                Value::Integer(n) if (1..=1000).contains(n) => p.ask = *n as usize,
                other => {
                    let expected = "an integer from 1 to 1000";
                    self.mismatch(&v.span(), &key!(path, ask), expected, other)
                }
            }
        }
        let positive = |w: &mut Self, key: String, v: Option<&Spanned<Value>>| {
            let d = w.duration(&key, v)?;
            let span = v.map_or(0..0, Spanned::span);
            if d.is_zero() {
                w.error(&span, &key, "must be greater than zero");
                return None;
            }
            Some((d, span))
        };
        let timeout = positive(self, key!(path, timeout), raw.timeout.as_ref());
        let interval = positive(self, key!(path, interval), raw.interval.as_ref());
        set(&mut p.interval, interval.map(|(d, _)| d));
        let without_peers = read!(self, word, path, raw.without_peers, UNDECIDED);
        set(&mut p.without_peers, without_peers);
        let whole_zone_cut_off = read!(self, word, path, raw.whole_zone_cut_off, UNDECIDED);
        set(&mut p.whole_zone_cut_off, whole_zone_cut_off);

        if let (Some(_), Some(v)) = (&p.service, &raw.static_) {
            let message = "peers come from either `service` (EndpointSlices) or `static`, not both";
            self.error(&v.span(), &key!(path, static_), message);
        }
        let wants_key = p.service.is_some() || !p.static_peers.is_empty() || p.listen.is_some();
        if wants_key && p.key_file.is_none() {
            self.error(span, &key!(path, key_file), "required when `service`, `static` or `listen` is set: peers authenticate each other with this shared key");
        }
        let (timeout, timeout_span) = timeout.map_or((p.timeout, None), |(d, s)| (d, Some(s)));
        p.timeout = timeout;
        if p.timeout > p.interval {
            let message = format!(
                "must not exceed peers.interval ({}), found {}",
                format_duration(p.interval),
                format_duration(p.timeout)
            );
            let key = key!(path, timeout);
            self.error(timeout_span.as_ref().unwrap_or(span), &key, message);
        }
    }

    fn static_peer(
        &mut self,
        path: &str,
        item: &Spanned<Shaped<Record<RawStaticPeer>>>,
        raw: &RawStaticPeer,
    ) -> Option<crate::core::quorum::Peer> {
        let node = read!(self, text, path, raw.node, "a node name", |s| {
            let s = non_empty("a node name", s)?;
            if names::is_dns_subdomain(&s) {
                return Ok(s);
            }
            Err(format!(
                "expected a node name (a DNS subdomain), found \"{s}\""
            ))
        });
        let expected = "an IP address and port such as \"10.0.0.12:9843\" or \"[fd00::12]:9843\" (no host names: DNS may be gone in a partition)";
        let address = read!(self, address, path, raw.address, expected);
        let zone = read!(self, text, path, raw.zone, "a zone name", |s| {
            Ok(s.to_string())
        });
        // Only an absent key is "missing": a present but invalid one has its own error.
        let absent: Vec<&str> = [("node", &raw.node), ("address", &raw.address)]
            .into_iter()
            .filter_map(|(k, v)| v.is_none().then_some(k))
            .collect();
        if !absent.is_empty() {
            self.error(
                &item.span(),
                path,
                format!("missing {}", absent.join(" and ")),
            );
        }
        Some(crate::core::quorum::Peer {
            node: node?,
            address: address?,
            zone: zone.unwrap_or_default(),
        })
    }

    /// `featureGates`: gate name → bool, as KubeletConfiguration's `map[string]bool`; a name this
    /// build does not know is an error at its key, as a component refuses an unrecognized gate.
    fn feature_gates(&mut self, path: &str, v: &Spans<Entries>, config: &mut Config) {
        let expected = "a table of feature gate names to true or false";
        for (k, v) in self.shaped(path, v, expected).into_iter().flatten() {
            let name = k.get_ref().as_str();
            let key = key_path(path, name);
            let Some(enabled) = self.bool(&key, Some(v)) else {
                continue;
            };
            if let Err(message) = config.feature_gates.set(name, enabled) {
                self.error(&k.span(), &key, message);
            }
        }
    }

    /// `kubeReserved` / `systemReserved`: resource → non-negative quantity, as the kubelet's
    /// `parseResourceList`, which refuses any resource but cpu, memory, ephemeral-storage and pid.
    fn reserved(
        &mut self,
        path: &str,
        v: Option<&Spans<Entries>>,
    ) -> Option<crate::core::resources::ResourceList> {
        use crate::core::allocatable::RESERVABLE;
        use crate::core::quantity::Quantity;
        let v = v?;
        let entries: &Entries = self.shaped(path, v, "a table of resource names to quantities")?;
        let mut out = crate::core::resources::ResourceList::new();
        for (k, v) in entries {
            let resource = k.get_ref().as_str();
            let key = key_path(path, resource);
            if !RESERVABLE.contains(&resource) {
                let known = RESERVABLE.join(", ");
                let message = format!("cannot reserve \"{resource}\"; expected one of: {known}");
                self.error(&k.span(), &key, message);
                continue;
            }
            let expected = "a quantity such as \"500m\", \"1Gi\" or \"1000\"";
            let quantity = self.text(&key, Some(v), expected, |s| match s.parse::<Quantity>() {
                Ok(q) if q.is_negative() => {
                    Err(format!("expected a quantity of at least 0, found \"{s}\""))
                }
                Ok(q) => Ok(q),
                Err(e) => Err(format!("expected {expected}: {e}")),
            });
            if let Some(q) = quantity {
                out.insert(resource.to_string(), q);
            }
        }
        Some(out)
    }

    /// `[[conditions]]`, each table and the rules across them: unique types, each signal feeds
    /// one condition, each taint (key, effect) belongs to one condition.
    fn conditions(
        &mut self,
        path: &str,
        value: &Tables<RawCondition>,
    ) -> Vec<(ConditionSpec, Range<usize>)> {
        let mut out = Vec::new();
        let Some(items) = self.shaped(path, value, "an array of tables ([[conditions]])") else {
            return out;
        };
        let mut types: HashMap<String, usize> = HashMap::new();
        let mut signal_owner: BTreeMap<SignalRef, String> = BTreeMap::new();
        let mut taints: HashMap<(String, Effect), usize> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            let expected = "a table with type, signals and reasons";
            let Some(record) = self.table(&item_path, item, expected) else {
                continue;
            };
            let (raw, span) = (&record.value, item.span());
            let ok = record.unknown.is_empty();
            let Some(spec) = self.condition(&item_path, &span, raw, ok, &mut signal_owner) else {
                continue;
            };
            let type_span = raw.type_.as_ref().map_or(span.clone(), Spanned::span);
            if let Some(first) = types.get(&spec.condition_type) {
                self.error(
                    &type_span,
                    &key!(&item_path, type_),
                    format!(
                        "condition type {} is already defined by {path}[{first}]; types must be unique",
                        spec.condition_type
                    ),
                );
            } else {
                types.insert(spec.condition_type.clone(), i);
            }
            if let Some(taint) = &spec.taint {
                let taint_span = raw.taint_key.as_ref().map_or(span.clone(), Spanned::span);
                if let Some(first) = taints.get(&(taint.key.clone(), taint.effect)) {
                    self.error(
                        &taint_span,
                        &key!(&item_path, taint_key),
                        format!(
                            "taint {}:{} is already used by {path}[{first}]; each taint may belong to one condition",
                            taint.key, taint.effect
                        ),
                    );
                } else {
                    taints.insert((taint.key.clone(), taint.effect), i);
                }
            }
            out.push((spec, span));
        }
        out
    }

    /// One condition; `None` when anything in it is wrong (each problem reported).
    fn condition(
        &mut self,
        path: &str,
        table_span: &Range<usize>,
        raw: &RawCondition,
        mut ok: bool,
        signal_owner: &mut BTreeMap<SignalRef, String>,
    ) -> Option<ConditionSpec> {
        let expected = "a condition type in CamelCase, such as \"MemoryContention\"";
        let condition_type = read!(self, text, path, raw.type_, expected, |t| match t {
            "Ready" =>
                Err("the Ready condition belongs to the kubelet; choose another type".into()),
            t if is_condition_type(t) => Ok(t.to_string()),
            t => Err(format!(
                "expected {expected} (letters and digits, starting with an upper-case letter), found \"{t}\""
            )),
        });
        if raw.type_.is_none() {
            let message =
                "missing required key; expected a condition type such as \"MemoryPressure\"";
            self.error(table_span, &key!(path, type_), message);
        }
        let signals = match &raw.signals {
            Some(v) => self.signals(&key!(path, signals), v),
            None => {
                let message = "missing required key; expected a non-empty array of signal names such as [\"memory.available\"]";
                self.error(table_span, &key!(path, signals), message);
                None
            }
        };
        ok &= condition_type.is_some() && signals.is_some();

        // Reasons and messages default to the kubelet's only for the standard types
        // (docs/semantics.md §6.3).
        let standard = condition_type.as_deref().and_then(standard_reasons);
        // Only a valid type says which keys are needed.
        let at = condition_type.as_ref().map(|_| table_span);
        let d = |f: fn(&StandardReasons) -> &'static str| standard.as_ref().map(f);
        let texts = [
            (
                key!(path, true_reason),
                raw.true_reason.as_ref(),
                d(|s| s.true_reason),
                true,
            ),
            (
                key!(path, true_message),
                raw.true_message.as_ref(),
                d(|s| s.true_message),
                false,
            ),
            (
                key!(path, false_reason),
                raw.false_reason.as_ref(),
                d(|s| s.false_reason),
                true,
            ),
            (
                key!(path, false_message),
                raw.false_message.as_ref(),
                d(|s| s.false_message),
                false,
            ),
        ];
        let [true_reason, true_message, false_reason, false_message] = texts
            .map(|(key, v, default, reason)| self.condition_text(&key, v, default, reason, at));
        ok &= [&true_reason, &true_message, &false_reason, &false_message]
            .iter()
            .all(|t| t.is_some());

        let expected = "a taint key (a qualified name such as \"example.com/memory-contention\")";
        let taint_key = read!(self, text, path, raw.taint_key, expected, |t| {
            match qualified_name_problem(t) {
                None => Ok(t.to_string()),
                Some(problem) => Err(format!("expected {expected}, found \"{t}\": {problem}")),
            }
        });
        let expected = "one of \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
        let taint_effect = read!(self, text, path, raw.taint_effect, expected, |e| {
            Effect::parse(e).ok_or_else(|| found(expected, e))
        },);
        ok &= raw.taint_key.is_none() || taint_key.is_some();
        ok &= raw.taint_effect.is_none() || taint_effect.is_some();
        // An invalid taintKey or taintEffect has its own error; only a missing one is reported.
        let taint = match (taint_key, taint_effect, &raw.taint_key, &raw.taint_effect) {
            (Some(key), Some(effect), _, _) => Some(TaintSpec { key, effect }),
            (Some(_), None, Some(v), None) => {
                let message = "taintKey needs taintEffect too; set both or neither";
                self.error(&v.span(), &key!(path, taint_key), message);
                ok = false;
                None
            }
            (None, Some(_), None, Some(v)) => {
                let message = "taintEffect needs taintKey too; set both or neither";
                self.error(&v.span(), &key!(path, taint_effect), message);
                ok = false;
                None
            }
            _ => None,
        };

        // KEP-5394's PSI conditions and their taints belong to the kubelet and the control plane
        // once `PSINodeCondition` is on (docs/semantics.md §7.6): a warning, since the gate is
        // alpha at most and off by default, but two writers of one condition would fight.
        if let (Some(t), Some(v)) = (&condition_type, &raw.type_)
            && crate::core::pressure::KEP_5394_CONDITION_TYPES.contains(&t.as_str())
        {
            self.warn(
                Some(&v.span()),
                &key!(path, type_),
                format!("{t} is a condition type of KEP-5394 (PSI-based node conditions, feature gate PSINodeCondition): a kubelet with that gate on sets it from its own PSI rule and would overwrite ours; choose another type"),
            );
        }
        if let (Some(t), Some(v)) = (&taint, &raw.taint_key)
            && crate::core::pressure::KEP_5394_TAINT_KEYS.contains(&t.key.as_str())
        {
            self.warn(
                Some(&v.span()),
                &key!(path, taint_key),
                format!("{} is a taint key of KEP-5394 (PSI-based node conditions, feature gate PSINodeCondition), which the control plane manages from the kubelet's conditions; choose a key of your own", t.key),
            );
        }

        let condition_type = condition_type?;
        let signals = signals?;
        // A signal feeding two conditions would make them fight over one observation.
        let items = match raw.signals.as_ref().map(Spanned::get_ref) {
            Some(Shaped::Read(items)) => items.as_slice(),
            _ => &[],
        };
        for (j, signal) in signals.iter().enumerate() {
            if let Some(owner) = signal_owner.get(signal) {
                let span = items.get(j).map_or(table_span.clone(), Spanned::span);
                self.error(
                    &span,
                    &format!("{}[{j}]", key!(path, signals)),
                    format!("{signal} already feeds condition {owner}; a signal may feed only one condition"),
                );
                // Still return the condition, so clashes of its type and taint are reported too.
            } else {
                signal_owner.insert(*signal, condition_type.clone());
            }
        }
        if !ok {
            return None;
        }
        Some(ConditionSpec {
            condition_type,
            signals,
            true_reason: true_reason?,
            true_message: true_message?,
            false_reason: false_reason?,
            false_message: false_message?,
            taint,
        })
    }

    /// A condition's reason or message. Absent, it is the standard type's `default`, or an
    /// error at `missing_at` for a custom type.
    fn condition_text(
        &mut self,
        key: &str,
        v: Option<&Spanned<Value>>,
        default: Option<&str>,
        reason: bool,
        missing_at: Option<&Range<usize>>,
    ) -> Option<String> {
        if v.is_none() {
            if let (None, Some(span)) = (default, missing_at) {
                self.error(span, key, "missing required key; only MemoryPressure, DiskPressure and PIDPressure have default reasons and messages");
            }
            return default.map(str::to_string);
        }
        if !reason {
            return self.text(key, v, "a message string", |m| Ok(m.to_string()));
        }
        let expected = "a reason in CamelCase, such as \"MemoryStallHigh\"";
        self.text(key, v, expected, |r| match is_reason(r) {
            true => Ok(r.to_string()),
            false => Err(format!("expected {expected} (a letter, then letters, digits, '_', ',' or ':'), found \"{r}\"")),
        })
    }

    fn signals(
        &mut self,
        path: &str,
        value: &Spans<Vec<Spanned<Value>>>,
    ) -> Option<Vec<SignalRef>> {
        let expected = "a non-empty array of signal names such as [\"memory.available\"] or [\"psi.memory.full.avg10\"]";
        let items = self.shaped(path, value, expected)?;
        if items.is_empty() {
            let message = format!("expected {expected}, found an empty array");
            self.error(&value.span(), path, message);
            return None;
        }
        let mut out: Vec<SignalRef> = Vec::new();
        let mut ok = true;
        for (j, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{j}]");
            let signal = self.text(&item_path, Some(item), "a signal name", |name| {
                match SignalRef::from_name(name) {
                    Some(s) if out.contains(&s) => Err(format!("{s} is listed more than once")),
                    Some(s) => Ok(s),
                    None => {
                        let evictions: Vec<&str> = Signal::ALL.iter().map(|s| s.name()).collect();
                        Err(format!(
                            "expected an eviction signal ({}) or a PSI signal psi.<memory|io|cpu>.<some|full>.<avg10|avg60|avg300}}, found \"{name}\"",
                            evictions.join(", ")
                        ))
                    }
                }
            });
            ok &= signal.is_some();
            out.extend(signal);
        }
        ok.then_some(out)
    }
}

/// `[A-Z][A-Za-z0-9]*`: the CamelCase form of the node condition types.
fn is_condition_type(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
        && s.len() <= 316
}

/// The `metav1.Condition` reason format: `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`, at most 1024.
fn is_reason(s: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ',' || c == ':';
    s.len() <= 1024
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars().all(ok_char)
        && s.chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `s` is not a qualified name (docs/semantics.md §8.1), in the API server's words, or `None`.
pub(crate) fn qualified_name_problem(s: &str) -> Option<String> {
    let errors = names::qualified_name_errors(s);
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// Whether the built-in thresholds (an absent `evictionHard`, no `psiThresholds`) cover any of
/// these signals.
fn defaults_give_a_threshold(signals: &[SignalRef]) -> bool {
    let defaults = Config::defaults();
    signals.iter().any(|s| match s {
        SignalRef::Eviction(e) => defaults.thresholds.iter().any(|t| t.signal == *e),
        SignalRef::Psi(p) => defaults.psi_thresholds.iter().any(|t| t.signal == *p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_quoted_only_when_not_bare() {
        assert_eq!(key_path("", "nodeName"), "nodeName");
        assert_eq!(
            key_path("evictionHard", "memory.available"),
            "evictionHard.\"memory.available\""
        );
        assert_eq!(key_path("a", "b c"), "a.\"b c\"");
    }

    #[test]
    fn qualified_names_follow_the_api_server() {
        for ok in [
            "node.kubernetes.io/memory-pressure",
            "example.com/a_b.c",
            "simple",
            "a",
        ] {
            assert_eq!(qualified_name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "/x",
            "Example.com/x",
            "x/",
            "a/b/c",
            "-x",
            "x-",
            &"a".repeat(64),
            "a b",
        ] {
            assert!(qualified_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn condition_types_and_reasons() {
        assert!(is_condition_type("MemoryContention") && is_condition_type("PIDPressure"));
        assert!(
            !is_condition_type("memoryPressure")
                && !is_condition_type("Memory-Pressure")
                && !is_condition_type("")
        );
        assert!(is_reason("KubeletHasDiskPressure") && is_reason("A_b:c,d1"));
        assert!(!is_reason("1Reason") && !is_reason("Reason:") && !is_reason("Two words"));
    }

    #[test]
    fn positions_are_one_based_lines_and_character_columns() {
        let w = Walker::new("a = 1\nbé = 2\n", "f".to_string());
        assert_eq!(w.position(0), (1, 1));
        assert_eq!(w.position(4), (1, 5));
        assert_eq!(w.position(6), (2, 1));
        // "bé" is 3 bytes; the '=' after it is the 4th character.
        assert_eq!(w.position(10), (2, 4));
        assert_eq!(w.position(999), (3, 1));
    }

    #[test]
    fn a_fields_key_is_its_serde_name() {
        assert_eq!(
            key!("", node_status_update_frequency),
            "nodeStatusUpdateFrequency"
        );
        assert_eq!(key!("conditions[0]", type_), "conditions[0].type");
        assert_eq!(key!("peers", static_), "peers.static");
        // Every key the macro spells is one serde reads.
        for (fields, spelt) in [
            (
                fields_of::<RawConfig>(),
                key!("", eviction_soft_grace_period),
            ),
            (fields_of::<RawPeers>(), key!("", whole_zone_cut_off)),
            (fields_of::<RawPeers>(), key!("", static_)),
            (fields_of::<RawCondition>(), key!("", type_)),
            (fields_of::<RawFence>(), key!("", cgroup_root)),
            (fields_of::<RawFence>(), key!("", kubelet_server)),
            (fields_of::<RawFence>(), key!("", controller_manager_lease)),
        ] {
            assert!(
                fields.contains(&spelt.as_str()),
                "{spelt} not in {fields:?}"
            );
        }
        assert_eq!(fields_of::<RawConfig>().len(), 30);
        assert!(fields_of::<RawConfig>().contains(&"reservedSystemCPUs"));
    }

    #[test]
    fn a_value_of_the_wrong_kind_anywhere_leaves_the_rest_checked() {
        let text = "fence = 1979-05-27\npeers = [1]\nlogging = \"x\"\n[[conditions]]\ntype = 3\nsignals = { a = 1 }\n[evictionHard]\n\"memory.available\" = [\"1\"]\n";
        let errors = load_text(text, None).expect_err("wrong kinds").0;
        let shown: Vec<String> = errors
            .iter()
            .map(|e| format!("{}:{} {}: {}", e.line, e.column, e.key, e.message))
            .collect();
        for expected in [
            "1:9 fence: expected a table of fence settings, found datetime 1979-05-27",
            "2:9 peers: expected a table of peer settings, found an array",
            "3:11 logging: expected a table with target and level, found string \"x\"",
            "5:8 conditions[0].type: expected a condition type in CamelCase, such as \"MemoryContention\", found integer 3",
            "6:11 conditions[0].signals: expected a non-empty array of signal names such as [\"memory.available\"] or [\"psi.memory.full.avg10\"], found a table",
            "8:22 evictionHard.\"memory.available\": expected a quantity such as \"100Mi\" or a percentage such as \"10%\", found an array",
        ] {
            assert!(
                shown.iter().any(|s| s == expected),
                "no {expected:?} in {shown:#?}"
            );
        }
    }

    #[test]
    fn a_present_but_invalid_reason_is_not_also_missing() {
        let text = "[[conditions]]\ntype = \"Custom\"\nsignals = [\"pid.available\"]\ntrueReason = \"1x\"\ntrueMessage = \"m\"\nfalseReason = \"B\"\nfalseMessage = \"b\"\n";
        let errors = load_text(text, None).expect_err("invalid reason").0;
        let keys: Vec<(&str, usize)> = errors.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(keys, [("conditions[0].trueReason", 4)], "{errors:#?}");
    }

    #[test]
    fn integers_beyond_i64_and_datetimes_are_values_of_the_wrong_kind() {
        let text = "nodeLeaseDurationSeconds = 18446744073709551615\nnodeName = 1979-05-27T07:32:00Z\n[evictionHard]\n\"memory.available\" = 07:32:00\n";
        let shown = load_text(text, None).expect_err("wrong kinds").0;
        let shown: Vec<String> = shown
            .iter()
            .map(|e| format!("{}:{}", e.key, e.message))
            .collect();
        assert_eq!(
            shown,
            [
                "nodeLeaseDurationSeconds:expected a whole number of seconds such as 40, found integer 18446744073709551615",
                "nodeName:expected a node name, found datetime 1979-05-27T07:32:00Z",
                "evictionHard.\"memory.available\":expected a quantity such as \"100Mi\" or a percentage such as \"10%\", found datetime 07:32:00",
            ]
        );
    }
}
