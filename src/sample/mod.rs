//! Sampling shell: reads the kernel's figures under injectable roots and returns
//! [`crate::core::signal::Observations`]. It holds no policy and reads no clock
//! (docs/architecture.md §2): every reading that worked goes into the observations, every one that
//! did not becomes a [`SampleError`] naming the signal, the file and the problem, and the caller
//! decides what to do about it.
//!
//! What each signal means is docs/semantics.md §7.1; the submodules cite the rule they mirror:
//! `memory` (`memory.available`), `disk` (`nodefs.*`, `imagefs.*`), `pids`
//! (`pid.available`) and `psi` (`/proc/pressure/*`).
//!
//! This runs every 10 s for the life of the process, so a [`Sampler`] precomputes every path
//! once and reads each file into one reused buffer; the parsers work on borrowed slices and only
//! the error path allocates.

pub mod capacity;
mod disk;
mod memory;
mod pids;
mod psi;
mod text;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::bounded;
use crate::core::signal::{Observations, PsiResource, Signal};

pub use memory::CgroupVersion;

/// Where the sampler reads from. Production uses [`SamplePaths::host`]; tests point the roots at
/// a fixture tree (docs/architecture.md §2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplePaths {
    /// The procfs mount, normally `/proc`.
    pub proc_root: PathBuf,
    /// The cgroup mount, normally `/sys/fs/cgroup` (the v2 unified root, or the tmpfs holding
    /// the v1 controller hierarchies).
    pub cgroup_root: PathBuf,
    /// A path on the kubelet's root filesystem (`nodefs`), e.g. `/var/lib/kubelet`.
    pub nodefs: PathBuf,
    /// A path on the runtime's image filesystem (`imagefs`), e.g. `/var/lib/containerd`. May be
    /// the same filesystem as `nodefs`; both signals are reported either way.
    pub imagefs: PathBuf,
}

impl SamplePaths {
    /// The host's `/proc` and `/sys/fs/cgroup`, with the given filesystem paths.
    pub fn host(nodefs: impl Into<PathBuf>, imagefs: impl Into<PathBuf>) -> SamplePaths {
        SamplePaths {
            proc_root: PathBuf::from("/proc"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            nodefs: nodefs.into(),
            imagefs: imagefs.into(),
        }
    }
}

/// One reading of every signal: what could be read, and why the rest could not.
#[derive(Debug, Default)]
pub struct Sample {
    /// Every signal that could be read.
    pub observations: Observations,
    /// One entry per failure; [`SampleError::what`] says which signals each one left out.
    pub errors: Vec<SampleError>,
}

/// The signals a [`SampleError`] left unobserved, so the caller can log once per signal (or
/// group) rather than once per sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unobserved {
    /// One eviction signal.
    Signal(Signal),
    /// Every PSI signal of one resource: its file could not be read or parsed.
    PsiResource(PsiResource),
    /// Every PSI signal: `/proc/pressure` does not exist.
    Psi,
}

impl fmt::Display for Unobserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unobserved::Signal(signal) => f.write_str(signal.name()),
            Unobserved::PsiResource(resource) => {
                write!(f, "psi.{}.*", psi::resource_name(*resource))
            }
            Unobserved::Psi => f.write_str("psi.*"),
        }
    }
}

/// Why a signal could not be observed. Every variant carries the signal(s) it concerns and the
/// path involved.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// A file could not be opened or read.
    #[error("{what}: cannot read {}: {source}", path.display())]
    Read {
        /// The signal(s) left unobserved.
        what: Unobserved,
        /// The file read.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A file was read, but its contents are not what the kernel writes (truncated, garbage,
    /// out of range).
    #[error("{what}: {}: {problem}", path.display())]
    Malformed {
        /// The signal(s) left unobserved.
        what: Unobserved,
        /// The file read.
        path: PathBuf,
        /// What is wrong, quoting the offending text.
        problem: String,
    },
    /// Neither cgroup v2 nor cgroup v1 memory accounting exists under the cgroup root.
    #[error(
        "memory.available: no cgroup memory accounting under {}: looked for {} (cgroup v2) and {} (cgroup v1)",
        root.display(),
        v2.display(),
        v1.display()
    )]
    NoCgroupMemory {
        /// The configured cgroup root.
        root: PathBuf,
        /// The cgroup v2 marker looked for (`cgroup.controllers`).
        v2: PathBuf,
        /// The cgroup v1 file looked for (`memory/memory.usage_in_bytes`).
        v1: PathBuf,
    },
    /// `statvfs(2)` on a configured filesystem path failed.
    #[error("{what}: statvfs({}) failed: {source}", path.display())]
    Statvfs {
        /// The signal(s) left unobserved.
        what: Unobserved,
        /// The configured filesystem path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: nix::errno::Errno,
    },
    /// The filesystem reports no inode table (`f_files == 0`, e.g. btrfs, which allocates
    /// inodes dynamically), so a free-inode share has no meaning.
    #[error(
        "{what}: the filesystem at {} reports 0 total inodes (it allocates inodes dynamically, e.g. btrfs); no inode signal",
        path.display()
    )]
    NoInodes {
        /// The inode signal left unobserved.
        what: Unobserved,
        /// The configured filesystem path.
        path: PathBuf,
    },
    /// `/proc/pressure` does not exist: the kernel is older than 4.20, was built without
    /// `CONFIG_PSI`, or was booted with `psi=0`.
    #[error(
        "psi.*: {} does not exist: PSI is unavailable (kernel older than 4.20, built without CONFIG_PSI, or booted with psi=0)",
        path.display()
    )]
    PsiUnavailable {
        /// The `pressure` directory looked for.
        path: PathBuf,
    },
}

impl SampleError {
    /// The signal(s) this error left unobserved.
    pub fn what(&self) -> Unobserved {
        match self {
            SampleError::Read { what, .. }
            | SampleError::Malformed { what, .. }
            | SampleError::Statvfs { what, .. }
            | SampleError::NoInodes { what, .. } => *what,
            SampleError::NoCgroupMemory { .. } => Unobserved::Signal(Signal::MemoryAvailable),
            SampleError::PsiUnavailable { .. } => Unobserved::Psi,
        }
    }

    /// The eviction signal this error left unobserved, if it concerns exactly one.
    pub fn signal(&self) -> Option<Signal> {
        match self.what() {
            Unobserved::Signal(signal) => Some(signal),
            Unobserved::PsiResource(_) | Unobserved::Psi => None,
        }
    }

    /// The file or filesystem path the error concerns.
    pub fn path(&self) -> &Path {
        match self {
            SampleError::Read { path, .. }
            | SampleError::Malformed { path, .. }
            | SampleError::Statvfs { path, .. }
            | SampleError::NoInodes { path, .. }
            | SampleError::PsiUnavailable { path } => path,
            SampleError::NoCgroupMemory { root, .. } => root,
        }
    }

    pub(crate) fn malformed(what: Unobserved, path: &Path, problem: impl Into<String>) -> Self {
        SampleError::Malformed {
            what,
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }
}

/// Every file the sampler reads, joined once at construction so a sample does no path work.
#[derive(Debug)]
struct Files {
    meminfo: PathBuf,
    loadavg: PathBuf,
    pid_max: PathBuf,
    threads_max: PathBuf,
    pressure_dir: PathBuf,
    pressure: [(PsiResource, PathBuf); 3],
    cgroup_v2_marker: PathBuf,
    cgroup_v2_memory_stat: PathBuf,
    cgroup_v1_usage: PathBuf,
    cgroup_v1_memory_stat: PathBuf,
}

impl Files {
    fn new(paths: &SamplePaths) -> Files {
        let proc = &paths.proc_root;
        let cgroup = &paths.cgroup_root;
        let pressure_dir = proc.join("pressure");
        Files {
            meminfo: proc.join("meminfo"),
            loadavg: proc.join("loadavg"),
            pid_max: proc.join("sys/kernel/pid_max"),
            threads_max: proc.join("sys/kernel/threads-max"),
            pressure: [
                (PsiResource::Memory, pressure_dir.join("memory")),
                (PsiResource::Io, pressure_dir.join("io")),
                (PsiResource::Cpu, pressure_dir.join("cpu")),
            ],
            pressure_dir,
            cgroup_v2_marker: cgroup.join("cgroup.controllers"),
            cgroup_v2_memory_stat: cgroup.join("memory.stat"),
            cgroup_v1_usage: cgroup.join("memory/memory.usage_in_bytes"),
            cgroup_v1_memory_stat: cgroup.join("memory/memory.stat"),
        }
    }
}

/// Reads every signal under one set of [`SamplePaths`]. Keep one for the life of the process:
/// it reuses its read buffer and remembers the cgroup version once detected.
#[derive(Debug)]
pub struct Sampler {
    paths: SamplePaths,
    files: Files,
    cgroup: Option<CgroupVersion>,
    buf: Vec<u8>,
}

/// Initial capacity of the read buffer: `/proc/meminfo` and a root `memory.stat` are 1–2 KiB.
const BUF_CAPACITY: usize = 8 * 1024;

impl Sampler {
    /// A sampler for these paths. Does no I/O; the cgroup version is detected on first use.
    pub fn new(paths: SamplePaths) -> Sampler {
        Sampler {
            files: Files::new(&paths),
            paths,
            cgroup: None,
            buf: Vec::with_capacity(BUF_CAPACITY),
        }
    }

    /// The paths this sampler reads.
    pub fn paths(&self) -> &SamplePaths {
        &self.paths
    }

    /// The cgroup version detected so far (`None` before the first sample, or while neither
    /// version's memory accounting could be found).
    pub fn cgroup_version(&self) -> Option<CgroupVersion> {
        self.cgroup
    }

    /// Reads every signal once. Never panics: whatever could not be read is in `errors`.
    pub fn sample(&mut self) -> Sample {
        let mut sample = Sample::default();
        let eviction = &mut sample.observations.eviction;

        match self.memory() {
            Ok(observation) => {
                eviction.insert(Signal::MemoryAvailable, observation);
            }
            Err(error) => sample.errors.push(error),
        }

        for (path, bytes_signal, inodes_signal) in [
            (
                &self.paths.nodefs,
                Signal::NodeFsAvailable,
                Signal::NodeFsInodesFree,
            ),
            (
                &self.paths.imagefs,
                Signal::ImageFsAvailable,
                Signal::ImageFsInodesFree,
            ),
        ] {
            let fs = disk::read(path, bytes_signal, inodes_signal);
            for (signal, result) in [(bytes_signal, fs.bytes), (inodes_signal, fs.inodes)] {
                match result {
                    Ok(observation) => {
                        eviction.insert(signal, observation);
                    }
                    Err(error) => sample.errors.push(error),
                }
            }
        }

        match pids::read(&self.files, &mut self.buf) {
            Ok(observation) => {
                eviction.insert(Signal::PidAvailable, observation);
            }
            Err(error) => sample.errors.push(error),
        }

        psi::read(
            &self.files,
            &mut self.buf,
            &mut sample.observations.psi,
            &mut sample.errors,
        );

        sample
    }

    fn memory(&mut self) -> Result<crate::core::signal::Observation, SampleError> {
        let version = match self.cgroup {
            Some(version) => version,
            None => {
                let detected = memory::detect(&self.paths.cgroup_root, &self.files)?;
                self.cgroup = Some(detected);
                detected
            }
        };
        memory::read(version, &self.files, &mut self.buf)
    }
}

/// Reads the whole of `path` into `buf` (cleared first) and returns it as text, at most
/// [`bounded::KERNEL_TEXT`]: a file that never ends (a wrong `procPath`, a symlink to
/// `/dev/zero`) is a read error naming the file and the limit.
fn read_text<'b>(
    buf: &'b mut Vec<u8>,
    path: &Path,
    what: Unobserved,
) -> Result<&'b str, SampleError> {
    if let Err(source) = bounded::read_into(buf, path, bounded::KERNEL_TEXT) {
        // A file that ran into the limit grew the buffer to megabytes: give that back, so the
        // process keeps its small steady-state footprint while the fault lasts.
        buf.shrink_to(BUF_CAPACITY);
        return Err(SampleError::Read {
            what,
            path: path.to_path_buf(),
            source,
        });
    }
    std::str::from_utf8(buf)
        .map_err(|error| SampleError::malformed(what, path, format!("not UTF-8 text ({error})")))
}
