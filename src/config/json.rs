//! The effective configuration, defaults filled in, as JSON (for `check-config --json` and tests)
//! and as text for a person. Keys are the file's camelCase keys; durations use
//! `core::threshold::format_duration` ("10s", "5m", "1m30s"); thresholds follow the kubelet's
//! model (signal, operator, value, gracePeriod, minReclaim).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::core::threshold::{Threshold, ThresholdValue, f32_as_shortest_f64, format_duration};

use super::Config;
use super::load::{CGROUP_DRIVERS, CGROUP_VERSIONS, LOG_TARGETS, MODES, UNDECIDED, word_of};

fn threshold_value_json(value: &ThresholdValue) -> Value {
    match value {
        ThresholdValue::Quantity(q) => json!({ "quantity": q.to_string() }),
        // Through the shortest f32 digits, so 0.1f32 prints as 0.1 (as the kubelet's float32 does),
        // not 0.10000000149011612.
        ThresholdValue::Percentage(f) => json!({ "percentage": f32_as_shortest_f64(*f) }),
    }
}

/// One threshold in the kubelet's model.
pub fn threshold_json(t: &Threshold) -> Value {
    json!({
        "signal": t.signal.name(),
        "operator": "LessThan",
        "value": threshold_value_json(&t.value),
        "gracePeriod": format_duration(t.grace_period),
        "minReclaim": t.min_reclaim.as_ref().map_or(Value::Null, threshold_value_json),
    })
}

fn resource_list_json(list: &crate::core::resources::ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.to_string())))
            .collect(),
    )
}

/// `cpu 500m, memory 1Gi`, or `(none)`.
fn resource_list_text(list: &crate::core::resources::ResourceList) -> String {
    if list.is_empty() {
        return "(none)".to_string();
    }
    list.iter()
        .map(|(k, q)| format!("{k} {q}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn path_json(p: &std::path::Path) -> Value {
    Value::String(p.display().to_string())
}

/// The effective configuration as JSON, with every key present (`null` for unset `nodeName`
/// and `kubeconfig`, and for a condition without a taint) and a `thresholds` array in the
/// kubelet's model in place of the four `eviction*` maps.
pub fn effective_json(config: &Config) -> Value {
    let mut psi = Map::new();
    for t in &config.psi_thresholds {
        let name = t.signal.name();
        psi.insert(
            name.trim_start_matches("psi.").to_string(),
            json!(t.above_percent),
        );
    }
    let conditions: Vec<Value> = config
        .conditions
        .iter()
        .map(|c| {
            json!({
                "type": c.condition_type,
                "signals": c.signals.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "trueReason": c.true_reason,
                "trueMessage": c.true_message,
                "falseReason": c.false_reason,
                "falseMessage": c.false_message,
                "taintKey": c.taint.as_ref().map(|t| t.key.clone()),
                "taintEffect": c.taint.as_ref().map(|t| t.effect.as_str()),
            })
        })
        .collect();
    json!({
        "source": config.source.as_deref().map(path_json),
        "nodeName": config.node_name,
        "kubeconfig": config.kubeconfig.as_deref().map(path_json),
        "standalone": config.standalone,
        "nodeStatusUpdateFrequency": format_duration(config.node_status_update_frequency),
        "nodeStatusReportFrequency": format_duration(config.node_status_report_frequency),
        "nodeLeaseDurationSeconds": config.node_lease_duration_seconds,
        "leaseName": config.lease_name,
        "leaseNamespace": config.lease_namespace,
        "onlyStatusReporter": config.only_status_reporter,
        "evictionPressureTransitionPeriod": format_duration(config.eviction_pressure_transition_period),
        "mergeDefaultEvictionSettings": config.merge_default_eviction_settings,
        "thresholds": config.thresholds.iter().map(threshold_json).collect::<Vec<_>>(),
        "psiThresholds": psi,
        "kubeReserved": resource_list_json(&config.kube_reserved),
        "systemReserved": resource_list_json(&config.system_reserved),
        "reservedSystemCPUs": config.reserved_system_cpus.as_ref().map(|r| r.list.clone()),
        "procPath": path_json(&config.proc_path),
        "cgroupPath": path_json(&config.cgroup_path),
        "nodefsPath": path_json(&config.nodefs_path),
        "imagefsPath": path_json(&config.imagefs_path),
        "healthAddress": config.health_address.to_string(),
        "stateDirectory": path_json(&config.state_directory),
        "featureGates": feature_gates_json(&config.feature_gates),
        "logging": {
            "target": word_of(LOG_TARGETS, &config.logging.target),
            "level": config.logging.level.as_str().to_ascii_lowercase(),
        },
        "fence": fence_json(&config.fence),
        "peers": peers_json(&config.peers),
        "conditions": conditions,
    })
}

/// One `key: value` line of the text form, values aligned in one column.
fn row(out: &mut String, key: &str, value: impl std::fmt::Display) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{:<34}{value}", format!("{key}:"));
}

/// The effective configuration for a person: one setting per line, thresholds as
/// `memory.available < 100Mi`, conditions with their signals and taint.
pub fn effective_text(config: &Config) -> String {
    let mut out = String::new();
    let source = config
        .source
        .as_ref()
        .map_or("(built-in defaults)".to_string(), |p| {
            p.display().to_string()
        });
    let or_unset = |v: Option<String>, unset: &str| v.unwrap_or_else(|| unset.to_string());
    row(&mut out, "source", source);
    row(
        &mut out,
        "nodeName",
        or_unset(
            config.node_name.clone(),
            "(unset: $NODE_NAME or the host name)",
        ),
    );
    row(
        &mut out,
        "kubeconfig",
        or_unset(
            config.kubeconfig.as_ref().map(|p| p.display().to_string()),
            "(unset: in-cluster in a pod, else standalone)",
        ),
    );
    row(&mut out, "standalone", config.standalone);
    row(
        &mut out,
        "nodeStatusUpdateFrequency",
        format_duration(config.node_status_update_frequency),
    );
    row(
        &mut out,
        "nodeStatusReportFrequency",
        format_duration(config.node_status_report_frequency),
    );
    row(
        &mut out,
        "nodeLeaseDurationSeconds",
        config.node_lease_duration_seconds,
    );
    let lease_name = config.lease_name.as_deref();
    let lease_name = lease_name.unwrap_or("nodewarden-<node name>");
    row(
        &mut out,
        "lease",
        format!("{}/{lease_name}", config.lease_namespace),
    );
    row(&mut out, "onlyStatusReporter", config.only_status_reporter);
    row(
        &mut out,
        "evictionPressureTransitionPeriod",
        format_duration(config.eviction_pressure_transition_period),
    );
    row(
        &mut out,
        "mergeDefaultEvictionSettings",
        config.merge_default_eviction_settings,
    );
    row(&mut out, "procPath", config.proc_path.display());
    row(&mut out, "cgroupPath", config.cgroup_path.display());
    row(&mut out, "nodefsPath", config.nodefs_path.display());
    row(&mut out, "imagefsPath", config.imagefs_path.display());
    row(&mut out, "healthAddress", config.health_address);
    row(&mut out, "stateDirectory", config.state_directory.display());
    let (target, level) = (config.logging.target, config.logging.level);
    let level = level.as_str().to_ascii_lowercase();
    row(
        &mut out,
        "logging",
        format!("target {}, level {level}", word_of(LOG_TARGETS, &target)),
    );
    let f = &config.fence;
    let root = f.cgroup_root.as_deref().unwrap_or(&config.cgroup_path);
    row(
        &mut out,
        "fence",
        format!(
            "mode {}, nodeMonitorGracePeriod {}, nodeMonitorPeriod {}, unreachableAfter {}, safetyMargin {}, gracePeriodCap {}, cgroups {} {} under {}",
            word_of(MODES, &f.mode),
            format_duration(f.node_monitor_grace_period),
            format_duration(f.node_monitor_period),
            format_duration(f.unreachable_after),
            format_duration(f.safety_margin),
            format_duration(f.grace_period_cap),
            word_of(CGROUP_VERSIONS, &f.cgroup_version),
            word_of(CGROUP_DRIVERS, &f.cgroup_driver),
            root.display()
        ),
    );
    row(
        &mut out,
        "  kubelet's path",
        match &f.kubelet_server {
            Some(s) => format!("{s}/readyz, probed while cut off"),
            None => "the agent's own server's /readyz, probed while cut off".to_string(),
        },
    );
    row(
        &mut out,
        "  leader Lease",
        match &f.controller_manager_lease {
            Some((ns, name)) => format!("{ns}/{name}, read while connected"),
            None => "none read: taints count from their timeAdded".to_string(),
        },
    );
    row(
        &mut out,
        "  grace period",
        super::grace_period_note(f.node_monitor_grace_period),
    );
    let gates: Vec<String> = crate::core::features::KNOWN
        .iter()
        .map(|(name, default, stage)| {
            let on = config.feature_gates.enabled(name).unwrap_or(*default);
            let set = if on == *default { "default" } else { "set" };
            format!("{name}={on} ({set}; {stage})")
        })
        .collect();
    row(&mut out, "featureGates", gates.join(", "));
    let p = &config.peers;
    let source = match (&p.service, p.static_peers.len()) {
        (Some((ns, name)), _) => format!("EndpointSlices of {ns}/{name} (port {})", p.port_name),
        (None, 0) => "none".to_string(),
        (None, n) => format!("{n} static"),
    };
    row(
        &mut out,
        "peers",
        format!(
            "{source}; endpoint {}; ask {} every {} (timeout {}); without peers {}, whole zone cut off {}",
            p.listen
                .map_or_else(|| "off".to_string(), |a| a.to_string()),
            p.ask,
            format_duration(p.interval),
            format_duration(p.timeout),
            word_of(UNDECIDED, &p.without_peers),
            word_of(UNDECIDED, &p.whole_zone_cut_off),
        ),
    );
    let _ = writeln!(out, "thresholds:");
    if config.thresholds.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    // Absent, evictionHard gets the defaults; so no hard threshold means it is present and sets
    // none (an empty table, or every signal at "0%"), which the kubelet reads the same way.
    if !config.thresholds.iter().any(|t| !t.soft) {
        let _ = writeln!(
            out,
            "  (no hard thresholds: evictionHard is present but sets none; the kubelet's \
             defaults apply only when evictionHard is absent)"
        );
    }
    for t in &config.thresholds {
        let kind = if t.soft { "soft" } else { "hard" };
        let _ = write!(out, "  {kind} {} < {}", t.signal, t.value);
        if t.soft {
            let _ = write!(out, " for {}", format_duration(t.grace_period));
        }
        if let Some(m) = &t.min_reclaim {
            let _ = write!(out, ", minimum reclaim {m}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "psiThresholds:");
    if config.psi_thresholds.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    for t in &config.psi_thresholds {
        let _ = writeln!(out, "  {} > {}%", t.signal, t.above_percent);
    }
    row(
        &mut out,
        "kubeReserved",
        resource_list_text(&config.kube_reserved),
    );
    row(
        &mut out,
        "systemReserved",
        resource_list_text(&config.system_reserved),
    );
    row(
        &mut out,
        "reservedSystemCPUs",
        config.reserved_system_cpus.as_ref().map_or_else(
            || "(unset)".to_string(),
            |r| {
                format!(
                    "{} ({} CPUs; replaces the cpu of both reservations)",
                    r.list, r.count
                )
            },
        ),
    );
    let _ = writeln!(out, "conditions:");
    for c in &config.conditions {
        let signals: Vec<String> = c.signals.iter().map(|s| s.name()).collect();
        let _ = write!(out, "  {} <- {}", c.condition_type, signals.join(", "));
        match &c.taint {
            Some(t) => {
                let _ = writeln!(out, "; taint {}:{}", t.key, t.effect);
            }
            None => {
                let _ = writeln!(out, "; no taint");
            }
        }
        let _ = writeln!(out, "    True:  {}: {}", c.true_reason, c.true_message);
        let _ = writeln!(out, "    False: {}: {}", c.false_reason, c.false_message);
    }
    out
}

/// Every known gate with the value in effect (defaults included), by its upstream name.
fn feature_gates_json(gates: &crate::core::features::FeatureGates) -> Value {
    let mut map = Map::new();
    for (name, _, _) in crate::core::features::KNOWN {
        map.insert((*name).to_string(), json!(gates.enabled(name)));
    }
    Value::Object(map)
}

/// The `[peers]` table as the file spells it (the key file's path, never its content).
fn peers_json(p: &super::PeersConfig) -> Value {
    json!({
        "service": p.service.as_ref().map(|(ns, name)| format!("{ns}/{name}")),
        "portName": p.port_name,
        "static": p.static_peers.iter().map(|peer| json!({
            "node": peer.node,
            "address": peer.address.to_string(),
            "zone": peer.zone,
        })).collect::<Vec<_>>(),
        "listen": p.listen.map(|a| a.to_string()),
        "keyFile": p.key_file.as_deref().map(path_json),
        "ask": p.ask,
        "timeout": format_duration(p.timeout),
        "interval": format_duration(p.interval),
        "withoutPeers": word_of(UNDECIDED, &p.without_peers),
        "wholeZoneCutOff": word_of(UNDECIDED, &p.whole_zone_cut_off),
    })
}

/// The `[fence]` table as the file spells it.
fn fence_json(f: &super::FenceConfig) -> Value {
    json!({
        "mode": word_of(MODES, &f.mode),
        "nodeMonitorGracePeriod": format_duration(f.node_monitor_grace_period),
        "nodeMonitorPeriod": format_duration(f.node_monitor_period),
        "unreachableAfter": format_duration(f.unreachable_after),
        "safetyMargin": format_duration(f.safety_margin),
        "gracePeriodCap": format_duration(f.grace_period_cap),
        "cgroupVersion": word_of(CGROUP_VERSIONS, &f.cgroup_version),
        "cgroupDriver": word_of(CGROUP_DRIVERS, &f.cgroup_driver),
        "cgroupRoot": f.cgroup_root.as_deref().map(path_json),
        "kubeletServer": f.kubelet_server,
        "controllerManagerLease": f
            .controller_manager_lease
            .as_ref()
            .map_or(String::new(), |(ns, name)| format!("{ns}/{name}")),
    })
}
