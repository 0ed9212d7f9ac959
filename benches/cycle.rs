//! Cost of one agent cycle on this machine, against its floor: opening and reading the same
//! kernel files into a buffer and making the same two `statvfs` calls, with no parsing. The
//! cycle runs every 10 s forever; the aim is sample + decide within 3× of the floor.
//!
//! Run with `cargo bench --bench cycle`; compare the figures of one run as ratios.

use std::hint::black_box;

use std::time::Duration;

use nodewarden::agent::Decider;
use nodewarden::sample::{SamplePaths, Sampler};

mod support;

use support::{example_config, kernel_files, next_cycle, read_floor};

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
        read_floor(&files, &mut buf, FS);
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
        let now = next_cycle(&mut mono);
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
        let now = next_cycle(&mut mono);
        let reading = sampler.sample();
        black_box(decider.decide(&reading.observations, now));
    });
}

/// The whole cycle as the sampling loop runs it with its metrics: one sample, one decide, and
/// the figures recorded for `/metrics` (BENCHMARKS.md, "Exposition": the hand-written renderer
/// against prometheus-client).
#[divan::bench]
fn sample_decide_and_record(bencher: divan::Bencher) {
    let config = example_config();
    let mut sampler = Sampler::new(SamplePaths::host(FS, FS));
    let mut decider = Decider::new(&config);
    let metrics = nodewarden::observe::metrics::Metrics::default();
    let mut mono = Duration::ZERO;
    bencher.bench_local(|| {
        let now = next_cycle(&mut mono);
        let reading = sampler.sample();
        let decision = decider.decide(&reading.observations, now);
        let statuses: Vec<(String, String)> = decider
            .conditions
            .iter()
            .map(|c| (c.condition_type.clone(), c.status.to_string()))
            .collect();
        let errors: Vec<String> = reading.errors.iter().map(|e| e.to_string()).collect();
        metrics.record_cycle(
            &reading.observations,
            &decision.evaluation,
            &statuses,
            &errors,
        );
    });
}

/// One `/metrics` answer's text after a cycle (what each scrape costs).
#[divan::bench]
fn metrics_render(bencher: divan::Bencher) {
    let config = example_config();
    let reading = Sampler::new(SamplePaths::host(FS, FS)).sample();
    let mut decider = Decider::new(&config);
    let mut mono = Duration::ZERO;
    let decision = decider.decide(&reading.observations, next_cycle(&mut mono));
    let statuses: Vec<(String, String)> = decider
        .conditions
        .iter()
        .map(|c| (c.condition_type.clone(), c.status.to_string()))
        .collect();
    let metrics = nodewarden::observe::metrics::Metrics::default();
    metrics.record_cycle(&reading.observations, &decision.evaluation, &statuses, &[]);
    bencher.bench_local(|| black_box(metrics.render(None)));
}
