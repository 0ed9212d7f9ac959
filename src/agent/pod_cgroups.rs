//! Tells the fence when a pod's cgroup directory appears or goes (issue 22, the late watch;
//! docs/fence.md §5, *Pods the view missed*).
//!
//! The kubelet makes a pod's cgroup before it starts a container. A pod whose cgroup appears while
//! the agent's pod view lacks it was delivered to the kubelet's watch before ours: the fence
//! lists the node's pods at once, while the API server still answers, so that a cut coming a
//! moment later does not leave the pod unknown to the fence. The directories of the QoS classes
//! are watched with inotify, so nothing here wakes unless a pod comes or goes; only while none of
//! them exists yet (the kubelet not started) does it look again, every [`LOOK_AGAIN`].

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;

use crate::terminate::layout::CgroupLayout;

/// While no class directory exists, how often the watch tries to add them again.
pub const LOOK_AGAIN: Duration = Duration::from_secs(10);

/// While the pods' cgroups cannot be found at all (the layout: no kubelet has made them yet),
/// how often the fence looks for them again.
pub const FIND_AGAIN: Duration = Duration::from_secs(60);

/// The inotify instance, as tokio's readiness needs it.
struct Fd(Inotify);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// Watches `layout`'s class directories and bumps `changed` after each batch of events that
/// created or removed a directory in one. Runs until `changed` has no receiver left; a failure of
/// inotify itself is logged and ends it (the fence then learns of such pods only when cut off).
pub async fn watch(layout: CgroupLayout, changed: watch::Sender<u64>) {
    let dirs = layout.class_dirs();
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
        .map_err(std::io::Error::from)
        .and_then(|i| {
            // SAFETY: `Fd` owns the inotify instance, whose descriptor stays open until the
            // `AsyncFd` and with it `Fd` are dropped, and `as_raw_fd` always returns it.
            unsafe { AsyncFd::register_with_interest(Fd(i), Interest::READABLE) }
                .map_err(|e| e.into_parts().1)
        });
    let fd = match inotify {
        Ok(fd) => fd,
        Err(e) => {
            unavailable(&format!("inotify: {e}"));
            return;
        }
    };
    // Watch descriptor → the directory it watches.
    let mut watched: BTreeMap<i32, PathBuf> = BTreeMap::new();
    loop {
        if let Err(e) = add_missing(&fd.get_ref().0, &dirs, &mut watched) {
            unavailable(&e);
            return;
        }
        let look_again = watched.is_empty();
        tokio::select! {
            ready = fd.readable() => {
                let mut guard = match ready {
                    Ok(guard) => guard,
                    Err(e) => {
                        unavailable(&format!("inotify: {e}"));
                        return;
                    }
                };
                match guard.get_inner().0.read_events() {
                    Ok(events) => {
                        let mut moved = false;
                        for e in events {
                            if e.mask.contains(AddWatchFlags::IN_IGNORED) {
                                // The directory itself went: added again when it comes back.
                                watched.remove(&e.wd.as_raw());
                            } else if e.mask.contains(AddWatchFlags::IN_ISDIR)
                                || e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)
                            {
                                // A directory came or went; or events were lost, and one may
                                // have: the fence reads the cgroups again either way.
                                moved = true;
                            }
                        }
                        if moved {
                            changed.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    }
                    Err(Errno::EAGAIN) => guard.clear_ready(),
                    Err(e) => {
                        unavailable(&format!("inotify: {e}"));
                        return;
                    }
                }
            }
            _ = tokio::time::sleep(LOOK_AGAIN), if look_again => {}
            _ = changed.closed() => return,
        }
    }
}

/// Adds a watch for each of `dirs` not watched yet that exists; `Err` only for a failure other
/// than the directory missing.
fn add_missing(
    inotify: &Inotify,
    dirs: &[PathBuf],
    watched: &mut BTreeMap<i32, PathBuf>,
) -> Result<(), String> {
    for dir in dirs {
        if watched.values().any(|d| d == dir) {
            continue;
        }
        let mask = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_DELETE | AddWatchFlags::IN_ONLYDIR;
        match inotify.add_watch(dir.as_path(), mask) {
            Ok(wd) => {
                watched.insert(wd.as_raw(), dir.clone());
            }
            Err(Errno::ENOENT | Errno::ENOTDIR) => {}
            Err(e) => return Err(format!("cannot watch {}: {e}", dir.display())),
        }
    }
    Ok(())
}

fn unavailable(why: &str) {
    log::warn!(error = why;
        "cannot watch the pods' cgroups ({why}): a pod the pod watch has not delivered when the link is cut is learned only from the peers"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::qos::{CgroupDriver, CgroupVersion, QosClass};

    fn layout(root: &std::path::Path) -> CgroupLayout {
        CgroupLayout {
            root: root.to_path_buf(),
            version: CgroupVersion::V2,
            driver: CgroupDriver::Cgroupfs,
            v1_hierarchy: None,
            hierarchy_prefix: String::new(),
        }
    }

    /// Waits up to 5 s for `rx` to move past `seen`; whether it did.
    async fn moved(rx: &mut watch::Receiver<u64>) -> bool {
        tokio::time::timeout(Duration::from_secs(5), rx.changed())
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// A pod directory made in any class wakes the fence, and one removed does too; a class
    /// directory that did not exist when the watch began is watched once its parent shows it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_pod_directory_made_or_removed_in_any_class_is_told() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let l = layout(tmp.path());
        let dirs = l.class_dirs();
        assert_eq!(dirs.len(), 3, "{dirs:?}");
        std::fs::create_dir_all(&dirs[0]).expect("guaranteed class dir");
        let (tx, mut rx) = watch::channel(0u64);
        let task = tokio::spawn(watch(l.clone(), tx));
        // Give the task its first turn to add the watch.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The burstable class appears (its directory is in the guaranteed one's).
        std::fs::create_dir_all(&dirs[1]).expect("burstable class dir");
        assert!(
            moved(&mut rx).await,
            "the class directory's creation was not told"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let pod = l.pod_dir("5f0e6c1a-1c1d-4e8e-9f1b-0a0b0c0d0e0f", QosClass::Burstable);
        std::fs::create_dir(&pod).expect("pod dir");
        assert!(moved(&mut rx).await, "a pod directory made was not told");
        assert_eq!(
            l.pod_uids().expect("uids"),
            vec!["5f0e6c1a-1c1d-4e8e-9f1b-0a0b0c0d0e0f".to_string()]
        );
        std::fs::remove_dir(&pod).expect("pod dir removed");
        assert!(moved(&mut rx).await, "a pod directory removed was not told");
        // A file is no pod.
        std::fs::write(dirs[1].join("cgroup.procs"), "").expect("file");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), rx.changed())
                .await
                .is_err(),
            "a file's creation was told"
        );
        drop(rx);
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the watch ends once nobody listens")
            .expect("task");
    }
}
