//! Small allocation-free helpers for the kernel's `key value` text files (`/proc/meminfo`,
//! `memory.stat`). Each returns what it found or a short description of what was wrong; the
//! caller adds the signal and path.

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

/// The value of a `/proc/meminfo` line such as `MemTotal:  16384 kB`, in bytes. `key` is given
/// without its colon.
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
    fn field_matches_whole_token_only() {
        let stat = "total_inactive_file 5\ninactive_file_x 6\ninactive_file 7\n";
        assert_eq!(field(stat, "inactive_file"), Some("7"));
        assert_eq!(field(stat, "total_inactive_file"), Some("5"));
        assert_eq!(field(stat, "active_file"), None);
    }

    #[test]
    fn meminfo_bytes_needs_the_unit() {
        assert_eq!(meminfo_bytes("MemTotal:   10 kB\n", "MemTotal"), Ok(10_240));
        assert!(meminfo_bytes("MemTotal:   10", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotal:   x kB", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotalX:   10 kB", "MemTotal").is_err());
        assert!(meminfo_bytes("MemTotal: 18446744073709551615 kB", "MemTotal").is_err());
    }
}
