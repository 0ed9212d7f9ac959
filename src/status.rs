//! What `nodewarden status` prints for the person at the node: whether the agent is in contact
//! with the control plane, and every pod it knows with the fence's plan — read from the state
//! directory, so it works while the API server is unreachable. Formatting only; the plans come
//! from the same planner the agent runs.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::config::Config;
use crate::core::clock::Moment;
use crate::core::fence::{self, Plan, QuorumVerdict};
use crate::state::{self, Loaded, StoredPod};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub node: String,
    pub mode: String,
    /// "connected", "cut off" or "unknown" (no state yet).
    pub contact: String,
    pub last_contact: Option<String>,
    pub cut_off_since: Option<String>,
    pub pods: Vec<PodStatus>,
    pub fenced: Vec<String>,
    pub pending_events: usize,
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
}

/// Builds the report from the state directory at wall time `now`.
pub fn report(config: &Config, node: &str, now: SystemTime) -> Result<StatusReport, StatusError> {
    let dir = &config.state_directory;
    let state = match state::load(dir) {
        Loaded::Found(s) => Some(s),
        Loaded::Missing => None,
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
        fence::Mode::Enforce => "enforce",
        fence::Mode::DryRun => "dry-run",
        fence::Mode::Off => "off",
    }
    .to_string();
    let Some(state) = state else {
        return Ok(StatusReport {
            node: node.to_string(),
            mode,
            contact: "unknown (no state written yet)".into(),
            last_contact: None,
            cut_off_since: None,
            pods: vec![],
            fenced: vec![],
            pending_events: 0,
        });
    };
    let contact_wall = state.last_contact.as_deref().and_then(state::parse_time);
    let age = contact_wall.and_then(|c| now.duration_since(c).ok());
    let cut_off = age.is_some_and(|a| a > config.fence.unreachable_after);
    // Plans on the fence's monotonic scale, anchored at now.
    let moment = Moment {
        mono: fence::MONO_BASE,
        wall: now,
    };
    let contact_mono = contact_wall.map_or(moment.mono, |c| moment.mono_at(c));
    let to_wall = |d: Duration| humantime::format_rfc3339_millis(moment.wall_at(d)).to_string();
    let pods: Vec<_> = state.pods.iter().filter_map(StoredPod::to_pod).collect();
    let plans = fence::plan(
        &pods,
        contact_mono,
        &fence::policy_of(config),
        &QuorumVerdict::NotConsulted,
    );
    let pods = plans
        .iter()
        .zip(&pods)
        .map(|(p, pod)| {
            let (action, schedule, reason) = match &p.plan {
                Plan::Never { reason } => ("never".to_string(), None, reason.clone()),
                Plan::Stop {
                    schedule,
                    dry_run,
                    reason,
                } => (
                    if *dry_run { "dry-run stop" } else { "stop" }.to_string(),
                    Some(*schedule),
                    reason.clone(),
                ),
                Plan::Hold { schedule, reason } => {
                    ("hold".to_string(), Some(*schedule), reason.clone())
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
    Ok(StatusReport {
        node: state.node.clone(),
        mode,
        contact: if cut_off { "cut off" } else { "connected" }.into(),
        last_contact: contact_wall.map(|c| humantime::format_rfc3339_millis(c).to_string()),
        cut_off_since: contact_wall.filter(|_| cut_off).map(|c| {
            humantime::format_rfc3339_millis(c + config.fence.unreachable_after).to_string()
        }),
        pods,
        fenced: state.fenced.clone(),
        pending_events: state.pending_events.len(),
    })
}

/// Human-readable rendering.
pub fn text(r: &StatusReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "node {} — fence mode {}", r.node, r.mode);
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
