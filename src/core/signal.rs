//! The signals nodewarden observes: the kubelet's eviction signals (docs/semantics.md §7.1) and PSI
//! averages (our own), and one observation of all of them. Pure data, no I/O.

use std::collections::BTreeMap;
use std::fmt;

/// A kubelet eviction signal (docs/semantics.md §7.1). The operator is always "less than".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    MemoryAvailable,
    NodeFsAvailable,
    NodeFsInodesFree,
    ImageFsAvailable,
    ImageFsInodesFree,
    PidAvailable,
}

impl Signal {
    pub const ALL: [Signal; 6] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::PidAvailable,
    ];

    /// The kubelet's name for the signal, e.g. `memory.available`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    pub fn from_name(name: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The standard node condition this signal feeds (docs/semantics.md §7.1).
    pub fn standard_condition(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "MemoryPressure",
            Signal::PidAvailable => "PIDPressure",
            _ => "DiskPressure",
        }
    }

    /// Whether the observed quantity is bytes (true) or a count (inodes, PIDs).
    pub fn is_bytes(self) -> bool {
        matches!(
            self,
            Signal::MemoryAvailable | Signal::NodeFsAvailable | Signal::ImageFsAvailable
        )
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The resource a PSI file describes (`/proc/pressure/<resource>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PsiResource {
    Memory,
    Io,
    Cpu,
}

/// `some` (at least one task stalled) or `full` (all non-idle tasks stalled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PsiKind {
    Some,
    Full,
}

/// The averaging window of a PSI figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PsiWindow {
    Avg10,
    Avg60,
    Avg300,
}

/// One PSI average, named `psi.<resource>.<kind>.<window>`, e.g. `psi.memory.full.avg10`.
/// Its value is the percentage of wall time stalled (0–100); higher is worse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PsiSignal {
    pub resource: PsiResource,
    pub kind: PsiKind,
    pub window: PsiWindow,
}

impl PsiSignal {
    pub fn all() -> Vec<PsiSignal> {
        let mut out = Vec::with_capacity(18);
        for resource in [PsiResource::Memory, PsiResource::Io, PsiResource::Cpu] {
            for kind in [PsiKind::Some, PsiKind::Full] {
                for window in [PsiWindow::Avg10, PsiWindow::Avg60, PsiWindow::Avg300] {
                    out.push(PsiSignal {
                        resource,
                        kind,
                        window,
                    });
                }
            }
        }
        out
    }

    pub fn name(self) -> String {
        let resource = match self.resource {
            PsiResource::Memory => "memory",
            PsiResource::Io => "io",
            PsiResource::Cpu => "cpu",
        };
        let kind = match self.kind {
            PsiKind::Some => "some",
            PsiKind::Full => "full",
        };
        let window = match self.window {
            PsiWindow::Avg10 => "avg10",
            PsiWindow::Avg60 => "avg60",
            PsiWindow::Avg300 => "avg300",
        };
        format!("psi.{resource}.{kind}.{window}")
    }

    pub fn from_name(name: &str) -> Option<PsiSignal> {
        PsiSignal::all().into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for PsiSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Any signal a condition can be fed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SignalRef {
    Eviction(Signal),
    Psi(PsiSignal),
}

impl SignalRef {
    pub fn from_name(name: &str) -> Option<SignalRef> {
        Signal::from_name(name)
            .map(SignalRef::Eviction)
            .or_else(|| PsiSignal::from_name(name).map(SignalRef::Psi))
    }

    pub fn name(self) -> String {
        match self {
            SignalRef::Eviction(s) => s.name().to_string(),
            SignalRef::Psi(p) => p.name(),
        }
    }
}

impl fmt::Display for SignalRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// One reading of an eviction signal: what is available and the capacity it is a share of.
/// Units are bytes, inodes or PIDs, by signal. `available` may be negative (memory working set
/// above capacity is possible in principle); the kubelet compares it as a signed quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    pub available: i64,
    pub capacity: i64,
}

/// One reading of every signal that could be read. A signal that could not be read is absent
/// (and its thresholds are not evaluated, as the kubelet skips signals without an observation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    pub eviction: BTreeMap<Signal, Observation>,
    pub psi: BTreeMap<PsiSignal, f64>,
}
