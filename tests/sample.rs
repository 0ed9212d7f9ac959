//! The sampling shell against fixture trees (`tests/data/sample/`), real `statvfs` on temporary
//! directories, and this machine's real `/proc`, `/sys/fs/cgroup` and `/`.
//!
//! Expected values are worked out by hand from the fixture files' numbers, with the arithmetic
//! written out, so a test fails if the rule (docs/semantics.md §7.1) or the parsing changes.

mod support;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nodewarden::core::signal::{Observation, PsiKind, PsiResource, PsiSignal, PsiWindow, Signal};
use nodewarden::sample::{CgroupVersion, Sample, SampleError, SamplePaths, Sampler, Unobserved};

const KIB: i64 = 1024;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sample")
        .join(name)
}

/// Paths for a fixture-shaped tree at `root`; the filesystem signals read the tree's own
/// (real) filesystem.
fn paths_under(root: &Path) -> SamplePaths {
    SamplePaths {
        proc_root: root.join("proc"),
        cgroup_root: root.join("sys/fs/cgroup"),
        nodefs: root.to_path_buf(),
        imagefs: root.to_path_buf(),
    }
}

fn sample_fixture(name: &str) -> (Sampler, Sample) {
    let mut sampler = Sampler::new(paths_under(&fixture(name)));
    let sample = sampler.sample();
    (sampler, sample)
}

/// A writable copy of a fixture tree, for variants made by editing one file.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
        fs::create_dir_all(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy_dir(&entry.path(), &target)?;
            } else {
                fs::copy(entry.path(), target)?;
            }
        }
        Ok(())
    }
    let dir = tempfile::tempdir().expect("create temp dir");
    copy_dir(&fixture(name), dir.path()).expect("copy fixture");
    dir
}

/// `statvfs` field types vary by target; all widen losslessly to `u64`.
fn wide<T: Into<u64>>(value: T) -> u64 {
    value.into()
}

fn psi(resource: PsiResource, kind: PsiKind, window: PsiWindow) -> PsiSignal {
    PsiSignal {
        resource,
        kind,
        window,
    }
}

fn error_messages(sample: &Sample) -> Vec<String> {
    sample.errors.iter().map(ToString::to_string).collect()
}

fn assert_no_errors(sample: &Sample) {
    assert!(
        sample.errors.is_empty(),
        "unexpected errors: {:#?}",
        error_messages(sample)
    );
}

// ---------------------------------------------------------------------------------------------
// memory.available

#[test]
fn cgroup_v2_memory_available_is_memtotal_minus_usage_from_meminfo_plus_inactive_file() {
    let (sampler, sample) = sample_fixture("cgroup-v2");
    assert_no_errors(&sample);
    assert_eq!(sampler.cgroup_version(), Some(CgroupVersion::V2));

    // meminfo: MemTotal 16000000 kB, MemFree 4000000 kB; memory.stat: inactive_file 3000000000.
    let capacity = 16_000_000 * KIB;
    let usage = (16_000_000 - 4_000_000) * KIB;
    let working_set = usage - 3_000_000_000;
    assert_eq!(
        sample.observations.eviction.get(&Signal::MemoryAvailable),
        Some(&Observation {
            available: capacity - working_set,
            capacity,
        })
    );
}

#[test]
fn cgroup_v1_memory_available_uses_usage_in_bytes_and_total_inactive_file() {
    let (sampler, sample) = sample_fixture("cgroup-v1");
    assert_no_errors(&sample);
    assert_eq!(sampler.cgroup_version(), Some(CgroupVersion::V1));

    // meminfo: MemTotal 8000000 kB (MemFree is not used on v1);
    // memory.usage_in_bytes 5000000000; total_inactive_file 1500000000 (the local
    // inactive_file, 970752, must not be used).
    let capacity = 8_000_000 * KIB;
    let working_set = 5_000_000_000 - 1_500_000_000;
    assert_eq!(
        sample.observations.eviction.get(&Signal::MemoryAvailable),
        Some(&Observation {
            available: capacity - working_set,
            capacity,
        })
    );
}

#[test]
fn working_set_is_floored_at_zero_when_inactive_file_exceeds_usage() {
    let dir = copy_fixture("cgroup-v1");
    let stat_path = dir.path().join("sys/fs/cgroup/memory/memory.stat");
    let stat = fs::read_to_string(&stat_path).expect("read memory.stat");
    let stat = stat.replace(
        "total_inactive_file 1500000000",
        "total_inactive_file 6000000000",
    );
    fs::write(&stat_path, stat).expect("write memory.stat");

    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert_no_errors(&sample);
    // usage 5000000000 − inactive 6000000000 < 0 → working set 0 → available = capacity.
    let capacity = 8_000_000 * KIB;
    assert_eq!(
        sample.observations.eviction.get(&Signal::MemoryAvailable),
        Some(&Observation {
            available: capacity,
            capacity,
        })
    );
}

#[test]
fn truncated_meminfo_drops_memory_available_only_and_names_the_file() {
    let (_, sample) = sample_fixture("truncated-meminfo");
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::MemoryAvailable)
    );
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));

    let error = &sample.errors[0];
    assert_eq!(error.what(), Unobserved::Signal(Signal::MemoryAvailable));
    assert_eq!(error.signal(), Some(Signal::MemoryAvailable));
    assert!(error.path().ends_with("proc/meminfo"));
    assert!(matches!(error, SampleError::Malformed { .. }));
    let message = error.to_string();
    assert!(message.starts_with("memory.available: "), "{message}");
    assert!(message.contains("MemFree"), "{message}");
    assert!(message.contains("meminfo"), "{message}");

    // Everything else is still observed.
    for signal in [
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::PidAvailable,
    ] {
        assert!(
            sample.observations.eviction.contains_key(&signal),
            "{signal}"
        );
    }
    assert_eq!(sample.observations.psi.len(), 18);
}

#[test]
fn memfree_above_memtotal_is_malformed_not_a_huge_available() {
    let dir = copy_fixture("cgroup-v2");
    let meminfo_path = dir.path().join("proc/meminfo");
    let meminfo = fs::read_to_string(&meminfo_path).expect("read meminfo");
    let meminfo = meminfo.replace("MemFree:         4000000 kB", "MemFree:        17000000 kB");
    fs::write(&meminfo_path, meminfo).expect("write meminfo");

    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::MemoryAvailable)
    );
    let messages = error_messages(&sample);
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(messages[0].contains("exceeds MemTotal"), "{messages:#?}");
}

#[test]
fn non_utf8_meminfo_is_malformed() {
    let dir = copy_fixture("cgroup-v2");
    fs::write(dir.path().join("proc/meminfo"), b"MemTotal: \xff\xfe kB\n").expect("write");
    let sample = Sampler::new(paths_under(dir.path())).sample();
    let messages = error_messages(&sample);
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(messages[0].contains("not UTF-8"), "{messages:#?}");
}

#[test]
fn missing_v1_memory_stat_is_a_read_error_with_path_and_os_error() {
    let dir = copy_fixture("cgroup-v1");
    let stat_path = dir.path().join("sys/fs/cgroup/memory/memory.stat");
    fs::remove_file(&stat_path).expect("remove memory.stat");

    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    match &sample.errors[0] {
        SampleError::Read { what, path, source } => {
            assert_eq!(*what, Unobserved::Signal(Signal::MemoryAvailable));
            assert_eq!(path, &stat_path);
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[test]
fn no_cgroup_memory_accounting_says_which_files_were_looked_for() {
    let dir = copy_fixture("cgroup-v2");
    fs::remove_dir_all(dir.path().join("sys/fs/cgroup")).expect("remove cgroup tree");

    let mut sampler = Sampler::new(paths_under(dir.path()));
    let sample = sampler.sample();
    assert_eq!(sampler.cgroup_version(), None);
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::MemoryAvailable)
    );
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    let error = &sample.errors[0];
    assert!(matches!(error, SampleError::NoCgroupMemory { .. }));
    assert_eq!(error.signal(), Some(Signal::MemoryAvailable));
    let message = error.to_string();
    assert!(message.contains("cgroup.controllers"), "{message}");
    assert!(
        message.contains("memory/memory.usage_in_bytes"),
        "{message}"
    );
}

#[test]
fn cgroup_version_detected_late_is_picked_up_on_a_later_sample() {
    let dir = copy_fixture("cgroup-v2");
    let cgroup = dir.path().join("sys/fs/cgroup");
    let saved = tempfile::tempdir().expect("temp dir");
    fs::rename(&cgroup, saved.path().join("cgroup")).expect("move cgroup tree away");

    let mut sampler = Sampler::new(paths_under(dir.path()));
    assert!(
        !sampler
            .sample()
            .observations
            .eviction
            .contains_key(&Signal::MemoryAvailable)
    );

    fs::rename(saved.path().join("cgroup"), &cgroup).expect("move cgroup tree back");
    let sample = sampler.sample();
    assert_no_errors(&sample);
    assert_eq!(sampler.cgroup_version(), Some(CgroupVersion::V2));
}

// ---------------------------------------------------------------------------------------------
// pid.available

#[test]
fn pid_available_uses_threads_max_when_it_is_the_smaller_limit() {
    let (_, sample) = sample_fixture("cgroup-v2");
    // pid_max 4194304, threads-max 126000 → MaxPID 126000; loadavg "4/1234" → 1234 tasks.
    let (pid_max, threads_max): (i64, i64) = (4_194_304, 126_000);
    let capacity = pid_max.min(threads_max);
    assert_eq!(
        sample.observations.eviction.get(&Signal::PidAvailable),
        Some(&Observation {
            available: capacity - 1234,
            capacity,
        })
    );
}

#[test]
fn pid_available_uses_pid_max_when_it_is_the_smaller_limit() {
    let (_, sample) = sample_fixture("cgroup-v1");
    // pid_max 32768, threads-max 192730 → MaxPID 32768; loadavg "2/406" → 406 tasks.
    let (pid_max, threads_max): (i64, i64) = (32_768, 192_730);
    let capacity = pid_max.min(threads_max);
    assert_eq!(
        sample.observations.eviction.get(&Signal::PidAvailable),
        Some(&Observation {
            available: capacity - 406,
            capacity,
        })
    );
}

#[test]
fn garbage_loadavg_drops_pid_available_only_and_quotes_the_garbage() {
    let (_, sample) = sample_fixture("garbage-loadavg");
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::PidAvailable)
    );
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    let error = &sample.errors[0];
    assert_eq!(error.signal(), Some(Signal::PidAvailable));
    assert!(error.path().ends_with("proc/loadavg"));
    let message = error.to_string();
    assert!(message.contains("garbage"), "{message}");
    assert!(
        sample
            .observations
            .eviction
            .contains_key(&Signal::MemoryAvailable)
    );
    assert_eq!(sample.observations.psi.len(), 18);
}

#[test]
fn garbage_pid_max_is_malformed() {
    let dir = copy_fixture("cgroup-v2");
    fs::write(dir.path().join("proc/sys/kernel/pid_max"), "lots\n").expect("write");
    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::PidAvailable)
    );
    let messages = error_messages(&sample);
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(messages[0].contains("pid_max"), "{messages:#?}");
    assert!(messages[0].contains("\"lots\""), "{messages:#?}");
}

// ---------------------------------------------------------------------------------------------
// PSI

#[test]
fn psi_reads_some_and_full_averages_of_every_resource() {
    use PsiKind::{Full, Some as SomeK};
    use PsiResource::{Cpu, Io, Memory};
    use PsiWindow::{Avg10, Avg60, Avg300};

    let (_, sample) = sample_fixture("cgroup-v2");
    assert_no_errors(&sample);
    let expected = [
        (Memory, SomeK, [1.50, 2.25, 3.75]),
        (Memory, Full, [0.50, 0.75, 1.25]),
        (Io, SomeK, [10.00, 8.50, 6.25]),
        (Io, Full, [9.00, 7.00, 5.00]),
        (Cpu, SomeK, [20.50, 15.25, 12.00]),
        (Cpu, Full, [0.00, 0.00, 0.00]),
    ];
    assert_eq!(sample.observations.psi.len(), 18);
    for (resource, kind, values) in expected {
        for (window, value) in [Avg10, Avg60, Avg300].into_iter().zip(values) {
            let signal = psi(resource, kind, window);
            assert_eq!(
                sample.observations.psi.get(&signal),
                Some(&value),
                "{signal}"
            );
        }
    }
}

#[test]
fn cpu_psi_without_full_line_omits_only_cpu_full_without_error() {
    let (_, sample) = sample_fixture("cpu-psi-no-full");
    assert_no_errors(&sample);
    let psi_map = &sample.observations.psi;
    assert_eq!(psi_map.len(), 15);
    for window in [PsiWindow::Avg10, PsiWindow::Avg60, PsiWindow::Avg300] {
        assert!(!psi_map.contains_key(&psi(PsiResource::Cpu, PsiKind::Full, window)));
        assert!(psi_map.contains_key(&psi(PsiResource::Cpu, PsiKind::Some, window)));
        assert!(psi_map.contains_key(&psi(PsiResource::Memory, PsiKind::Full, window)));
        assert!(psi_map.contains_key(&psi(PsiResource::Io, PsiKind::Full, window)));
    }
    assert_eq!(
        psi_map.get(&psi(PsiResource::Cpu, PsiKind::Some, PsiWindow::Avg60)),
        Some(&15.25)
    );
}

#[test]
fn missing_proc_pressure_omits_all_psi_with_one_error() {
    let (_, sample) = sample_fixture("no-psi");
    assert!(sample.observations.psi.is_empty());
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    let error = &sample.errors[0];
    assert!(matches!(error, SampleError::PsiUnavailable { .. }));
    assert_eq!(error.what(), Unobserved::Psi);
    assert_eq!(error.signal(), None);
    assert!(error.path().ends_with("proc/pressure"));
    assert_eq!(sample.observations.eviction.len(), Signal::ALL.len());
}

#[test]
fn memory_full_line_missing_is_an_error_for_memory_psi_only() {
    let dir = copy_fixture("cgroup-v2");
    fs::write(
        dir.path().join("proc/pressure/memory"),
        "some avg10=1.50 avg60=2.25 avg300=3.75 total=4677275\n",
    )
    .expect("write");
    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    let error = &sample.errors[0];
    assert_eq!(error.what(), Unobserved::PsiResource(PsiResource::Memory));
    assert_eq!(error.what().to_string(), "psi.memory.*");
    assert!(error.to_string().contains("full"), "{error}");
    // A file that fails is not half-inserted: no memory `some` either.
    assert!(
        sample
            .observations
            .psi
            .keys()
            .all(|signal| signal.resource != PsiResource::Memory)
    );
    assert_eq!(sample.observations.psi.len(), 12);
}

#[test]
fn truncated_psi_line_is_an_error() {
    let dir = copy_fixture("cgroup-v2");
    fs::write(dir.path().join("proc/pressure/io"), "some avg10=10.00 avg6").expect("write");
    let sample = Sampler::new(paths_under(dir.path())).sample();
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    assert_eq!(
        sample.errors[0].what(),
        Unobserved::PsiResource(PsiResource::Io)
    );
    assert!(sample.errors[0].path().ends_with("proc/pressure/io"));
}

// ---------------------------------------------------------------------------------------------
// Filesystems (real statvfs)

#[test]
fn filesystem_signals_match_statvfs_of_the_same_path() {
    let nodefs = tempfile::tempdir().expect("temp dir");
    let imagefs = tempfile::tempdir().expect("temp dir");
    let mut paths = paths_under(&fixture("cgroup-v2"));
    paths.nodefs = nodefs.path().to_path_buf();
    paths.imagefs = imagefs.path().to_path_buf();
    let sample = Sampler::new(paths).sample();
    assert_no_errors(&sample);

    for (path, bytes, inodes) in [
        (
            nodefs.path(),
            Signal::NodeFsAvailable,
            Signal::NodeFsInodesFree,
        ),
        (
            imagefs.path(),
            Signal::ImageFsAvailable,
            Signal::ImageFsInodesFree,
        ),
    ] {
        let stat = nix::sys::statvfs::statvfs(path).expect("statvfs");
        let frsize = wide(stat.fragment_size());
        let bytes_capacity = i64::try_from(wide(stat.blocks()) * frsize).expect("fits");
        let inodes_capacity = i64::try_from(wide(stat.files())).expect("fits");

        let got = sample.observations.eviction[&bytes];
        // Capacity is fixed; available may move between the two statvfs calls.
        assert_eq!(got.capacity, bytes_capacity, "{bytes}");
        assert!(
            got.available > 0 && got.available <= got.capacity,
            "{bytes}: {got:?}"
        );
        assert_eq!(
            got.available % i64::try_from(frsize).expect("fits"),
            0,
            "{bytes}"
        );
        // Available is f_bavail (what a non-root writer can use), not f_bfree: on ext4 the
        // root-reserved blocks make the two differ by far more than this tolerance.
        let bavail = i64::try_from(wide(stat.blocks_available()) * frsize).expect("fits");
        let tolerance = 64 * 1024 * 1024;
        assert!(
            (got.available - bavail).abs() <= tolerance,
            "{bytes}: sampled {} vs statvfs f_bavail × f_frsize {bavail}",
            got.available
        );

        let got = sample.observations.eviction[&inodes];
        assert_eq!(got.capacity, inodes_capacity, "{inodes}");
        assert!(
            got.available > 0 && got.available <= got.capacity,
            "{inodes}: {got:?}"
        );
    }
}

#[test]
fn same_path_for_nodefs_and_imagefs_still_reports_both() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut paths = paths_under(&fixture("cgroup-v1"));
    paths.nodefs = dir.path().to_path_buf();
    paths.imagefs = dir.path().to_path_buf();
    let sample = Sampler::new(paths).sample();
    assert_no_errors(&sample);
    let eviction = &sample.observations.eviction;
    assert_eq!(
        eviction[&Signal::NodeFsAvailable].capacity,
        eviction[&Signal::ImageFsAvailable].capacity
    );
    assert_eq!(
        eviction[&Signal::NodeFsInodesFree].capacity,
        eviction[&Signal::ImageFsInodesFree].capacity
    );
}

#[test]
fn filesystem_with_no_inode_table_omits_only_the_inode_signal() {
    // procfs reports f_files = 0, like btrfs: bytes are still observed, inodes are not.
    let mut paths = paths_under(&fixture("cgroup-v2"));
    paths.imagefs = PathBuf::from("/proc");
    let sample = Sampler::new(paths).sample();
    assert!(
        sample
            .observations
            .eviction
            .contains_key(&Signal::ImageFsAvailable)
    );
    assert!(
        !sample
            .observations
            .eviction
            .contains_key(&Signal::ImageFsInodesFree)
    );
    assert!(
        sample
            .observations
            .eviction
            .contains_key(&Signal::NodeFsInodesFree)
    );
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(&sample));
    let error = &sample.errors[0];
    assert!(matches!(error, SampleError::NoInodes { .. }));
    assert_eq!(error.signal(), Some(Signal::ImageFsInodesFree));
    assert!(error.to_string().contains("0 total inodes"), "{error}");
}

#[test]
fn statvfs_failure_reports_both_signals_of_that_filesystem() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("does-not-exist");
    let mut paths = paths_under(&fixture("cgroup-v2"));
    paths.nodefs = missing.clone();
    let sample = Sampler::new(paths).sample();

    let mut lost: Vec<Signal> = sample
        .errors
        .iter()
        .filter_map(SampleError::signal)
        .collect();
    lost.sort();
    assert_eq!(lost, [Signal::NodeFsAvailable, Signal::NodeFsInodesFree]);
    for error in &sample.errors {
        match error {
            SampleError::Statvfs { path, source, .. } => {
                assert_eq!(path, &missing);
                assert_eq!(*source, nix::errno::Errno::ENOENT);
            }
            other => panic!("expected a statvfs error, got {other:?}"),
        }
    }
    assert!(
        sample
            .observations
            .eviction
            .contains_key(&Signal::ImageFsAvailable)
    );
}

// ---------------------------------------------------------------------------------------------
// The sampler as a whole

#[test]
fn repeated_samples_with_a_reused_buffer_agree() {
    let mut sampler = Sampler::new(paths_under(&fixture("cgroup-v1")));
    let first = sampler.sample();
    let second = sampler.sample();
    assert_no_errors(&first);
    // Filesystem figures of the real disk may move; the fixture-derived ones must not.
    for signal in [Signal::MemoryAvailable, Signal::PidAvailable] {
        assert_eq!(
            first.observations.eviction.get(&signal),
            second.observations.eviction.get(&signal)
        );
    }
    assert_eq!(first.observations.psi, second.observations.psi);
}

/// This machine's real `/proc`, `/sys/fs/cgroup` and `/`.
#[test]
fn real_host_every_signal_is_present_and_in_range() {
    let mut sampler = Sampler::new(SamplePaths::host("/", "/"));
    let sample = sampler.sample();
    let psi_absent = !Path::new("/proc/pressure").exists();
    let in_ci = std::env::var_os("CI").is_some();
    if psi_absent {
        assert!(
            !in_ci,
            "/proc/pressure is missing on this CI machine; the sampler's PSI path is untested"
        );
        eprintln!("skipping PSI checks: /proc/pressure does not exist on this machine");
    }

    let unexpected: Vec<String> = sample
        .errors
        .iter()
        .filter(|error| !(psi_absent && error.what() == Unobserved::Psi))
        .map(ToString::to_string)
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");

    let eviction = &sample.observations.eviction;
    for signal in Signal::ALL {
        assert!(eviction.contains_key(&signal), "{signal} missing");
    }

    let meminfo = fs::read_to_string("/proc/meminfo").expect("read /proc/meminfo");
    let mem_total_kib: i64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .expect("MemTotal in /proc/meminfo");
    let memory = eviction[&Signal::MemoryAvailable];
    assert_eq!(memory.capacity, mem_total_kib * KIB);
    assert!(
        memory.available > 0 && memory.available <= memory.capacity,
        "{memory:?}"
    );

    let pid_max: i64 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("read pid_max")
        .trim()
        .parse()
        .expect("pid_max is a number");
    let pids = eviction[&Signal::PidAvailable];
    assert!(pids.capacity <= pid_max, "{pids:?}");
    assert!(pids.available > 0 && pids.available <= pid_max, "{pids:?}");

    for signal in [Signal::NodeFsAvailable, Signal::NodeFsInodesFree] {
        let got = eviction[&signal];
        assert!(
            got.available > 0 && got.available <= got.capacity,
            "{signal}: {got:?}"
        );
    }

    if !psi_absent {
        // Kernels before 5.13 write no cpu `full` line; then those three signals are absent.
        let cpu = fs::read_to_string("/proc/pressure/cpu").expect("read /proc/pressure/cpu");
        let expected = if cpu.lines().any(|line| line.starts_with("full ")) {
            18
        } else {
            15
        };
        assert_eq!(
            sample.observations.psi.len(),
            expected,
            "{:?}",
            sample.observations.psi
        );
        for (signal, value) in &sample.observations.psi {
            assert!((0.0..=100.0).contains(value), "{signal} = {value}");
        }
    }
    assert!(sampler.cgroup_version().is_some());
}

// ---------------------------------------------------------------------------------------------
// Files that never end

/// A kernel file that is really `/dev/zero` (a wrong `procPath`, a stray symlink) is reported as
/// too long, naming the file, within seconds and in bounded memory: `nodewarden sample` runs
/// capped at 512 MiB of address space, which reading to the end of such a file would exceed.
#[test]
fn a_kernel_file_that_never_ends_is_a_clear_error_in_bounded_memory_and_time() {
    for (file, what) in [
        ("proc/meminfo", "memory.available"),
        ("sys/fs/cgroup/memory.stat", "memory.available"),
        ("proc/sys/kernel/pid_max", "pid.available"),
        ("proc/pressure/io", "psi.io.*"),
    ] {
        let tree = copy_fixture("cgroup-v2");
        let root = tree.path();
        let endless = root.join(file);
        fs::remove_file(&endless).expect("remove fixture file");
        std::os::unix::fs::symlink("/dev/zero", &endless).expect("symlink");
        let config = root.join("config.toml");
        fs::write(
            &config,
            format!(
                "nodeName = \"endless\"\nprocPath = \"{0}/proc\"\ncgroupPath = \"{0}/sys/fs/cgroup\"\n\
                 nodefsPath = \"{0}\"\nimagefsPath = \"{0}\"\n",
                root.display()
            ),
        )
        .expect("write config");
        let started = Instant::now();
        let ran = support::command::run(
            support::command::memory_capped(&support::agent_bin(), 512)
                .args(["sample", "--config"])
                .arg(&config)
                .args(["-o", "json"]),
            Duration::from_secs(30),
        );
        let took = started.elapsed();
        assert!(
            ran.ok,
            "{file}: {:?}\n{}\n{}",
            ran.code, ran.stdout, ran.stderr
        );
        assert!(took < Duration::from_secs(10), "{file}: took {took:?}");
        let json: serde_json::Value = serde_json::from_str(&ran.stdout).expect("JSON");
        let unreadable = json["unreadable"].as_array().expect("unreadable");
        let error = unreadable
            .iter()
            .find(|u| u["what"] == what)
            .unwrap_or_else(|| panic!("{file}: no {what} in {unreadable:?}"));
        let message = error["error"].as_str().expect("error text");
        assert!(
            message.contains(&endless.display().to_string()) && message.contains("1048576 bytes"),
            "{file}: the error names the file and the limit: {message}"
        );
        // Only the signal(s) of that file are lost: memory is still read when PSI is not.
        let signals: Vec<&str> = json["signals"]
            .as_array()
            .expect("signals")
            .iter()
            .filter_map(|s| s["signal"].as_str())
            .collect();
        assert_eq!(
            signals.contains(&"memory.available"),
            what != "memory.available",
            "{file}: {signals:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Files parsed by procfs-core (meminfo, loadavg, PSI): a malformed one is an error naming the
// file (and the line where procfs-core cannot), never a panic, and costs only its own signals.

/// Rewrites `relative` under a copy of `fixture` with `edit`, and samples it.
fn sample_edited(fixture: &str, relative: &str, edit: impl Fn(&str) -> String) -> Sample {
    let dir = copy_fixture(fixture);
    let path = dir.path().join(relative);
    let text = fs::read_to_string(&path).expect("read fixture file");
    fs::write(&path, edit(&text)).expect("write fixture file");
    Sampler::new(paths_under(dir.path())).sample()
}

/// The one error of `sample`, which must concern `what` and `file`.
fn only_error<'s>(sample: &'s Sample, what: Unobserved, file: &str) -> &'s SampleError {
    assert_eq!(sample.errors.len(), 1, "{:#?}", error_messages(sample));
    let error = &sample.errors[0];
    assert_eq!(error.what(), what);
    assert!(error.path().ends_with(file), "{error}");
    assert!(matches!(error, SampleError::Malformed { .. }), "{error:?}");
    error
}

#[test]
fn meminfo_lines_procfs_core_cannot_take_are_errors_naming_the_line_on_v1_and_v2() {
    let memory = Unobserved::Signal(Signal::MemoryAvailable);
    for fixture in ["cgroup-v1", "cgroup-v2"] {
        for (from, to, expected) in [
            // A value whose byte count overflows u64 (procfs-core would multiply unchecked).
            (
                "Buffers:",
                "Buffers: 18446744073709551615 kB\nX:",
                "line 4: Buffers",
            ),
            // A key ending in a multi-byte character (procfs-core would slice inside it).
            ("Buffers:", "Buffé 1 kB\nBuffers:", "line 4:"),
            ("Buffers:", "Buffers: 12 GB\nX:", "unit \"GB\""),
        ] {
            let sample = sample_edited(fixture, "proc/meminfo", |text| text.replacen(from, to, 1));
            let message = only_error(&sample, memory, "proc/meminfo").to_string();
            assert!(message.contains(expected), "{fixture}: {message}");
            assert!(message.contains("meminfo"), "{fixture}: {message}");
            assert_eq!(sample.observations.eviction.len(), Signal::ALL.len() - 1);
        }
    }
}

#[test]
fn meminfo_without_a_field_procfs_core_requires_names_the_file_and_procfs_core() {
    for fixture in ["cgroup-v1", "cgroup-v2"] {
        let sample = sample_edited(fixture, "proc/meminfo", |text| {
            text.lines()
                .filter(|line| !line.starts_with("Buffers:"))
                .map(|line| format!("{line}\n"))
                .collect()
        });
        let error = only_error(
            &sample,
            Unobserved::Signal(Signal::MemoryAvailable),
            "proc/meminfo",
        );
        let message = error.to_string();
        assert!(message.contains("procfs-core cannot parse it"), "{message}");
        assert!(
            message.contains("a field it requires is missing"),
            "{message}"
        );
        // procfs-core calls this an internal bug; for a node agent it is a malformed file.
        assert!(!message.contains("procfs bug"), "{message}");
    }
}

#[test]
fn loadavg_without_its_last_pid_field_is_malformed() {
    let sample = sample_edited("cgroup-v2", "proc/loadavg", |_| {
        "0.52 0.48 0.40 4/1234\n".into()
    });
    let error = only_error(
        &sample,
        Unobserved::Signal(Signal::PidAvailable),
        "proc/loadavg",
    );
    assert!(error.to_string().contains("4/1234"), "{error}");
}

#[test]
fn psi_file_cut_after_the_record_kind_is_an_error_not_a_panic() {
    for cut in [
        "some",
        "some\n",
        "full avg10=1.00 avg60=1.00 avg300=1.00 total=1\nsome",
    ] {
        let sample = sample_edited("cgroup-v2", "proc/pressure/io", |_| cut.to_string());
        only_error(
            &sample,
            Unobserved::PsiResource(PsiResource::Io),
            "proc/pressure/io",
        );
        assert_eq!(sample.observations.psi.len(), 12, "{cut:?}");
    }
}

#[test]
fn psi_on_cgroup_v1_fixture_reads_every_resource() {
    let (_, sample) = sample_fixture("cgroup-v1");
    assert_no_errors(&sample);
    assert_eq!(sample.observations.psi.len(), 18);
    assert!(
        sample
            .observations
            .psi
            .values()
            .all(|v| (0.0..=100.0).contains(v))
    );
}
