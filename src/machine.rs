//! What the machine is, as `sample` and `status` show it and the agent logs once at start: its
//! capacity (CPUs, memory), when it booted, its kernel and OS, and which filesystem holds
//! `nodefsPath` and `imagefsPath` (mount point, type, device).
//!
//! Read through `sysinfo`, on demand only: it reads `/proc/mounts`, `/proc/stat` and
//! `/etc/os-release` whole, more than one sampling cycle costs, so none of this is on the 10 s path
//! (docs/architecture.md §2 keeps the sampler to the signals). Any fact `sysinfo` cannot give is
//! `None` with the reason in `errors`, never a guess.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use sysinfo::{CpuRefreshKind, DiskRefreshKind, Disks, MemoryRefreshKind, System};

/// The machine's capacity and identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// Logical CPUs the kernel lists (online CPUs).
    pub cpus: Option<usize>,
    /// Total memory in bytes (`MemTotal`).
    pub memory_bytes: Option<u64>,
    /// Boot time, RFC 3339 (UTC, whole seconds).
    pub boot_time: Option<String>,
    /// Kernel release, e.g. `6.8.0-45-generic`.
    pub kernel: Option<String>,
    /// Distribution name and version, e.g. `Linux 24.04 Ubuntu`.
    pub os: Option<String>,
    /// The filesystems of `nodefsPath` and `imagefsPath`, in that order.
    pub filesystems: Vec<Filesystem>,
    /// What could not be read, one line each.
    pub errors: Vec<String>,
}

/// The filesystem holding one configured path.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Filesystem {
    /// `nodefs` or `imagefs`.
    pub role: &'static str,
    /// The configured path.
    pub path: PathBuf,
    pub mount_point: Option<PathBuf>,
    /// Filesystem type, e.g. `ext4`.
    pub fs_type: Option<String>,
    /// The mounted device, e.g. `/dev/vda1`.
    pub device: Option<String>,
}

/// Reads the machine's facts and the filesystems of `nodefs` and `imagefs`.
pub fn read(nodefs: &Path, imagefs: &Path) -> Machine {
    let mut machine = Machine::default();
    match System::new() {
        Ok(mut system) => {
            system.refresh_cpu_list(CpuRefreshKind::nothing());
            system.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
            let cpus = system.cpus().len();
            // sysinfo yields an empty list, not an error, when it cannot read the CPUs.
            if cpus == 0 {
                machine
                    .errors
                    .push("CPU count: sysinfo lists no CPU".into());
            } else {
                machine.cpus = Some(cpus);
            }
            let memory = system.total_memory();
            if memory == 0 {
                machine
                    .errors
                    .push("memory total: sysinfo reports 0".into());
            } else {
                machine.memory_bytes = Some(memory);
            }
        }
        Err(error) => machine
            .errors
            .push(format!("CPU count and memory total: {error}")),
    }
    match System::boot_time() {
        Ok(seconds) => {
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
            machine.boot_time = Some(humantime::format_rfc3339_seconds(at).to_string());
        }
        Err(error) => machine.errors.push(format!("boot time: {error}")),
    }
    match System::kernel_version() {
        Ok(kernel) => machine.kernel = Some(kernel),
        Err(error) => machine.errors.push(format!("kernel version: {error}")),
    }
    match System::long_os_version() {
        Ok(os) => machine.os = Some(os),
        Err(error) => machine.errors.push(format!("OS version: {error}")),
    }

    // The list only (mount point, type, device): no space or I/O figures, so no statvfs of
    // every mount.
    let disks = match Disks::new_with_refreshed_list_specifics(DiskRefreshKind::nothing()) {
        Ok(disks) => Some(disks),
        Err(error) => {
            machine.errors.push(format!("filesystems: {error}"));
            None
        }
    };
    for (role, path) in [("nodefs", nodefs), ("imagefs", imagefs)] {
        let mut filesystem = Filesystem {
            role,
            path: path.to_path_buf(),
            mount_point: None,
            fs_type: None,
            device: None,
        };
        if let Some(disks) = &disks {
            match holding(disks, path) {
                Ok(disk) => {
                    filesystem.mount_point = Some(disk.mount_point().to_path_buf());
                    filesystem.fs_type = Some(disk.file_system().to_string_lossy().into_owned());
                    filesystem.device = Some(disk.name().to_string_lossy().into_owned());
                }
                Err(problem) => machine
                    .errors
                    .push(format!("{role} {}: {problem}", path.display())),
            }
        }
        machine.filesystems.push(filesystem);
    }
    machine
}

/// The disk whose mount holds `path`: the longest mount point above it on the same device. The
/// device check matters because sysinfo leaves some mounts out (tmpfs, NFS): a path on a tmpfs at
/// `/tmp` must not be reported as on `/`.
fn holding<'d>(disks: &'d Disks, path: &Path) -> Result<&'d sysinfo::Disk, String> {
    let resolved =
        std::fs::canonicalize(path).map_err(|error| format!("cannot resolve the path: {error}"))?;
    let device = std::fs::metadata(&resolved)
        .map_err(|error| format!("cannot stat the path: {error}"))?
        .dev();
    disks
        .iter()
        .filter(|disk| resolved.starts_with(disk.mount_point()))
        .max_by_key(|disk| disk.mount_point().as_os_str().len())
        .filter(|disk| {
            std::fs::metadata(disk.mount_point()).is_ok_and(|meta| meta.dev() == device)
        })
        .ok_or_else(|| {
            "its filesystem is not in sysinfo's disk list (sysinfo leaves out tmpfs, NFS, CIFS, autofs and pseudo filesystems)"
                .to_string()
        })
}

/// The machine in a few text lines, for `sample` and `status`.
pub fn text(machine: &Machine) -> String {
    use std::fmt::Write;
    let unknown = || "unknown".to_string();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "machine: {} CPUs, {} of memory, booted {}",
        machine.cpus.map_or_else(unknown, |c| c.to_string()),
        machine
            .memory_bytes
            .map_or_else(unknown, |m| crate::core::units::bytes(i128::from(m))),
        machine.boot_time.clone().unwrap_or_else(unknown),
    );
    let _ = writeln!(
        out,
        "kernel {}, OS {}",
        machine.kernel.clone().unwrap_or_else(unknown),
        machine.os.clone().unwrap_or_else(unknown),
    );
    for fs in &machine.filesystems {
        let _ = writeln!(
            out,
            "{:<8} {} on {} ({}, device {})",
            fs.role,
            fs.path.display(),
            fs.mount_point
                .as_ref()
                .map_or_else(unknown, |m| m.display().to_string()),
            fs.fs_type.clone().unwrap_or_else(unknown),
            fs.device.clone().unwrap_or_else(unknown),
        );
    }
    for error in &machine.errors {
        let _ = writeln!(out, "machine: cannot read {error}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_on_a_mount_sysinfo_leaves_out_is_not_reported_as_its_parent() {
        // /proc is a mount sysinfo excludes, on its own device: not "/" with ext4.
        let Ok(disks) = Disks::new_with_refreshed_list_specifics(DiskRefreshKind::nothing()) else {
            panic!("sysinfo must list disks on Linux");
        };
        let found = holding(&disks, Path::new("/proc/self"));
        assert!(
            found.is_err(),
            "{:?}",
            found.map(|d| d.mount_point().to_path_buf())
        );
    }

    #[test]
    fn an_absent_path_is_an_error_naming_the_problem() {
        let machine = read(Path::new("/nonexistent/nodefs"), Path::new("/"));
        assert_eq!(machine.filesystems.len(), 2);
        assert_eq!(machine.filesystems[0].mount_point, None);
        assert!(
            machine
                .errors
                .iter()
                .any(|e| e.starts_with("nodefs /nonexistent/nodefs: cannot resolve")),
            "{:?}",
            machine.errors
        );
        assert_eq!(
            machine.filesystems[1].mount_point.as_deref(),
            Some(Path::new("/"))
        );
    }
}
