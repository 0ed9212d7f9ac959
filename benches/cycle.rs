//! Cost of one agent cycle on this machine, against its floor: opening and reading the same
//! kernel files into a buffer and making the same two `statvfs` calls, with no parsing. The
//! cycle runs every 10 s forever; the aim is sample + decide within 3× of the floor.
//!
//! Run with `cargo bench --bench cycle`; compare the figures of one run as ratios.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};

use std::time::{Duration, SystemTime};

use nodewarden::agent::Decider;
use nodewarden::config::Config;
use nodewarden::core::clock::Moment;
use nodewarden::sample::{SamplePaths, Sampler};

fn main() {
    divan::main();
}

/// The filesystem path sampled as both nodefs and imagefs.
const FS: &str = "/";

/// The files one cycle reads on this host: the cgroup files depend on its cgroup version, as
/// they do in the sampler.
fn kernel_files() -> Vec<PathBuf> {
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

/// One full `Sampler::sample()` cycle on the real machine.
#[divan::bench]
fn sample_cycle(bencher: divan::Bencher) {
    let mut sampler = Sampler::new(SamplePaths::host(FS, FS));
    bencher.bench_local(|| black_box(sampler.sample()));
}

/// The floor: open and read each kernel file into a reused buffer, and two `statvfs` calls.
#[divan::bench]
fn floor_read_only(bencher: divan::Bencher) {
    let files = kernel_files();
    let mut buf = Vec::with_capacity(8 * 1024);
    bencher.bench_local(|| {
        for path in &files {
            buf.clear();
            let read = std::fs::File::open(path).and_then(|mut file| file.read_to_end(&mut buf));
            let _ = black_box(read);
        }
        let _ = black_box(nix::sys::statvfs::statvfs(FS));
        let _ = black_box(nix::sys::statvfs::statvfs(FS));
        black_box(&buf);
    });
}

/// The example configuration: five hard thresholds, one soft, one PSI threshold, four conditions.
fn example_config() -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    match nodewarden::config::load(&path) {
        Ok(config) => config,
        Err(e) => panic!("config.example.toml must load: {e}"),
    }
}

/// One decide cycle (thresholds, conditions, taints) over a fixed reading.
#[divan::bench]
fn decide_cycle(bencher: divan::Bencher) {
    let config = example_config();
    let reading = Sampler::new(SamplePaths::host(FS, FS))
        .sample()
        .observations;
    let mut decider = Decider::new(&config);
    let mut mono = Duration::ZERO;
    bencher.bench_local(|| {
        mono += Duration::from_secs(10);
        let now = Moment {
            mono,
            wall: SystemTime::UNIX_EPOCH + mono,
        };
        black_box(decider.decide(black_box(&reading), now));
    });
}

/// What the agent does every period: one sample and one decide.
#[divan::bench]
fn sample_and_decide(bencher: divan::Bencher) {
    let config = example_config();
    let mut sampler = Sampler::new(SamplePaths::host(FS, FS));
    let mut decider = Decider::new(&config);
    let mut mono = Duration::ZERO;
    bencher.bench_local(|| {
        mono += Duration::from_secs(10);
        let now = Moment {
            mono,
            wall: SystemTime::UNIX_EPOCH + mono,
        };
        let reading = sampler.sample();
        black_box(decider.decide(&reading.observations, now));
    });
}
