//! The machine's capacity, the figures Node Allocatable starts from (`core::allocatable`), read
//! as the kubelet reads them (through cAdvisor and `pidlimit`):
//!
//! - `cpu`: the online CPUs, one `cpuN` line each in `/proc/stat`;
//! - `memory`: `MemTotal` in `/proc/meminfo`;
//! - `ephemeral-storage`: the nodefs filesystem's size, `f_blocks × f_frsize` by `statvfs(2)`;
//! - `pid`: min(`pid_max`, `threads-max`), the same ceiling as `pid.available`;
//! - `hugepages-<size>`: `HugePages_Total × Hugepagesize` in `/proc/meminfo`, for the default
//!   page size (the kubelet also lists the other sizes from `/sys/kernel/mm/hugepages`).
//!
//! The seam is [`MachineCapacity`]: plain figures, each `None` when it could not be read. This
//! module fills it from procfs under the injectable `procPath`; another source (sysinfo) can
//! fill the same struct. Every file goes through `bounded`. Read on demand by `sample` and
//! `status`, not every cycle, so it reads into fresh buffers.

use std::io;
use std::path::{Path, PathBuf};

use nix::sys::statvfs::statvfs;

use super::text::{meminfo_bytes, parse_u64};
use crate::bounded;
use crate::core::quantity::{Format, Quantity};
use crate::core::resources::ResourceList;

/// The machine's capacity as plain figures; `None` where it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineCapacity {
    pub cpus: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub ephemeral_storage_bytes: Option<u64>,
    pub pid_max: Option<u64>,
    /// `(page size in bytes, pages)` of the default huge page size.
    pub hugepages: Option<(u64, u64)>,
}

impl MachineCapacity {
    /// The capacity as the kubelet names it in `status.capacity` (plus `pid`), leaving out what
    /// could not be read. A figure beyond `i64` (no real machine) is left out too.
    pub fn resource_list(&self) -> ResourceList {
        let mut out = ResourceList::new();
        let mut put = |name: String, value: Option<u64>, format: Format| {
            if let Some(v) = value.and_then(|v| i64::try_from(v).ok()) {
                out.insert(name, Quantity::from_units(v, format));
            }
        };
        put("cpu".into(), self.cpus, Format::DecimalSI);
        put("memory".into(), self.memory_bytes, Format::BinarySI);
        put(
            "ephemeral-storage".into(),
            self.ephemeral_storage_bytes,
            Format::BinarySI,
        );
        put(
            crate::core::allocatable::PID.into(),
            self.pid_max,
            Format::DecimalSI,
        );
        if let Some((size, pages)) = self.hugepages
            && let Ok(size_units) = i64::try_from(size)
        {
            // `hugepages-2Mi`: the page size in canonical binary form, as v1helper names it.
            let name = format!(
                "hugepages-{}",
                Quantity::from_units(size_units, Format::BinarySI)
            );
            put(name, size.checked_mul(pages), Format::BinarySI);
        }
        out
    }
}

/// Why one capacity figure could not be read; names the resource and the file.
#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    #[error("{resource} capacity: cannot read {}: {source}", path.display())]
    Read {
        resource: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{resource} capacity: {}: {problem}", path.display())]
    Malformed {
        resource: &'static str,
        path: PathBuf,
        problem: String,
    },
    #[error("ephemeral-storage capacity: statvfs({}) failed: {source}", path.display())]
    Statvfs {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
}

/// What [`read`] found, and why the rest is missing.
#[derive(Debug, Default)]
pub struct CapacityReading {
    pub capacity: MachineCapacity,
    pub errors: Vec<CapacityError>,
}

fn read_file(path: &Path, resource: &'static str) -> Result<String, CapacityError> {
    bounded::read_to_string(path, bounded::KERNEL_TEXT).map_err(|source| CapacityError::Read {
        resource,
        path: path.to_path_buf(),
        source,
    })
}

fn malformed<'p>(resource: &'static str, path: &'p Path) -> impl Fn(String) -> CapacityError + 'p {
    move |problem| CapacityError::Malformed {
        resource,
        path: path.to_path_buf(),
        problem,
    }
}

/// Reads the capacity from procfs under `proc_root` and the filesystem holding `nodefs`.
/// Never panics: each figure that could not be read is `None`, with its error.
pub fn read(proc_root: &Path, nodefs: &Path) -> CapacityReading {
    let mut reading = CapacityReading::default();
    let c = &mut reading.capacity;
    let mut keep = |result: Result<(), CapacityError>| {
        if let Err(e) = result {
            reading.errors.push(e);
        }
    };

    let stat = proc_root.join("stat");
    keep(
        read_file(&stat, "cpu")
            .and_then(|text| count_cpus(&text).map_err(malformed("cpu", &stat)))
            .map(|n| c.cpus = Some(n)),
    );

    let meminfo = proc_root.join("meminfo");
    match read_file(&meminfo, "memory") {
        Ok(text) => {
            keep(
                meminfo_bytes(&text, "MemTotal")
                    .map_err(malformed("memory", &meminfo))
                    .map(|b| c.memory_bytes = Some(b)),
            );
            keep(
                hugepages(&text)
                    .map_err(malformed("hugepages", &meminfo))
                    .map(|h| c.hugepages = h),
            );
        }
        Err(e) => keep(Err(e)),
    }

    keep(match statvfs(nodefs) {
        Ok(s) => super::disk::wide(s.blocks())
            .checked_mul(super::disk::wide(s.fragment_size()))
            .map(|b| c.ephemeral_storage_bytes = Some(b))
            .ok_or_else(|| {
                malformed("ephemeral-storage", nodefs)("f_blocks × f_frsize overflows".into())
            }),
        Err(source) => Err(CapacityError::Statvfs {
            path: nodefs.to_path_buf(),
            source,
        }),
    });

    let limit = |name: &str| {
        let path = proc_root.join("sys/kernel").join(name);
        read_file(&path, "pid")
            .and_then(|t| parse_u64(t.trim(), name).map_err(|p| malformed("pid", &path)(p)))
    };
    // Either limit stops new tasks, so the smaller is the ceiling (kubelet `pidlimit`).
    keep(
        limit("pid_max")
            .and_then(|p| limit("threads-max").map(|t| p.min(t)))
            .map(|m| c.pid_max = Some(m)),
    );
    reading
}

/// The number of `cpuN` lines in `/proc/stat` (the aggregate `cpu` line is not one).
fn count_cpus(stat: &str) -> Result<u64, String> {
    let n = stat
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|ch: char| ch.is_ascii_digit()))
        })
        .count();
    if n == 0 {
        return Err("no cpuN line (file truncated?)".into());
    }
    Ok(n as u64)
}

/// `(page size, pages)` from `Hugepagesize` and `HugePages_Total`; `None` when the kernel has no
/// huge pages (neither line).
fn hugepages(meminfo: &str) -> Result<Option<(u64, u64)>, String> {
    let total = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Total:"))
        .map(|v| parse_u64(v.trim(), "HugePages_Total"))
        .transpose()?;
    match total {
        None => Ok(None),
        Some(pages) => Ok(Some((meminfo_bytes(meminfo, "Hugepagesize")?, pages))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_are_the_numbered_cpu_lines() {
        let stat = "cpu  10 0 5 100\ncpu0 5 0 2 50\ncpu1 5 0 3 50\nintr 1 2\nctxt 3\n";
        assert_eq!(count_cpus(stat), Ok(2));
        assert!(count_cpus("cpu  10 0 5 100\nintr 1\n").is_err());
    }

    #[test]
    fn hugepages_are_total_times_size_or_absent() {
        let meminfo = "MemTotal: 8 kB\nHugePages_Total:      4\nHugepagesize:    2048 kB\n";
        assert_eq!(hugepages(meminfo), Ok(Some((2 << 20, 4))));
        assert_eq!(hugepages("MemTotal: 8 kB\n"), Ok(None));
        assert!(hugepages("HugePages_Total: x\nHugepagesize: 2048 kB\n").is_err());
        assert!(hugepages("HugePages_Total: 1\n").is_err());
    }

    #[test]
    fn the_resource_list_names_resources_as_the_kubelet() {
        let capacity = MachineCapacity {
            cpus: Some(4),
            memory_bytes: Some(8 << 30),
            ephemeral_storage_bytes: Some(100 << 30),
            pid_max: Some(4_194_304),
            hugepages: Some((2 << 20, 512)),
        };
        let list: Vec<(String, String)> = capacity
            .resource_list()
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        let expect = [
            ("cpu", "4"),
            ("ephemeral-storage", "100Gi"),
            ("hugepages-2Mi", "1Gi"),
            ("memory", "8Gi"),
            ("pid", "4194304"),
        ];
        assert_eq!(
            list,
            expect
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        );
        assert!(MachineCapacity::default().resource_list().is_empty());
    }

    /// A proc tree with the files `read` uses; `None` leaves a file out.
    fn proc_tree(files: &[(&str, Option<&str>)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/kernel")).unwrap();
        for (name, text) in files {
            if let Some(text) = text {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
        }
        dir
    }

    const STAT: &str = "cpu  1 2 3\ncpu0 1 1 1\ncpu1 1 1 1\ncpu2 1 1 1\nintr 5\n";
    const MEMINFO: &str =
        "MemTotal:  16384 kB\nMemFree: 1024 kB\nHugePages_Total:  2\nHugepagesize:  2048 kB\n";

    #[test]
    fn a_fixture_tree_reads_every_figure() {
        let proc = proc_tree(&[
            ("stat", Some(STAT)),
            ("meminfo", Some(MEMINFO)),
            ("sys/kernel/pid_max", Some("4194304\n")),
            ("sys/kernel/threads-max", Some("63000\n")),
        ]);
        let r = read(proc.path(), proc.path());
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let c = &r.capacity;
        assert_eq!(c.cpus, Some(3));
        assert_eq!(c.memory_bytes, Some(16384 * 1024));
        assert_eq!(c.hugepages, Some((2048 * 1024, 2)));
        // threads-max is the lower ceiling here.
        assert_eq!(c.pid_max, Some(63000));
        assert!(c.ephemeral_storage_bytes.is_some_and(|b| b > 0));
    }

    #[test]
    fn a_missing_or_malformed_file_loses_only_its_figures_and_names_the_file() {
        let proc = proc_tree(&[
            ("stat", Some("cpu  1 2 3\n")),
            ("meminfo", Some("MemTotal: 12\n")),
            ("sys/kernel/pid_max", Some("4194304\n")),
            ("sys/kernel/threads-max", None),
        ]);
        let r = read(proc.path(), &proc.path().join("no-such-dir"));
        let c = &r.capacity;
        assert_eq!((c.cpus, c.memory_bytes, c.pid_max), (None, None, None));
        assert_eq!(c.ephemeral_storage_bytes, None);
        assert_eq!(c.hugepages, None);
        let messages: Vec<String> = r.errors.iter().map(|e| e.to_string()).collect();
        let root = proc.path().display().to_string();
        for expected in [
            format!("cpu capacity: {root}/stat: no cpuN line"),
            format!("memory capacity: {root}/meminfo: MemTotal:"),
            format!("ephemeral-storage capacity: statvfs({root}/no-such-dir) failed"),
            format!("pid capacity: cannot read {root}/sys/kernel/threads-max"),
        ] {
            assert!(
                messages.iter().any(|m| m.starts_with(&expected)),
                "{expected:?} not in {messages:#?}"
            );
        }
        assert_eq!(messages.len(), 4, "{messages:#?}");
    }
}
