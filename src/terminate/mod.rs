//! The terminator shell: how a fenced pod's processes are stopped on this node
//! (docs/architecture.md §2, docs/fence.md §4). It holds no policy; the fence planner in the core
//! decides when.
//!
//! - [`layout`]: where the kubelet's pod cgroups are (cgroup v1/v2, systemd/cgroupfs driver)
//!   and the pod cgroup path from a pod UID and QoS class (docs/semantics.md §12).
//! - [`procs`]: the PIDs in a pod cgroup tree and the cgroup a PID is in now.
//! - [`signal`]: SIGTERM/SIGKILL through pidfds without a PID-reuse hazard, and `cgroup.kill`.
//! - [`keep_dead`]: the set of fenced pods and the sweep that keeps them dead.
//!
//! Typical use: `CgroupLayout::detect("/sys/fs/cgroup", None, None)?.locate_in_mounts("/proc")?`,
//! then `Terminator::new(layout, "/proc")`, `terminate(&layout.pod_dir(uid, qos))` at the
//! SIGTERM deadline, `kill(..)` when the grace runs out, and `Fence::sweep` every ≤ 500 ms.

pub mod keep_dead;
pub mod layout;
pub mod procs;
pub mod signal;

pub use keep_dead::{Fence, KillPod, PodSweep, SweepReport};
pub use layout::{CgroupDriver, CgroupLayout, CgroupVersion, LayoutError, ProcCgroupLine};
pub use procs::{ProcsError, TreeProcesses};
pub use signal::{KillMethod, SignalError, SignalReport, StopSignal, Terminator};
