//! Everything the sampler and the capacity reader parse from `/proc` and the cgroup tree
//! (`src/sample/{text,psi,memory,pids,capacity}.rs`), through their public entry points
//! (`Sampler::sample`, `capacity::read`) on a fixture tree this target writes.
//!
//! The input is the files' contents separated by NUL bytes, in this order: `meminfo`,
//! `memory.stat`, `memory.usage_in_bytes` (v1), `loadavg`, `sys/kernel/pid_max`,
//! `sys/kernel/threads-max`, `pressure/memory`, `pressure/io`, `pressure/cpu`, `stat`. A missing
//! section is a missing file. Each input is sampled as a cgroup v2 and as a cgroup v1 host.
//! Invariants: no panic; no observation has a negative capacity (availability may be negative,
//! as the kubelet reports it); PSI averages are finite and not negative.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nodewarden::sample::{SamplePaths, Sampler, capacity};

const FILES: [&str; 10] = [
    "proc/meminfo",
    "memory.stat",
    "memory.usage_in_bytes",
    "proc/loadavg",
    "proc/sys/kernel/pid_max",
    "proc/sys/kernel/threads-max",
    "proc/pressure/memory",
    "proc/pressure/io",
    "proc/pressure/cpu",
    "proc/stat",
];

/// A directory of this process's own (tmpfs when there is one, so an execution costs no disk
/// I/O): parallel fuzzing jobs must not share fixture files.
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        remove_stale(&base);
        let root = base.join(format!("{PREFIX}{}", std::process::id()));
        for dir in ["proc/sys/kernel", "proc/pressure", "v2", "v1/memory"] {
            std::fs::create_dir_all(root.join(dir)).expect("create the fixture tree");
        }
        std::fs::write(root.join("v2/cgroup.controllers"), "cpu memory pids\n")
            .expect("write cgroup.controllers");
        root
    })
}

const PREFIX: &str = "nodewarden-fuzz-kernel-";

/// Removes the trees of earlier runs whose process is gone: libFuzzer exits without running
/// destructors, so each run leaves its (small) tree behind.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn put(path: &Path, contents: Option<&[u8]>) {
    match contents {
        Some(bytes) => std::fs::write(path, bytes).expect("write a fixture file"),
        None => match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("remove {}: {e}", path.display()),
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let root = root();
    let mut sections = data.split(|b| *b == 0);
    for name in FILES {
        let contents = sections.next();
        match name {
            "memory.stat" => {
                put(&root.join("v2/memory.stat"), contents);
                put(&root.join("v1/memory/memory.stat"), contents);
            }
            "memory.usage_in_bytes" => put(&root.join("v1/memory/memory.usage_in_bytes"), contents),
            _ => put(&root.join(name), contents),
        }
    }
    // The v1 host needs its usage file to be detected as v1 at all.
    if !root.join("v1/memory/memory.usage_in_bytes").exists() {
        put(&root.join("v1/memory/memory.usage_in_bytes"), Some(b"0\n"));
    }

    for cgroup in ["v2", "v1"] {
        let mut sampler = Sampler::new(SamplePaths {
            proc_root: root.join("proc"),
            cgroup_root: root.join(cgroup),
            nodefs: root.to_path_buf(),
            imagefs: root.to_path_buf(),
        });
        let sample = sampler.sample();
        for (signal, observation) in &sample.observations.eviction {
            assert!(
                observation.capacity >= 0,
                "{signal:?}: negative capacity {observation:?}"
            );
        }
        for (signal, value) in &sample.observations.psi {
            assert!(
                value.is_finite() && *value >= 0.0,
                "{signal:?}: {value} is not a percentage"
            );
        }
        for error in &sample.errors {
            let _ = (error.to_string(), error.what());
        }
    }

    let reading = capacity::read(&root.join("proc"), root);
    let _ = reading.capacity.resource_list();
    for error in &reading.errors {
        let _ = error.to_string();
    }
});
