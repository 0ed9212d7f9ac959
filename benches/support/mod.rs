//! What the per-cycle benches share (`cycle` and `growth`): the kernel files a cycle reads on
//! this host and the example configuration.

use std::path::{Path, PathBuf};

use nodewarden::config::Config;

/// The files one cycle reads on this host: the cgroup files depend on its cgroup version, as
/// they do in the sampler.
pub fn kernel_files() -> Vec<PathBuf> {
    let cgroup = Path::new("/sys/fs/cgroup");
    let mut files: Vec<PathBuf> = vec!["/proc/meminfo".into()];
    if cgroup.join("cgroup.controllers").exists() {
        files.push(cgroup.join("memory.stat"));
    } else {
        files.push(cgroup.join("memory/memory.usage_in_bytes"));
        files.push(cgroup.join("memory/memory.stat"));
    }
    files.extend(
        [
            "/proc/sys/kernel/pid_max",
            "/proc/sys/kernel/threads-max",
            "/proc/loadavg",
            "/proc/pressure/memory",
            "/proc/pressure/io",
            "/proc/pressure/cpu",
        ]
        .map(PathBuf::from),
    );
    files
}

/// The example configuration: five hard thresholds, one soft, one PSI threshold, four conditions.
pub fn example_config() -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    match nodewarden::config::load(&path) {
        Ok(config) => config,
        Err(e) => panic!("config.example.toml must load: {e}"),
    }
}
