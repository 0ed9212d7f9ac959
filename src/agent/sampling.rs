//! The sampling loop: sample → decide → record, every update period, pinging the systemd
//! watchdog on every wake-up. It never waits on the API server: in connected mode it publishes
//! each decision on a channel for the reporter and carries on.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::agent::clock::Clock;
use crate::agent::{Decider, Source, node_name, wake_interval};
use crate::api::events::PendingEvent;
use crate::config::{ConditionSpec, Config, TaintSpec};
use crate::core::condition::{
    self, ConditionStatus, ConditionTransition, NodeCondition, TaintChange,
};
use crate::core::pressure::Evaluation;
use crate::core::signal::SignalRef;
use crate::observe::http::Health;
use crate::observe::systemd;

/// What the sampling loop hands the reporter after every cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub conditions: Vec<NodeCondition>,
    pub desired_taints: Vec<TaintSpec>,
}

/// Where a connected agent's sampling loop sends its results.
pub struct Publisher {
    pub snapshots: watch::Sender<Option<Arc<Snapshot>>>,
    pub events: mpsc::UnboundedSender<PendingEvent>,
    /// Our Node's conditions as last seen (from the state directory): the decisions resume
    /// from them (`Decider::resume`).
    pub resume_from: Vec<NodeCondition>,
}

/// Why a condition has its status, for the record: one signal's reading against its threshold.
struct Evidence {
    signal: String,
    available: String,
    threshold: String,
    /// "nodefs.available 1.9Mi < 4Mi" for the message.
    text: String,
}

/// A byte amount in binary units with one decimal ("1.9Mi"), for messages only.
fn human_bytes(v: i64) -> String {
    const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut value = v as f64;
    let mut unit = "";
    for u in UNITS {
        if value.abs() < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if unit.is_empty() {
        format!("{v}")
    } else {
        format!("{value:.1}{unit}")
    }
}

/// The signal that best explains a condition's status: a met threshold of one of its signals if
/// any, otherwise the first of its thresholds that has an observation.
fn evidence(spec: &ConditionSpec, ev: &Evaluation) -> Option<Evidence> {
    let mut candidates: Vec<(bool, Evidence)> = Vec::new();
    for signal in &spec.signals {
        match signal {
            SignalRef::Eviction(sig) => {
                for t in ev.thresholds.iter().filter(|t| t.signal == *sig) {
                    if let Some(a) = t.available {
                        let (ha, ht) = if sig.is_bytes() {
                            (human_bytes(a), human_bytes(t.threshold))
                        } else {
                            (a.to_string(), t.threshold.to_string())
                        };
                        let op = if t.met { "<" } else { "≥" };
                        candidates.push((
                            t.met,
                            Evidence {
                                signal: sig.name().to_string(),
                                available: a.to_string(),
                                threshold: t.threshold.to_string(),
                                text: format!("{sig} {ha} {op} {ht}"),
                            },
                        ));
                    }
                }
            }
            SignalRef::Psi(p) => {
                for t in ev.psi.iter().filter(|t| t.signal == *p) {
                    if let Some(v) = t.value {
                        let op = if t.met { ">" } else { "≤" };
                        candidates.push((
                            t.met,
                            Evidence {
                                signal: p.name(),
                                available: format!("{v}"),
                                threshold: format!("{}", t.above_percent),
                                text: format!("{p} {v}% {op} {}%", t.above_percent),
                            },
                        ));
                    }
                }
            }
        }
    }
    let pick = candidates.iter().position(|c| c.0).unwrap_or(0);
    if pick < candidates.len() {
        Some(candidates.swap_remove(pick).1)
    } else {
        None
    }
}

fn log_transition(spec: &ConditionSpec, t: &ConditionTransition, ev: &Evaluation) {
    let from = t.from.map_or("none", |s| s.as_str());
    let taint = spec
        .taint
        .as_ref()
        .map(|ts| format!("{}:{}", ts.key, ts.effect))
        .unwrap_or_default();
    match evidence(spec, ev) {
        Some(e) => log::info!(
            condition = t.condition_type.as_str(), status = t.to.as_str(),
            previous_status = from, reason = t.reason.as_str(), event = t.event.as_str(),
            signal = e.signal.as_str(), available = e.available.as_str(),
            threshold = e.threshold.as_str(), taint = taint.as_str();
            "condition {} is now {} ({}): {}",
            t.condition_type, t.to, t.reason, e.text
        ),
        None => log::info!(
            condition = t.condition_type.as_str(), status = t.to.as_str(),
            previous_status = from, reason = t.reason.as_str(), event = t.event.as_str(),
            taint = taint.as_str();
            "condition {} is now {} ({}): none of its signals was observed",
            t.condition_type, t.to, t.reason
        ),
    }
}

fn log_taint_change(change: &TaintChange, standalone: bool) {
    let (verb, spec) = match change {
        TaintChange::Add(s) => ("add", s),
        TaintChange::Remove(s) => ("remove", s),
    };
    let taint = format!("{}:{}", spec.key, spec.effect);
    let note = if standalone {
        " (standalone: not written)"
    } else {
        " (to be written by the reporter)"
    };
    log::info!(
        taint = taint.as_str(), action = verb;
        "taint {taint}: {verb}{note}"
    );
}

/// What STATUS= says after a rejected reload, and goes on saying until a reload is accepted.
const RELOAD_REJECTED: &str = "configuration reload rejected; running configuration kept";

/// The `STATUS=` text: what `systemctl status` readers need — the mode, whether the API server
/// answers (`reachable` is `None` standalone or before the first request), the conditions, and
/// a configuration file that the last reload rejected (it would fail the next start).
fn status_line(
    mode: &str,
    reachable: Option<bool>,
    conditions: &[NodeCondition],
    reload_rejected: bool,
) -> String {
    let contact = match reachable {
        Some(false) => ", API server unreachable",
        _ => "",
    };
    let reload = if reload_rejected {
        format!(" ({RELOAD_REJECTED})")
    } else {
        String::new()
    };
    format!("{mode}{contact}: {}{reload}", summary_line(conditions))
}

/// Sends `line` as STATUS= unless it is what was sent last.
fn send_status_if_changed(line: String, last: &mut Option<String>) {
    if last.as_deref() != Some(line.as_str()) {
        systemd::status(&line);
        *last = Some(line);
    }
}

/// `MemoryPressure=False DiskPressure=True …`.
fn summary_line(conditions: &[NodeCondition]) -> String {
    conditions
        .iter()
        .map(|c| format!("{}={}", c.condition_type, c.status))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A move of the system clock against the agent's clock worth a record (NTP slews far slower).
const CLOCK_STEP_MS: i64 = 2_000;

/// Runs the sampling loop until `shutdown` resolves. Standalone when `publisher` is `None`;
/// otherwise each cycle's conditions and desired taints are published for the reporter, and each
/// condition transition becomes an Event to send.
pub async fn run<S: Source>(
    config: &Config,
    mut source: S,
    health: Arc<Health>,
    publisher: Option<Publisher>,
    clock: Clock,
    shutdown: impl Future<Output = &'static str>,
) {
    let node = node_name(config);
    let mode = if publisher.is_some() {
        "connected"
    } else {
        "standalone"
    };
    let mut decider = Decider::new(config);
    if let Some(p) = &publisher {
        decider.resume(p.resume_from.clone());
    }
    let specs: BTreeMap<String, ConditionSpec> = config
        .conditions
        .iter()
        .map(|c| (c.condition_type.clone(), c.clone()))
        .collect();
    let update = config.node_status_update_frequency;
    let report = config.node_status_report_frequency;
    let wake = wake_interval(update, systemd::watchdog_interval());
    let mut failing: BTreeSet<String> = BTreeSet::new();
    // The system clock's offset from the agent's clock when last reported.
    let mut reported_offset: i64 = 0;
    let mut last_summary: Option<Duration> = None;
    // The STATUS= line last sent (None: send the next one whatever it says).
    let mut last_status: Option<String> = None;
    // The configuration file as it is now was rejected by a reload (STATUS= says so until one is
    // accepted).
    let mut reload_rejected = false;
    let mut next_sample = tokio::time::Instant::now();
    let mut ticker = tokio::time::interval(wake);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    // SIGHUP: reload the configuration file (validated first; an invalid one changes nothing).
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let mut running = config.clone();
    log::info!(
        mode = mode;
        "nodewarden {} starting {mode} on node {node}: sampling every {}, summary every {}",
        env!("CARGO_PKG_VERSION"),
        humantime::format_duration(update),
        humantime::format_duration(report)
    );
    loop {
        tokio::select! {
            why = &mut shutdown => {
                systemd::stopping();
                log::info!("stopping on {why}");
                return;
            }
            _ = ticker.tick() => {}
            Some(()) = async {
                match hangup.as_mut() {
                    Some(h) => h.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(accepted) = reload(&mut running, &mut decider) {
                    reload_rejected = !accepted;
                }
                // The reload's own STATUS= stands until the next cycle restores the usual one.
                last_status = None;
                continue;
            }
        }
        health.tick();
        systemd::watchdog();
        let instant = tokio::time::Instant::now();
        // Samples follow a fixed schedule (start + k × update), not "one period after the last
        // wake-up": a tick that runs a little late must not push the next sample a whole wake
        // interval further (that skipped every other period on a busy machine). A tick that
        // comes up to half a wake interval early counts as on time.
        if instant + wake / 2 < next_sample {
            // Reachability changes between samples (which may be minutes apart): STATUS=
            // follows it at every wake-up.
            if health.sampled() {
                let line = status_line(
                    mode,
                    health.metrics.reachable(),
                    &decider.conditions,
                    reload_rejected,
                );
                send_status_if_changed(line, &mut last_status);
            }
            continue;
        }
        next_sample += update;
        if next_sample <= instant {
            // Fell behind (a stalled machine): resume the schedule from now.
            next_sample = instant + update;
        }
        let now = clock.at(instant);
        // The system clock stepped while running: one record per step. Nothing the agent
        // decides depends on it (deadlines, reports and renewals follow the monotonic clock);
        // the times it writes keep the clock as read at start.
        let offset = crate::core::clock::wall_offset_ms(now.wall, std::time::SystemTime::now());
        if crate::core::clock::stepped(reported_offset, offset, CLOCK_STEP_MS) {
            if offset.abs() < CLOCK_STEP_MS {
                log::info!(clock_offset_ms = offset;
                    "the system clock is back in step with the agent's clock");
            } else {
                log::warn!(clock_offset_ms = offset;
                    "the system clock moved: it is now {:+.1}s from the agent's clock (the clock as read at start plus monotonic time); deadlines, reports and Lease renewals follow the monotonic clock, and the times the agent writes stay on its own clock until a restart",
                    offset as f64 / 1000.0);
            }
            reported_offset = offset;
        }
        let reading = source.read();
        let now_failing: BTreeSet<String> = reading.errors.iter().map(|e| e.0.clone()).collect();
        for (what, why) in &reading.errors {
            if !failing.contains(what) {
                log::warn!(signal = what.as_str(); "cannot read {what}: {why}");
            }
        }
        for what in failing.difference(&now_failing) {
            log::info!(signal = what.as_str(); "{what} can be read again");
        }
        failing = now_failing;
        let decision = decider.decide(&reading.observations, now);
        for t in &decision.transitions {
            if let Some(spec) = specs.get(&t.condition_type) {
                log_transition(spec, t, &decision.evaluation);
            }
            health.metrics.record_transition(&t.condition_type);
            if let Some(p) = &publisher {
                // The receiver lives as long as the agent; a send error only means shutdown.
                let _ = p.events.send(PendingEvent {
                    reason: t.event.clone(),
                    message: format!("Node {node} status is now: {}", t.event),
                    warning: false,
                    at: now.wall,
                });
            }
        }
        for change in &decision.taint_changes {
            log_taint_change(change, publisher.is_none());
        }
        if let Some(p) = &publisher {
            p.snapshots.send_replace(Some(Arc::new(Snapshot {
                conditions: decider.conditions.clone(),
                desired_taints: decider.taints.clone(),
            })));
        }
        let statuses: Vec<(String, String)> = decider
            .conditions
            .iter()
            .map(|c| (c.condition_type.clone(), c.status.to_string()))
            .collect();
        let errors: Vec<String> = reading.errors.iter().map(|e| e.0.clone()).collect();
        health.metrics.record_cycle(
            &reading.observations,
            &decision.evaluation,
            &statuses,
            &errors,
        );
        let line = status_line(
            mode,
            health.metrics.reachable(),
            &decider.conditions,
            reload_rejected,
        );
        if health.sampled() {
            send_status_if_changed(line, &mut last_status);
        } else {
            health.set_sampled();
            systemd::ready(&line);
            last_status = Some(line);
        }
        if condition::report_due(false, last_summary, now.mono, report) {
            last_summary = Some(now.mono);
            let summary = summary_line(&decider.conditions);
            let pressured = decider
                .conditions
                .iter()
                .filter(|c| c.status == ConditionStatus::True)
                .count();
            log::info!(
                summary = summary.as_str(), taints = decider.taints.len();
                "summary: {summary}; {pressured} condition(s) under pressure, {} signal(s) read, {} unreadable",
                reading.observations.eviction.len() + reading.observations.psi.len(),
                reading.errors.len()
            );
        }
    }
}

/// The settings a reload applies while running; everything else needs a restart. Returns
/// whether the file was accepted (`None`: there is no file to read).
fn reload(running: &mut Config, decider: &mut Decider) -> Option<bool> {
    let Some(path) = running.source.clone() else {
        log::warn!("SIGHUP ignored: the configuration did not come from a file");
        return None;
    };
    systemd::status("reloading the configuration");
    let new = match crate::config::load_with_warnings(&path) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                log::warn!("configuration warning: {w}");
            }
            loaded.config
        }
        Err(errors) => {
            let text = errors.to_string();
            log::error!(
                errors = text.as_str();
                "configuration reload rejected, the running configuration stays: {}",
                text.replace('\n', "; ")
            );
            systemd::status(RELOAD_REJECTED);
            return Some(false);
        }
    };
    let mut applied = Vec::new();
    if new.thresholds != running.thresholds || new.psi_thresholds != running.psi_thresholds {
        applied.push("thresholds");
    }
    if new.eviction_pressure_transition_period != running.eviction_pressure_transition_period {
        applied.push("evictionPressureTransitionPeriod");
    }
    if new.logging.level != running.logging.level {
        log::set_max_level(new.logging.level);
        applied.push("logging.level");
    }
    // The rest shapes tasks, files and connections set up at start.
    let mut pending: Vec<&str> = Vec::new();
    let checks: [(&str, bool); 12] = [
        ("nodeName", new.node_name != running.node_name),
        ("kubeconfig", new.kubeconfig != running.kubeconfig),
        ("standalone", new.standalone != running.standalone),
        (
            "nodeStatusUpdateFrequency",
            new.node_status_update_frequency != running.node_status_update_frequency,
        ),
        (
            "nodeStatusReportFrequency",
            new.node_status_report_frequency != running.node_status_report_frequency,
        ),
        (
            "nodeLeaseDurationSeconds / lease",
            new.node_lease_duration_seconds != running.node_lease_duration_seconds
                || new.lease_name != running.lease_name
                || new.lease_namespace != running.lease_namespace,
        ),
        ("conditions", new.conditions != running.conditions),
        (
            "paths",
            new.proc_path != running.proc_path
                || new.cgroup_path != running.cgroup_path
                || new.nodefs_path != running.nodefs_path
                || new.imagefs_path != running.imagefs_path,
        ),
        (
            "healthAddress",
            new.health_address != running.health_address,
        ),
        (
            "stateDirectory",
            new.state_directory != running.state_directory,
        ),
        (
            "logging.target",
            new.logging.target != running.logging.target,
        ),
        ("fence", new.fence != running.fence),
    ];
    for (key, changed) in checks {
        if changed {
            pending.push(key);
        }
    }
    if !applied.is_empty() {
        let mut next = running.clone();
        next.thresholds = new.thresholds.clone();
        next.psi_thresholds = new.psi_thresholds.clone();
        next.eviction_pressure_transition_period = new.eviction_pressure_transition_period;
        next.logging.level = new.logging.level;
        decider.reload(&next);
        *running = next;
    }
    log::info!(
        applied = applied.join(",").as_str(), needs_restart = pending.join(",").as_str();
        "configuration reloaded from {}: applied [{}]{}",
        path.display(),
        applied.join(", "),
        if pending.is_empty() {
            String::new()
        } else {
            format!("; changed but applied only after a restart: [{}]", pending.join(", "))
        }
    );
    systemd::status("configuration reloaded");
    Some(true)
}
