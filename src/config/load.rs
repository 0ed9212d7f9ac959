//! Reading the TOML file (DESIGN §4): serde reads the raw shape (`raw.rs`), then one pass checks
//! every value and translates it into [`Config`], collecting every problem at once, each with its
//! line, column and dotted key.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::DeTable;

use crate::core::names;
use crate::core::signal::{Signal, SignalRef};
use crate::core::taint::Effect;
use crate::core::threshold::{
    EvictionInput, Site, ThresholdError, ThresholdMap, format_duration, parse_duration,
    parse_psi_thresholds, parse_thresholds,
};

use super::defaults::standard_reasons;
use super::raw::{
    Entries, Field, RawCondition, RawConfig, RawFence, RawLogging, RawPeers, RawStaticPeer, Record,
    Shaped, Value, fields_of,
};
use super::{
    ConditionSpec, Config, ConfigError, ConfigErrors, ConfigWarning, Loaded, LogTarget, TaintSpec,
};

/// The dotted key of a raw struct's field under `parent`: serde's name for it is the field's
/// name in camelCase (`rename_all`), so the key is spelt once, in the struct.
macro_rules! key {
    ($parent:expr, $field:ident) => {
        key_path($parent, &camel(stringify!($field)))
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
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
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

fn integer_value(value: &Value) -> Option<i128> {
    match value {
        Value::Integer(i) => Some(*i),
        _ => None,
    }
}

fn number_value(value: &Value) -> Option<f64> {
    match value {
        Value::Float(x) => Some(*x),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
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

    fn error(&mut self, span: &Range<usize>, key: &str, message: impl Into<String>) {
        let (line, column) = self.position(span.start);
        self.errors.push(ConfigError {
            file: self.file.clone(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        });
    }

    fn warn(&mut self, span: Option<&Range<usize>>, key: &str, message: impl Into<String>) {
        let (line, column) = span.map_or((0, 0), |s| self.position(s.start));
        self.warnings.push(ConfigWarning {
            file: self.file.clone(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        });
    }

    /// A value of the wrong kind: `expected <what>, found <what it is>`.
    fn mismatch(&mut self, span: &Range<usize>, path: &str, expected: &str, found: &Value) {
        self.error(span, path, format!("expected {expected}, found {found}"));
    }

    fn string<'v>(&mut self, path: &str, v: &'v Spanned<Value>, expected: &str) -> Option<&'v str> {
        let found = v.get_ref().as_str();
        if found.is_none() {
            self.mismatch(&v.span(), path, expected, v.get_ref());
        }
        found
    }

    fn non_empty_string(
        &mut self,
        path: &str,
        v: &Spanned<Value>,
        expected: &str,
    ) -> Option<String> {
        let s = self.string(path, v, expected)?;
        if s.is_empty() {
            self.error(
                &v.span(),
                path,
                format!("expected {expected}, found an empty string"),
            );
            return None;
        }
        Some(s.to_string())
    }

    /// A boolean key, if present and valid.
    fn flag(&mut self, path: &str, v: &Field) -> Option<bool> {
        v.as_ref().and_then(|v| self.bool(path, v))
    }

    fn bool(&mut self, path: &str, v: &Spanned<Value>) -> Option<bool> {
        match v.get_ref() {
            Value::Boolean(b) => Some(*b),
            other => {
                self.mismatch(&v.span(), path, "a boolean (true or false)", other);
                None
            }
        }
    }

    fn duration(&mut self, path: &str, v: &Spanned<Value>) -> Option<Duration> {
        let raw = self.string(path, v, "a duration string such as \"10s\" or \"5m\"")?;
        parse_duration(raw)
            .map_err(|e| self.error(&v.span(), path, e.to_string()))
            .ok()
    }

    /// A socket address, or an error saying `expected <expected>, found "<text>"`.
    fn address(&mut self, path: &str, v: &Spanned<Value>, expected: &str) -> Option<SocketAddr> {
        let raw = self.string(path, v, expected)?;
        raw.parse()
            .map_err(|_| {
                self.error(
                    &v.span(),
                    path,
                    format!("expected {expected}, found \"{raw}\""),
                )
            })
            .ok()
    }

    /// One of a fixed set of words, or an error saying which were expected.
    fn word<T: Copy>(
        &mut self,
        path: &str,
        v: &Spanned<Value>,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let quoted: Vec<String> = choices.iter().map(|(c, _)| format!("\"{c}\"")).collect();
        let expected = format!("one of {}", quoted.join(", "));
        let raw = self.string(path, v, &expected)?;
        let found = choices.iter().find(|(c, _)| *c == raw).map(|(_, t)| *t);
        if found.is_none() {
            self.error(
                &v.span(),
                path,
                format!("expected {expected}, found \"{raw}\""),
            );
        }
        found
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
    let raw = match Shaped::<Record<RawConfig>>::deserialize(toml::de::Deserializer::from(root)) {
        Ok(Shaped::Read(raw)) => raw,
        Ok(Shaped::Found(found)) => {
            w.error(&(0..0), "", format!("expected a table, found {found}"));
            return Err(ConfigErrors(w.errors));
        }
        Err(e) => {
            w.error(&e.span().unwrap_or(0..0), "", e.message().to_string());
            return Err(ConfigErrors(w.errors));
        }
    };

    let mut config = Config::defaults();
    config.source = source.map(PathBuf::from);
    let mut reading = Reading::default();
    w.unknown_keys("", &raw);
    w.root(&raw, &mut config, &mut reading);
    w.cross_checks(&mut config, &reading);

    if !w.errors.is_empty() {
        // File order, whichever check found them (stable: same-position errors keep their order).
        w.errors.sort_by_key(|e| (e.line, e.column));
        return Err(ConfigErrors(w.errors));
    }
    w.coverage_warnings(&config, &reading);
    Ok(Loaded {
        config,
        warnings: w.warnings,
    })
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
        if let Some(v) = &raw.node_name {
            let path = key!("", node_name);
            if let Some(s) = self.non_empty_string(&path, v, "a node name") {
                if names::is_dns_subdomain(&s) {
                    config.node_name = Some(s);
                } else {
                    self.error(&v.span(), &path, format!("expected a node name (a DNS subdomain: lowercase letters, digits, '-' and '.'), found \"{s}\""));
                }
            }
        }
        if let Some(v) = &raw.kubeconfig {
            config.kubeconfig = self
                .non_empty_string(&key!("", kubeconfig), v, "the path of a kubeconfig file")
                .map(PathBuf::from);
        }
        if let Some(b) = self.flag(&key!("", standalone), &raw.standalone) {
            config.standalone = b;
        }
        if let Some(v) = &raw.node_status_update_frequency {
            let path = key!("", node_status_update_frequency);
            match self.duration(&path, v) {
                Some(d) if d.is_zero() => self.error(
                    &v.span(),
                    &path,
                    "expected a duration greater than 0, such as \"10s\", found \"0s\"",
                ),
                Some(d) => {
                    config.node_status_update_frequency = d;
                    r.update_span = Some(v.span());
                }
                None => {}
            }
        }
        if let Some(v) = &raw.node_status_report_frequency {
            if let Some(d) = self.duration(&key!("", node_status_report_frequency), v) {
                config.node_status_report_frequency = d;
                r.report_span = Some(v.span());
            }
        }
        if let Some(v) = &raw.node_lease_duration_seconds {
            let path = key!("", node_lease_duration_seconds);
            match integer_value(v.get_ref()) {
                Some(n) if n > 0 && n <= i128::from(u32::MAX) => {
                    config.node_lease_duration_seconds = n as u32
                }
                Some(n) => self.error(
                    &v.span(),
                    &path,
                    format!("expected a whole number of seconds greater than 0, found {n}"),
                ),
                None => self.mismatch(
                    &v.span(),
                    &path,
                    "a whole number of seconds such as 40",
                    v.get_ref(),
                ),
            }
        }
        for (v, path, lease_name) in [
            (&raw.lease_name, key!("", lease_name), true),
            (&raw.lease_namespace, key!("", lease_namespace), false),
        ] {
            let Some(v) = v else { continue };
            let Some(s) = self.non_empty_string(&path, v, "an object name") else {
                continue;
            };
            if !names::is_dns_subdomain(&s) {
                self.error(&v.span(), &path, format!("expected a DNS subdomain (lowercase letters, digits, '-' and '.'), found \"{s}\""));
            } else if lease_name {
                config.lease_name = Some(s);
            } else {
                config.lease_namespace = s;
            }
        }
        if let Some(b) = self.flag(&key!("", only_status_reporter), &raw.only_status_reporter) {
            config.only_status_reporter = b;
        }
        self.eviction_maps(record, r);
        if let Some(v) = &raw.eviction_pressure_transition_period {
            if let Some(d) = self.duration(&key!("", eviction_pressure_transition_period), v) {
                config.eviction_pressure_transition_period = d;
            }
        }
        let merge = key!("", merge_default_eviction_settings);
        if let Some(b) = self.flag(&merge, &raw.merge_default_eviction_settings) {
            config.merge_default_eviction_settings = b;
            r.eviction.merge_defaults = b;
        }
        if let Some(v) = &raw.psi_thresholds {
            let path = key!("", psi_thresholds);
            let expected = "a table of PSI signal names to percentages";
            for (k, v) in self.shaped(&path, v, expected).into_iter().flatten() {
                let signal = k.get_ref();
                match number_value(v.get_ref()) {
                    Some(n) => {
                        r.psi_entries.push((signal.clone(), n));
                        r.spans.insert(
                            (ThresholdMap::PsiThresholds, signal.clone()),
                            (k.span(), v.span()),
                        );
                    }
                    None => self.mismatch(
                        &v.span(),
                        &key_path(&path, signal),
                        "a percentage of stall time greater than 0 and at most 100, such as 10.0",
                        v.get_ref(),
                    ),
                }
            }
        }
        let expected = "a table of resource names to quantities";
        if let Some(v) = &raw.kube_reserved {
            let path = key!("", kube_reserved);
            if let Some(entries) = self.shaped(&path, v, expected) {
                config.kube_reserved = self.reserved(&path, entries);
            }
        }
        if let Some(v) = &raw.system_reserved {
            let path = key!("", system_reserved);
            if let Some(entries) = self.shaped(&path, v, expected) {
                config.system_reserved = self.reserved(&path, entries);
            }
        }
        if let Some(v) = &raw.reserved_system_cpus {
            // Renamed in the struct (`CPUs`), so spelt here as serde knows it.
            let path = "reservedSystemCPUs";
            let expected = "a CPU list such as \"0-1,8\"";
            if let Some(raw) = self.string(path, v, expected) {
                match crate::core::allocatable::count_cpu_list(raw) {
                    // The kubelet treats an empty list as unset.
                    Ok(0) => config.reserved_system_cpus = None,
                    Ok(count) => {
                        config.reserved_system_cpus = Some(super::ReservedCpus {
                            list: raw.to_string(),
                            count,
                        })
                    }
                    Err(problem) => {
                        self.error(&v.span(), path, format!("expected {expected}: {problem}"))
                    }
                }
            }
        }
        for (v, path, target) in [
            (&raw.proc_path, key!("", proc_path), &mut config.proc_path),
            (
                &raw.cgroup_path,
                key!("", cgroup_path),
                &mut config.cgroup_path,
            ),
            (
                &raw.nodefs_path,
                key!("", nodefs_path),
                &mut config.nodefs_path,
            ),
            (
                &raw.imagefs_path,
                key!("", imagefs_path),
                &mut config.imagefs_path,
            ),
            (
                &raw.state_directory,
                key!("", state_directory),
                &mut config.state_directory,
            ),
        ] {
            if let Some(p) = v
                .as_ref()
                .and_then(|v| self.non_empty_string(&path, v, "a path"))
            {
                *target = PathBuf::from(p);
            }
        }
        if let Some(v) = &raw.health_address {
            let expected = "a socket address such as \"127.0.0.1:9842\" or \"[::1]:9842\"";
            if let Some(a) = self.address(&key!("", health_address), v, expected) {
                config.health_address = a;
            }
        }
        if let Some(v) = &raw.logging {
            let path = key!("", logging);
            if let Some(t) = self.table(&path, v, "a table with target and level") {
                self.logging(&path, &t.value, config);
            }
        }
        if let Some(v) = &raw.fence {
            let path = key!("", fence);
            r.fence_span = Some(v.span());
            if let Some(t) = self.table(&path, v, "a table of fence settings") {
                self.fence(&path, &t.value, config);
            }
        }
        if let Some(v) = &raw.peers {
            let path = key!("", peers);
            if let Some(t) = self.table(&path, v, "a table of peer settings") {
                self.peers(&path, &v.span(), &t.value, config);
            }
        }
        if let Some(v) = &raw.conditions {
            let conditions = self.conditions(&key!("", conditions), v);
            r.condition_spans = conditions.iter().map(|(_, s)| s.clone()).collect();
            config.conditions = conditions.into_iter().map(|(c, _)| c).collect();
        }
    }

    /// `evictionHard`, `evictionSoft`, `evictionSoftGracePeriod`, `evictionMinimumReclaim`: signal
    /// → string, parsed together by the core once all are read.
    fn eviction_maps(&mut self, record: &Record<RawConfig>, r: &mut Reading) {
        let raw = &record.value;
        let quantity = "a quantity such as \"100Mi\" or a percentage such as \"10%\"";
        let maps = [
            (ThresholdMap::EvictionHard, &raw.eviction_hard, quantity),
            (ThresholdMap::EvictionSoft, &raw.eviction_soft, quantity),
            (
                ThresholdMap::EvictionSoftGracePeriod,
                &raw.eviction_soft_grace_period,
                "a duration string such as \"1m30s\"",
            ),
            (
                ThresholdMap::EvictionMinimumReclaim,
                &raw.eviction_minimum_reclaim,
                quantity,
            ),
        ];
        for (map, v, expected) in maps {
            let Some(v) = v else { continue };
            let path = map.key();
            let Some(entries) = self.shaped(path, v, "a table of signal names to strings") else {
                continue;
            };
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
                // explicit empty map is "no hard thresholds". SEMANTICS §7.3 reads YAML `{}` as
                // unset because of `omitempty`, but that tag only drops an empty map when one is
                // encoded, and TOML has no such thing: an empty `[evictionHard]` was written on
                // purpose, so it is kept as written, and said so, because commenting out every
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
        // DESIGN §4: our report frequency is never below the update frequency.
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
        let (_, settled) =
            crate::core::quorum::windows(renew, crate::api::request_timeout_for(config));
        let first_kill = config
            .fence
            .node_monitor_grace_period
            .saturating_sub(config.fence.safety_margin);
        let has_peers = config.peers.service.is_some() || !config.peers.static_peers.is_empty();
        if config.fence.mode == crate::core::fence::Mode::Enforce
            && has_peers
            && settled > first_kill
        {
            self.warn(
                r.fence_span.as_ref(),
                "fence.nodeMonitorGracePeriod",
                format!(
                    "the peer quorum is settled {} after the last contact (a renew interval, the controller's 5s monitor period, another renew interval and a request timeout), later than the first kill time ({} = nodeMonitorGracePeriod - safetyMargin): a pod tolerating node.kubernetes.io/unreachable for less than {} is stopped after the control plane could delete it",
                    format_duration(settled),
                    format_duration(first_kill),
                    format_duration(settled - first_kill),
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
            let origin = if span.is_none() {
                " (a default threshold)"
            } else {
                ""
            };
            self.warn(
                span.as_ref(),
                &key_path(map.key(), t.signal.name()),
                format!(
                    "{} has a threshold{origin} but feeds no condition, so it has no effect",
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
                self.warn(
                    r.condition_spans.get(i),
                    &format!("conditions[{i}].signals"),
                    format!(
                        "none of the signals of {} ({}) has a threshold, so it is never True",
                        c.condition_type,
                        names.join(", ")
                    ),
                );
            }
        }
    }

    fn logging(&mut self, path: &str, raw: &RawLogging, config: &mut Config) {
        if let Some(v) = &raw.target {
            let choices = [
                ("auto", LogTarget::Auto),
                ("journald", LogTarget::Journald),
                ("stderr", LogTarget::Stderr),
            ];
            if let Some(t) = self.word(&key!(path, target), v, &choices) {
                config.logging.target = t;
            }
        }
        if let Some(v) = &raw.level {
            use log::LevelFilter as L;
            let choices = [
                ("error", L::Error),
                ("warn", L::Warn),
                ("info", L::Info),
                ("debug", L::Debug),
                ("trace", L::Trace),
            ];
            if let Some(l) = self.word(&key!(path, level), v, &choices) {
                config.logging.level = l;
            }
        }
    }

    fn fence(&mut self, path: &str, raw: &RawFence, config: &mut Config) {
        use crate::core::fence::Mode;
        use crate::terminate::{CgroupDriver as Driver, CgroupVersion as Version};
        let fence = &mut config.fence;
        if let Some(v) = &raw.mode {
            let choices = [
                ("enforce", Mode::Enforce),
                ("dry-run", Mode::DryRun),
                ("off", Mode::Off),
            ];
            if let Some(m) = self.word(&key!(path, mode), v, &choices) {
                fence.mode = m;
            }
        }
        for (v, key, target) in [
            (
                &raw.node_monitor_grace_period,
                key!(path, node_monitor_grace_period),
                &mut fence.node_monitor_grace_period,
            ),
            (
                &raw.unreachable_after,
                key!(path, unreachable_after),
                &mut fence.unreachable_after,
            ),
            (
                &raw.safety_margin,
                key!(path, safety_margin),
                &mut fence.safety_margin,
            ),
            (
                &raw.grace_period_cap,
                key!(path, grace_period_cap),
                &mut fence.grace_period_cap,
            ),
        ] {
            if let Some(d) = v.as_ref().and_then(|v| self.duration(&key, v)) {
                *target = d;
            }
        }
        if let Some(v) = &raw.cgroup_driver {
            let choices = [
                ("auto", None),
                ("systemd", Some(Driver::Systemd)),
                ("cgroupfs", Some(Driver::Cgroupfs)),
            ];
            if let Some(d) = self.word(&key!(path, cgroup_driver), v, &choices) {
                fence.cgroup_driver = d;
            }
        }
        if let Some(v) = &raw.cgroup_version {
            let choices = [
                ("auto", None),
                ("v1", Some(Version::V1)),
                ("v2", Some(Version::V2)),
            ];
            if let Some(d) = self.word(&key!(path, cgroup_version), v, &choices) {
                fence.cgroup_version = d;
            }
        }
        if let Some(v) = &raw.cgroup_root {
            if let Some(p) = self.non_empty_string(&key!(path, cgroup_root), v, "a path") {
                fence.cgroup_root = Some(PathBuf::from(p));
            }
        }
    }

    fn peers(&mut self, path: &str, span: &Range<usize>, raw: &RawPeers, config: &mut Config) {
        use crate::core::quorum::Undecided;
        let peers = &mut config.peers;
        if let Some(v) = &raw.service {
            let key = key!(path, service);
            let expected = "\"namespace/name\" of the headless Service that selects the agents";
            if let Some(s) = self.string(&key, v, expected) {
                match s.split_once('/') {
                    Some((ns, svc)) if names::is_dns_label(ns) && names::is_dns_label(svc) => {
                        peers.service = Some((ns.to_string(), svc.to_string()));
                    }
                    _ => self.error(
                        &v.span(),
                        &key,
                        format!("expected {expected}, each part a DNS label, found \"{s}\""),
                    ),
                }
            }
        }
        if let Some(v) = &raw.port_name {
            let key = key!(path, port_name);
            if let Some(s) = self.non_empty_string(&key, v, "an EndpointSlice port name") {
                if names::is_dns_label(&s) && s.len() <= 15 {
                    peers.port_name = s;
                } else {
                    self.error(&v.span(), &key, format!("expected a port name (a DNS label of at most 15 characters), found \"{s}\""));
                }
            }
        }
        if let Some(v) = &raw.static_ {
            let key = key!(path, static_);
            let expected = "an array of { node, address, zone } tables";
            for (i, item) in self
                .shaped(&key, v, expected)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let item_key = format!("{key}[{i}]");
                if let Some(t) = self.table(&item_key, item, "a { node, address, zone } table") {
                    if let Some(peer) = self.static_peer(&item_key, &item.span(), &t.value) {
                        if peers.static_peers.iter().any(|p| p.node == peer.node) {
                            let message = format!("node \"{}\" is listed twice", peer.node);
                            self.error(&item.span(), &item_key, message);
                        } else {
                            peers.static_peers.push(peer);
                        }
                    }
                }
            }
        }
        if let Some(v) = &raw.listen {
            let expected = "a socket address such as \"0.0.0.0:9843\"";
            if let Some(a) = self.address(&key!(path, listen), v, expected) {
                peers.listen = Some(a);
            }
        }
        if let Some(v) = &raw.key_file {
            if let Some(p) = self.non_empty_string(&key!(path, key_file), v, "a path") {
                peers.key_file = Some(PathBuf::from(p));
            }
        }
        if let Some(v) = &raw.ask {
            match integer_value(v.get_ref()) {
                Some(n) if (1..=1000).contains(&n) => peers.ask = n as usize,
                _ => self.mismatch(
                    &v.span(),
                    &key!(path, ask),
                    "an integer from 1 to 1000",
                    v.get_ref(),
                ),
            }
        }
        let mut timeout_span = None;
        for (v, key, target, is_timeout) in [
            (&raw.timeout, key!(path, timeout), &mut peers.timeout, true),
            (
                &raw.interval,
                key!(path, interval),
                &mut peers.interval,
                false,
            ),
        ] {
            let Some(v) = v else { continue };
            match self.duration(&key, v) {
                Some(d) if d.is_zero() => self.error(&v.span(), &key, "must be greater than zero"),
                Some(d) => {
                    *target = d;
                    if is_timeout {
                        timeout_span = Some(v.span());
                    }
                }
                None => {}
            }
        }
        let choices = [("hold", Undecided::Hold), ("enforce", Undecided::Enforce)];
        for (v, key, target) in [
            (
                &raw.without_peers,
                key!(path, without_peers),
                &mut peers.without_peers,
            ),
            (
                &raw.whole_zone_cut_off,
                key!(path, whole_zone_cut_off),
                &mut peers.whole_zone_cut_off,
            ),
        ] {
            if let Some(c) = v.as_ref().and_then(|v| self.word(&key, v, &choices)) {
                *target = c;
            }
        }

        if let (Some(_), Some(v)) = (&peers.service, &raw.static_) {
            self.error(
                &v.span(),
                &key!(path, static_),
                "peers come from either `service` (EndpointSlices) or `static`, not both",
            );
        }
        let wants_key =
            peers.service.is_some() || !peers.static_peers.is_empty() || peers.listen.is_some();
        if wants_key && peers.key_file.is_none() {
            self.error(span, &key!(path, key_file), "required when `service`, `static` or `listen` is set: peers authenticate each other with this shared key");
        }
        if peers.timeout > peers.interval {
            self.error(
                timeout_span.as_ref().unwrap_or(span),
                &key!(path, timeout),
                format!(
                    "must not exceed peers.interval ({}), found {}",
                    format_duration(peers.interval),
                    format_duration(peers.timeout)
                ),
            );
        }
    }

    fn static_peer(
        &mut self,
        path: &str,
        span: &Range<usize>,
        raw: &RawStaticPeer,
    ) -> Option<crate::core::quorum::Peer> {
        let node = raw.node.as_ref().and_then(|v| {
            let key = key!(path, node);
            let n = self.non_empty_string(&key, v, "a node name")?;
            if !names::is_dns_subdomain(&n) {
                let message = format!("expected a node name (a DNS subdomain), found \"{n}\"");
                self.error(&v.span(), &key, message);
                return None;
            }
            Some(n)
        });
        let address = raw.address.as_ref().and_then(|v| {
            let expected = "an IP address and port such as \"10.0.0.12:9843\" or \"[fd00::12]:9843\" (no host names: DNS may be gone in a partition)";
            self.address(&key!(path, address), v, expected)
        });
        let zone = raw.zone.as_ref().and_then(|v| {
            self.string(&key!(path, zone), v, "a zone name")
                .map(str::to_string)
        });
        // Only an absent key is "missing": a present but invalid one has its own error.
        let absent: Vec<&str> = [("node", &raw.node), ("address", &raw.address)]
            .into_iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        if !absent.is_empty() {
            self.error(span, path, format!("missing {}", absent.join(" and ")));
        }
        Some(crate::core::quorum::Peer {
            node: node?,
            address: address?,
            zone: zone.unwrap_or_default(),
        })
    }

    /// `kubeReserved` / `systemReserved`: resource → non-negative quantity, as the kubelet's
    /// `parseResourceList`, which refuses any resource but cpu, memory, ephemeral-storage and pid.
    fn reserved(&mut self, path: &str, entries: &Entries) -> crate::core::resources::ResourceList {
        use crate::core::allocatable::RESERVABLE;
        use crate::core::quantity::Quantity;
        let mut out = crate::core::resources::ResourceList::new();
        for (k, v) in entries {
            let resource = k.get_ref().as_str();
            let key = key_path(path, resource);
            if !RESERVABLE.contains(&resource) {
                let message = format!(
                    "cannot reserve \"{resource}\"; expected one of: {}",
                    RESERVABLE.join(", ")
                );
                self.error(&k.span(), &key, message);
                continue;
            }
            let expected = "a quantity such as \"500m\", \"1Gi\" or \"1000\"";
            let Some(raw) = self.string(&key, v, expected) else {
                continue;
            };
            match raw.parse::<Quantity>() {
                Ok(q) if q.is_negative() => self.error(
                    &v.span(),
                    &key,
                    format!("expected a quantity of at least 0, found \"{raw}\""),
                ),
                Ok(q) => {
                    out.insert(resource.to_string(), q);
                }
                Err(e) => self.error(&v.span(), &key, format!("expected {expected}: {e}")),
            }
        }
        out
    }

    /// `[[conditions]]`, each table and the rules across them: unique types, each signal feeds
    /// one condition, each taint (key, effect) belongs to one condition.
    fn conditions(
        &mut self,
        path: &str,
        value: &Spanned<Shaped<Vec<Spanned<Shaped<Record<RawCondition>>>>>>,
    ) -> Vec<(ConditionSpec, Range<usize>)> {
        let mut out = Vec::new();
        let expected = "an array of tables ([[conditions]])";
        let Some(items) = self.shaped(path, value, expected) else {
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
            let raw = &record.value;
            let ok = record.unknown.is_empty();
            let Some(spec) = self.condition(&item_path, &item.span(), raw, ok, &mut signal_owner)
            else {
                continue;
            };
            let type_span = raw.type_.as_ref().map_or(item.span(), Spanned::span);
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
                let taint_span = raw.taint_key.as_ref().map_or(item.span(), Spanned::span);
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
            out.push((spec, item.span()));
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
        let mut condition_type = None;
        if let Some(v) = &raw.type_ {
            let key = key!(path, type_);
            let expected = "a condition type in CamelCase, such as \"MemoryContention\"";
            match self.string(&key, v, expected) {
                Some("Ready") => {
                    self.error(
                        &v.span(),
                        &key,
                        "the Ready condition belongs to the kubelet; choose another type",
                    );
                    ok = false;
                }
                Some(t) if is_condition_type(t) => condition_type = Some(t.to_string()),
                Some(t) => {
                    self.error(&v.span(), &key, format!("expected {expected} (letters and digits, starting with an upper-case letter), found \"{t}\""));
                    ok = false;
                }
                None => ok = false,
            }
        } else {
            self.error(
                table_span,
                &key!(path, type_),
                "missing required key; expected a condition type such as \"MemoryPressure\"",
            );
            ok = false;
        }
        let signals = match &raw.signals {
            Some(v) => self.signals(&key!(path, signals), v),
            None => {
                self.error(
                    table_span,
                    &key!(path, signals),
                    "missing required key; expected a non-empty array of signal names such as [\"memory.available\"]",
                );
                None
            }
        };
        ok &= signals.is_some();

        // Reasons and messages default to the kubelet's only for the standard types
        // (SEMANTICS §6.3).
        let standard = condition_type.as_deref().and_then(standard_reasons);
        let reason = "a reason in CamelCase, such as \"MemoryStallHigh\"";
        let texts = [
            (
                &raw.true_reason,
                key!(path, true_reason),
                Some(reason),
                standard.map(|s| s.true_reason),
            ),
            (
                &raw.true_message,
                key!(path, true_message),
                None,
                standard.map(|s| s.true_message),
            ),
            (
                &raw.false_reason,
                key!(path, false_reason),
                Some(reason),
                standard.map(|s| s.false_reason),
            ),
            (
                &raw.false_message,
                key!(path, false_message),
                None,
                standard.map(|s| s.false_message),
            ),
        ];
        let mut read = Vec::new();
        let mut missing = Vec::new();
        for (v, key, reason, default) in texts {
            let text = match (v, reason) {
                (Some(v), Some(expected)) => match self.string(&key, v, expected) {
                    Some(r) if is_reason(r) => Some(r.to_string()),
                    Some(r) => {
                        self.error(&v.span(), &key, format!("expected {expected} (a letter, then letters, digits, '_', ',' or ':'), found \"{r}\""));
                        None
                    }
                    None => None,
                },
                (Some(v), None) => self.string(&key, v, "a message string").map(str::to_string),
                (None, _) => {
                    if default.is_none() {
                        missing.push(key);
                    }
                    default.map(str::to_string)
                }
            };
            ok &= text.is_some() || (v.is_none() && condition_type.is_none());
            read.push(text.unwrap_or_default());
        }
        // Only for a valid type: without one, which keys are needed is not known.
        if condition_type.is_some() {
            for key in missing {
                self.error(table_span, &key, "missing required key; only MemoryPressure, DiskPressure and PIDPressure have default reasons and messages");
            }
        }

        let taint_key = raw.taint_key.as_ref().and_then(|v| {
            let key = key!(path, taint_key);
            let expected =
                "a taint key (a qualified name such as \"example.com/memory-contention\")";
            let t = self.string(&key, v, expected)?;
            let Some(problem) = qualified_name_problem(t) else {
                return Some((t.to_string(), v.span()));
            };
            let message = format!("expected {expected}, found \"{t}\": {problem}");
            self.error(&v.span(), &key, message);
            None
        });
        let taint_effect = raw.taint_effect.as_ref().and_then(|v| {
            let key = key!(path, taint_effect);
            let expected = "one of \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
            let e = self.string(&key, v, expected)?;
            let effect = Effect::parse(e);
            if effect.is_none() {
                self.error(
                    &v.span(),
                    &key,
                    format!("expected {expected}, found \"{e}\""),
                );
            }
            effect.map(|effect| (effect, v.span()))
        });
        ok &= raw.taint_key.is_none() || taint_key.is_some();
        ok &= raw.taint_effect.is_none() || taint_effect.is_some();
        // An invalid taintKey or taintEffect has its own error; only a missing one is reported.
        let taint = match (taint_key, taint_effect) {
            (Some((key, _)), Some((effect, _))) => Some(TaintSpec { key, effect }),
            (Some((_, span)), None) if raw.taint_effect.is_none() => {
                self.error(
                    &span,
                    &key!(path, taint_key),
                    "taintKey needs taintEffect too; set both or neither",
                );
                ok = false;
                None
            }
            (None, Some((_, span))) if raw.taint_key.is_none() => {
                self.error(
                    &span,
                    &key!(path, taint_effect),
                    "taintEffect needs taintKey too; set both or neither",
                );
                ok = false;
                None
            }
            _ => None,
        };

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
        let [true_reason, true_message, false_reason, false_message] =
            <[String; 4]>::try_from(read).ok()?;
        Some(ConditionSpec {
            condition_type,
            signals,
            true_reason,
            true_message,
            false_reason,
            false_message,
            taint,
        })
    }

    fn signals(
        &mut self,
        path: &str,
        value: &Spanned<Shaped<Vec<Spanned<Value>>>>,
    ) -> Option<Vec<SignalRef>> {
        let expected = "a non-empty array of signal names such as [\"memory.available\"] or [\"psi.memory.full.avg10\"]";
        let items = self.shaped(path, value, expected)?;
        if items.is_empty() {
            self.error(
                &value.span(),
                path,
                format!("expected {expected}, found an empty array"),
            );
            return None;
        }
        let mut out: Vec<SignalRef> = Vec::new();
        let mut ok = true;
        for (j, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{j}]");
            let Some(name) = self.string(&item_path, item, "a signal name") else {
                ok = false;
                continue;
            };
            match SignalRef::from_name(name) {
                Some(s) if out.contains(&s) => {
                    let message = format!("{s} is listed more than once");
                    self.error(&item.span(), &item_path, message);
                    ok = false;
                }
                Some(s) => out.push(s),
                None => {
                    let evictions: Vec<&str> = Signal::ALL.iter().map(|s| s.name()).collect();
                    self.error(
                        &item.span(),
                        &item_path,
                        format!(
                            "expected an eviction signal ({}) or a PSI signal psi.<memory|io|cpu>.<some|full>.<avg10|avg60|avg300}}, found \"{name}\"",
                            evictions.join(", ")
                        ),
                    );
                    ok = false;
                }
            }
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

/// Why `s` is not a qualified name (SEMANTICS §8.1), in the API server's words, or `None`.
pub(crate) fn qualified_name_problem(s: &str) -> Option<String> {
    let errors = names::qualified_name_errors(s);
    (!errors.is_empty()).then(|| errors.join("; "))
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
        ] {
            assert!(
                fields.contains(&spelt.as_str()),
                "{spelt} not in {fields:?}"
            );
        }
        assert_eq!(fields_of::<RawConfig>().len(), 29);
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
}
