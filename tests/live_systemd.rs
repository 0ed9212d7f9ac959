//! The packages and their unit under a live systemd as PID 1. This machine's PID 1 is not
//! systemd, so each test boots one: `systemd-nspawn --boot` on this machine's own root file
//! system seen through an overlay whose upper layer is a tmpfs. There the .deb is installed with
//! dpkg, the agent is started, watched, reloaded, failed on purpose and stopped with systemctl,
//! and the package is removed and purged, the way an administrator would; and the .rpm is
//! installed, upgraded and erased with rpm, checking what its scriptlets promise.
//!
//! The .deb and the .rpm install the same paths, so each gets a container (a boot of its own,
//! under a second): neither can see the other's leftovers, and one failing does not hide the
//! other's result.
//!
//! Nothing reaches the host: the overlay and every other mount (including the tmpfs on /run
//! where nspawn keeps its locks) live in a private mount namespace that ends with the
//! container; the container has its own network namespace; it runs in cgroups of this test's
//! own, removed afterwards; only PIDs this test started are signalled.
//!
//! Needs root, overlayfs, systemd-nspawn (package systemd-container), unshare and nsenter
//! (util-linux), cargo-deb, rpm and cargo-generate-rpm (`.ci/install-packaging.sh`); outside CI
//! a missing one skips.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use support::command::{Ran, cargo_command, have, must, run, write_shell_assets};
use support::{is_root, require};

const UNIT: &str = "nodewarden.service";
const CONFIG: &str = "/etc/nodewarden/config.toml";
/// Where the directory holding the .deb appears inside the container (read-only).
const SHARE: &str = "/mnt/nodewarden-test";
/// The test's watchdog period (a drop-in; the unit ships 30s): three periods fit in seconds.
const WATCHDOG: Duration = Duration::from_secs(2);
/// The unit's TimeoutStopSec=.
const TIMEOUT_STOP: Duration = Duration::from_secs(10);

/// Runs in a fresh mount namespace (`unshare --mount`), as the process that becomes nspawn:
/// joins the test's cgroups before anything forks, builds the throwaway root, and boots it.
/// `$1` scratch directory, `$2` directory to share read-only, `$3` where the container sees it,
/// `$4` machine name, then the cgroup directories to join.
const BOOT: &str = r#"
set -eu
base=$1 share=$2 seen_as=$3 machine=$4
shift 4
# nspawn makes its "payload" and "supervisor" cgroups below its own: from the root cgroup that
# would be the host's hierarchy roots.
for cg in "$@"; do echo $$ > "$cg/cgroup.procs"; done
# nspawn keeps locks under /run/systemd; this machine's /run is on its disk, not a tmpfs.
mount -t tmpfs -o mode=0755 nodewarden-test-run /run
mkdir "$base/lower" "$base/rw" "$base/root"
# The root file system alone (no --rbind), read-only: the overlay's lower layer.
mount --bind / "$base/lower"
mount -o remount,bind,ro "$base/lower"
mount -t tmpfs -o size=1g,mode=0755 nodewarden-test-rw "$base/rw"
mkdir -p "$base/rw/upper/etc" "$base/rw/work"
# A machine ID of its own, so its journal is not mistaken for the host's.
tr -d - < /proc/sys/kernel/random/uuid > "$base/rw/upper/etc/machine-id"
mount -t overlay -o "lowerdir=$base/lower,upperdir=$base/rw/upper,workdir=$base/rw/work" \
    nodewarden-test-root "$base/root"
# --register=no --keep-unit: no machined and no system bus on a host whose PID 1 is not
# systemd. basic.target: journald and the sockets, without this image's other services.
exec systemd-nspawn --quiet --directory="$base/root" --machine="$machine" \
    --register=no --keep-unit --private-network --bind-ro="$share:$seen_as" \
    --boot --console=read-only -- --unit=basic.target
"#;

/// The cgroup hierarchies nspawn and the container's systemd write to.
fn hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").is_file() {
        return vec![root.to_path_buf()];
    }
    ["systemd", "unified"]
        .into_iter()
        .map(|h| root.join(h))
        .filter(|h| h.join("cgroup.procs").is_file())
        .collect()
}

/// Removes a cgroup directory tree deepest first, retrying while the kernel finishes reaping.
fn remove_cgroup(dir: &Path, deadline: Instant) {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup(&e.path(), deadline);
            }
        }
    }
    while fs::remove_dir(dir).is_err() && dir.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The booted container: nspawn (our child) and the container's PID 1.
struct Container {
    nspawn: Child,
    init: i32,
    cgroups: Vec<PathBuf>,
    console: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Container {
    /// Boots a container that sees `share` read-only at [`SHARE`]. `label` names its cgroups
    /// (with our PID): `cargo test` runs this file's tests as threads of one process.
    fn boot(share: &Path, label: &str) -> Container {
        let scratch = tempfile::tempdir().expect("tempdir");
        let console = scratch.path().join("console.log");
        let name = format!("nodewarden-test-live-{label}-{}", std::process::id());
        let cgroups: Vec<PathBuf> = hierarchies().iter().map(|h| h.join(&name)).collect();
        for cg in &cgroups {
            fs::create_dir(cg).unwrap_or_else(|e| panic!("create cgroup {}: {e}", cg.display()));
        }
        let out = fs::File::create(&console).expect("console file");
        let nspawn = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                BOOT,
                "sh",
            ])
            .arg(scratch.path())
            .arg(share)
            .arg(SHARE)
            .arg("nodewarden-live")
            .args(&cgroups)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("console file"))
            .stderr(out)
            .spawn()
            .expect("spawn unshare");
        let mut container = Container {
            nspawn,
            init: 0,
            cgroups,
            console,
            _scratch: scratch,
        };
        container.init = container.find_init(Duration::from_secs(15));
        // "offline" until the manager listens on its private socket; then --wait waits for
        // the boot to finish.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ran = container.sh(
                "systemctl is-system-running --wait",
                Duration::from_secs(60),
            );
            let state = ran.stdout.trim();
            if state == "running" || state == "degraded" {
                break;
            }
            if Instant::now() >= deadline {
                container.fail(&format!("container did not boot: {state:?} {}", ran.stderr));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        container
    }

    /// The container's PID 1 once it runs systemd: nspawn's child whose PID in its own namespace
    /// is 1 (before its exec it is still nspawn setting the container up).
    fn find_init(&mut self, timeout: Duration) -> i32 {
        let nspawn = self.nspawn.id();
        let deadline = Instant::now() + timeout;
        loop {
            let children = fs::read_to_string(format!("/proc/{nspawn}/task/{nspawn}/children"))
                .unwrap_or_default();
            for pid in children.split_whitespace() {
                let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let inner = status
                    .lines()
                    .find(|l| l.starts_with("NSpid:"))
                    .and_then(|l| l.split_whitespace().last());
                let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                if inner == Some("1") && comm.trim() == "systemd" {
                    return pid.parse().expect("numeric PID");
                }
            }
            if let Ok(Some(status)) = self.nspawn.try_wait() {
                panic!("nspawn exited ({status}):\n{}", self.console_text());
            }
            if Instant::now() >= deadline {
                panic!(
                    "no container init within {timeout:?}:\n{}",
                    self.console_text()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn console_text(&self) -> String {
        fs::read_to_string(&self.console).unwrap_or_default()
    }

    /// Runs a shell script inside the container (all its namespaces and its root).
    fn sh(&self, script: &str, timeout: Duration) -> Ran {
        run(
            Command::new("nsenter")
                .args([
                    "--target",
                    &self.init.to_string(),
                    "--all",
                    "--",
                    "sh",
                    "-c",
                    script,
                ])
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .env("LANG", "C.UTF-8")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .env("SYSTEMD_COLORS", "0"),
            timeout,
        )
    }

    /// [`Container::sh`], failing the test unless it succeeds.
    fn must_sh(&self, script: &str) -> Ran {
        let ran = self.sh(script, Duration::from_secs(60));
        if !ran.ok {
            self.fail(&format!(
                "`{script}` failed ({:?}):\n{}{}",
                ran.code, ran.stdout, ran.stderr
            ));
        }
        ran
    }

    /// `systemctl show` properties of the unit.
    fn show(&self, properties: &[&str]) -> BTreeMap<String, String> {
        let args: Vec<String> = properties.iter().map(|p| format!("-p {p}")).collect();
        let ran = self.must_sh(&format!("systemctl show {UNIT} {}", args.join(" ")));
        ran.stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn prop(&self, property: &str) -> String {
        self.show(&[property]).remove(property).unwrap_or_default()
    }

    /// The agent's journal records (`journalctl -u … -o json`).
    fn records(&self) -> Vec<serde_json::Value> {
        let ran = self.must_sh(&format!("journalctl -u {UNIT} -o json --no-pager"));
        ran.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits up to `timeout` for a journal record of the agent whose MESSAGE contains `text`.
    fn wait_record(&self, text: &str, timeout: Duration) -> serde_json::Value {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self.records().into_iter().find(|r| {
                r["SYSLOG_IDENTIFIER"] == "nodewarden"
                    && r["MESSAGE"].as_str().is_some_and(|m| m.contains(text))
            });
            if let Some(record) = found {
                return record;
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "no journal record with {text:?} within {timeout:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to `timeout` for the unit's `property` to equal `value`.
    fn wait_prop(&self, property: &str, value: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.prop(property);
            if now == value {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "{property} is {now:?}, not {value:?}, after {timeout:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `property` satisfies `ok` (described by `what`).
    fn wait_prop_where(
        &self,
        property: &str,
        what: &str,
        ok: impl Fn(&str) -> bool,
        timeout: Duration,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.prop(property);
            if ok(&now) {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "{property} is {now:?}, not {what}, after {timeout:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many times the container's systemd has reloaded (`daemon-reload`): its "Reloading."
    /// records in the journal.
    fn reloads(&self) -> usize {
        let ran = self.must_sh("journalctl -b _PID=1 -o cat --no-pager");
        ran.stdout.lines().filter(|l| *l == "Reloading.").count()
    }

    /// Waits up to `timeout` for a reload after the `before`-th ([`Container::reloads`]): the
    /// record can reach the journal a moment after `systemctl daemon-reload` has returned.
    fn wait_reload_after(&self, before: usize, what: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.reloads() <= before {
            if Instant::now() >= deadline {
                self.fail(&format!("{what}: systemd was not reloaded"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Panics with `what` and what systemd and the journal say about the unit.
    fn fail(&self, what: &str) -> ! {
        let state = self.sh(
            &format!(
                "systemctl status {UNIT} --no-pager -l; journalctl -b --no-pager -n 80 -o short-monotonic"
            ),
            Duration::from_secs(20),
        );
        panic!(
            "{what}\n--- systemctl status, journal ---\n{}{}",
            state.stdout, state.stderr
        );
    }

    fn check(&self, condition: bool, what: &str) {
        if !condition {
            self.fail(what);
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // SIGTERM to nspawn halts the container cleanly (it sends SIGRTMIN+3 to its PID 1).
        let nspawn = Pid::from_raw(self.nspawn.id() as i32);
        let _ = kill(nspawn, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(20);
        while matches!(self.nspawn.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(self.nspawn.try_wait(), Ok(None)) {
            // Killing the container's PID 1 ends every process in its PID namespace.
            if self.init > 0 {
                let _ = kill(Pid::from_raw(self.init), Signal::SIGKILL);
            }
            let _ = self.nspawn.kill();
            let _ = self.nspawn.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for cg in &self.cgroups {
            remove_cgroup(cg, deadline);
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn overlayfs() -> bool {
    fs::read_to_string("/proc/filesystems")
        .is_ok_and(|f| f.lines().any(|l| l.ends_with("\toverlay")))
}

/// Builds the .deb the way tests/packaging.rs does, into `out`; returns its file name.
fn build_deb(out: &Path) -> String {
    write_shell_assets(&repo());
    must(
        cargo_command()
            .args(["deb", "--locked", "--output"])
            .arg(out)
            .current_dir(repo()),
        Duration::from_secs(900),
    );
    fs::read_dir(out)
        .expect("read output dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".deb"))
        .expect("cargo deb wrote a .deb")
}

/// Whether a container can be booted here: [`require`] for each thing [`Container::boot`] needs.
fn can_boot_containers() -> bool {
    require(is_root(), "root (mounts, namespaces, cgroups)")
        && require(overlayfs(), "overlayfs")
        && require(
            have("systemd-nspawn"),
            "systemd-nspawn (apt-get install systemd-container)",
        )
        && require(
            have("unshare") && have("nsenter"),
            "unshare and nsenter (util-linux)",
        )
        && require(
            Path::new("/lib/systemd/systemd").exists(),
            "systemd (apt-get install systemd)",
        )
}

/// One container at a time, also under `cargo test` (which runs a binary's tests on threads of
/// one process, and knows nothing of nextest's test groups): each boots this machine's root
/// through an overlay whose lower layer must not change under it.
static ONE_CONTAINER: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn deb_installs_runs_reloads_stops_and_purges_under_live_systemd() {
    let _one = ONE_CONTAINER.lock().unwrap_or_else(|p| p.into_inner());
    if !can_boot_containers()
        || !require(
            have("cargo-deb"),
            "cargo-deb (bash .ci/install-packaging.sh)",
        )
    {
        return;
    }
    let share = tempfile::tempdir().expect("tempdir");
    let deb = build_deb(share.path());
    let started = Instant::now();
    let c = Container::boot(share.path(), "deb");
    eprintln!("container booted in {:?}", started.elapsed());

    // --- Install: enabled, not started (the shipped configuration names no kubeconfig). ---
    let install = c.must_sh(&format!("dpkg -i {SHARE}/{deb}"));
    c.check(
        install.stderr.contains("enabled but not started"),
        &format!(
            "postinst did not say why it did not start:\n{}",
            install.stderr
        ),
    );
    let is_enabled = c.sh(
        &format!("systemctl is-enabled {UNIT}"),
        Duration::from_secs(30),
    );
    c.check(
        is_enabled.stdout.trim() == "enabled",
        &format!("unit not enabled: {:?}", is_enabled.stdout),
    );
    let before = c.show(&["ActiveState", "InactiveExitTimestampMonotonic"]);
    c.check(
        before["ActiveState"] == "inactive" && before["InactiveExitTimestampMonotonic"] == "0",
        &format!("postinst started the agent without a kubeconfig: {before:?}"),
    );

    // A shorter watchdog for the test; the state directory removed, so that StateDirectory=
    // (not the postinst) is what makes it; the shipped configuration kept for later.
    c.must_sh(&format!(
        "mkdir -p /etc/systemd/system/{UNIT}.d && \
         printf '[Service]\\nWatchdogSec={}s\\n' > /etc/systemd/system/{UNIT}.d/live-test.conf && \
         rmdir /var/lib/nodewarden && cp {CONFIG} /root/config.toml.shipped && \
         systemctl daemon-reload",
        WATCHDOG.as_secs()
    ));

    // --- Start: Type=notify, so `systemctl start` returns once READY=1 came through systemd's
    // notify socket (NotifyAccess=main), under every hardening directive of the unit. ---
    let t = Instant::now();
    c.must_sh(&format!("systemctl start {UNIT}"));
    eprintln!("started (READY=1) in {:?}", t.elapsed());
    let up = c.show(&[
        "ActiveState",
        "SubState",
        "StatusText",
        "MainPID",
        "NRestarts",
        "WatchdogUSec",
    ]);
    c.check(
        up["ActiveState"] == "active" && up["SubState"] == "running",
        &format!("not active (running): {up:?}"),
    );
    c.check(
        up["StatusText"].starts_with("standalone: "),
        &format!("STATUS= not shown: {up:?}"),
    );
    c.check(
        up["WatchdogUSec"] == format!("{}s", WATCHDOG.as_secs()),
        &format!("watchdog drop-in not applied: {up:?}"),
    );
    let main_pid = up["MainPID"].clone();
    // The directives took effect on the running process.
    let status = c.must_sh(&format!("cat /proc/{main_pid}/status")).stdout;
    for wanted in [
        "CapBnd:\t0000000000000020",
        "CapEff:\t0000000000000020",
        "NoNewPrivs:\t1",
        "Seccomp:\t2",
    ] {
        c.check(
            status.lines().any(|l| l == wanted),
            &format!("main process lacks `{wanted}`:\n{status}"),
        );
    }
    let mounts = c.must_sh(&format!("cat /proc/{main_pid}/mountinfo")).stdout;
    let root_ro = mounts.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 5 && f[4] == "/" && f[5].split(',').any(|o| o == "ro")
    });
    c.check(
        root_ro,
        &format!("ProtectSystem=strict: / is not read-only:\n{mounts}"),
    );
    let mode = c.must_sh("stat -c %a /var/lib/nodewarden").stdout;
    c.check(
        mode.trim() == "700",
        &format!("state directory mode {mode:?}"),
    );
    // systemd accepted every directive: nothing ignored or unsupported in the unit.
    let manager = c.must_sh("journalctl -b _PID=1 -o cat --no-pager").stdout;
    let complaints: Vec<&str> = manager
        .lines()
        .filter(|l| l.contains(UNIT) && !l.contains("live-test.conf"))
        .filter(|l| {
            let l = l.to_lowercase();
            ["ignoring", "unknown", "not supported", "failed to"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    c.check(
        complaints.is_empty(),
        &format!(
            "systemd complained about the unit:\n{}",
            complaints.join("\n")
        ),
    );
    // Structured records reach the journal as fields, through its native protocol (not lines
    // of stderr).
    let record = c.wait_record("starting standalone", Duration::from_secs(10));
    c.check(
        record["MODE"] == "standalone"
            && record["NODE"].as_str().is_some_and(|n| !n.is_empty())
            && record["_TRANSPORT"] == "journal"
            && record["_SYSTEMD_UNIT"] == UNIT,
        &format!("start record lacks its fields: {record}"),
    );

    // --- Watchdog: pinged from the sampling loop; three periods pass without a restart. ---
    std::thread::sleep(WATCHDOG * 3 + WATCHDOG / 2);
    let later = c.show(&["ActiveState", "MainPID", "NRestarts", "Result"]);
    c.check(
        later["ActiveState"] == "active"
            && later["MainPID"] == main_pid
            && later["NRestarts"] == "0"
            && later["Result"] == "success",
        &format!("watchdog fired or the agent restarted: {later:?}"),
    );

    // --- Reload: SIGHUP with a valid file applies it; with an invalid one it is rejected and
    // the agent keeps running on the configuration it has. ---
    c.must_sh(&format!("systemctl reload {UNIT}"));
    c.wait_record("configuration reloaded from", Duration::from_secs(10));
    c.wait_prop(
        "StatusText",
        "configuration reloaded",
        Duration::from_secs(5),
    );
    c.must_sh(&format!("printf 'noSuchKey = 1\\n' >> {CONFIG}"));
    c.must_sh(&format!("systemctl reload {UNIT}"));
    c.wait_record("configuration reload rejected", Duration::from_secs(10));
    // The rejection stays in STATUS= after the next cycle restores the usual line (a file that
    // would fail the next start): `systemctl status` shows it until a reload is accepted.
    c.wait_prop_where(
        "StatusText",
        "the usual line, still noting the rejected reload",
        |s| {
            s.contains(": ")
                && s.ends_with("(configuration reload rejected; running configuration kept)")
        },
        Duration::from_secs(20),
    );
    let reloaded = c.show(&["ActiveState", "MainPID", "NRestarts"]);
    c.check(
        reloaded["ActiveState"] == "active"
            && reloaded["MainPID"] == main_pid
            && reloaded["NRestarts"] == "0",
        &format!("reload did not keep the agent running: {reloaded:?}"),
    );

    // --- Stop: within TimeoutStopSec, a clean exit (not a SIGKILL after the timeout). ---
    let t = Instant::now();
    c.must_sh(&format!("systemctl stop {UNIT}"));
    let stop_took = t.elapsed();
    eprintln!("stopped in {stop_took:?}");
    let stopped = c.show(&["ActiveState", "Result", "ExecMainStatus"]);
    c.check(
        stop_took < TIMEOUT_STOP
            && stopped["ActiveState"] == "inactive"
            && stopped["Result"] == "success"
            && stopped["ExecMainStatus"] == "0",
        &format!("stop took {stop_took:?}: {stopped:?}"),
    );
    c.wait_record("stopping on SIGTERM", Duration::from_secs(5));

    // --- Invalid configuration at start: exit 78, failed, and no restart scheduled
    // (RestartPreventExitStatus=78; a restart would show as activating/auto-restart). ---
    let bad = c.sh(&format!("systemctl start {UNIT}"), Duration::from_secs(60));
    c.check(!bad.ok, "start with an invalid configuration succeeded");
    let failed = c.show(&[
        "ActiveState",
        "SubState",
        "Result",
        "ExecMainStatus",
        "NRestarts",
    ]);
    c.check(
        failed["ActiveState"] == "failed"
            && failed["SubState"] == "failed"
            && failed["Result"] == "exit-code"
            && failed["ExecMainStatus"] == "78"
            && failed["NRestarts"] == "0",
        &format!("invalid configuration: {failed:?}"),
    );
    c.wait_record("noSuchKey", Duration::from_secs(5));

    // --- Remove while running: prerm stops the agent; the conffile stays. ---
    c.must_sh(&format!(
        "cp /root/config.toml.shipped {CONFIG} && rm -r /etc/systemd/system/{UNIT}.d && \
         systemctl daemon-reload && systemctl start {UNIT}"
    ));
    let running_pid = c.prop("MainPID");
    c.check(running_pid != "0", "agent did not start again");
    c.must_sh("dpkg -r nodewarden");
    c.check(
        !c.sh(
            &format!("test -e /proc/{running_pid}"),
            Duration::from_secs(10),
        )
        .ok,
        "prerm left the agent running",
    );
    c.must_sh(&format!(
        "test ! -e /usr/bin/nodewarden && test ! -e /usr/lib/systemd/system/{UNIT} && test -f {CONFIG}"
    ));
    let status = c
        .must_sh("dpkg-query -W --showformat='${Status}' nodewarden")
        .stdout;
    c.check(
        status == "deinstall ok config-files",
        &format!("after remove: {status:?}"),
    );

    // --- Purge: configuration, state and enablement go; systemd forgets the unit. ---
    c.must_sh("dpkg -P nodewarden");
    c.must_sh(&format!(
        "test ! -e /etc/nodewarden && test ! -e /var/lib/nodewarden && \
         test ! -L /etc/systemd/system/multi-user.target.wants/{UNIT} && \
         test ! -e /etc/systemd/system/{UNIT} && test ! -L /etc/systemd/system/{UNIT}"
    ));
    let load = c.prop("LoadState");
    c.check(
        load == "not-found",
        &format!("after purge LoadState={load}"),
    );
    eprintln!("live systemd test body took {:?}", started.elapsed());
}

/// rpm inside the container, on a database of the container's own: Debian's rpm keeps one per
/// user (`~/.rpmdb`), which the overlay would show from the host.
const RPM: &str = "rpm --dbpath /var/lib/rpm";
/// The .rpm as tests/packaging.rs builds it (release 1: Cargo.toml names none).
const RPM_RELEASE_1: &str = "nodewarden-release-1.rpm";
/// The same package rebuilt as release 2, the upgrade. Its /etc/nodewarden/config.toml differs
/// from release 1's: only a changed vendor file under a local edit makes %config(noreplace)
/// matter (rpm then keeps the edit and writes the new file as `.rpmnew`; unchanged, rpm keeps
/// the edit whatever the flags).
const RPM_RELEASE_2: &str = "nodewarden-release-2.rpm";
/// Release 2's configuration file, next to the packages.
const CONFIG_RELEASE_2: &str = "config-release-2.toml";

/// A TOML value of the generate-rpm asset tables (strings, booleans, integers) as TOML text.
fn toml_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Integer(i) => i.to_string(),
        other => panic!("unexpected value in a generate-rpm asset: {other:?}"),
    }
}

/// Builds release 1 and release 2 of the .rpm into `out` (see [`RPM_RELEASE_2`]): the release
/// binary first, as tests/packaging.rs does, since cargo generate-rpm packs what is built.
fn build_rpms(out: &Path) {
    write_shell_assets(&repo());
    must(
        cargo_command()
            .args(["build", "--release", "--locked", "--bin", "nodewarden"])
            .current_dir(repo()),
        Duration::from_secs(900),
    );
    must(
        cargo_command()
            .args(["generate-rpm", "-o"])
            .arg(out.join(RPM_RELEASE_1))
            .current_dir(repo()),
        Duration::from_secs(120),
    );

    // Release 2: Cargo.toml's assets, the configuration's source swapped for a changed copy.
    let shipped = fs::read_to_string(repo().join("packaging/config.toml")).expect("config");
    let changed = out.join(CONFIG_RELEASE_2);
    fs::write(
        &changed,
        format!("{shipped}\n# Release 2 of the package (built by tests/live_systemd.rs).\n"),
    )
    .expect("write release 2 config");
    let manifest: toml::Table =
        toml::from_str(&fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml"))
            .expect("parse Cargo.toml");
    let assets = manifest["package"]["metadata"]["generate-rpm"]["assets"]
        .as_array()
        .expect("generate-rpm assets");
    let mut swapped = false;
    let tables: Vec<String> = assets
        .iter()
        .map(|asset| {
            let asset = asset.as_table().expect("asset table");
            let fields: Vec<String> = asset
                .iter()
                .map(|(key, value)| {
                    if key == "source" && asset["dest"].as_str() == Some(CONFIG) {
                        swapped = true;
                        let path = changed.to_str().expect("utf-8 path");
                        format!("{key} = {}", toml_text(&toml::Value::from(path)))
                    } else {
                        format!("{key} = {}", toml_text(value))
                    }
                })
                .collect();
            format!("{{ {} }}", fields.join(", "))
        })
        .collect();
    assert!(swapped, "no generate-rpm asset installs {CONFIG}");
    must(
        cargo_command()
            .args(["generate-rpm", "-o"])
            .arg(out.join(RPM_RELEASE_2))
            .arg("--set-metadata")
            .arg(format!(
                "release = \"2\"\nassets = [\n{}\n]\n",
                tables.join(",\n")
            ))
            .current_dir(repo()),
        Duration::from_secs(120),
    );
}

#[test]
fn rpm_scriptlets_install_upgrade_and_erase_under_live_systemd() {
    let _one = ONE_CONTAINER.lock().unwrap_or_else(|p| p.into_inner());
    if !can_boot_containers()
        || !require(have("rpm"), "rpm (apt-get install rpm)")
        || !require(
            have("cargo-generate-rpm"),
            "cargo-generate-rpm (bash .ci/install-packaging.sh)",
        )
    {
        return;
    }
    let share = tempfile::tempdir().expect("tempdir");
    build_rpms(share.path());
    let started = Instant::now();
    let c = Container::boot(share.path(), "rpm");
    eprintln!("container booted in {:?}", started.elapsed());
    c.must_sh(&format!("{RPM} --initdb"));
    // Every install and upgrade below takes --nodeps: the package requires /bin/sh, libc and
    // libgcc_s (and its scriptlets use systemctl), which dpkg installed here, and this rpm
    // database knows nothing dpkg installed.
    let release_1 = format!("{RPM} -i --nodeps {SHARE}/{RPM_RELEASE_1}");
    let release_2 = format!("{RPM} -U --nodeps {SHARE}/{RPM_RELEASE_2}");
    let installed = |c: &Container| {
        c.must_sh(&format!(
            "{RPM} -q --qf '%{{NAME}}-%{{RELEASE}}\\n' nodewarden"
        ))
        .stdout
    };

    // --- First install (%post with $1 = 1): the state directory, the distribution's preset,
    // a reload; not started, since the shipped configuration names no kubeconfig. ---
    let reloads = c.reloads();
    let install = c.must_sh(&release_1);
    let hint = format!(
        "nodewarden: not started: set kubeconfig in {CONFIG}, then 'systemctl enable --now nodewarden'"
    );
    c.check(
        install.stderr.contains(&hint),
        &format!(
            "%post did not say why it did not start:\n{}",
            install.stderr
        ),
    );
    c.wait_reload_after(reloads, "rpm -i", Duration::from_secs(5));
    let state = c.must_sh("stat -c '%F %a %U' /var/lib/nodewarden").stdout;
    c.check(
        state.trim() == "directory 700 root",
        &format!("state directory: {state:?}"),
    );
    // The kubectl plugin's symlink, made by %post (no symlink assets in cargo-generate-rpm).
    c.must_sh("test \"$(readlink /usr/bin/kubectl-nodewarden)\" = nodewarden");
    let fresh = c.show(&[
        "LoadState",
        "UnitFileState",
        "UnitFilePreset",
        "ActiveState",
        "InactiveExitTimestampMonotonic",
    ]);
    // No preset file of Debian's names the unit, so systemd's default applies: enable.
    c.check(
        fresh["LoadState"] == "loaded"
            && fresh["UnitFilePreset"] == "enabled"
            && fresh["UnitFileState"] == fresh["UnitFilePreset"],
        &format!("%post did not apply the preset: {fresh:?}"),
    );
    c.check(
        fresh["ActiveState"] == "inactive" && fresh["InactiveExitTimestampMonotonic"] == "0",
        &format!("%post started the agent without a kubeconfig: {fresh:?}"),
    );

    // --- The installed unit runs the installed binary: READY=1 and STATUS= arrive. ---
    let t = Instant::now();
    c.must_sh(&format!("systemctl start {UNIT}"));
    eprintln!("started (READY=1) in {:?}", t.elapsed());
    let up = c.show(&[
        "ActiveState",
        "SubState",
        "StatusText",
        "MainPID",
        "FragmentPath",
    ]);
    c.check(
        up["ActiveState"] == "active"
            && up["SubState"] == "running"
            && up["StatusText"].starts_with("standalone: "),
        &format!("not active (running): {up:?}"),
    );
    // systemd names the unit by its first search path, /lib/systemd/system (merged /usr here);
    // rpm by the path in the package.
    let fragment = c
        .must_sh(&format!("readlink -f {}", up["FragmentPath"]))
        .stdout;
    c.check(
        fragment.trim() == format!("/usr/lib/systemd/system/{UNIT}"),
        &format!("not the rpm's unit: {up:?}"),
    );
    let owners = c
        .must_sh(&format!(
            "{RPM} -qf --qf '%{{NAME}}-%{{RELEASE}}\\n' /usr/bin/nodewarden {}",
            fragment.trim()
        ))
        .stdout;
    c.check(
        owners == "nodewarden-1\nnodewarden-1\n",
        &format!("binary and unit not the rpm's: {owners:?}"),
    );

    // --- Upgrade while running (%post with $1 = 2, then the old package's %preun and %postun
    // with $1 = 1): try-restart restarts it; the edited configuration is kept, the new one
    // written beside it. ---
    c.must_sh(&format!("printf '# edited locally\\n' >> {CONFIG}"));
    let edited = c.must_sh(&format!("cat {CONFIG}")).stdout;
    let reloads = c.reloads();
    let upgrade = c.must_sh(&release_2);
    c.wait_reload_after(reloads, "rpm -U", Duration::from_secs(5));
    let restarted = c.show(&["ActiveState", "SubState", "MainPID", "UnitFileState"]);
    c.check(
        restarted["ActiveState"] == "active"
            && restarted["SubState"] == "running"
            && !["0", up["MainPID"].as_str()].contains(&restarted["MainPID"].as_str())
            && restarted["UnitFileState"] == "enabled",
        &format!(
            "upgrade did not restart the running agent (was {}): {restarted:?}",
            up["MainPID"]
        ),
    );
    c.check(
        !upgrade.stderr.contains("not started"),
        &format!(
            "%post treated the upgrade as an install:\n{}",
            upgrade.stderr
        ),
    );
    c.check(
        installed(&c) == "nodewarden-2\n",
        "not exactly release 2 installed",
    );
    let kept = c.must_sh(&format!("cat {CONFIG}")).stdout;
    c.check(
        kept == edited,
        "the upgrade replaced the edited configuration",
    );
    c.must_sh(&format!("cmp {CONFIG}.rpmnew {SHARE}/{CONFIG_RELEASE_2}"));

    // --- Erase while running: %preun stops and disables it, %postun reloads; systemd forgets
    // the unit. rpm keeps the edited configuration as .rpmsave. ---
    let running_pid = restarted["MainPID"].clone();
    let reloads = c.reloads();
    c.must_sh(&format!("{RPM} -e nodewarden"));
    c.check(
        !c.sh(
            &format!("test -e /proc/{running_pid}"),
            Duration::from_secs(10),
        )
        .ok,
        "%preun left the agent running",
    );
    c.wait_reload_after(reloads, "rpm -e", Duration::from_secs(5));
    let load = c.prop("LoadState");
    c.check(
        load == "not-found",
        &format!("after erase LoadState={load}"),
    );
    c.must_sh(&format!(
        "test ! -e /usr/bin/nodewarden && test ! -e /usr/lib/systemd/system/{UNIT} && \
         test ! -L /etc/systemd/system/multi-user.target.wants/{UNIT} && \
         test ! -L /usr/bin/kubectl-nodewarden && ! {RPM} -q nodewarden >/dev/null"
    ));
    let saved = c.must_sh(&format!("cat {CONFIG}.rpmsave")).stdout;
    c.check(saved == edited, "erase lost the edited configuration");

    // --- A preset that disables the unit is honoured on first install; an upgrade leaves a
    // stopped agent stopped (try-restart) and its enablement alone (presets are for first
    // installs). ---
    c.must_sh(&format!(
        "rm -r /etc/nodewarden && mkdir -p /etc/systemd/system-preset && \
         echo 'disable {UNIT}' > /etc/systemd/system-preset/10-nodewarden-test.preset"
    ));
    // The hint holds here too: with the unit disabled, a start alone would not outlive a reboot.
    let install = c.must_sh(&release_1);
    c.check(
        install.stderr.contains(&hint),
        &format!("%post did not give the hint:\n{}", install.stderr),
    );
    let fresh = c.show(&[
        "UnitFileState",
        "UnitFilePreset",
        "ActiveState",
        "InactiveExitTimestampMonotonic",
    ]);
    c.check(
        fresh["UnitFilePreset"] == "disabled"
            && fresh["UnitFileState"] == "disabled"
            && fresh["ActiveState"] == "inactive",
        &format!("%post did not apply a disabling preset: {fresh:?}"),
    );
    c.must_sh(&release_2);
    let upgraded = c.show(&[
        "UnitFileState",
        "ActiveState",
        "InactiveExitTimestampMonotonic",
    ]);
    c.check(
        upgraded["ActiveState"] == "inactive"
            && upgraded["InactiveExitTimestampMonotonic"]
                == fresh["InactiveExitTimestampMonotonic"]
            && upgraded["UnitFileState"] == "disabled",
        &format!("upgrade started a stopped agent or changed its enablement: {upgraded:?}"),
    );
    c.check(
        installed(&c) == "nodewarden-2\n",
        "not exactly release 2 installed",
    );
    c.must_sh(&format!("{RPM} -e nodewarden"));
    let load = c.prop("LoadState");
    c.check(
        load == "not-found",
        &format!("after erase LoadState={load}"),
    );
    eprintln!("live systemd rpm test body took {:?}", started.elapsed());
}
