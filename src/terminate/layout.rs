//! Where the kubelet's pod cgroups live on this node: cgroup version, cgroup driver, and (on v1)
//! which hierarchy we read and signal through. Discovery reads only directory entries under a
//! root the caller passes, so tests point it at a fixture tree or a per-test cgroup.

use std::path::{Component, Path, PathBuf};

use crate::bounded;
use crate::core::qos::{QosClass, pod_cgroup_name, to_cgroupfs, to_systemd};

pub use crate::core::qos::{CgroupDriver, CgroupVersion};

/// The v1 hierarchies we may read pod processes from, in order of preference.
///
/// On v1 every hierarchy holds its own copy of the kubelet's tree and the runtime puts each
/// container process into all of them, so one hierarchy is enough to find every process; reading
/// more would only find the same PIDs again. We prefer `pids`: it exists only to track tasks, the
/// kubelet creates pod cgroups in it (pod PID limits), and nothing else moves tasks around inside
/// it. `memory` is next because the kubelet requires that controller on every node. `cpu,cpuacct`
/// (and `cpu`, where the two are mounted apart) and the named `systemd` hierarchy are last resorts:
/// systemd itself manages `name=systemd`, but pods still appear there under their slices.
pub const V1_HIERARCHIES: [&str; 5] = ["pids", "memory", "cpu,cpuacct", "cpu", "systemd"];

/// The most pod directories [`CgroupLayout::pod_uids`] reads in one QoS class: far above any
/// node's pods (the kubelet's `maxPods` is 110 by default), a bound on a directory that is not
/// what it should be.
pub const MAX_POD_DIRS: usize = 4096;

/// A UID without dashes that stands for any pod's in [`CgroupLayout::pod_uids`].
const UID_PROBE: &str = "0uid0";

/// A pod UID as the API server makes them (RFC 4122, 36 characters), or a static pod's (the
/// kubelet's hash of its manifest, 32 hex digits): hex digits and dashes, at most 64.
fn is_uid(text: &str) -> bool {
    !text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// Why the pod cgroups could not be located.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// The root has neither `cgroup.controllers` (v2) nor any v1 hierarchy we know.
    #[error(
        "no cgroup hierarchy under {root}: no {root}/cgroup.controllers (v2) and none of {hierarchies} (v1)",
        root = root.display(),
        hierarchies = V1_HIERARCHIES.join(", ")
    )]
    NoHierarchy {
        /// The root searched.
        root: PathBuf,
    },
    /// No `kubepods.slice` or `kubepods` directory where the kubelet puts pods.
    #[error("no kubelet pod tree ({wanted}) in any of: {searched}", searched = display_paths(searched))]
    NoKubepods {
        /// What we looked for (`kubepods.slice`, `kubepods`, or both).
        wanted: String,
        /// Every directory searched.
        searched: Vec<PathBuf>,
    },
    /// Both drivers' trees exist (a node that switched drivers, say); we will not guess.
    #[error(
        "both {systemd} and {cgroupfs} exist; set the cgroup driver explicitly",
        systemd = systemd.display(),
        cgroupfs = cgroupfs.display()
    )]
    AmbiguousDriver {
        /// The systemd driver's tree.
        systemd: PathBuf,
        /// The cgroupfs driver's tree.
        cgroupfs: PathBuf,
    },
    /// Reading `mountinfo` failed.
    #[error("cannot read {path}: {source}", path = path.display())]
    Mountinfo {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The hierarchy root could not be resolved to a real path.
    #[error("cannot resolve {path}: {source}", path = path.display())]
    Resolve {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No cgroup mount contains the hierarchy root.
    #[error("{path} is not inside any cgroup mount listed in {mountinfo}", path = path.display(), mountinfo = mountinfo.display())]
    NotMounted {
        /// The resolved hierarchy root.
        path: PathBuf,
        /// The mountinfo file read.
        mountinfo: PathBuf,
    },
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where pod cgroups are on this node, and how `/proc/<pid>/cgroup` names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLayout {
    /// The cgroup root (normally `/sys/fs/cgroup`).
    pub root: PathBuf,
    /// The version pods are managed under.
    pub version: CgroupVersion,
    /// The kubelet's cgroup driver.
    pub driver: CgroupDriver,
    /// On v1, the hierarchy directory under `root` we read and signal through (`pids`, …).
    pub v1_hierarchy: Option<String>,
    /// Where the hierarchy root (`root` on v2, `root/<hierarchy>` on v1) sits inside the real
    /// cgroup hierarchy, as `/proc/<pid>/cgroup` spells paths: empty when the hierarchy root is
    /// the mount point itself (the normal case), `/sub/dir` when it is a subdirectory (tests).
    /// Set by [`CgroupLayout::locate_in_mounts`].
    pub hierarchy_prefix: String,
}

impl CgroupLayout {
    /// Detects the layout under `root`; `version` and `driver` override detection when given.
    ///
    /// Version: v2 when `<root>/cgroup.controllers` exists (the unified hierarchy is mounted at
    /// the root). Otherwise v1: on a hybrid host the root is a tmpfs holding the v1 hierarchies
    /// plus a cgroup2 at `<root>/unified`, and the kubelet (through runc's unified-mode check,
    /// which looks at the root only) manages pods in the v1 hierarchies, so hybrid is v1.
    ///
    /// Driver: systemd when `kubepods.slice` exists where pods live, cgroupfs when `kubepods`
    /// does; both existing is an error unless the driver is given.
    ///
    /// The result has an empty [`hierarchy_prefix`](Self::hierarchy_prefix); call
    /// [`locate_in_mounts`](Self::locate_in_mounts) when the root may not be a mount point.
    pub fn detect(
        root: impl Into<PathBuf>,
        version: Option<CgroupVersion>,
        driver: Option<CgroupDriver>,
    ) -> Result<CgroupLayout, LayoutError> {
        let root = root.into();
        let version = match version {
            Some(v) => v,
            None if root.join("cgroup.controllers").is_file() => CgroupVersion::V2,
            None if V1_HIERARCHIES.iter().any(|h| root.join(h).is_dir()) => CgroupVersion::V1,
            None => return Err(LayoutError::NoHierarchy { root }),
        };
        match version {
            CgroupVersion::V2 => {
                let driver = match driver {
                    Some(d) => d,
                    None => detect_driver(&root)?.ok_or_else(|| LayoutError::NoKubepods {
                        wanted: "kubepods.slice or kubepods".into(),
                        searched: vec![root.clone()],
                    })?,
                };
                Ok(CgroupLayout {
                    root,
                    version,
                    driver,
                    v1_hierarchy: None,
                    hierarchy_prefix: String::new(),
                })
            }
            CgroupVersion::V1 => {
                let mut searched = Vec::new();
                for hierarchy in V1_HIERARCHIES {
                    let dir = root.join(hierarchy);
                    if !dir.is_dir() {
                        continue;
                    }
                    let found = match driver {
                        Some(d) => dir.join(top_dir(d)).is_dir().then_some(d),
                        None => detect_driver(&dir)?,
                    };
                    if let Some(driver) = found {
                        return Ok(CgroupLayout {
                            root,
                            version,
                            driver,
                            v1_hierarchy: Some(hierarchy.to_owned()),
                            hierarchy_prefix: String::new(),
                        });
                    }
                    searched.push(dir);
                }
                if searched.is_empty() {
                    return Err(LayoutError::NoHierarchy { root });
                }
                Err(LayoutError::NoKubepods {
                    wanted: driver.map_or("kubepods.slice or kubepods".into(), |d| {
                        top_dir(d).to_owned()
                    }),
                    searched,
                })
            }
        }
    }

    /// The directory pod cgroups are under: `root` on v2, `root/<hierarchy>` on v1.
    pub fn hierarchy_root(&self) -> PathBuf {
        match &self.v1_hierarchy {
            Some(h) if self.version == CgroupVersion::V1 => self.root.join(h),
            _ => self.root.clone(),
        }
    }

    /// The pod's cgroup path relative to the hierarchy root, as the kubelet names it with this
    /// driver (docs/semantics.md §12; the naming lives in `core::qos`), e.g.
    /// `/kubepods/burstable/pod<uid>`.
    pub fn pod_cgroup_path(&self, uid: &str, qos: QosClass) -> String {
        let name = pod_cgroup_name(uid, qos);
        match self.driver {
            CgroupDriver::Systemd => to_systemd(&name),
            CgroupDriver::Cgroupfs => to_cgroupfs(&name),
        }
    }

    /// The pod's cgroup directory: `<root>/<path>` on v2, `<root>/<hierarchy>/<path>` on v1.
    pub fn pod_dir(&self, uid: &str, qos: QosClass) -> PathBuf {
        let path = self.pod_cgroup_path(uid, qos);
        self.hierarchy_root().join(path.trim_start_matches('/'))
    }

    /// The UIDs of the pods whose cgroup directories exist under this layout, in every QoS class
    /// (the kubelet makes a pod's before it starts its containers), sorted; at most
    /// [`MAX_POD_DIRS`] a class. A class's directory that does not exist holds none (a node with
    /// no best-effort pod may have none). Names that are not a pod's are skipped.
    pub fn pod_uids(&self) -> std::io::Result<Vec<String>> {
        let mut uids = std::collections::BTreeSet::new();
        for (dir, prefix, suffix) in self.class_patterns() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries.take(MAX_POD_DIRS) {
                let entry = entry?;
                let name = entry.file_name();
                let uid = name
                    .to_str()
                    .and_then(|n| n.strip_prefix(prefix.as_str()))
                    .and_then(|n| n.strip_suffix(suffix.as_str()))
                    // The systemd driver escapes a UID's dashes; no UID holds an underscore.
                    .map(|u| u.replace('_', "-"))
                    .filter(|u| is_uid(u));
                if let Some(uid) = uid
                    && entry.file_type().is_ok_and(|t| t.is_dir())
                {
                    uids.insert(uid);
                }
            }
        }
        Ok(uids.into_iter().collect())
    }

    /// The directories that hold the pods' directories, one per QoS class (the Guaranteed
    /// class's is the parent of the other two under both drivers), in that order.
    pub fn class_dirs(&self) -> Vec<PathBuf> {
        self.class_patterns()
            .into_iter()
            .map(|(dir, _, _)| dir)
            .collect()
    }

    /// Per QoS class: the directory its pods' directories are in, and what comes before and
    /// after the UID in their names.
    fn class_patterns(&self) -> Vec<(PathBuf, String, String)> {
        [
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ]
        .into_iter()
        .filter_map(|qos| {
            // The pod directory of a UID without dashes, whose name the driver does not escape:
            // what surrounds it in the name is what surrounds every pod's UID in this class.
            let probe = self.pod_dir(UID_PROBE, qos);
            let name = probe.file_name()?.to_str()?;
            let (prefix, suffix) = name.split_once(UID_PROBE)?;
            Some((probe.parent()?.to_path_buf(), prefix.into(), suffix.into()))
        })
        .collect()
    }

    /// The path `/proc/<pid>/cgroup` shows for a process in `dir` (on this layout's hierarchy
    /// line), or `None` when `dir` is not under the hierarchy root. Only plain components are
    /// accepted, so `..` cannot walk out of the hierarchy.
    pub fn proc_cgroup_path(&self, dir: &Path) -> Option<String> {
        let relative = dir.strip_prefix(self.hierarchy_root()).ok()?;
        let mut path = self.hierarchy_prefix.trim_end_matches('/').to_owned();
        for component in relative.components() {
            match component {
                Component::Normal(c) => {
                    path.push('/');
                    path.push_str(c.to_str()?);
                }
                Component::CurDir => {}
                _ => return None,
            }
        }
        if path.is_empty() {
            path.push('/');
        }
        Some(path)
    }

    /// Which line of `/proc/<pid>/cgroup` names the process's cgroup in our hierarchy.
    pub fn proc_line(&self) -> ProcCgroupLine {
        match (&self.version, &self.v1_hierarchy) {
            (CgroupVersion::V1, Some(h)) => ProcCgroupLine::V1(v1_controller_token(h)),
            _ => ProcCgroupLine::Unified,
        }
    }

    /// Sets [`hierarchy_prefix`](Self::hierarchy_prefix) from `<proc_root>/self/mountinfo`: the
    /// hierarchy root is resolved (symlinks followed) and looked up among cgroup mounts; the
    /// prefix is the mount's own root plus the rest of the path below the mount point.
    ///
    /// Limitation: in a private cgroup namespace, `/proc/<pid>/cgroup` shows paths relative to
    /// the reader's namespace and pods outside it as `/../…`; membership checks then fail
    /// closed (nothing is signalled), which is the safe direction. Run with the host's cgroup
    /// namespace.
    pub fn locate_in_mounts(mut self, proc_root: &Path) -> Result<CgroupLayout, LayoutError> {
        let mountinfo = proc_root.join("self/mountinfo");
        let text = bounded::read_to_string(&mountinfo, bounded::KERNEL_LIST).map_err(|source| {
            LayoutError::Mountinfo {
                path: mountinfo.clone(),
                source,
            }
        })?;
        let hierarchy_root = self.hierarchy_root();
        let real =
            std::fs::canonicalize(&hierarchy_root).map_err(|source| LayoutError::Resolve {
                path: hierarchy_root,
                source,
            })?;
        self.hierarchy_prefix =
            prefix_from_mountinfo(&text, &real).ok_or(LayoutError::NotMounted {
                path: real,
                mountinfo,
            })?;
        Ok(self)
    }
}

/// A line selector for `/proc/<pid>/cgroup`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcCgroupLine {
    /// The `0::<path>` line of the unified hierarchy.
    Unified,
    /// The v1 line whose controller list holds this token (`pids`, `memory`, `name=systemd`).
    V1(String),
}

/// The controller token a v1 hierarchy directory shows in `/proc/<pid>/cgroup`: the named
/// `systemd` hierarchy is `name=systemd`; a co-mounted `cpu,cpuacct` lists `cpu` among others.
fn v1_controller_token(hierarchy: &str) -> String {
    if hierarchy == "systemd" {
        return "name=systemd".into();
    }
    hierarchy.split(',').next().unwrap_or(hierarchy).to_owned()
}

fn top_dir(driver: CgroupDriver) -> &'static str {
    match driver {
        CgroupDriver::Systemd => "kubepods.slice",
        CgroupDriver::Cgroupfs => "kubepods",
    }
}

/// The driver whose top-level pod tree exists in `dir`, if exactly one does.
fn detect_driver(dir: &Path) -> Result<Option<CgroupDriver>, LayoutError> {
    let systemd = dir.join(top_dir(CgroupDriver::Systemd));
    let cgroupfs = dir.join(top_dir(CgroupDriver::Cgroupfs));
    match (systemd.is_dir(), cgroupfs.is_dir()) {
        (true, true) => Err(LayoutError::AmbiguousDriver { systemd, cgroupfs }),
        (true, false) => Ok(Some(CgroupDriver::Systemd)),
        (false, true) => Ok(Some(CgroupDriver::Cgroupfs)),
        (false, false) => Ok(None),
    }
}

/// Undoes mountinfo's octal escapes (`\040` for a space, etc.).
fn unescape_mountinfo(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (bytes.get(i), octal) {
            (Some(b'\\'), Some(b)) => {
                out.push(b);
                i += 4;
            }
            (Some(&b), _) => {
                out.push(b);
                i += 1;
            }
            (None, _) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup path of `real` (a resolved directory) as `/proc/<pid>/cgroup` would show it,
/// from the text of a `mountinfo` file: the cgroup/cgroup2 mount whose mount point is the
/// longest component-wise prefix of `real` (the later line wins a tie: it is mounted on top),
/// its root field, and the rest of `real` below the mount point. Empty string for the root.
pub fn prefix_from_mountinfo(mountinfo: &str, real: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let fstype = fields.get(sep + 1).copied().unwrap_or_default();
        if fstype != "cgroup" && fstype != "cgroup2" {
            continue;
        }
        let (Some(mount_root), Some(mount_point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let mount_point = PathBuf::from(unescape_mountinfo(mount_point));
        let Ok(rest) = real.strip_prefix(&mount_point) else {
            continue;
        };
        let depth = mount_point.components().count();
        if best.as_ref().is_some_and(|(d, _)| *d > depth) {
            continue;
        }
        let mut prefix = unescape_mountinfo(mount_root)
            .trim_end_matches('/')
            .to_owned();
        for c in rest.components() {
            if let Component::Normal(c) = c {
                prefix.push('/');
                prefix.push_str(&c.to_string_lossy());
            }
        }
        best = Some((depth, prefix));
    }
    best.map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 /kubepods/x /mnt/odd\\040dir rw - cgroup2 cgroup2 rw
";

    #[test]
    fn mountinfo_prefix_of_a_mount_point_is_empty() {
        let p = prefix_from_mountinfo(MOUNTINFO, Path::new("/sys/fs/cgroup/pids"));
        assert_eq!(p.as_deref(), Some(""));
    }

    #[test]
    fn mountinfo_prefix_of_a_subdirectory_is_its_path_in_the_hierarchy() {
        let p = prefix_from_mountinfo(MOUNTINFO, Path::new("/sys/fs/cgroup/unified/t-1/a"));
        assert_eq!(p.as_deref(), Some("/t-1/a"));
    }

    #[test]
    fn mountinfo_prefix_adds_the_mount_root_and_unescapes_spaces() {
        let p = prefix_from_mountinfo(MOUNTINFO, Path::new("/mnt/odd dir/pod"));
        assert_eq!(p.as_deref(), Some("/kubepods/x/pod"));
    }

    #[test]
    fn mountinfo_ignores_non_cgroup_mounts_and_component_prefixes() {
        // The tmpfs at /sys/fs/cgroup is not a cgroup mount; "pidsx" is not under "pids".
        assert_eq!(
            prefix_from_mountinfo(MOUNTINFO, Path::new("/sys/fs/cgroup/pidsx")),
            None
        );
    }

    #[test]
    fn proc_path_refuses_dirs_outside_the_hierarchy() {
        let layout = CgroupLayout {
            root: "/r".into(),
            version: CgroupVersion::V1,
            driver: CgroupDriver::Cgroupfs,
            v1_hierarchy: Some("pids".into()),
            hierarchy_prefix: "/sandbox".into(),
        };
        assert_eq!(
            layout.proc_cgroup_path(Path::new("/r/pids/kubepods/pod1")),
            Some("/sandbox/kubepods/pod1".into())
        );
        assert_eq!(
            layout.proc_cgroup_path(Path::new("/r/memory/kubepods")),
            None
        );
        assert_eq!(layout.proc_cgroup_path(Path::new("/r/pids/../x")), None);
        assert_eq!(layout.proc_line(), ProcCgroupLine::V1("pids".into()));
    }

    #[test]
    fn a_mountinfo_that_never_ends_is_an_error_naming_the_file_and_the_limit() {
        let proc = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(proc.path().join("self")).expect("mkdir");
        std::os::unix::fs::symlink("/dev/zero", proc.path().join("self/mountinfo"))
            .expect("symlink");
        let layout = CgroupLayout {
            root: "/r".into(),
            version: CgroupVersion::V2,
            driver: CgroupDriver::Systemd,
            v1_hierarchy: None,
            hierarchy_prefix: String::new(),
        };
        let err = layout.locate_in_mounts(proc.path()).expect_err("endless");
        assert!(
            matches!(&err, LayoutError::Mountinfo { source, .. } if source.kind() == std::io::ErrorKind::FileTooLarge),
            "{err:?}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains("self/mountinfo") && shown.contains("16777216 bytes"),
            "{shown}"
        );
    }

    #[test]
    fn v1_controller_tokens() {
        assert_eq!(v1_controller_token("systemd"), "name=systemd");
        assert_eq!(v1_controller_token("cpu,cpuacct"), "cpu");
        assert_eq!(v1_controller_token("memory"), "memory");
    }
}
