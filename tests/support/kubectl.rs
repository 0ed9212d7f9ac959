//! Real `kubectl` as an outside client of the API test server.

use std::path::Path;
use std::time::Duration;

/// Whether a kubectl binary is installed.
pub fn available() -> bool {
    std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs kubectl with `kubeconfig` and a private cache directory, bounded by 60 s; returns
/// (success, stdout, stderr). The process is ours and ended on drop.
pub async fn run(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--request-timeout=10s")
        .args(args);
    output(cmd).await
}

/// Runs `cmd` (a kubectl invocation the caller set up: arguments, environment), bounded by a
/// minute: (success, stdout, stderr). The process is ours and ended on drop.
pub async fn output(mut cmd: tokio::process::Command) -> (bool, String, String) {
    let fut = cmd.kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .expect("kubectl finished in time")
        .expect("kubectl ran");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
