//! Running external programs from tests: every run bounded by a timeout (SIGKILL to the child's
//! PID after it, then a panic), output captured through files so a chatty child never blocks on
//! a full pipe.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes the shell completions and man pages the .deb and .rpm pack (Cargo.toml's assets under
/// `target/assets`) with their build step, `examples/shell_assets.rs`, as a packager runs it
/// before `cargo deb` or `cargo generate-rpm`.
pub fn write_shell_assets(repo: &std::path::Path) {
    must(
        cargo_command()
            .args([
                "run",
                "--locked",
                "--quiet",
                "--example",
                "shell_assets",
                "--",
            ])
            .arg(repo.join("target/assets"))
            .current_dir(repo),
        Duration::from_secs(900),
    );
}

/// Output of a finished command.
pub struct Ran {
    pub ok: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Whether `program` is on the PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command running the cargo that runs the tests (for `cargo deb`, `cargo build`), without the
/// variables cargo sets for a test process (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …). Build
/// scripts (ring's, rustix's) declare `rerun-if-env-changed` on some of them, and cargo compares
/// its own environment: with them inherited, a release build started from a test reran those
/// build scripts and relinked everything (minutes of fat LTO) instead of reusing the release
/// binary that `.ci/run` built from a plain shell.
pub fn cargo_command() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_for_tests = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
        ]
        .iter()
        .any(|p| name.starts_with(p));
        if set_for_tests || name == "OUT_DIR" {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Runs `cmd` to completion within `timeout` (SIGKILL to its PID after that, and a panic).
pub fn run(cmd: &mut Command, timeout: Duration) -> Ran {
    run_from(cmd, Stdio::null(), timeout)
}

/// [`run`] with `input` on the command's standard input.
pub fn run_with_input(cmd: &mut Command, input: &[u8], timeout: Duration) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("in");
    fs::write(&path, input).expect("write input");
    run_from(cmd, fs::File::open(&path).expect("input").into(), timeout)
}

fn run_from(cmd: &mut Command, stdin: Stdio, timeout: Duration) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let err = dir.path().join("err");
    let mut child = cmd
        .stdin(stdin)
        .stdout(fs::File::create(&out).expect("stdout file"))
        .stderr(fs::File::create(&err).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        ok: status.success(),
        code: status.code(),
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// [`run`], and a panic with the output unless the command succeeded.
pub fn must(cmd: &mut Command, timeout: Duration) -> Ran {
    let shown = format!("{cmd:?}");
    let ran = run(cmd, timeout);
    assert!(
        ran.ok,
        "{shown} failed ({:?}):\n{}\n{}",
        ran.code, ran.stdout, ran.stderr
    );
    ran
}

/// A command that runs `program` with its address space capped at `mib` MiB (`ulimit -v` in a
/// shell that then execs it; add the program's arguments to it). A test of a memory bound then
/// fails with an allocation failure in the child instead of taking the machine's memory.
pub fn memory_capped(program: &std::path::Path, mib: u64) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib * 1024))
        .arg(program);
    cmd
}
