//! Reading the TOML file: walks the spanned tree from `toml::de::DeTable` key by key, so that every
//! problem is reported at once, each with its line, column and dotted key (DESIGN §4).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use crate::core::signal::{Signal, SignalRef};
use crate::core::taint::Effect;
use crate::core::threshold::{
    EvictionInput, Site, ThresholdError, ThresholdMap, parse_duration, parse_psi_thresholds,
    parse_thresholds,
};

use super::defaults::standard_reasons;
use super::{
    ConditionSpec, Config, ConfigError, ConfigErrors, ConfigWarning, Loaded, LogTarget, TaintSpec,
};

/// Every top-level key, in the order the documentation lists them.
const ROOT_KEYS: &[&str] = &[
    "nodeName",
    "kubeconfig",
    "standalone",
    "nodeStatusUpdateFrequency",
    "nodeStatusReportFrequency",
    "nodeLeaseDurationSeconds",
    "leaseName",
    "leaseNamespace",
    "onlyStatusReporter",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionPressureTransitionPeriod",
    "mergeDefaultEvictionSettings",
    "psiThresholds",
    "kubeReserved",
    "systemReserved",
    "reservedSystemCPUs",
    "procPath",
    "cgroupPath",
    "nodefsPath",
    "imagefsPath",
    "healthAddress",
    "stateDirectory",
    "logging",
    "fence",
    "peers",
    "conditions",
];

const PEERS_KEYS: &[&str] = &[
    "service",
    "portName",
    "static",
    "listen",
    "keyFile",
    "ask",
    "timeout",
    "interval",
    "withoutPeers",
    "wholeZoneCutOff",
];

const STATIC_PEER_KEYS: &[&str] = &["node", "address", "zone"];

const FENCE_KEYS: &[&str] = &[
    "mode",
    "nodeMonitorGracePeriod",
    "unreachableAfter",
    "safetyMargin",
    "gracePeriodCap",
    "cgroupDriver",
    "cgroupVersion",
    "cgroupRoot",
];

const LOGGING_KEYS: &[&str] = &["target", "level"];

const CONDITION_KEYS: &[&str] = &[
    "type",
    "signals",
    "trueReason",
    "trueMessage",
    "falseReason",
    "falseMessage",
    "taintKey",
    "taintEffect",
];

type Entry<'a, 'i> = (&'a Spanned<DeString<'i>>, &'a Spanned<DeValue<'i>>);

/// A table's entries in file order (the map itself is ordered by key).
fn entries<'a, 'i>(table: &'a DeTable<'i>) -> Vec<Entry<'a, 'i>> {
    let mut out: Vec<Entry<'a, 'i>> = table.iter().collect();
    out.sort_by_key(|(k, _)| k.span().start);
    out
}

/// `parent.key`, quoting the key unless it is a bare TOML key.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
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

/// How a value looks in a message: `string "ten"`, `integer 40`, `a table`.
fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("string \"{s}\""),
        DeValue::Integer(i) => format!("integer {i}"),
        DeValue::Float(f) => format!("float {f}"),
        DeValue::Boolean(b) => format!("boolean {b}"),
        DeValue::Datetime(d) => format!("datetime {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

fn integer_value(value: &DeValue<'_>) -> Option<i64> {
    let i = value.as_integer()?;
    i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok()
}

fn number_value(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Float(f) => f.as_str().replace('_', "").parse().ok(),
        DeValue::Integer(_) => integer_value(value).map(|i| i as f64),
        _ => None,
    }
}

/// Where each eviction-map entry sits, so threshold errors can be placed.
#[derive(Default)]
struct EntrySpans {
    spans: HashMap<(ThresholdMap, String), (Range<usize>, Range<usize>)>,
}

/// The walk's state: positions, and everything found so far.
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

    fn unknown_key(&mut self, span: &Range<usize>, path: &str, key: &str, known: &[&str]) {
        let hint = known
            .iter()
            .find(|k| k.eq_ignore_ascii_case(key))
            .map(|k| format!("did you mean \"{k}\"? "))
            .unwrap_or_default();
        self.error(
            span,
            path,
            format!("unknown key; {hint}expected one of: {}", known.join(", ")),
        );
    }

    fn string<'v>(
        &mut self,
        path: &str,
        value: &'v Spanned<DeValue<'_>>,
        expected: &str,
    ) -> Option<&'v str> {
        let found = value.get_ref().as_str();
        if found.is_none() {
            self.error(
                &value.span(),
                path,
                format!("expected {expected}, found {}", describe(value.get_ref())),
            );
        }
        found
    }

    fn non_empty_string(
        &mut self,
        path: &str,
        value: &Spanned<DeValue<'_>>,
        expected: &str,
    ) -> Option<String> {
        let s = self.string(path, value, expected)?;
        if s.is_empty() {
            self.error(
                &value.span(),
                path,
                format!("expected {expected}, found an empty string"),
            );
            return None;
        }
        Some(s.to_string())
    }

    fn bool(&mut self, path: &str, value: &Spanned<DeValue<'_>>) -> Option<bool> {
        let found = value.get_ref().as_bool();
        if found.is_none() {
            self.error(
                &value.span(),
                path,
                format!(
                    "expected a boolean (true or false), found {}",
                    describe(value.get_ref())
                ),
            );
        }
        found
    }

    fn duration(&mut self, path: &str, value: &Spanned<DeValue<'_>>) -> Option<Duration> {
        let raw = self.string(path, value, "a duration string such as \"10s\" or \"5m\"")?;
        match parse_duration(raw) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(&value.span(), path, e.to_string());
                None
            }
        }
    }

    fn table<'a, 'i>(
        &mut self,
        path: &str,
        value: &'a Spanned<DeValue<'i>>,
        expected: &str,
    ) -> Option<&'a DeTable<'i>> {
        let found = value.get_ref().as_table();
        if found.is_none() {
            self.error(
                &value.span(),
                path,
                format!("expected {expected}, found {}", describe(value.get_ref())),
            );
        }
        found
    }
}

/// Parses configuration text; `source` names the file in errors and in `Config::source`.
pub(crate) fn load_text(text: &str, source: Option<&Path>) -> Result<Loaded, ConfigErrors> {
    let file = source.map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let mut w = Walker::new(text, file);

    let (root, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        // The tree may be partial; walking it would add errors that are only echoes. For the same
        // reason only the first syntax error of each line is kept: the parser's recovery tends to
        // report the rest of a broken line again.
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

    let mut config = Config::defaults();
    config.source = source.map(PathBuf::from);
    let mut eviction = EvictionInput::default();
    let mut spans = EntrySpans::default();
    let mut psi_entries: Vec<(String, f64)> = Vec::new();
    let mut conditions: Option<Vec<(ConditionSpec, Range<usize>)>> = None;
    let mut update_span = None;
    let mut fence_span: Option<Range<usize>> = None;
    let mut report_span = None;

    for (key, value) in entries(root.get_ref()) {
        let name: &str = key.get_ref();
        let path = key_path("", name);
        let span = value.span();
        match name {
            "nodeName" => {
                if let Some(s) = w.non_empty_string(&path, value, "a node name") {
                    if is_dns_subdomain(&s) {
                        config.node_name = Some(s);
                    } else {
                        w.error(
                            &span,
                            &path,
                            format!("expected a node name (a DNS subdomain: lowercase letters, digits, '-' and '.'), found \"{s}\""),
                        );
                    }
                }
            }
            "kubeconfig" => {
                config.kubeconfig = w
                    .non_empty_string(&path, value, "the path of a kubeconfig file")
                    .map(PathBuf::from);
            }
            "onlyStatusReporter" => {
                if let Some(b) = w.bool(&path, value) {
                    config.only_status_reporter = b;
                }
            }
            "leaseName" | "leaseNamespace" => {
                if let Some(s) = w.non_empty_string(&path, value, "an object name") {
                    if is_dns_subdomain(&s) {
                        if name == "leaseName" {
                            config.lease_name = Some(s);
                        } else {
                            config.lease_namespace = s;
                        }
                    } else {
                        w.error(
                            &span,
                            &path,
                            format!("expected a DNS subdomain (lowercase letters, digits, '-' and '.'), found \"{s}\""),
                        );
                    }
                }
            }
            "standalone" => {
                if let Some(b) = w.bool(&path, value) {
                    config.standalone = b;
                }
            }
            "nodeStatusUpdateFrequency" => {
                if let Some(d) = w.duration(&path, value) {
                    if d.is_zero() {
                        w.error(
                            &span,
                            &path,
                            "expected a duration greater than 0, such as \"10s\", found \"0s\"",
                        );
                    } else {
                        config.node_status_update_frequency = d;
                        update_span = Some(span);
                    }
                }
            }
            "nodeStatusReportFrequency" => {
                if let Some(d) = w.duration(&path, value) {
                    config.node_status_report_frequency = d;
                    report_span = Some(span);
                }
            }
            "nodeLeaseDurationSeconds" => match integer_value(value.get_ref()) {
                Some(n) if n > 0 && n <= i64::from(u32::MAX) => {
                    config.node_lease_duration_seconds = n as u32
                }
                Some(n) => w.error(
                    &span,
                    &path,
                    format!("expected a whole number of seconds greater than 0, found {n}"),
                ),
                None => w.error(
                    &span,
                    &path,
                    format!(
                        "expected a whole number of seconds such as 40, found {}",
                        describe(value.get_ref())
                    ),
                ),
            },
            "evictionHard"
            | "evictionSoft"
            | "evictionSoftGracePeriod"
            | "evictionMinimumReclaim" => {
                let (map, target) = match name {
                    "evictionHard" => (ThresholdMap::EvictionHard, &mut eviction.hard),
                    "evictionSoft" => (ThresholdMap::EvictionSoft, &mut eviction.soft),
                    "evictionSoftGracePeriod" => (
                        ThresholdMap::EvictionSoftGracePeriod,
                        &mut eviction.soft_grace_period,
                    ),
                    _ => (
                        ThresholdMap::EvictionMinimumReclaim,
                        &mut eviction.minimum_reclaim,
                    ),
                };
                let expected = if map == ThresholdMap::EvictionSoftGracePeriod {
                    "a duration string such as \"1m30s\""
                } else {
                    "a quantity such as \"100Mi\" or a percentage such as \"10%\""
                };
                if let Some(table) = w.table(&path, value, "a table of signal names to strings") {
                    for (k, v) in entries(table) {
                        let signal: &str = k.get_ref();
                        let entry_path = key_path(&path, signal);
                        if let Some(raw) = w.string(&entry_path, v, expected) {
                            target.push((signal.to_string(), raw.to_string()));
                            spans
                                .spans
                                .insert((map, signal.to_string()), (k.span(), v.span()));
                        }
                    }
                    if map == ThresholdMap::EvictionHard {
                        // The kubelet fills its defaults only when evictionHard is absent (nil);
                        // an explicit empty map is "no hard thresholds". SEMANTICS §7.3 reads
                        // YAML `{}` as unset because of `omitempty`, but that tag only drops an
                        // empty map when one is encoded, and TOML has no such thing: an empty
                        // `[evictionHard]` was written on purpose, so it is kept as written,
                        // and said so, because commenting out every line leaves one behind.
                        eviction.hard_set = true;
                        if table.is_empty() {
                            w.warn(
                                Some(&key.span()),
                                &path,
                                "an empty [evictionHard] table means no hard eviction thresholds, \
                                 as an empty evictionHard does for the kubelet (its defaults apply \
                                 only when evictionHard is absent); remove the table to get the \
                                 defaults, or set mergeDefaultEvictionSettings = true",
                            );
                        }
                    }
                }
            }
            "evictionPressureTransitionPeriod" => {
                if let Some(d) = w.duration(&path, value) {
                    config.eviction_pressure_transition_period = d;
                }
            }
            "mergeDefaultEvictionSettings" => {
                if let Some(b) = w.bool(&path, value) {
                    config.merge_default_eviction_settings = b;
                    eviction.merge_defaults = b;
                }
            }
            "psiThresholds" => {
                if let Some(table) =
                    w.table(&path, value, "a table of PSI signal names to percentages")
                {
                    for (k, v) in entries(table) {
                        let signal: &str = k.get_ref();
                        let entry_path = key_path(&path, signal);
                        match number_value(v.get_ref()) {
                            Some(n) => {
                                psi_entries.push((signal.to_string(), n));
                                spans.spans.insert((ThresholdMap::PsiThresholds, signal.to_string()), (k.span(), v.span()));
                            }
                            None => w.error(
                                &v.span(),
                                &entry_path,
                                format!(
                                    "expected a percentage of stall time greater than 0 and at most 100, such as 10.0, found {}",
                                    describe(v.get_ref())
                                ),
                            ),
                        }
                    }
                }
            }
            "kubeReserved" | "systemReserved" => {
                if let Some(table) =
                    w.table(&path, value, "a table of resource names to quantities")
                {
                    let reserved = read_reserved(&mut w, &path, table);
                    if name == "kubeReserved" {
                        config.kube_reserved = reserved;
                    } else {
                        config.system_reserved = reserved;
                    }
                }
            }
            "reservedSystemCPUs" => {
                let expected = "a CPU list such as \"0-1,8\"";
                if let Some(raw) = w.string(&path, value, expected) {
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
                            w.error(&span, &path, format!("expected {expected}: {problem}"))
                        }
                    }
                }
            }
            "procPath" | "cgroupPath" | "nodefsPath" | "imagefsPath" | "stateDirectory" => {
                if let Some(p) = w.non_empty_string(&path, value, "a path") {
                    let p = PathBuf::from(p);
                    match name {
                        "procPath" => config.proc_path = p,
                        "cgroupPath" => config.cgroup_path = p,
                        "nodefsPath" => config.nodefs_path = p,
                        "imagefsPath" => config.imagefs_path = p,
                        _ => config.state_directory = p,
                    }
                }
            }
            "healthAddress" => {
                let expected = "a socket address such as \"127.0.0.1:9842\" or \"[::1]:9842\"";
                if let Some(raw) = w.string(&path, value, expected) {
                    match raw.parse::<SocketAddr>() {
                        Ok(addr) => config.health_address = addr,
                        Err(_) => w.error(
                            &span,
                            &path,
                            format!("expected {expected}, found \"{raw}\""),
                        ),
                    }
                }
            }
            "logging" => {
                if let Some(table) = w.table(&path, value, "a table with target and level") {
                    read_logging(&mut w, &path, table, &mut config);
                }
            }
            "fence" => {
                fence_span = Some(span.clone());
                if let Some(table) = w.table(&path, value, "a table of fence settings") {
                    read_fence(&mut w, &path, table, &mut config);
                }
            }
            "peers" => {
                if let Some(table) = w.table(&path, value, "a table of peer settings") {
                    read_peers(&mut w, &path, &span, table, &mut config);
                }
            }
            "conditions" => {
                conditions = Some(read_conditions(&mut w, &path, value));
            }
            _ => w.unknown_key(&key.span(), &path, name, ROOT_KEYS),
        }
    }

    // DESIGN §4: our report frequency is never below the update frequency.
    if config.node_status_report_frequency < config.node_status_update_frequency {
        let (span, key) = match (&report_span, &update_span) {
            (Some(s), _) => (s.clone(), "nodeStatusReportFrequency"),
            (None, Some(s)) => (s.clone(), "nodeStatusUpdateFrequency"),
            (None, None) => (0..0, "nodeStatusReportFrequency"),
        };
        w.error(
            &span,
            key,
            format!(
                "nodeStatusReportFrequency ({}) must be at least nodeStatusUpdateFrequency ({})",
                crate::core::threshold::format_duration(config.node_status_report_frequency),
                crate::core::threshold::format_duration(config.node_status_update_frequency),
            ),
        );
    }

    // Contact is proven by the Lease renewals: a window shorter than their interval would declare
    // the node cut off between two healthy renewals.
    let renew = Duration::from_secs(u64::from(config.node_lease_duration_seconds)) / 4;
    if config.fence.unreachable_after <= renew {
        w.error(
            &fence_span.clone().unwrap_or(0..0),
            "fence.unreachableAfter",
            format!(
                "must be longer than the Lease renew interval ({}, a quarter of nodeLeaseDurationSeconds), found {}",
                crate::core::threshold::format_duration(renew),
                crate::core::threshold::format_duration(config.fence.unreachable_after),
            ),
        );
    }

    // With peers, the quorum's count is settled only this long after the last contact: a pod
    // whose kill time comes earlier waits for it, and is stopped late.
    let (_, settled) =
        crate::core::quorum::windows(renew, crate::api::request_timeout_for(&config));
    let first_kill = config
        .fence
        .node_monitor_grace_period
        .saturating_sub(config.fence.safety_margin);
    let has_peers = config.peers.service.is_some() || !config.peers.static_peers.is_empty();
    if config.fence.mode == crate::core::fence::Mode::Enforce && has_peers && settled > first_kill {
        w.warn(
            fence_span.as_ref(),
            "fence.nodeMonitorGracePeriod",
            format!(
                "the peer quorum is settled {} after the last contact (a renew interval, the controller's 5s monitor period, another renew interval and a request timeout), later than the first kill time ({} = nodeMonitorGracePeriod - safetyMargin): a pod tolerating node.kubernetes.io/unreachable for less than {} is stopped after the control plane could delete it",
                crate::core::threshold::format_duration(settled),
                crate::core::threshold::format_duration(first_kill),
                crate::core::threshold::format_duration(settled - first_kill),
            ),
        );
    }

    let threshold_issue = |w: &mut Walker<'_>, issue: &ThresholdError, is_error: bool| {
        let path = key_path(issue.map.key(), &issue.signal);
        let span = spans
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
    match parse_thresholds(&eviction) {
        Ok(parsed) => {
            config.thresholds = parsed.thresholds;
            for warning in &parsed.warnings {
                threshold_issue(&mut w, warning, false);
            }
        }
        Err(errors) => {
            for e in &errors {
                threshold_issue(&mut w, e, true);
            }
        }
    }
    match parse_psi_thresholds(&psi_entries) {
        Ok(psi) => config.psi_thresholds = psi,
        Err(errors) => {
            for e in &errors {
                threshold_issue(&mut w, e, true);
            }
        }
    }

    let condition_spans: Vec<Range<usize>>;
    if let Some(read) = conditions {
        condition_spans = read.iter().map(|(_, s)| s.clone()).collect();
        config.conditions = read.into_iter().map(|(c, _)| c).collect();
    } else {
        condition_spans = Vec::new();
    }

    if !w.errors.is_empty() {
        // File order, whichever check found them (stable: same-position errors keep their order).
        w.errors.sort_by_key(|e| (e.line, e.column));
        return Err(ConfigErrors(w.errors));
    }
    coverage_warnings(&mut w, &config, &spans, &condition_spans);
    Ok(Loaded {
        config,
        warnings: w.warnings,
    })
}

/// Warnings about thresholds and conditions that cannot affect each other.
fn coverage_warnings(
    w: &mut Walker<'_>,
    config: &Config,
    spans: &EntrySpans,
    condition_spans: &[Range<usize>],
) {
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
        let span = spans
            .spans
            .get(&(map, t.signal.name().to_string()))
            .map(|(k, _)| k.clone());
        let origin = if span.is_none() {
            " (a default threshold)"
        } else {
            ""
        };
        w.warn(
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
        let span = spans
            .spans
            .get(&(ThresholdMap::PsiThresholds, key.clone()))
            .map(|(k, _)| k.clone());
        w.warn(
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
            w.warn(
                condition_spans.get(i),
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

/// One of a fixed set of words, or an error saying which were expected.
fn word<T: Copy>(
    w: &mut Walker<'_>,
    key: &str,
    v: &Spanned<DeValue<'_>>,
    choices: &[(&str, T)],
) -> Option<T> {
    let expected = format!(
        "one of {}",
        choices
            .iter()
            .map(|(c, _)| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let raw = w.string(key, v, &expected)?;
    let found = choices.iter().find(|(c, _)| *c == raw).map(|(_, t)| *t);
    if found.is_none() {
        w.error(
            &v.span(),
            key,
            format!("expected {expected}, found \"{raw}\""),
        );
    }
    found
}

fn read_fence(w: &mut Walker<'_>, path: &str, table: &DeTable<'_>, config: &mut Config) {
    use crate::core::fence::Mode;
    use crate::terminate::{CgroupDriver as Driver, CgroupVersion as Version};
    for (k, v) in entries(table) {
        let name: &str = k.get_ref();
        let key = key_path(path, name);
        match name {
            "mode" => {
                let choices = [
                    ("enforce", Mode::Enforce),
                    ("dry-run", Mode::DryRun),
                    ("off", Mode::Off),
                ];
                if let Some(m) = word(w, &key, v, &choices) {
                    config.fence.mode = m;
                }
            }
            "cgroupDriver" => {
                let choices = [
                    ("auto", None),
                    ("systemd", Some(Driver::Systemd)),
                    ("cgroupfs", Some(Driver::Cgroupfs)),
                ];
                if let Some(d) = word(w, &key, v, &choices) {
                    config.fence.cgroup_driver = d;
                }
            }
            "cgroupVersion" => {
                let choices = [
                    ("auto", None),
                    ("v1", Some(Version::V1)),
                    ("v2", Some(Version::V2)),
                ];
                if let Some(d) = word(w, &key, v, &choices) {
                    config.fence.cgroup_version = d;
                }
            }
            "cgroupRoot" => {
                if let Some(p) = w.non_empty_string(&key, v, "a path") {
                    config.fence.cgroup_root = Some(std::path::PathBuf::from(p));
                }
            }
            "nodeMonitorGracePeriod" | "unreachableAfter" | "safetyMargin" | "gracePeriodCap" => {
                if let Some(d) = w.duration(&key, v) {
                    match name {
                        "nodeMonitorGracePeriod" => config.fence.node_monitor_grace_period = d,
                        "unreachableAfter" => config.fence.unreachable_after = d,
                        "safetyMargin" => config.fence.safety_margin = d,
                        _ => config.fence.grace_period_cap = d,
                    }
                }
            }
            _ => w.unknown_key(&k.span(), &key, name, FENCE_KEYS),
        }
    }
}

fn read_peers(
    w: &mut Walker<'_>,
    path: &str,
    span: &Range<usize>,
    table: &DeTable<'_>,
    config: &mut Config,
) {
    use crate::core::quorum::Undecided;
    let peers = &mut config.peers;
    let mut static_span = None;
    let mut timeout_span = None;
    for (k, v) in entries(table) {
        let name: &str = k.get_ref();
        let key = key_path(path, name);
        match name {
            "service" => {
                let expected = "\"namespace/name\" of the headless Service that selects the agents";
                if let Some(raw) = w.string(&key, v, expected) {
                    match raw.split_once('/') {
                        Some((ns, svc))
                            if is_dns_label_like(ns)
                                && ns.len() <= 63
                                && is_dns_label_like(svc)
                                && svc.len() <= 63 =>
                        {
                            peers.service = Some((ns.to_string(), svc.to_string()));
                        }
                        _ => w.error(
                            &v.span(),
                            &key,
                            format!("expected {expected}, each part a DNS label, found \"{raw}\""),
                        ),
                    }
                }
            }
            "portName" => {
                if let Some(raw) = w.non_empty_string(&key, v, "an EndpointSlice port name") {
                    if is_dns_label_like(&raw) && raw.len() <= 15 {
                        peers.port_name = raw;
                    } else {
                        w.error(&v.span(), &key, format!("expected a port name (a DNS label of at most 15 characters), found \"{raw}\""));
                    }
                }
            }
            "static" => {
                static_span = Some(v.span());
                let Some(list) = v.get_ref().as_array() else {
                    w.error(
                        &v.span(),
                        &key,
                        format!(
                            "expected an array of {{ node, address, zone }} tables, found {}",
                            describe(v.get_ref())
                        ),
                    );
                    continue;
                };
                for (i, item) in list.iter().enumerate() {
                    let item_key = format!("{key}[{i}]");
                    let Some(t) = w.table(&item_key, item, "a { node, address, zone } table")
                    else {
                        continue;
                    };
                    let (mut node, mut address, mut zone) = (None, None, String::new());
                    for (ik, iv) in entries(t) {
                        let iname: &str = ik.get_ref();
                        let ikey = key_path(&item_key, iname);
                        match iname {
                            "node" => {
                                if let Some(n) = w.non_empty_string(&ikey, iv, "a node name") {
                                    if is_dns_subdomain(&n) {
                                        node = Some(n);
                                    } else {
                                        w.error(&iv.span(), &ikey, format!("expected a node name (a DNS subdomain), found \"{n}\""));
                                    }
                                }
                            }
                            "address" => {
                                let expected = "an IP address and port such as \"10.0.0.12:9843\" or \"[fd00::12]:9843\" (no host names: DNS may be gone in a partition)";
                                if let Some(raw) = w.string(&ikey, iv, expected) {
                                    match raw.parse::<SocketAddr>() {
                                        Ok(a) => address = Some(a),
                                        Err(_) => w.error(
                                            &iv.span(),
                                            &ikey,
                                            format!("expected {expected}, found \"{raw}\""),
                                        ),
                                    }
                                }
                            }
                            "zone" => {
                                if let Some(z) = w.string(&ikey, iv, "a zone name") {
                                    zone = z.to_string();
                                }
                            }
                            _ => w.unknown_key(&ik.span(), &ikey, iname, STATIC_PEER_KEYS),
                        }
                    }
                    match (node, address) {
                        (Some(node), Some(address)) => {
                            if peers.static_peers.iter().any(|p| p.node == node) {
                                w.error(
                                    &item.span(),
                                    &item_key,
                                    format!("node \"{node}\" is listed twice"),
                                );
                            } else {
                                peers.static_peers.push(crate::core::quorum::Peer {
                                    node,
                                    address,
                                    zone,
                                });
                            }
                        }
                        (n, a) => {
                            let missing: Vec<&str> =
                                [("node", n.is_none()), ("address", a.is_none())]
                                    .into_iter()
                                    .filter(|(_, m)| *m)
                                    .map(|(k, _)| k)
                                    .collect();
                            // Only when the key is absent: a present but invalid one has its error.
                            let absent: Vec<&str> = missing
                                .into_iter()
                                .filter(|k| t.get(*k).is_none())
                                .collect();
                            if !absent.is_empty() {
                                w.error(
                                    &item.span(),
                                    &item_key,
                                    format!("missing {}", absent.join(" and ")),
                                );
                            }
                        }
                    }
                }
            }
            "listen" => {
                let expected = "a socket address such as \"0.0.0.0:9843\"";
                if let Some(raw) = w.string(&key, v, expected) {
                    match raw.parse::<SocketAddr>() {
                        Ok(a) => peers.listen = Some(a),
                        Err(_) => w.error(
                            &v.span(),
                            &key,
                            format!("expected {expected}, found \"{raw}\""),
                        ),
                    }
                }
            }
            "keyFile" => {
                if let Some(p) = w.non_empty_string(&key, v, "a path") {
                    peers.key_file = Some(PathBuf::from(p));
                }
            }
            "ask" => match integer_value(v.get_ref()) {
                Some(n) if (1..=1000).contains(&n) => peers.ask = n as usize,
                _ => w.error(
                    &v.span(),
                    &key,
                    format!(
                        "expected an integer from 1 to 1000, found {}",
                        describe(v.get_ref())
                    ),
                ),
            },
            "timeout" | "interval" => {
                if let Some(d) = w.duration(&key, v) {
                    if d.is_zero() {
                        w.error(&v.span(), &key, "must be greater than zero");
                    } else if name == "timeout" {
                        peers.timeout = d;
                        timeout_span = Some(v.span());
                    } else {
                        peers.interval = d;
                    }
                }
            }
            "withoutPeers" | "wholeZoneCutOff" => {
                let choices = [("hold", Undecided::Hold), ("enforce", Undecided::Enforce)];
                if let Some(c) = word(w, &key, v, &choices) {
                    if name == "withoutPeers" {
                        peers.without_peers = c;
                    } else {
                        peers.whole_zone_cut_off = c;
                    }
                }
            }
            _ => w.unknown_key(&k.span(), &key, name, PEERS_KEYS),
        }
    }
    if peers.service.is_some() && static_span.is_some() {
        w.error(
            &static_span.unwrap_or(0..0),
            "peers.static",
            "peers come from either `service` (EndpointSlices) or `static`, not both",
        );
    }
    let wants_key =
        peers.service.is_some() || !peers.static_peers.is_empty() || peers.listen.is_some();
    if wants_key && peers.key_file.is_none() {
        w.error(span, "peers.keyFile", "required when `service`, `static` or `listen` is set: peers authenticate each other with this shared key");
    }
    if peers.timeout > peers.interval {
        w.error(
            timeout_span.as_ref().unwrap_or(span),
            "peers.timeout",
            format!(
                "must not exceed peers.interval ({}), found {}",
                crate::core::threshold::format_duration(peers.interval),
                crate::core::threshold::format_duration(peers.timeout)
            ),
        );
    }
}

/// Reads `kubeReserved` / `systemReserved`: resource → non-negative quantity, as the kubelet's
/// `parseResourceList`, which refuses any resource but cpu, memory, ephemeral-storage and pid.
fn read_reserved(
    w: &mut Walker<'_>,
    path: &str,
    table: &DeTable<'_>,
) -> crate::core::resources::ResourceList {
    use crate::core::allocatable::RESERVABLE;
    use crate::core::quantity::Quantity;
    let mut out = crate::core::resources::ResourceList::new();
    for (k, v) in entries(table) {
        let resource: &str = k.get_ref();
        let key = key_path(path, resource);
        if !RESERVABLE.contains(&resource) {
            w.error(
                &k.span(),
                &key,
                format!(
                    "cannot reserve \"{resource}\"; expected one of: {}",
                    RESERVABLE.join(", ")
                ),
            );
            continue;
        }
        let expected = "a quantity such as \"500m\", \"1Gi\" or \"1000\"";
        let Some(raw) = w.string(&key, v, expected) else {
            continue;
        };
        match raw.parse::<Quantity>() {
            Ok(q) if q.is_negative() => w.error(
                &v.span(),
                &key,
                format!("expected a quantity of at least 0, found \"{raw}\""),
            ),
            Ok(q) => {
                out.insert(resource.to_string(), q);
            }
            Err(e) => w.error(&v.span(), &key, format!("expected {expected}: {e}")),
        }
    }
    out
}

fn read_logging(w: &mut Walker<'_>, path: &str, table: &DeTable<'_>, config: &mut Config) {
    for (k, v) in entries(table) {
        let name: &str = k.get_ref();
        let key = key_path(path, name);
        match name {
            "target" => {
                let expected = "one of \"auto\", \"journald\", \"stderr\"";
                if let Some(raw) = w.string(&key, v, expected) {
                    match raw {
                        "auto" => config.logging.target = LogTarget::Auto,
                        "journald" => config.logging.target = LogTarget::Journald,
                        "stderr" => config.logging.target = LogTarget::Stderr,
                        _ => w.error(
                            &v.span(),
                            &key,
                            format!("expected {expected}, found \"{raw}\""),
                        ),
                    }
                }
            }
            "level" => {
                let expected = "one of \"error\", \"warn\", \"info\", \"debug\", \"trace\"";
                if let Some(raw) = w.string(&key, v, expected) {
                    let level = match raw {
                        "error" => Some(log::LevelFilter::Error),
                        "warn" => Some(log::LevelFilter::Warn),
                        "info" => Some(log::LevelFilter::Info),
                        "debug" => Some(log::LevelFilter::Debug),
                        "trace" => Some(log::LevelFilter::Trace),
                        _ => None,
                    };
                    match level {
                        Some(l) => config.logging.level = l,
                        None => w.error(
                            &v.span(),
                            &key,
                            format!("expected {expected}, found \"{raw}\""),
                        ),
                    }
                }
            }
            _ => w.unknown_key(&k.span(), &key, name, LOGGING_KEYS),
        }
    }
}

/// Reads `[[conditions]]`, checking each table and the rules across them: unique types, each
/// signal feeds one condition, each taint (key, effect) belongs to one condition.
fn read_conditions(
    w: &mut Walker<'_>,
    path: &str,
    value: &Spanned<DeValue<'_>>,
) -> Vec<(ConditionSpec, Range<usize>)> {
    let Some(array) = value.get_ref().as_array() else {
        w.error(
            &value.span(),
            path,
            format!(
                "expected an array of tables ([[conditions]]), found {}",
                describe(value.get_ref())
            ),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut types: HashMap<String, usize> = HashMap::new();
    let mut signal_owner: BTreeMap<SignalRef, String> = BTreeMap::new();
    let mut taints: HashMap<(String, Effect), usize> = HashMap::new();
    for (i, item) in array.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let Some(table) = w.table(&item_path, item, "a table with type, signals and reasons")
        else {
            continue;
        };
        let Some(spec) = read_condition(w, &item_path, table, &item.span(), &mut signal_owner)
        else {
            continue;
        };
        let type_span = table.get("type").map_or(item.span(), |v| v.span());
        if let Some(first) = types.get(&spec.condition_type) {
            w.error(
                &type_span,
                &format!("{item_path}.type"),
                format!(
                    "condition type {} is already defined by {path}[{first}]; types must be unique",
                    spec.condition_type
                ),
            );
        } else {
            types.insert(spec.condition_type.clone(), i);
        }
        if let Some(taint) = &spec.taint {
            let taint_span = table.get("taintKey").map_or(item.span(), |v| v.span());
            if let Some(first) = taints.get(&(taint.key.clone(), taint.effect)) {
                w.error(
                    &taint_span,
                    &format!("{item_path}.taintKey"),
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

fn read_condition(
    w: &mut Walker<'_>,
    path: &str,
    table: &DeTable<'_>,
    table_span: &Range<usize>,
    signal_owner: &mut BTreeMap<SignalRef, String>,
) -> Option<ConditionSpec> {
    let mut condition_type = None;
    let mut signals: Option<Vec<SignalRef>> = None;
    let mut texts: HashMap<&'static str, String> = HashMap::new();
    let mut taint_key: Option<(String, Range<usize>)> = None;
    let mut taint_effect: Option<(Effect, Range<usize>)> = None;
    let mut ok = true;

    for (k, v) in entries(table) {
        let name: &str = k.get_ref();
        let key = key_path(path, name);
        match name {
            "type" => {
                let expected = "a condition type in CamelCase, such as \"MemoryContention\"";
                match w.string(&key, v, expected) {
                    Some("Ready") => {
                        w.error(
                            &v.span(),
                            &key,
                            "the Ready condition belongs to the kubelet; choose another type",
                        );
                        ok = false;
                    }
                    Some(t) if is_condition_type(t) => condition_type = Some(t.to_string()),
                    Some(t) => {
                        w.error(&v.span(), &key, format!("expected {expected} (letters and digits, starting with an upper-case letter), found \"{t}\""));
                        ok = false;
                    }
                    None => ok = false,
                }
            }
            "signals" => {
                signals = read_signals(w, &key, v);
                ok &= signals.is_some();
            }
            "trueReason" | "falseReason" => {
                let expected = "a reason in CamelCase, such as \"MemoryStallHigh\"";
                match w.string(&key, v, expected) {
                    Some(r) if is_reason(r) => {
                        texts.insert(
                            if name == "trueReason" {
                                "trueReason"
                            } else {
                                "falseReason"
                            },
                            r.to_string(),
                        );
                    }
                    Some(r) => {
                        w.error(&v.span(), &key, format!("expected {expected} (a letter, then letters, digits, '_', ',' or ':'), found \"{r}\""));
                        ok = false;
                    }
                    None => ok = false,
                }
            }
            "trueMessage" | "falseMessage" => match w.string(&key, v, "a message string") {
                Some(m) => {
                    texts.insert(
                        if name == "trueMessage" {
                            "trueMessage"
                        } else {
                            "falseMessage"
                        },
                        m.to_string(),
                    );
                }
                None => ok = false,
            },
            "taintKey" => {
                let expected =
                    "a taint key (a qualified name such as \"example.com/memory-contention\")";
                match w.string(&key, v, expected) {
                    Some(t) => match qualified_name_problem(t) {
                        None => taint_key = Some((t.to_string(), v.span())),
                        Some(problem) => {
                            w.error(
                                &v.span(),
                                &key,
                                format!("expected {expected}, found \"{t}\": {problem}"),
                            );
                            ok = false;
                        }
                    },
                    None => ok = false,
                }
            }
            "taintEffect" => {
                let expected = "one of \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
                match w.string(&key, v, expected) {
                    Some(e) => match Effect::parse(e) {
                        Some(effect) => taint_effect = Some((effect, v.span())),
                        None => {
                            w.error(
                                &v.span(),
                                &key,
                                format!("expected {expected}, found \"{e}\""),
                            );
                            ok = false;
                        }
                    },
                    None => ok = false,
                }
            }
            _ => {
                w.unknown_key(&k.span(), &key, name, CONDITION_KEYS);
                ok = false;
            }
        }
    }

    if !table.contains_key("type") {
        w.error(
            table_span,
            &format!("{path}.type"),
            "missing required key; expected a condition type such as \"MemoryPressure\"",
        );
        ok = false;
    }
    if !table.contains_key("signals") {
        w.error(
            table_span,
            &format!("{path}.signals"),
            "missing required key; expected a non-empty array of signal names such as [\"memory.available\"]",
        );
        ok = false;
    }
    // Reasons and messages default to the kubelet's only for the standard types (SEMANTICS §6.3).
    let standard = condition_type.as_deref().and_then(standard_reasons);
    let mut text = |field: &'static str, default: Option<&'static str>| -> String {
        if let Some(t) = texts.remove(field) {
            return t;
        }
        match default {
            Some(d) => d.to_string(),
            None => {
                if condition_type.is_some() {
                    w.error(
                        table_span,
                        &format!("{path}.{field}"),
                        "missing required key; only MemoryPressure, DiskPressure and PIDPressure have default reasons and messages",
                    );
                    ok = false;
                }
                String::new()
            }
        }
    };
    let true_reason = text("trueReason", standard.map(|s| s.true_reason));
    let true_message = text("trueMessage", standard.map(|s| s.true_message));
    let false_reason = text("falseReason", standard.map(|s| s.false_reason));
    let false_message = text("falseMessage", standard.map(|s| s.false_message));

    // An invalid taintKey or taintEffect has its own error; only a missing one is reported here.
    let has_key = table.contains_key("taintKey");
    let has_effect = table.contains_key("taintEffect");
    let taint = match (taint_key, taint_effect) {
        (Some((key, _)), Some((effect, _))) => Some(TaintSpec { key, effect }),
        (Some((_, span)), None) if !has_effect => {
            w.error(
                &span,
                &format!("{path}.taintKey"),
                "taintKey needs taintEffect too; set both or neither",
            );
            ok = false;
            None
        }
        (None, Some((_, span))) if !has_key => {
            w.error(
                &span,
                &format!("{path}.taintEffect"),
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
    if let Some(v) = table.get("signals") {
        let items = v
            .get_ref()
            .as_array()
            .map(|a| a.to_vec())
            .unwrap_or_default();
        for (j, signal) in signals.iter().enumerate() {
            if let Some(owner) = signal_owner.get(signal) {
                let span = items.get(j).map_or(v.span(), |item| item.span());
                w.error(
                    &span,
                    &format!("{path}.signals[{j}]"),
                    format!("{signal} already feeds condition {owner}; a signal may feed only one condition"),
                );
                // Still return the condition, so clashes of its type and taint are reported too.
            } else {
                signal_owner.insert(*signal, condition_type.clone());
            }
        }
    }
    if !ok {
        return None;
    }
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

fn read_signals(
    w: &mut Walker<'_>,
    path: &str,
    value: &Spanned<DeValue<'_>>,
) -> Option<Vec<SignalRef>> {
    let expected = "a non-empty array of signal names such as [\"memory.available\"] or [\"psi.memory.full.avg10\"]";
    let Some(array) = value.get_ref().as_array() else {
        w.error(
            &value.span(),
            path,
            format!("expected {expected}, found {}", describe(value.get_ref())),
        );
        return None;
    };
    if array.is_empty() {
        w.error(
            &value.span(),
            path,
            format!("expected {expected}, found an empty array"),
        );
        return None;
    }
    let mut out: Vec<SignalRef> = Vec::new();
    let mut ok = true;
    for (j, item) in array.iter().enumerate() {
        let item_path = format!("{path}[{j}]");
        let Some(name) = w.string(&item_path, item, "a signal name") else {
            ok = false;
            continue;
        };
        match SignalRef::from_name(name) {
            Some(s) if out.contains(&s) => {
                w.error(
                    &item.span(),
                    &item_path,
                    format!("{s} is listed more than once"),
                );
                ok = false;
            }
            Some(s) => out.push(s),
            None => {
                let evictions: Vec<&str> = Signal::ALL.iter().map(|s| s.name()).collect();
                w.error(
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

/// RFC 1123 DNS subdomain, as node names must be.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label_like)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_label_like(label: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !label.is_empty()
        && label.chars().all(|c| alnum(c) || c == '-')
        && label.chars().next().is_some_and(alnum)
        && label.chars().last().is_some_and(alnum)
}

/// Why `s` is not a qualified name (SEMANTICS §8.1), in the API server's words, or `None`.
pub(crate) fn qualified_name_problem(s: &str) -> Option<String> {
    let errors = crate::core::validation::qualified_name_errors(s);
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
}
