//! What `nodewarden sample` prints: one reading of every signal, the thresholds evaluated against
//! it, the conditions and taints it implies, and Node Allocatable computed here. Formatting only.

use serde::Serialize;

use crate::agent::Reading;
use crate::config::TaintSpec;
use crate::core::condition::NodeCondition;
use crate::core::pressure::Evaluation;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleReport {
    pub node: String,
    /// The machine's capacity, kernel, OS and filesystems; set by the caller, which reads it
    /// once (it is not part of a sampling cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
    pub signals: Vec<SignalReading>,
    pub psi: Vec<PsiReading>,
    pub unreadable: Vec<Unreadable>,
    pub thresholds: Vec<ThresholdReading>,
    pub conditions: Vec<ConditionReading>,
    pub taints: Vec<String>,
    /// Node Allocatable computed here from the capacity and the configuration.
    pub allocatable: crate::allocatable::AllocatableReport,
}

#[derive(Debug, Serialize)]
pub struct SignalReading {
    pub signal: String,
    pub available: i64,
    pub capacity: i64,
}

#[derive(Debug, Serialize)]
pub struct PsiReading {
    pub signal: String,
    pub percent: f64,
}

#[derive(Debug, Serialize)]
pub struct Unreadable {
    pub what: String,
    pub error: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdReading {
    pub signal: String,
    pub kind: &'static str,
    /// Resolved against capacity: bytes, inodes, PIDs or (PSI) percent.
    pub threshold: String,
    pub available: Option<String>,
    pub met: bool,
}

#[derive(Debug, Serialize)]
pub struct ConditionReading {
    #[serde(rename = "type")]
    pub condition_type: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

pub fn sample_report(
    node: &str,
    reading: &Reading,
    evaluation: &Evaluation,
    conditions: &[NodeCondition],
    taints: &[TaintSpec],
    allocatable: crate::allocatable::AllocatableReport,
) -> SampleReport {
    let mut thresholds: Vec<ThresholdReading> = evaluation
        .thresholds
        .iter()
        .map(|t| ThresholdReading {
            signal: t.signal.name().to_string(),
            kind: if t.soft { "soft" } else { "hard" },
            threshold: t.threshold.to_string(),
            available: t.available.map(|a| a.to_string()),
            met: t.met,
        })
        .collect();
    thresholds.extend(evaluation.psi.iter().map(|p| ThresholdReading {
        signal: p.signal.name(),
        kind: "psi",
        threshold: format!("{}", p.above_percent),
        available: p.value.map(|v| format!("{v}")),
        met: p.met,
    }));
    SampleReport {
        node: node.to_string(),
        machine: None,
        signals: reading
            .observations
            .eviction
            .iter()
            .map(|(s, o)| SignalReading {
                signal: s.name().to_string(),
                available: o.available,
                capacity: o.capacity,
            })
            .collect(),
        psi: reading
            .observations
            .psi
            .iter()
            .map(|(s, v)| PsiReading {
                signal: s.name(),
                percent: *v,
            })
            .collect(),
        unreadable: reading
            .errors
            .iter()
            .map(|(what, error)| Unreadable {
                what: what.clone(),
                error: error.clone(),
            })
            .collect(),
        thresholds,
        conditions: conditions
            .iter()
            .map(|c| ConditionReading {
                condition_type: c.condition_type.clone(),
                status: c.status.to_string(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        taints: taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect(),
        allocatable,
    }
}

/// Human-readable rendering of a sample report.
pub fn sample_text(r: &SampleReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "node {}", r.node);
    if let Some(machine) = &r.machine {
        out.push_str(&crate::machine::text(machine));
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:>22} {:>22}",
        "SIGNAL", "AVAILABLE", "CAPACITY"
    );
    for s in &r.signals {
        let _ = writeln!(
            out,
            "{:<22} {:>22} {:>22}",
            s.signal, s.available, s.capacity
        );
    }
    for p in &r.psi {
        let _ = writeln!(out, "{:<22} {:>21.2}%", p.signal, p.percent);
    }
    for u in &r.unreadable {
        let _ = writeln!(out, "{:<22} unreadable: {}", u.what, u.error);
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:<5} {:>22} {:>22}  MET",
        "THRESHOLD", "KIND", "VALUE", "AVAILABLE"
    );
    for t in &r.thresholds {
        let _ = writeln!(
            out,
            "{:<22} {:<5} {:>22} {:>22}  {}",
            t.signal,
            t.kind,
            t.threshold,
            t.available.as_deref().unwrap_or("-"),
            if t.met { "yes" } else { "no" }
        );
    }
    let _ = writeln!(out, "\n{:<22} {:<7} REASON", "CONDITION", "STATUS");
    for c in &r.conditions {
        let _ = writeln!(out, "{:<22} {:<7} {}", c.condition_type, c.status, c.reason);
    }
    if r.taints.is_empty() {
        let _ = writeln!(out, "\ntaints implied: none");
    } else {
        let _ = writeln!(out, "\ntaints implied: {}", r.taints.join(", "));
    }
    out.push_str(&crate::allocatable::text(&r.allocatable));
    out
}
