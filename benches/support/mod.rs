//! What the per-cycle benches share (`cycle` and `growth`): the kernel files a cycle reads on
//! this host, the floor of reading them, the example configuration, and the clock of a cycle.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nodewarden::core::clock::Moment;

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

/// The floor of one sample: `files` read into `buf` and two `statvfs` calls on `fs` (nodefs and
/// imagefs), with no parsing.
pub fn read_floor(files: &[PathBuf], buf: &mut Vec<u8>, fs: &str) {
    for path in files {
        buf.clear();
        let read = std::fs::File::open(path).and_then(|mut file| file.read_to_end(buf));
        let _ = black_box(read);
    }
    let _ = black_box(nix::sys::statvfs::statvfs(fs));
    let _ = black_box(nix::sys::statvfs::statvfs(fs));
}

/// The moment of the next decide cycle, 10 s after the one `mono` holds (advanced in place).
pub fn next_cycle(mono: &mut Duration) -> Moment {
    *mono += Duration::from_secs(10);
    Moment {
        mono: *mono,
        wall: SystemTime::UNIX_EPOCH + *mono,
    }
}
