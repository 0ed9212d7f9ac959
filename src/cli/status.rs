//! What `nodewarden status` prints for the person at the node: whether the agent is in contact
//! with the control plane; the Node's conditions (with reasons and ages) and taints, each marked
//! ours or another writer's; every pod it knows with its QoS class and the fence's plan; and the
//! pods' requests and limits against the Node's allocatable, per resource and QoS class — read
//! from the state directory, so it works while the API server is unreachable; and Node
//! Allocatable computed here, beside the Node's. Formatting only;
//! the plans come from the same planner the agent runs, the sums from `core::resources`.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::config::Config;
use crate::core::clock::Moment;
use crate::core::fence_plan::{self, Plan, QuorumVerdict};
use crate::core::quantity::Quantity;
use crate::core::resources::{self, ResourceList};
use crate::state::{self, Loaded, StoredNode};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub node: String,
    /// The machine's capacity, kernel, OS and filesystems; set by the caller (`None` from
    /// [`report`], which reads only the state directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
    pub mode: String,
    /// The grace period the fence mirrors against the controller's defaults, how to set it, and
    /// when the fence must be off (`config::grace_period_note`).
    pub grace_period: String,
    /// "connected", "cut off" or "unknown" (no state yet).
    pub contact: String,
    pub last_contact: Option<String>,
    pub cut_off_since: Option<String>,
    /// How current the fence's pod view is (`core::pod_view`): `current`, `stale since T (N
    /// ago)`, or `unknown` (no agent of this build wrote it yet).
    pub pod_view: String,
    /// The peer quorum (docs/fence.md §5): its verdict while cut off, the zone and peers known.
    pub quorum: QuorumStatus,
    pub pods: Vec<PodStatus>,
    pub fenced: Vec<String>,
    pub pending_events: usize,
    /// The Node's conditions as last seen (empty before the agent first saw the Node).
    pub conditions: Vec<ConditionStatus>,
    pub taints: Vec<TaintStatus>,
    /// Requests and limits of the non-terminal pods against allocatable, one row per resource.
    pub resources: Vec<ResourceRow>,
    /// Non-terminal pods, and how many the Node allows (`allocatable.pods`).
    pub pod_count: usize,
    pub pod_capacity: Option<String>,
    /// Node Allocatable computed here, beside the Node's as last seen.
    pub allocatable: crate::allocatable::AllocatableReport,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuorumStatus {
    /// `enforce`, `hold`, `pending` while cut off; `not consulted` while connected.
    pub verdict: String,
    pub reason: String,
    /// When the latest round that said hold was sent (deadlines count from it after a hold).
    pub held_at: Option<String>,
    pub zone: Option<String>,
    pub peers: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionStatus {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: Option<String>,
    /// Whole seconds since the last transition.
    pub age_seconds: Option<u64>,
    /// A condition this agent's configuration owns (`[[conditions]]`).
    pub ours: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintStatus {
    pub key: String,
    pub value: String,
    pub effect: String,
    /// A taint this agent's configuration maps a condition to.
    pub ours: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRow {
    pub resource: String,
    /// `None`: the Node does not advertise this resource.
    pub allocatable: Option<String>,
    pub requests: String,
    pub requests_percent: Option<i128>,
    pub limits: String,
    pub limits_percent: Option<i128>,
    pub by_qos: Vec<QosRow>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QosRow {
    pub qos_class: String,
    pub requests: String,
    pub limits: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    pub pod: String,
    pub uid: String,
    pub qos_class: String,
    /// "never", "stop", "hold" (and "dry-run stop").
    pub action: String,
    pub sigterm_at: Option<String>,
    pub kill_at: Option<String>,
    pub eviction_time: Option<String>,
    pub reason: String,
}

/// Why no status could be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("state in {dir} is unusable: {error} (moved aside to {moved})")]
    Corrupt {
        dir: String,
        error: String,
        moved: String,
    },
    /// A newer release's state file: shown by that release, left untouched by this one.
    #[error(
        "state file {path} was written by a newer nodewarden (format version {version}; this build reads up to {}): left untouched; run the newer release to see it",
        state::VERSION
    )]
    Newer { path: String, version: u32 },
}

/// Builds the report from the state directory at wall time `now`, whose place on the boot clock
/// is `scale` (`agent::clock::scale_at`; the agent's times are carried onto it, `state::load`).
pub fn report(
    config: &Config,
    node: &str,
    now: SystemTime,
    scale: Option<crate::core::clock::Scale>,
) -> Result<StatusReport, StatusError> {
    let dir = &config.state_directory;
    let state = match state::load(dir, scale) {
        Loaded::Found(s) => Some(*s),
        Loaded::Missing => None,
        Loaded::Newer { path, version } => {
            return Err(StatusError::Newer {
                path: path.display().to_string(),
                version,
            });
        }
        Loaded::Corrupt { error, moved_to } => {
            return Err(StatusError::Corrupt {
                dir: dir.display().to_string(),
                error,
                moved: moved_to
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "nowhere".into()),
            });
        }
    };
    let mode = match config.fence.mode {
        fence_plan::Mode::Enforce => "enforce",
        fence_plan::Mode::DryRun => "dry-run",
        fence_plan::Mode::Off => "off",
    }
    .to_string();
    let Some(state) = state else {
        return Ok(StatusReport {
            machine: None,
            node: node.to_string(),
            mode,
            grace_period: crate::config::grace_period_note(config.fence.node_monitor_grace_period),
            contact: "unknown (no state written yet)".into(),
            last_contact: None,
            cut_off_since: None,
            pod_view: "unknown".into(),
            quorum: QuorumStatus {
                verdict: "not consulted".into(),
                reason: "no state written yet".into(),
                held_at: None,
                zone: None,
                peers: 0,
            },
            pods: vec![],
            fenced: vec![],
            pending_events: 0,
            conditions: vec![],
            taints: vec![],
            resources: vec![],
            pod_count: 0,
            pod_capacity: None,
            allocatable: crate::allocatable::report(config, None),
        });
    };
    let contact_wall = state.last_contact.as_deref().and_then(state::parse_time);
    let age = contact_wall.and_then(|c| now.duration_since(c).ok());
    let cut_off = age.is_some_and(|a| a > config.fence.unreachable_after);
    // Plans on the fence's monotonic scale, anchored at now.
    let moment = Moment {
        mono: fence_plan::MONO_BASE,
        wall: now,
    };
    let contact_mono = contact_wall.map_or(moment.mono, |c| moment.mono_at(c));
    let to_wall = |d: Duration| humantime::format_rfc3339_millis(moment.wall_at(d)).to_string();
    let pods: Vec<_> = state.pods.iter().map(|p| p.pod.clone()).collect();
    // The verdict the fence acts on, as the state file last recorded it.
    let stored = state.quorum.as_ref().filter(|_| cut_off);
    let held_at = stored
        .and_then(|q| q.held_at.as_deref())
        .and_then(state::parse_time);
    let held_from = stored
        .and_then(|q| q.held_from.as_deref())
        .and_then(state::parse_time);
    let verdict = if cut_off {
        crate::core::quorum::planning(
            stored
                .and_then(|q| crate::core::quorum::Verdict::from_word(&q.verdict, q.reason.clone()))
                .as_ref(),
            (
                held_at.map(|h| moment.mono_at(h)),
                held_from.map(|h| moment.mono_at(h)),
            ),
            // The peers' reads of the Node and of the zone are not kept on disk: counted without
            // them, as a restart counts.
            (None, None),
            false,
            config.request_timeout(),
        )
    } else {
        QuorumVerdict::NotConsulted
    };
    let quorum = QuorumStatus {
        verdict: match stored {
            Some(q) => q.verdict.clone(),
            None if cut_off => "pending".into(),
            None => "not consulted".into(),
        },
        reason: match stored {
            Some(q) => q.reason.clone(),
            None if cut_off => "the peer quorum has not answered yet".into(),
            None => "connected: peers are asked only while cut off".into(),
        },
        held_at: held_at.map(|h| humantime::format_rfc3339_millis(h).to_string()),
        zone: state.zone.clone(),
        peers: state.peers.len(),
    };
    // The node controller's taints the Node carried when last seen, as the fence counts them.
    let node = state.node_status.as_ref();
    let added = |text: Option<&str>| text.and_then(state::parse_time);
    let tainted = fence_plan::Taints {
        unreachable: node.and_then(|n| n.unreachable_added_at(moment)),
        // Or, with neither taint, a Ready=False the kubelet posted: queued for it from the post.
        not_ready: node.and_then(|n| {
            n.not_ready_added_at(moment)
                .or_else(|| n.not_ready_queued_at(moment))
        }),
        swapped_from: node.and_then(|n| n.swapped_from_at(moment)),
        // Each pod created later than a taint counts from its creation.
        added: fence_plan::TaintsAdded {
            unreachable: added(node.and_then(|n| n.unreachable_added())),
            not_ready: added(node.and_then(|n| n.not_ready_added())),
            swapped_from: node.and_then(|n| n.swapped_from_added()),
        },
        // The state file keeps no peer's read of the Node without the taint.
        unreachable_after_read: false,
    };
    // And a Ready=Unknown it carried then without the taint: queued for it since it was written.
    let policy = fence_plan::FencePolicy::from(config);
    let unknown = state.node_status.as_ref().and_then(|n| n.queued_at(moment));
    let contact_mono = fence_plan::queued_contact(contact_mono, unknown, &policy);
    let plans = fence_plan::plan(&pods, contact_mono, tainted, None, &policy, &verdict);
    let pods = plans
        .iter()
        .zip(&pods)
        .map(|(p, pod)| {
            let (action, schedule, reason) = match &p.plan {
                Plan::Never { reason } => ("never".to_string(), None, reason.to_string()),
                Plan::Stop {
                    schedule,
                    dry_run,
                    reason,
                } => (
                    if *dry_run { "dry-run stop" } else { "stop" }.to_string(),
                    Some(*schedule),
                    reason.to_string(),
                ),
                Plan::Hold { schedule, reason } => {
                    ("hold".to_string(), Some(*schedule), reason.to_string())
                }
            };
            PodStatus {
                pod: format!("{}/{}", p.namespace, p.name),
                uid: p.uid.clone(),
                qos_class: pod.qos.as_str().to_string(),
                action,
                sigterm_at: schedule.map(|s| to_wall(s.sigterm_at)),
                kill_at: schedule.map(|s| to_wall(s.kill_at)),
                eviction_time: schedule.map(|s| to_wall(s.eviction_time)),
                reason,
            }
        })
        .collect();
    let node_status = state.node_status.clone().unwrap_or_default();
    let allocatable: ResourceList = node_status
        .allocatable
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.parse::<Quantity>().ok()?)))
        .collect();
    let running: Vec<_> = state
        .pods
        .iter()
        .filter(|p| !p.pod.terminal)
        .map(|p| (p.pod.qos, &p.resources))
        .collect();
    let sums = resources::allocated(&running, &allocatable);
    Ok(StatusReport {
        machine: None,
        conditions: conditions(config, &node_status, now),
        taints: taints(config, &node_status),
        resources: sums.iter().map(resource_row).collect(),
        pod_count: running.len(),
        pod_capacity: node_status.allocatable.get("pods").cloned(),
        // The Node's allocatable only once the agent has seen the Node.
        allocatable: crate::allocatable::report(
            config,
            state.node_status.as_ref().map(|n| &n.allocatable),
        ),
        node: state.node.clone(),
        mode,
        grace_period: crate::config::grace_period_note(config.fence.node_monitor_grace_period),
        contact: if cut_off { "cut off" } else { "connected" }.into(),
        last_contact: contact_wall.map(|c| humantime::format_rfc3339_millis(c).to_string()),
        cut_off_since: contact_wall.filter(|_| cut_off).map(|c| {
            humantime::format_rfc3339_millis(c + config.fence.unreachable_after).to_string()
        }),
        pod_view: match state::load_pod_view(&config.state_directory) {
            None => "unknown".into(),
            Some(None) => "current".into(),
            Some(Some(since)) => format!(
                "stale since {} ({} ago)",
                humantime::format_rfc3339_millis(since),
                humantime::format_duration(Duration::from_secs(
                    now.duration_since(since).unwrap_or_default().as_secs()
                ))
            ),
        },
        quorum,
        pods,
        fenced: state.fenced.clone(),
        pending_events: state.pending_events.len() + state.condition_events.len(),
    })
}

fn conditions(config: &Config, node: &StoredNode, now: SystemTime) -> Vec<ConditionStatus> {
    node.conditions
        .iter()
        .map(|c| {
            let since = c
                .last_transition_time
                .as_deref()
                .and_then(state::parse_time);
            ConditionStatus {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: c.last_transition_time.clone(),
                age_seconds: since
                    .and_then(|t| now.duration_since(t).ok())
                    .map(|d| d.as_secs()),
                ours: config
                    .conditions
                    .iter()
                    .any(|o| o.condition_type == c.type_),
            }
        })
        .collect()
}

fn taints(config: &Config, node: &StoredNode) -> Vec<TaintStatus> {
    node.taints
        .iter()
        .map(|t| TaintStatus {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.clone(),
            ours: config
                .conditions
                .iter()
                .filter_map(|c| c.taint.as_ref())
                .any(|o| o.key == t.key && o.effect.as_str() == t.effect),
        })
        .collect()
}

fn resource_row(a: &resources::Allocation) -> ResourceRow {
    let pct = |used: Quantity| a.allocatable.and_then(|of| resources::percent(used, of));
    ResourceRow {
        resource: a.resource.clone(),
        allocatable: a.allocatable.map(|q| q.to_string()),
        requests: a.requests.to_string(),
        requests_percent: pct(a.requests),
        limits: a.limits.to_string(),
        limits_percent: pct(a.limits),
        by_qos: a
            .by_qos
            .iter()
            .map(|(qos, r, l)| QosRow {
                qos_class: qos.as_str().to_string(),
                requests: r.to_string(),
                limits: l.to_string(),
            })
            .collect(),
    }
}

/// "3d4h", "12m", "40s": the largest two units, as kubectl prints ages.
fn age(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) if s == 0 => format!("{m}m"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) if m == 0 => format!("{h}h"),
        (0, _, _) => format!("{h}h{m}m"),
        _ if h == 0 => format!("{d}d"),
        _ => format!("{d}d{h}h"),
    }
}

/// Human-readable rendering.
pub fn text(r: &StatusReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "node {} — fence mode {}", r.node, r.mode);
    let _ = writeln!(out, "grace period: {}", r.grace_period);
    if let Some(machine) = &r.machine {
        out.push_str(&crate::machine::text(machine));
    }
    match (&r.last_contact, &r.cut_off_since) {
        (Some(c), Some(since)) => {
            let _ = writeln!(
                out,
                "CUT OFF from the API server since {since} (last contact {c})"
            );
        }
        (Some(c), None) => {
            let _ = writeln!(out, "{} (last contact recorded {c})", r.contact);
        }
        _ => {
            let _ = writeln!(out, "{}", r.contact);
        }
    }
    let _ = writeln!(out, "pod view: {}", r.pod_view);
    let _ = writeln!(
        out,
        "peer quorum: {} ({}); zone {}, {} peer(s) known",
        r.quorum.verdict,
        r.quorum.reason,
        match r.quorum.zone.as_deref() {
            None => "unknown",
            Some("") => "(none)",
            Some(z) => z,
        },
        r.quorum.peers
    );
    if !r.fenced.is_empty() {
        let _ = writeln!(out, "fenced pods: {}", r.fenced.join(", "));
    }
    if r.pending_events > 0 {
        let _ = writeln!(
            out,
            "{} event(s) waiting for the API server",
            r.pending_events
        );
    }
    if !r.conditions.is_empty() {
        if r.cut_off_since.is_some() {
            let _ = writeln!(
                out,
                "\nconditions and taints as last seen before the cut-off:"
            );
        }
        let _ = writeln!(
            out,
            "\n{:<22} {:<8} {:<32} {:<8} OWNER",
            "CONDITION", "STATUS", "REASON", "AGE"
        );
        for c in &r.conditions {
            let _ = writeln!(
                out,
                "{:<22} {:<8} {:<32} {:<8} {}",
                c.type_,
                c.status,
                c.reason,
                c.age_seconds.map_or_else(|| "-".to_string(), age),
                if c.ours { "nodewarden" } else { "other" }
            );
        }
    }
    if !r.taints.is_empty() {
        let _ = writeln!(out, "\n{:<60} OWNER", "TAINT");
        for t in &r.taints {
            let taint = if t.value.is_empty() {
                format!("{}:{}", t.key, t.effect)
            } else {
                format!("{}={}:{}", t.key, t.value, t.effect)
            };
            let owner = if t.ours { "nodewarden" } else { "other" };
            let _ = writeln!(out, "{taint:<60} {owner}");
        }
    }
    if !r.resources.is_empty() {
        let _ = writeln!(
            out,
            "\n{} non-terminal pod(s){}\n{:<24} {:<20} {:<20} ALLOCATABLE",
            r.pod_count,
            r.pod_capacity
                .as_deref()
                .map_or_else(String::new, |c| format!(" of {c} allowed")),
            "RESOURCE",
            "REQUESTS",
            "LIMITS"
        );
        let with_pct = |amount: &str, pct: Option<i128>| match pct {
            Some(p) => format!("{amount} ({p}%)"),
            None => amount.to_string(),
        };
        for row in &r.resources {
            // Bytes with binary suffixes; the JSON form keeps the exact quantities.
            let amount = |q: &str| crate::core::units::resource_amount(&row.resource, q);
            let _ = writeln!(
                out,
                "{:<24} {:<20} {:<20} {}",
                row.resource,
                with_pct(&amount(&row.requests), row.requests_percent),
                with_pct(&amount(&row.limits), row.limits_percent),
                row.allocatable
                    .as_deref()
                    .map_or_else(|| "not advertised".to_string(), amount)
            );
            for q in &row.by_qos {
                let _ = writeln!(
                    out,
                    "  {:<22} {:<20} {}",
                    q.qos_class,
                    amount(&q.requests),
                    amount(&q.limits)
                );
            }
        }
    }
    out.push_str(&crate::allocatable::text(&r.allocatable));
    let _ = writeln!(
        out,
        "\n{:<40} {:<11} {:<13} {:<25} REASON",
        "POD", "QOS", "ACTION", "STOPPED BY"
    );
    for p in &r.pods {
        let _ = writeln!(
            out,
            "{:<40} {:<11} {:<13} {:<25} {}",
            p.pod,
            p.qos_class,
            p.action,
            p.eviction_time.as_deref().unwrap_or("-"),
            p.reason
        );
    }
    out
}
