//! Amounts as a person reads them in the text tables: bytes with kubectl's binary suffixes
//! (`100Mi`, `22.5Gi`), counts as plain integers, percentages beside what they resolve to. The
//! `-o json` forms keep the exact integers; only text goes through here. Pure.

use crate::core::quantity::Quantity;

const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Bytes in the largest binary unit they reach, as `kubectl` spells units: exact when the
/// amount is a whole number of that unit (`100Mi`, `512Ki`), otherwise to three significant
/// figures (`22.5Gi`, `1.91Ti`, `234Mi`); under 1Ki, a plain number of bytes.
pub fn bytes(amount: i128) -> String {
    let sign = if amount < 0 { "-" } else { "" };
    let magnitude = amount.unsigned_abs();
    let mut unit = 0usize;
    while unit + 1 < BINARY_SUFFIXES.len() && magnitude >= 1u128 << (10 * (unit + 1)) {
        unit += 1;
    }
    let size = 1u128 << (10 * unit);
    let suffix = BINARY_SUFFIXES.get(unit).copied().unwrap_or("");
    if magnitude.is_multiple_of(size) {
        return format!("{sign}{}{suffix}", magnitude / size);
    }
    // Three significant figures; trailing zeros dropped (`1.50Gi` reads as `1.5Gi`).
    let value = magnitude as f64 / size as f64;
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{sign}{text}{suffix}")
}

/// An amount of an eviction signal's unit: bytes for the `*.available` of memory and
/// filesystems, a plain count of inodes or PIDs otherwise.
pub fn signal_amount(signal: crate::core::signal::Signal, amount: i64) -> String {
    if signal.is_bytes() {
        bytes(i128::from(amount))
    } else {
        amount.to_string()
    }
}

/// Whether a resource of a ResourceList is counted in bytes (`memory`, `ephemeral-storage`,
/// `hugepages-<size>`), so that its text form takes binary suffixes.
pub fn is_byte_resource(resource: &str) -> bool {
    resource == "memory" || resource == "ephemeral-storage" || resource.starts_with("hugepages-")
}

/// A resource quantity as written in a ResourceList, for a text table: bytes through [`bytes`]
/// (`24683584Ki` reads `23.5Gi`), everything else (`cpu`, `pods`, extended resources) in its
/// canonical form. A value that does not parse is shown as written.
pub fn resource_amount(resource: &str, quantity: &str) -> String {
    match quantity.parse::<Quantity>() {
        Ok(q) if is_byte_resource(resource) && q.as_nanos() % 1_000_000_000 == 0 => {
            bytes(q.as_nanos() / 1_000_000_000)
        }
        _ => quantity.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_take_the_largest_binary_unit_they_reach() {
        let cases: &[(i128, &str)] = &[
            (0, "0"),
            (1023, "1023"),
            (1024, "1Ki"),
            (100 << 20, "100Mi"),
            (24_139_157_504, "22.5Gi"),
            (24_683_584 * 1024, "23.5Gi"),
            (1536 << 20, "1.5Gi"),
            (-(100 << 20), "-100Mi"),
            ((1 << 40) + (1 << 30) * 910, "1.89Ti"),
            (234 * (1 << 20) + 1, "234Mi"),
            (1 << 60, "1Ei"),
        ];
        for (amount, expected) in cases {
            assert_eq!(bytes(*amount), *expected, "{amount}");
        }
    }

    #[test]
    fn only_byte_resources_take_binary_suffixes() {
        assert_eq!(resource_amount("memory", "24683584Ki"), "23.5Gi");
        assert_eq!(resource_amount("hugepages-2Mi", "2Gi"), "2Gi");
        assert_eq!(resource_amount("ephemeral-storage", "1G"), "954Mi");
        assert_eq!(resource_amount("cpu", "3500m"), "3500m");
        assert_eq!(resource_amount("pods", "110"), "110");
        assert_eq!(resource_amount("memory", "garbage"), "garbage");
        // A fraction of a byte is not a byte count: shown as written.
        assert_eq!(resource_amount("memory", "1500m"), "1500m");
    }
}
