//! What `nodewarden sample` prints: one reading of every signal, the thresholds evaluated against
//! it, the conditions and taints it implies, and Node Allocatable computed here. Formatting only.

use serde::Serialize;

use crate::agent::Reading;
use crate::config::TaintSpec;
use crate::core::condition::NodeCondition;
use crate::core::pressure::Evaluation;
use crate::core::threshold::{Threshold, ThresholdValue};

use crate::core::units;

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
    /// Exact, in the signal's unit (bytes, inodes or PIDs).
    pub available: i64,
    pub capacity: i64,
    /// How the text form prints the amounts.
    #[serde(skip)]
    pub unit: Unit,
}

/// The unit of a threshold or signal, which decides only how the text form prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// Inodes or PIDs.
    Count,
    /// A PSI average, in percent.
    Percent,
}

impl Unit {
    fn of(signal: crate::core::signal::Signal) -> Unit {
        if signal.is_bytes() {
            Unit::Bytes
        } else {
            Unit::Count
        }
    }

    fn text(self, amount: &Amount) -> String {
        match (self, amount) {
            (Unit::Bytes, Amount::Exact(v)) => units::bytes(i128::from(*v)),
            (_, Amount::Exact(v)) => v.to_string(),
            (_, Amount::Percent(p)) => format!("{p:.2}%"),
        }
    }
}

/// A number in the JSON form: an exact integer (bytes, inodes, PIDs) or a PSI percentage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Amount {
    Exact(i64),
    Percent(f64),
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
    /// As configured: `100Mi`, `10%`, or a PSI percentage.
    pub value: String,
    /// Resolved against capacity: bytes, inodes, PIDs or (PSI) percent; `None` when it depends
    /// on a capacity that could not be read (a percentage of an unread signal).
    pub threshold: Option<Amount>,
    /// `None` when the signal could not be read this time.
    pub available: Option<Amount>,
    /// What the agent acts on: never met while its signal is unread (the kubelet skips a
    /// threshold without an observation).
    pub met: bool,
    #[serde(skip)]
    pub unit: Unit,
}

#[derive(Debug, Serialize)]
pub struct ConditionReading {
    #[serde(rename = "type")]
    pub condition_type: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// The report of one reading; `thresholds` are the configured ones, to show each as written
/// beside what it resolves to.
pub fn sample_report(
    node: &str,
    thresholds: &[Threshold],
    reading: &Reading,
    evaluation: &Evaluation,
    conditions: &[NodeCondition],
    taints: &[TaintSpec],
    allocatable: crate::allocatable::AllocatableReport,
) -> SampleReport {
    let configured = thresholds;
    let mut thresholds: Vec<ThresholdReading> = evaluation
        .thresholds
        .iter()
        .map(|t| {
            // One hard and one soft threshold per signal at most (the maps are keyed by it).
            let value = configured
                .iter()
                .find(|c| c.signal == t.signal && c.soft == t.soft)
                .map(|c| c.value.clone());
            let percentage = matches!(value, Some(ThresholdValue::Percentage(_)));
            ThresholdReading {
                signal: t.signal.name().to_string(),
                kind: if t.soft { "soft" } else { "hard" },
                value: value.map_or_else(
                    || units::signal_amount(t.signal, t.threshold),
                    |v| v.to_string(),
                ),
                // A percentage of an unread signal was resolved against a capacity of 0 by
                // the evaluation: that 0 is not a threshold anyone set.
                threshold: (t.available.is_some() || !percentage)
                    .then_some(Amount::Exact(t.threshold)),
                available: t.available.map(Amount::Exact),
                met: t.met,
                unit: Unit::of(t.signal),
            }
        })
        .collect();
    thresholds.extend(evaluation.psi.iter().map(|p| ThresholdReading {
        signal: p.signal.name(),
        kind: "psi",
        value: format!("{}%", p.above_percent),
        threshold: Some(Amount::Percent(p.above_percent)),
        available: p.value.map(Amount::Percent),
        met: p.met,
        unit: Unit::Percent,
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
                unit: Unit::of(*s),
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

/// Human-readable rendering of a sample report: bytes with binary suffixes, each threshold as
/// configured beside what it resolves to here, `unknown` for what could not be read.
pub fn sample_text(r: &SampleReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "node {}", r.node);
    if let Some(machine) = &r.machine {
        out.push_str(&crate::machine::text(machine));
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:>12} {:>12}",
        "SIGNAL", "AVAILABLE", "CAPACITY"
    );
    for s in &r.signals {
        let _ = writeln!(
            out,
            "{:<22} {:>12} {:>12}",
            s.signal,
            s.unit.text(&Amount::Exact(s.available)),
            s.unit.text(&Amount::Exact(s.capacity)),
        );
    }
    for p in &r.psi {
        let _ = writeln!(out, "{:<22} {:>11.2}%", p.signal, p.percent);
    }
    for u in &r.unreadable {
        let _ = writeln!(out, "{:<22} unreadable: {}", u.what, u.error);
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:<5} {:>18} {:>12}  MET",
        "THRESHOLD", "KIND", "VALUE", "AVAILABLE"
    );
    for t in &r.thresholds {
        let resolved = t.threshold.as_ref().map(|a| t.unit.text(a));
        // A percentage of capacity shows what it comes to here; a quantity is what it says.
        let value = match resolved {
            Some(resolved) if t.unit != Unit::Percent && t.value.ends_with('%') => {
                format!("{} ({resolved})", t.value)
            }
            Some(_) => t.value.clone(),
            None => format!("{} (unknown)", t.value),
        };
        let (available, met) = match &t.available {
            Some(a) => (t.unit.text(a), if t.met { "yes" } else { "no" }),
            None => ("unknown".to_string(), "unknown"),
        };
        let _ = writeln!(
            out,
            "{:<22} {:<5} {:>18} {:>12}  {met}",
            t.signal, t.kind, value, available
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
