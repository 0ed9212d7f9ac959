//! The terminator shell: layout detection on fixture trees (no root needed), then real processes
//! in real cgroups (a per-test sandbox in the real v1 `pids` and v2 hierarchies, both drivers'
//! layouts), real signals, and measured kill times (printed as `TIMING …`; run with
//! `--nocapture` to see them).

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nodewarden::core::qos::QosClass;
use nodewarden::terminate::{
    CgroupDriver, CgroupLayout, CgroupVersion, Fence, KillMethod, LayoutError, SignalError,
    Terminator,
};
use support::cgroup::{CgroupSandbox, alive, kubelet_pod_path, wait_until};

const UID: &str = "6f1c2a3b-4d5e-4f60-8a71-92b3c4d5e6f7";
const UID_: &str = "6f1c2a3b_4d5e_4f60_8a71_92b3c4d5e6f7";
const OTHER_UID: &str = "0a1b2c3d-0000-4000-8000-000000000001";

// ---------------------------------------------------------------------------------------------
// Layout detection on fixture trees.

fn tree(dirs: &[&str], files: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for d in dirs {
        std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
    }
    for f in files {
        std::fs::write(tmp.path().join(f), "").expect("write");
    }
    tmp
}

#[test]
fn v2_with_a_kubepods_slice_is_v2_systemd() {
    let t = tree(&["kubepods.slice"], &["cgroup.controllers"]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    assert_eq!(
        (l.version, l.driver, l.v1_hierarchy.as_deref()),
        (CgroupVersion::V2, CgroupDriver::Systemd, None)
    );
    assert_eq!(
        l.pod_dir(UID, QosClass::Burstable),
        t.path().join(format!(
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice"
        ))
    );
    assert_eq!(
        l.pod_dir(UID, QosClass::Guaranteed),
        t.path()
            .join(format!("kubepods.slice/kubepods-pod{UID_}.slice"))
    );
}

#[test]
fn the_pods_whose_cgroups_exist_are_read_back_from_their_directory_names_in_every_class() {
    // A static pod's UID is the kubelet's 32-hex-digit hash of its manifest.
    let fixed = "5d8f0c9e1a2b3c4d5e6f708192a3b4c5";
    for driver in [CgroupDriver::Systemd, CgroupDriver::Cgroupfs] {
        let t = tree(&[], &["cgroup.controllers"]);
        let l = CgroupLayout::detect(t.path(), None, Some(driver)).expect("detect");
        assert_eq!(l.pod_uids().expect("no pod tree yet"), Vec::<String>::new());
        for (uid, qos) in [
            (UID, QosClass::Burstable),
            ("0b5c1e8a-2f7d-4a3e-9c61-7d2e4f8a9b10", QosClass::Guaranteed),
            (fixed, QosClass::BestEffort),
        ] {
            std::fs::create_dir_all(l.pod_dir(uid, qos)).expect("pod dir");
        }
        // Beside them, what is not a pod's: a file named as one, a container's scope, and a
        // name with something other than a UID where the UID goes.
        let file = l.pod_dir("9a9a9a9a-0000-4000-8000-000000000000", QosClass::BestEffort);
        std::fs::write(file, "").expect("file");
        let burstable = l.pod_dir(UID, QosClass::Burstable);
        let odd = l.pod_dir("not_a_uid!", QosClass::Burstable);
        std::fs::create_dir_all(&odd).expect("odd");
        std::fs::create_dir_all(burstable.join("cri-containerd-abc.scope")).expect("scope");
        let mut want = vec![
            UID.to_string(),
            "0b5c1e8a-2f7d-4a3e-9c61-7d2e4f8a9b10".into(),
            fixed.into(),
        ];
        want.sort();
        assert_eq!(l.pod_uids().expect("read"), want, "{driver:?}");
    }
}

#[test]
fn v2_with_a_kubepods_dir_is_v2_cgroupfs() {
    let t = tree(&["kubepods"], &["cgroup.controllers"]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    assert_eq!(
        (l.version, l.driver),
        (CgroupVersion::V2, CgroupDriver::Cgroupfs)
    );
    assert_eq!(
        l.pod_dir(UID, QosClass::BestEffort),
        t.path().join(format!("kubepods/besteffort/pod{UID}"))
    );
}

#[test]
fn v1_reads_the_pids_hierarchy_first() {
    for (top, driver) in [
        ("kubepods.slice", CgroupDriver::Systemd),
        ("kubepods", CgroupDriver::Cgroupfs),
    ] {
        let t = tree(&[&format!("pids/{top}"), &format!("memory/{top}")], &[]);
        let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
        assert_eq!(
            (l.version, l.driver, l.v1_hierarchy.as_deref()),
            (CgroupVersion::V1, driver, Some("pids"))
        );
        assert_eq!(
            l.pod_dir(UID, QosClass::Burstable),
            t.path()
                .join("pids")
                .join(kubelet_pod_path(driver, UID, QosClass::Burstable))
        );
    }
}

#[test]
fn v1_falls_back_to_memory_then_cpu_when_pids_has_no_pod_tree() {
    let t = tree(&["pids", "memory/kubepods", "cpu,cpuacct/kubepods"], &[]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    assert_eq!(l.v1_hierarchy.as_deref(), Some("memory"));

    let t = tree(&["pids", "memory", "cpu,cpuacct/kubepods.slice"], &[]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    assert_eq!(l.v1_hierarchy.as_deref(), Some("cpu,cpuacct"));
    assert_eq!(l.driver, CgroupDriver::Systemd);
}

#[test]
fn a_hybrid_host_is_v1_because_the_kubelet_uses_the_v1_hierarchies() {
    let t = tree(
        &[
            "pids/kubepods.slice",
            "memory/kubepods.slice",
            "systemd",
            "unified/kubepods.slice",
        ],
        &["unified/cgroup.controllers"],
    );
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    assert_eq!(
        (l.version, l.driver, l.v1_hierarchy.as_deref()),
        (CgroupVersion::V1, CgroupDriver::Systemd, Some("pids"))
    );
}

#[test]
fn nothing_cgroup_like_is_an_error_naming_the_root() {
    let t = tree(&["etc"], &[]);
    let err = CgroupLayout::detect(t.path(), None, None).expect_err("must fail");
    assert!(matches!(err, LayoutError::NoHierarchy { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&t.path().display().to_string()),
        "{err}"
    );
}

#[test]
fn no_pod_tree_is_an_error_naming_every_place_searched() {
    let t = tree(&[], &["cgroup.controllers"]);
    let err = CgroupLayout::detect(t.path(), None, None).expect_err("v2 without kubepods");
    assert!(matches!(err, LayoutError::NoKubepods { .. }), "{err:?}");

    let t = tree(&["pids", "memory"], &[]);
    let err = CgroupLayout::detect(t.path(), None, None).expect_err("v1 without kubepods");
    let msg = err.to_string();
    for h in ["pids", "memory"] {
        assert!(
            msg.contains(&t.path().join(h).display().to_string()),
            "{msg}"
        );
    }
}

#[test]
fn both_drivers_trees_is_ambiguous_unless_the_driver_is_given() {
    let t = tree(&["kubepods.slice", "kubepods"], &["cgroup.controllers"]);
    let err = CgroupLayout::detect(t.path(), None, None).expect_err("ambiguous");
    assert!(
        matches!(err, LayoutError::AmbiguousDriver { .. }),
        "{err:?}"
    );
    let l = CgroupLayout::detect(t.path(), None, Some(CgroupDriver::Cgroupfs)).expect("override");
    assert_eq!(l.driver, CgroupDriver::Cgroupfs);
}

#[test]
fn overrides_win_over_detection() {
    // The root looks like v2, but we are told v1: the pids hierarchy is used.
    let t = tree(
        &["pids/kubepods", "memory/kubepods.slice"],
        &["cgroup.controllers"],
    );
    let l = CgroupLayout::detect(t.path(), Some(CgroupVersion::V1), None).expect("v1");
    assert_eq!(
        (l.version, l.v1_hierarchy.as_deref(), l.driver),
        (CgroupVersion::V1, Some("pids"), CgroupDriver::Cgroupfs)
    );
    // On v2 a given driver is trusted even before the kubelet has made its tree.
    let l = CgroupLayout::detect(t.path(), None, Some(CgroupDriver::Systemd)).expect("v2");
    assert_eq!(
        (l.version, l.driver),
        (CgroupVersion::V2, CgroupDriver::Systemd)
    );
    // On v1 a given driver picks the first hierarchy that has that driver's tree.
    let l = CgroupLayout::detect(
        t.path(),
        Some(CgroupVersion::V1),
        Some(CgroupDriver::Systemd),
    )
    .expect("v1 systemd");
    assert_eq!(l.v1_hierarchy.as_deref(), Some("memory"));
}

#[test]
fn a_missing_pod_cgroup_is_no_processes_and_nothing_to_do() {
    let t = tree(&["kubepods.slice"], &["cgroup.controllers"]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    let dir = l.pod_dir(UID, QosClass::Burstable);
    let term = Terminator::new(l, "/proc");
    assert_eq!(term.processes(&dir).expect("list"), Vec::<i32>::new());
    for report in [term.terminate(&dir), term.kill(&dir)] {
        assert_eq!((report.found, report.signalled), (0, 0));
        assert!(report.errors.is_empty(), "{:?}", report.errors);
    }
}

#[test]
fn a_directory_outside_the_hierarchy_is_refused() {
    let t = tree(&["kubepods"], &["cgroup.controllers"]);
    let l = CgroupLayout::detect(t.path(), None, None).expect("detect");
    let term = Terminator::new(l, "/proc");
    let report = term.kill(Path::new("/tmp/not-a-pod"));
    assert_eq!(report.signalled, 0);
    assert!(
        matches!(
            report.errors.as_slice(),
            [SignalError::OutsideHierarchy { .. }]
        ),
        "{:?}",
        report.errors
    );
}

// ---------------------------------------------------------------------------------------------
// Real processes in real cgroups.

/// Generates one test per cgroup version × driver layout for a case `fn(version, driver)`.
macro_rules! for_each_layout {
    ($case:ident) => {
        mod $case {
            use super::*;
            #[test]
            fn v2_systemd() {
                super::$case(CgroupVersion::V2, CgroupDriver::Systemd);
            }
            #[test]
            fn v2_cgroupfs() {
                super::$case(CgroupVersion::V2, CgroupDriver::Cgroupfs);
            }
            #[test]
            fn v1_systemd() {
                super::$case(CgroupVersion::V1, CgroupDriver::Systemd);
            }
            #[test]
            fn v1_cgroupfs() {
                super::$case(CgroupVersion::V1, CgroupDriver::Cgroupfs);
            }
        }
    };
}

const LIMIT: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(1);

fn label(v: CgroupVersion, d: CgroupDriver) -> String {
    format!("{v}/{d}")
}

/// A sandbox, the layout detected from its root (checked against the sandbox's own literal
/// layout), and a terminator reading the real `/proc`.
fn setup(v: CgroupVersion, d: CgroupDriver) -> Option<(CgroupSandbox, CgroupLayout, Terminator)> {
    let sandbox = CgroupSandbox::create(v, d)?;
    let layout = sandbox.layout();
    assert_eq!((layout.version, layout.driver), (v, d), "detected layout");
    let term = Terminator::new(layout.clone(), "/proc");
    Some((sandbox, layout, term))
}

/// The pod's directory as the terminator computes it, checked to be the very directory the
/// sandbox made (through the v1 symlink, if any).
fn pod_dir(sandbox: &CgroupSandbox, layout: &CgroupLayout, uid: &str, qos: QosClass) -> PathBuf {
    let made = sandbox.pod_dir(uid, qos);
    let dir = layout.pod_dir(uid, qos);
    assert_eq!(
        std::fs::canonicalize(&dir).expect("layout's pod dir exists"),
        std::fs::canonicalize(&made).expect("sandbox pod dir"),
        "layout.pod_dir names the kubelet's directory"
    );
    dir
}

fn wait_file(path: &Path) {
    let ok = wait_until(LIMIT, Duration::from_millis(5), || path.exists());
    assert!(ok.is_some(), "{} never appeared", path.display());
}

fn wait_empty(term: &Terminator, dir: &Path) -> Option<Duration> {
    wait_until(LIMIT, POLL, || {
        term.processes(dir).is_ok_and(|p| p.is_empty())
    })
}

fn sigterm_runs_the_handler_and_the_process_exits(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, term)) = setup(v, d) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (marker, ready) = (tmp.path().join("marker"), tmp.path().join("ready"));
    let dir = pod_dir(&sandbox, &layout, UID, QosClass::Burstable);
    let c1 = sandbox.container_dir(UID, QosClass::Burstable, "c1");
    let pid = sandbox.spawn_in(
        &c1,
        r#"trap 'echo done > "$M"; exit 0' TERM; echo > "$R"; while :; do sleep 0.1; done"#,
        &[("M", &marker), ("R", &ready)],
    );
    wait_file(&ready);
    assert!(term.processes(&dir).expect("list").contains(&pid));

    let start = Instant::now();
    let report = term.terminate(&dir);
    let call = start.elapsed();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.signalled >= 1, "{report:?}");
    assert_eq!(report.left_pod, 0, "{report:?}");
    let gone = wait_empty(&term, &dir).expect("the pod empties after SIGTERM");
    assert_eq!(
        std::fs::read_to_string(&marker).expect("the TERM handler ran"),
        "done\n"
    );
    assert!(!alive(pid));
    println!(
        "TIMING {} terminate→gone (handler exits): {:?} (terminate call {:?})",
        label(v, d),
        call + gone,
        call
    );
}
for_each_layout!(sigterm_runs_the_handler_and_the_process_exits);

fn ignoring_sigterm_survives_term_and_dies_on_kill(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, term)) = setup(v, d) else {
        return;
    };
    // Once with the default kill (cgroup.kill on v2), once forcing pidfds.
    for (i, term) in [term.clone(), term.without_cgroup_kill()]
        .into_iter()
        .enumerate()
    {
        let uid = format!("{}{i}", &UID[..UID.len() - 1]);
        let tmp = tempfile::tempdir().expect("tempdir");
        let ready = tmp.path().join("ready");
        let dir = pod_dir(&sandbox, &layout, &uid, QosClass::Guaranteed);
        let c1 = sandbox.container_dir(&uid, QosClass::Guaranteed, "stubborn");
        // SIG_IGN survives exec, so the `sleep` children ignore TERM too.
        let pid = sandbox.spawn_in(
            &c1,
            r#"trap '' TERM; echo > "$R"; while :; do sleep 0.1; done"#,
            &[("R", &ready)],
        );
        wait_file(&ready);

        let report = term.terminate(&dir);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert!(report.signalled >= 1, "{report:?}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(alive(pid), "a process ignoring SIGTERM is still alive");
        assert!(!term.processes(&dir).expect("list").is_empty());

        let start = Instant::now();
        let report = term.kill(&dir);
        let call = start.elapsed();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert!(report.signalled >= 1, "{report:?}");
        let want = if v == CgroupVersion::V2 && i == 0 {
            KillMethod::CgroupKill
        } else {
            KillMethod::Pidfd
        };
        assert_eq!(report.method, want);
        let gone = wait_empty(&term, &dir).expect("the pod empties after kill");
        sandbox.reap();
        assert!(!alive(pid));
        println!(
            "TIMING {} kill→gone via {:?}: {:?} (kill call {:?}, {} processes)",
            label(v, d),
            report.method,
            gone + call,
            call,
            report.found
        );
    }
}
for_each_layout!(ignoring_sigterm_survives_term_and_dies_on_kill);

fn every_process_in_the_pod_tree_is_signalled(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, term)) = setup(v, d) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    // Two shapes, each with a shell, background children, an orphaned grandchild (the
    // subshell exits, so its sleep is reparented away from the shell) and a second container:
    // one pod stopped by SIGTERM (default action), one that ignores TERM stopped by kill.
    for (n, (qos, ignore, stop)) in [
        (QosClass::BestEffort, "", "terminate"),
        (QosClass::Burstable, "trap '' TERM; ", "kill"),
    ]
    .into_iter()
    .enumerate()
    {
        let uid = format!("{}{n}", &UID[..UID.len() - 1]);
        let (r1, r2) = (
            tmp.path().join(format!("r1-{n}")),
            tmp.path().join(format!("r2-{n}")),
        );
        let dir = pod_dir(&sandbox, &layout, &uid, qos);
        let c1 = sandbox.container_dir(&uid, qos, "app");
        let c2 = sandbox.container_dir(&uid, qos, "sidecar");
        let script =
            format!(r#"{ignore}sleep 1000 & sleep 1000 & (sleep 1000 &); echo > "$R"; wait"#);
        sandbox.spawn_in(&c1, &script, &[("R", &r1)]);
        sandbox.spawn_in(&c2, &script, &[("R", &r2)]);
        wait_file(&r1);
        wait_file(&r2);
        let before = term.processes(&dir).expect("list");
        assert!(
            before.len() >= 8,
            "2 containers × (shell + 3 sleeps), got {before:?}"
        );

        let start = Instant::now();
        let report = if stop == "kill" {
            term.kill(&dir)
        } else {
            term.terminate(&dir)
        };
        let call = start.elapsed();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(report.found, before.len(), "{report:?}");
        assert_eq!(
            report.signalled + report.already_gone,
            before.len(),
            "{report:?}"
        );
        let gone = wait_empty(&term, &dir).expect("every process in the tree is gone");
        sandbox.reap();
        for pid in &before {
            assert!(!alive(*pid), "pid {pid} survived {stop}");
        }
        println!(
            "TIMING {} {stop}→gone, {} processes in 2 containers: {:?}",
            label(v, d),
            before.len(),
            call + gone
        );
    }
}
for_each_layout!(every_process_in_the_pod_tree_is_signalled);

fn a_respawned_process_in_a_fenced_pod_dies_within_a_second(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, term)) = setup(v, d) else {
        return;
    };
    let dir = pod_dir(&sandbox, &layout, UID, QosClass::Burstable);
    let c1 = sandbox.container_dir(UID, QosClass::Burstable, "app");
    let first = sandbox.spawn_in(&c1, "exec sleep 1000", &[]);
    let mut fence = Fence::new();
    assert!(fence.fence(UID, dir.clone()));
    let sweep = fence.sweep(&term);
    assert_eq!(sweep.killed(), 1, "{sweep:?}");
    wait_empty(&term, &dir).expect("the first incarnation dies");
    sandbox.reap();
    assert!(!alive(first));

    // The kubelet restarts the container: a new process in the same container cgroup.
    let again = sandbox.spawn_in(&c1, "while :; do sleep 0.1; done", &[]);
    let start = Instant::now();
    let mut sweeps = 0;
    let died = wait_until(Duration::from_secs(1), Duration::from_millis(50), || {
        sweeps += 1;
        let s = fence.sweep(&term);
        assert!(s.pods.iter().all(|p| p.report.errors.is_empty()), "{s:?}");
        sandbox.reap();
        !alive(again) && term.processes(&dir).is_ok_and(|p| p.is_empty())
    });
    let died = died.expect("a respawned process dies within one second");
    println!(
        "TIMING {} respawn→dead under sweep: {:?} ({} sweeps, since respawn {:?})",
        label(v, d),
        died,
        sweeps,
        start.elapsed()
    );

    // Lifted: the next incarnation is left alone.
    assert_eq!(fence.lift(UID), Some(dir.clone()));
    let kept = sandbox.spawn_in(&c1, "exec sleep 1000", &[]);
    for _ in 0..4 {
        assert!(fence.sweep(&term).is_empty());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(alive(kept), "a lifted pod's process survives sweeps");
}
for_each_layout!(a_respawned_process_in_a_fenced_pod_dies_within_a_second);

fn nothing_outside_the_pod_is_signalled(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, term)) = setup(v, d) else {
        return;
    };
    let dir = pod_dir(&sandbox, &layout, UID, QosClass::Burstable);
    let target = sandbox.container_dir(UID, QosClass::Burstable, "app");
    let sibling = sandbox.container_dir(OTHER_UID, QosClass::Burstable, "app");
    let victim = sandbox.spawn_in(&target, "exec sleep 1000", &[]);
    let in_sibling_pod = sandbox.spawn_in(&sibling, "exec sleep 1000", &[]);
    // A process in the QoS-level cgroup above the pod (not in the pod).
    let qos_level = sibling
        .parent()
        .and_then(Path::parent)
        .expect("QoS-level cgroup")
        .to_path_buf();
    let above_pod = sandbox.spawn_in(&qos_level, "exec sleep 1000", &[]);
    let outside = sandbox.spawn_outside("exec sleep 1000");

    let mut fence = Fence::new();
    fence.fence(UID, dir.clone());
    let _ = term.terminate(&dir);
    let _ = term.kill(&dir);
    let _ = fence.sweep(&term);
    wait_empty(&term, &dir).expect("the target pod empties");
    sandbox.reap();
    assert!(!alive(victim));
    // Give any stray signal time to land before checking the bystanders.
    std::thread::sleep(Duration::from_millis(200));
    sandbox.reap();
    assert!(alive(in_sibling_pod), "another pod's process survives");
    assert!(alive(above_pod), "a process above the pod survives");
    assert!(alive(outside), "a process outside the sandbox survives");
}
for_each_layout!(nothing_outside_the_pod_is_signalled);

fn a_pid_that_left_the_pod_is_not_signalled(v: CgroupVersion, d: CgroupDriver) {
    let Some((mut sandbox, layout, _)) = setup(v, d) else {
        return;
    };
    let dir = pod_dir(&sandbox, &layout, UID, QosClass::Burstable);
    let c1 = sandbox.container_dir(UID, QosClass::Burstable, "app");
    let pid = sandbox.spawn_in(&c1, "exec sleep 1000", &[]);
    // Let the shell exec sleep, so the PID's /proc entry is the one we fake.
    let exec_done = wait_until(LIMIT, Duration::from_millis(5), || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    assert!(exec_done.is_some(), "sh did not exec sleep");

    // A proc root where this PID's cgroup says it is elsewhere: cgroup.procs (real) lists it,
    // the re-check (fake) says it left; the terminator must believe the re-check.
    let fake = tempfile::tempdir().expect("tempdir");
    let entry = fake.path().join(pid.to_string());
    std::fs::create_dir(&entry).expect("mkdir");
    let real_text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("real cgroup");
    let moved: String = real_text
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ':');
            let (id, ctl) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
            format!("{id}:{ctl}:/elsewhere\n")
        })
        .collect();
    std::fs::write(entry.join("cgroup"), &moved).expect("write fake cgroup");
    let term = Terminator::new(layout.clone(), fake.path()).without_cgroup_kill();
    for report in [term.terminate(&dir), term.kill(&dir)] {
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(
            (report.found, report.left_pod, report.signalled),
            (1, 1, 0),
            "{report:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(alive(pid), "a PID that left the pod is never signalled");

    // The same fake root with the real text: the re-check passes and the kill lands, which
    // proves the fake root is the one consulted and the real format matches.
    std::fs::write(entry.join("cgroup"), &real_text).expect("write real cgroup");
    let report = term.kill(&dir);
    assert_eq!((report.signalled, report.left_pod), (1, 0), "{report:?}");
    wait_empty(&term, &dir).expect("killed once the re-check passes");
}
for_each_layout!(a_pid_that_left_the_pod_is_not_signalled);
