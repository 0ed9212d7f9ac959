//! Small allocation-free helpers for the kernel's `key value` text files (`/proc/meminfo`,
//! `memory.stat`). Each returns what it found or a short description of what was wrong; the
//! caller adds the signal and path. Files procfs-core parses are checked here before it sees
//! them, so a malformed file is an error naming its line, never a panic inside procfs-core.

use procfs_core::{FromRead, Meminfo, ProcError};

/// The value of the line whose first whitespace-separated token is exactly `key`, trimmed.
/// `None` if no such line exists.
pub(super) fn field<'a>(contents: &'a str, key: &str) -> Option<&'a str> {
    contents.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?;
        // An exact token match: `inactive_file` must not match `inactive_file_foo`.
        if rest.starts_with([' ', '\t']) {
            Some(rest.trim())
        } else {
            None
        }
    })
}

/// Parses a decimal `u64`, describing the problem (with the offending text) on failure.
pub(super) fn parse_u64(value: &str, name: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|error| format!("{name}: {value:?} is not a non-negative integer ({error})"))
}

/// The `u64` value of `key` in a `key value` file such as `memory.stat`.
pub(super) fn u64_field(contents: &str, key: &str) -> Result<u64, String> {
    let value = field(contents, key).ok_or_else(|| format!("no {key} line"))?;
    parse_u64(value, key)
}

/// The kernel's figures from `/proc/meminfo`, parsed by procfs-core.
///
/// Each line's shape is checked here first, for two reasons. procfs-core slices a key at its last
/// byte and multiplies a kB value by 1024 unchecked, so a line the kernel never writes (a key
/// ending in a multi-byte character, a value near `u64::MAX`) would panic there in a debug build
/// and wrap in a release one; here it is an error naming the line. And procfs-core reports a
/// missing or cut field as an unnamed `NoneError`, so the fields this agent uses are checked by
/// name, as before.
pub(super) fn meminfo(contents: &str) -> Result<Meminfo, String> {
    if let Some(last) = contents.lines().last()
        && !contents.ends_with('\n')
    {
        // The kernel ends every line with a newline: a last line without one was cut.
        return Err(format!(
            "line {}: {last:?} does not end in a newline (file truncated?)",
            contents.lines().count()
        ));
    }
    for (index, line) in contents.lines().enumerate() {
        let number = index + 1;
        if line.is_empty() {
            continue;
        }
        let mut tokens = line.split_whitespace();
        let key = tokens
            .next()
            .ok_or_else(|| format!("line {number}: blank line {line:?}"))?;
        if !key.ends_with(':') {
            return Err(format!("line {number}: {line:?} is not `Key: value [kB]`"));
        }
        let name = &key[..key.len() - 1];
        let value = tokens
            .next()
            .ok_or_else(|| format!("line {number}: {name} has no value (line truncated?)"))?;
        let value =
            parse_u64(value, name).map_err(|problem| format!("line {number}: {problem}"))?;
        match tokens.next() {
            Some("kB") if value > u64::MAX / 1024 => {
                return Err(format!(
                    "line {number}: {name}: {value} kB overflows a byte count"
                ));
            }
            Some("kB") => {}
            // The fields read here are always in kB: a missing unit means the line was cut.
            None if matches!(name, "MemTotal" | "MemFree") => {
                return Err(format!(
                    "line {number}: {name}: {line:?} does not end in kB (line truncated?)"
                ));
            }
            None => {}
            Some(unit) => {
                return Err(format!("line {number}: {name}: unit {unit:?} is not kB"));
            }
        }
        if let Some(extra) = tokens.next() {
            return Err(format!(
                "line {number}: {name}: unexpected {extra:?} after the unit"
            ));
        }
    }
    for required in ["MemTotal", "MemFree"] {
        if !contents.lines().any(|line| {
            line.strip_prefix(required)
                .is_some_and(|rest| rest.starts_with(':'))
        }) {
            return Err(format!("no {required} line (file truncated?)"));
        }
    }
    Meminfo::from_read(contents.as_bytes()).map_err(|error| procfs_problem(&error))
}

/// One kB field of a meminfo text in bytes, read by name alone: for the capacity, which needs
/// `MemTotal` and `Hugepagesize` and none of the fields procfs-core's `Meminfo` insists on.
pub(super) fn meminfo_bytes(contents: &str, key: &str) -> Result<u64, String> {
    let line = contents
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .ok_or_else(|| format!("no {key} line (file truncated?)"))?;
    // The kernel always writes kB (KiB) for these fields; a missing unit means the line was cut.
    let kib = line.trim().strip_suffix("kB").ok_or_else(|| {
        format!(
            "{key}: {:?} does not end in kB (line truncated?)",
            line.trim()
        )
    })?;
    let kib = parse_u64(kib.trim_end(), key)?;
    kib.checked_mul(1024)
        .ok_or_else(|| format!("{key}: {kib} kB overflows a byte count"))
}

/// Describes a procfs-core parse error without its "please report this procfs bug" wording:
/// procfs-core calls every parse failure an internal error, but here it means a malformed file.
/// procfs-core does not say which line failed.
pub(super) fn procfs_problem(error: &ProcError) -> String {
    match error {
        // An absent required field: procfs-core's message is only "NoneError".
        ProcError::InternalError(internal) if internal.msg.ends_with("NoneError") => {
            "procfs-core cannot parse it: a field it requires is missing (file truncated?; \
             procfs-core does not say which field or line)"
                .to_string()
        }
        ProcError::InternalError(internal) => format!(
            "procfs-core cannot parse it: {} (procfs-core does not say on what line)",
            internal.msg
        ),
        ProcError::Incomplete(_) => {
            "procfs-core cannot parse it: a field is missing or not a number".to_string()
        }
        other => format!("procfs-core cannot parse it: {other}"),
    }
}

/// Converts a byte or count figure to the signed type [`Observation`] uses.
///
/// [`Observation`]: crate::core::signal::Observation
pub(super) fn to_i64(value: u64, name: &str) -> Result<i64, String> {
    i64::try_from(value).map_err(|_| format!("{name}: {value} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_bytes_needs_the_unit() {
        assert_eq!(meminfo_bytes("MemTotal:   10 kB\n", "MemTotal"), Ok(10_240));
        assert!(meminfo_bytes("MemTotal:   10", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotal:   x kB", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotalX:   10 kB", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotal: 18446744073709551615 kB", "MemTotal").is_err());
    }

    #[test]
    fn field_matches_whole_token_only() {
        let stat = "total_inactive_file 5\ninactive_file_x 6\ninactive_file 7\n";
        assert_eq!(field(stat, "inactive_file"), Some("7"));
        assert_eq!(field(stat, "total_inactive_file"), Some("5"));
        assert_eq!(field(stat, "active_file"), None);
    }

    /// The fields procfs-core requires, with the two this agent reads first.
    fn meminfo_with(first: &str) -> String {
        let mut text = first.to_string();
        for key in [
            "Buffers",
            "Cached",
            "SwapCached",
            "Active",
            "Inactive",
            "SwapTotal",
            "SwapFree",
            "Dirty",
            "Writeback",
            "Mapped",
            "Shmem",
            "Slab",
            "KernelStack",
            "PageTables",
            "NFS_Unstable",
            "Bounce",
            "WritebackTmp",
            "CommitLimit",
            "Committed_AS",
            "VmallocTotal",
            "VmallocUsed",
            "VmallocChunk",
        ] {
            text.push_str(&format!("{key}: 1 kB\n"));
        }
        text
    }

    #[test]
    fn meminfo_reads_bytes_from_kb() {
        let parsed = meminfo(&meminfo_with("MemTotal:   10 kB\nMemFree: 4 kB\n"));
        assert_eq!(
            parsed.map(|m| (m.mem_total, m.mem_free)),
            Ok((10_240, 4_096))
        );
    }

    #[test]
    fn malformed_meminfo_lines_are_errors_naming_the_line_never_panics() {
        for (first, expected) in [
            ("MemTotal:   10\nMemFree: 4 kB\n", "line 1: MemTotal"),
            ("MemTotal:   x kB\nMemFree: 4 kB\n", "line 1: MemTotal"),
            (
                "MemTotal: 10 kB\nMemFree: 18446744073709551615 kB\n",
                "line 2: MemFree",
            ),
            ("MemTotal: 10 kB\nMemFree: 4 MB\n", "line 2: MemFree: unit"),
            // A key ending in a multi-byte character would panic inside procfs-core.
            ("MemTotal: 10 kB\nMemFreé 4 kB\n", "line 2:"),
            ("MemTotal: 10 kB\n   \nMemFree: 4 kB\n", "line 2: blank"),
            ("MemTotalX: 10 kB\nMemFree: 4 kB\n", "no MemTotal line"),
        ] {
            let text = meminfo_with(first);
            match meminfo(&text) {
                Err(problem) => assert!(problem.contains(expected), "{first:?}: {problem}"),
                Ok(_) => panic!("{first:?} parsed"),
            }
        }
        assert!(meminfo("MemTotal: 10 kB\nMemFree: 4").is_err_and(|p| p.contains("newline")));
        // A field procfs-core requires is missing: its error, without the "procfs bug" wording.
        let problem = meminfo("MemTotal: 10 kB\nMemFree: 4 kB\n")
            .err()
            .unwrap_or_default();
        assert!(problem.contains("procfs-core cannot parse it"), "{problem}");
        assert!(!problem.contains("bug"), "{problem}");
    }
}
