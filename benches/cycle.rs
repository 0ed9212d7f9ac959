//! Cost of one agent cycle on this machine, against its floor: opening and reading the same
//! kernel files into a buffer and making the same two `statvfs` calls, with no parsing. The
//! cycle runs every 10 s forever; the aim is sample + decide within 3× of the floor.
//!
//! Run with `cargo bench --bench cycle`; compare the figures of one run as ratios.

use std::hint::black_box;
use std::io::Read;

use std::time::{Duration, SystemTime};

use nodewarden::agent::Decider;
use nodewarden::core::clock::Moment;
use nodewarden::sample::{SamplePaths, Sampler};

mod support;

use support::{example_config, kernel_files};

fn main() {
    divan::main();
}

/// The filesystem path sampled as both nodefs and imagefs.
const FS: &str = "/";

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
