//! Kubernetes resource quantities (`100Mi`, `1.5Gi`, `500m`, `1e3`), parsed once into an exact
//! integer representation and printed back in canonical form. Pure.
//!
//! The grammar is the one `resource.ParseQuantity` (k8s.io/apimachinery) accepts:
//!
//! ```text
//! quantity  ::= sign? number suffix
//! sign      ::= "+" | "-"
//! number    ::= digits | digits "." digits? | "." digits
//! suffix    ::= binarySI | decimalSI | exponent
//! binarySI  ::= "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
//! decimalSI ::= "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E"
//! exponent  ::= ("e" | "E") sign? digits
//! ```
//!
//! The value is kept as an `i128` count of nano-units, so every quantity the kubelet can hold is
//! represented exactly. Like Kubernetes, a value more precise than 1n is rounded *up* (away from
//! zero) to the next nano-unit: asking for "some" of a resource never becomes zero.
//!
//! Deliberately stricter than upstream: Kubernetes' hand-written scanner accepts a bare sign (`"-"`)
//! or a bare point (`"."`) as zero; we require at least one digit. Upstream silently caps
//! binary-suffixed values at 2^63−1; we keep the exact value (up to about ±1.7·10^29 units) and
//! report anything larger as out of range instead of capping.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// Nano-units per unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// How a quantity was written, which decides how it is printed back (Kubernetes `Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Powers of two: `Ki`, `Mi`, …, `Ei`.
    BinarySI,
    /// Powers of ten with SI suffixes: `n`, `u`, `m`, none, `k`, `M`, …, `E`.
    DecimalSI,
    /// Powers of ten written as an exponent: `1e3`, `5E-3`.
    DecimalExponent,
}

/// Why a string is not a Kubernetes quantity. Every message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "empty quantity; expected a number with an optional suffix, such as \"100Mi\" or \"500m\""
    )]
    Empty,
    #[error(
        "\"{input}\" contains whitespace; expected a number immediately followed by its suffix, such as \"100Mi\""
    )]
    Whitespace { input: String },
    #[error("\"{input}\" has more than one sign; expected at most one leading \"+\" or \"-\"")]
    MultipleSigns { input: String },
    #[error("\"{input}\" has no digits; expected a number such as \"100\", \"1.5\" or \".5\"")]
    NoDigits { input: String },
    #[error(
        "\"{input}\" has the unknown suffix \"{suffix}\"; expected one of Ki, Mi, Gi, Ti, Pi, Ei (binary), n, u, m, k, M, G, T, P, E (decimal) or an exponent such as e3"
    )]
    UnknownSuffix { input: String, suffix: String },
    #[error(
        "\"{input}\" has a malformed exponent \"{exponent}\"; expected \"e\" or \"E\" followed by a whole number, such as e3 or E-6"
    )]
    BadExponent { input: String, exponent: String },
    #[error("\"{input}\" is out of range; expected a magnitude below about 1.7e29")]
    OutOfRange { input: String },
}

/// A Kubernetes resource quantity: an exact number of nano-units plus the format it was written
/// in. Equality and ordering are numeric (`1Ki == 1024`); the format only affects printing.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl Quantity {
    /// A whole number of units in the given format, e.g. `from_units(1024, Format::BinarySI)`
    /// prints as `1Ki`.
    pub fn from_units(v: i64, format: Format) -> Quantity {
        // i64 × 10^9 always fits in i128.
        Quantity {
            nanos: i128::from(v) * NANOS_PER_UNIT,
            format,
        }
    }

    /// Zero, printed as `0`.
    pub fn zero() -> Quantity {
        Quantity {
            nanos: 0,
            format: Format::DecimalSI,
        }
    }

    /// The value in whole units, rounded up away from zero (Kubernetes `Quantity.Value()`), and
    /// saturated at the `i64` range.
    pub fn value(&self) -> i64 {
        let whole = self.nanos / NANOS_PER_UNIT;
        let rounded = if self.nanos % NANOS_PER_UNIT == 0 {
            whole
        } else if self.nanos > 0 {
            whole + 1
        } else {
            whole - 1
        };
        i64::try_from(rounded).unwrap_or(if rounded > 0 { i64::MAX } else { i64::MIN })
    }

    /// The sum, in the format of `self` (or of `other` when `self` is zero), as upstream's
    /// `Quantity.Add`. Saturates at the `i128` range, far beyond any real amount.
    pub fn plus(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The difference, in the format of `self` (or of `other` when `self` is zero), as
    /// upstream's `Quantity.Sub`. Saturates at the `i128` range, far beyond any real amount.
    pub fn minus(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The exact value in nano-units.
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// The format used for printing.
    pub fn format(&self) -> Format {
        self.format
    }

    pub fn is_positive(&self) -> bool {
        self.nanos > 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

impl Default for Quantity {
    /// Zero.
    fn default() -> Quantity {
        Quantity::zero()
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    /// Hashes the numeric value only, consistent with `Eq`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// What a suffix means: multiply by `2^binary_exponent` and by `10^decimal_exponent`.
struct Suffix {
    binary_exponent: u32,
    decimal_exponent: i64,
    format: Format,
}

fn interpret_suffix(input: &str, suffix: &str) -> Result<Suffix, QuantityError> {
    let decimal = |e: i64| Suffix {
        binary_exponent: 0,
        decimal_exponent: e,
        format: Format::DecimalSI,
    };
    let binary = |e: u32| Suffix {
        binary_exponent: e,
        decimal_exponent: 0,
        format: Format::BinarySI,
    };
    Ok(match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            // `E` alone is exa; `E`/`e` followed by anything is an exponent (as upstream).
            let rest =
                suffix
                    .strip_prefix(['e', 'E'])
                    .ok_or_else(|| QuantityError::UnknownSuffix {
                        input: input.to_string(),
                        suffix: suffix.to_string(),
                    })?;
            let bad = || QuantityError::BadExponent {
                input: input.to_string(),
                exponent: suffix.to_string(),
            };
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // Upstream parses the exponent as a 32-bit integer.
            let exponent: i32 = rest.parse().map_err(|_| bad())?;
            Suffix {
                binary_exponent: 0,
                decimal_exponent: i64::from(exponent),
                format: Format::DecimalExponent,
            }
        }
    })
}

/// Multiplies a big-endian vector of decimal digits by a small factor, in place.
fn multiply_digits(digits: &mut Vec<u8>, factor: u32) {
    let mut carry: u64 = 0;
    for d in digits.iter_mut().rev() {
        let product = u64::from(*d) * u64::from(factor) + carry;
        *d = (product % 10) as u8;
        carry = product / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(input: &str) -> Result<Quantity, QuantityError> {
        if input.is_empty() {
            return Err(QuantityError::Empty);
        }
        if input.chars().any(char::is_whitespace) {
            return Err(QuantityError::Whitespace {
                input: input.to_string(),
            });
        }
        let (negative, rest) = match input.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, input.strip_prefix('+').unwrap_or(input)),
        };
        if rest.starts_with(['+', '-']) {
            return Err(QuantityError::MultipleSigns {
                input: input.to_string(),
            });
        }
        // Split off the number: digits, optionally a point and more digits.
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, suffix) = match after_int.strip_prefix('.') {
            Some(after_point) => {
                let frac_len = after_point.bytes().take_while(u8::is_ascii_digit).count();
                after_point.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(QuantityError::NoDigits {
                input: input.to_string(),
            });
        }
        let suffix = interpret_suffix(input, suffix)?;
        let out_of_range = || QuantityError::OutOfRange {
            input: input.to_string(),
        };

        // value = 0.digits… exactly: digits × 10^(decimal_exponent − |frac|) × 2^binary_exponent,
        // in nano-units, so shift by 9 more decimal places.
        let mut digits: Vec<u8> = int_part
            .bytes()
            .chain(frac_part.bytes())
            .map(|b| b - b'0')
            .collect();
        let first_nonzero = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
        digits.drain(..first_nonzero);
        let frac_len = i64::try_from(frac_part.len()).map_err(|_| out_of_range())?;
        let shift = 9 + suffix.decimal_exponent - frac_len;
        let nanos = if digits.is_empty() {
            0
        } else {
            for _ in 0..suffix.binary_exponent / 10 {
                multiply_digits(&mut digits, 1024);
            }
            let mut round_up = false;
            if shift >= 0 {
                // i128 holds at most 39 decimal digits; refuse before building a huge vector.
                if digits.len() as i64 + shift > 39 {
                    return Err(out_of_range());
                }
                digits.extend(std::iter::repeat_n(0, shift as usize));
            } else {
                let dropped = usize::try_from(-shift)
                    .unwrap_or(usize::MAX)
                    .min(digits.len());
                let kept = digits.len() - dropped;
                round_up = digits[kept..].iter().any(|&d| d != 0);
                digits.truncate(kept);
            }
            let mut magnitude: i128 = 0;
            for d in digits {
                magnitude = magnitude
                    .checked_mul(10)
                    .and_then(|m| m.checked_add(i128::from(d)))
                    .ok_or_else(out_of_range)?;
            }
            // Sub-nano precision rounds away from zero, as upstream (`inf.RoundUp`).
            if round_up {
                magnitude = magnitude.checked_add(1).ok_or_else(out_of_range)?;
            }
            if negative { -magnitude } else { magnitude }
        };

        let mut format = suffix.format;
        // Upstream: a binary value strictly between 0 and 1 is shown in DecimalSI, since no binary
        // suffix can express it without rounding.
        if format == Format::BinarySI && nanos != 0 && nanos.abs() < NANOS_PER_UNIT {
            format = Format::DecimalSI;
        }
        Ok(Quantity { nanos, format })
    }
}

impl fmt::Display for Quantity {
    /// The Kubernetes canonical form (`Quantity.String()` / `CanonicalizeBytes`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let mut format = self.format;
        if format == Format::BinarySI {
            // Upstream: values in (-1024, 1024) and values with a fractional part print in
            // DecimalSI, to avoid both rounding and suffix-less binary numbers.
            let small = self.nanos.abs() < 1024 * NANOS_PER_UNIT;
            if small || self.nanos % NANOS_PER_UNIT != 0 {
                format = Format::DecimalSI;
            }
        }
        match format {
            Format::BinarySI => {
                let mut amount = self.nanos / NANOS_PER_UNIT;
                let mut exponent = 0usize;
                while exponent < 6 && amount % 1024 == 0 {
                    amount /= 1024;
                    exponent += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                    .get(exponent)
                    .copied()
                    .unwrap_or("");
                write!(f, "{amount}{suffix}")
            }
            Format::DecimalSI | Format::DecimalExponent => {
                // Move factors of ten into the exponent, then back out until the exponent is a
                // multiple of three (upstream `AsCanonicalBytes`). Starting from −9, this never
                // multiplies past the original value, so it cannot overflow.
                let mut mantissa = self.nanos;
                let mut exponent: i32 = -9;
                while mantissa % 10 == 0 {
                    mantissa /= 10;
                    exponent += 1;
                }
                while exponent.rem_euclid(3) != 0 {
                    mantissa *= 10;
                    exponent -= 1;
                }
                if format == Format::DecimalExponent {
                    return if exponent == 0 {
                        write!(f, "{mantissa}")
                    } else {
                        write!(f, "{mantissa}e{exponent}")
                    };
                }
                // No SI suffix above E: keep E and a longer mantissa (e.g. 1000E).
                while exponent > 18 {
                    mantissa *= 10;
                    exponent -= 1;
                }
                let suffix = match exponent {
                    -9 => "n",
                    -6 => "u",
                    -3 => "m",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    18 => "E",
                    _ => "",
                };
                write!(f, "{mantissa}{suffix}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        match s.parse() {
            Ok(q) => q,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    #[test]
    fn every_suffix_has_its_value_in_nano_units() {
        let cases: &[(&str, i128)] = &[
            ("1n", 1),
            ("1u", 1_000),
            ("1m", 1_000_000),
            ("1", 1_000_000_000),
            ("1k", 1_000_000_000_000),
            ("1M", 1_000_000_000_000_000),
            ("1G", 10i128.pow(18)),
            ("1T", 10i128.pow(21)),
            ("1P", 10i128.pow(24)),
            ("1E", 10i128.pow(27)),
            ("1Ki", 1024 * 10i128.pow(9)),
            ("1Mi", (1 << 20) * 10i128.pow(9)),
            ("1Gi", (1 << 30) * 10i128.pow(9)),
            ("1Ti", (1 << 40) * 10i128.pow(9)),
            ("1Pi", (1 << 50) * 10i128.pow(9)),
            ("1Ei", (1 << 60) * 10i128.pow(9)),
            ("1e3", 10i128.pow(12)),
            ("1E3", 10i128.pow(12)),
            ("1e+3", 10i128.pow(12)),
            ("1e-3", 10i128.pow(6)),
            ("1e0", 10i128.pow(9)),
        ];
        for (input, nanos) in cases {
            assert_eq!(q(input).as_nanos(), *nanos, "{input}");
        }
    }

    #[test]
    fn fractions_signs_and_number_forms() {
        let cases: &[(&str, i128)] = &[
            ("1.5", 1_500_000_000),
            (".5", 500_000_000),
            ("5.", 5_000_000_000),
            ("+5", 5_000_000_000),
            ("-5", -5_000_000_000),
            ("-.5", -500_000_000),
            ("0.1", 100_000_000),
            ("1.5Gi", 1_610_612_736 * 1_000_000_000),
            ("0.5Ki", 512 * 1_000_000_000),
            ("1.G", 1_000_000_000 * 1_000_000_000),
            ("007", 7_000_000_000),
            ("1.25e2", 125_000_000_000),
            ("0", 0),
            ("-0", 0),
            ("0.000", 0),
            ("0e99999", 0),
        ];
        for (input, nanos) in cases {
            assert_eq!(q(input).as_nanos(), *nanos, "{input}");
        }
    }

    #[test]
    fn sub_nano_values_round_up_away_from_zero() {
        let cases: &[(&str, i128)] = &[
            ("0.1n", 1),
            ("1.5n", 2),
            ("1.0n", 1),
            ("0.0000000001", 1),
            ("1e-10", 1),
            ("1e-2000000000", 1),
            ("-0.1n", -1),
            ("-1.5n", -2),
            ("0.0000000015", 2),
            ("1.0000000001", 1_000_000_001),
        ];
        for (input, nanos) in cases {
            assert_eq!(q(input).as_nanos(), *nanos, "{input}");
        }
    }

    #[test]
    fn canonical_strings_match_kubernetes() {
        let cases: &[(&str, &str)] = &[
            ("100Mi", "100Mi"),
            ("1.5Gi", "1536Mi"),
            ("12Mi", "12Mi"),
            ("1024Mi", "1Gi"),
            ("1Ki", "1Ki"),
            ("0.5Ki", "512"),
            ("1023Ki", "1023Ki"),
            ("1536", "1536"),
            ("0.1", "100m"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1.5k", "1500"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("10000m", "10"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1.5e3", "1500"),
            ("1e-3", "1e-3"),
            ("1e1", "10"),
            ("1e2", "100"),
            ("1e4", "10e3"),
            ("0", "0"),
            ("0Mi", "0"),
            ("-0.0", "0"),
            ("-100Mi", "-100Mi"),
            ("-1.5Gi", "-1536Mi"),
            ("-1000", "-1k"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("1000n", "1u"),
            ("1.5m", "1500u"),
            ("1E", "1E"),
            ("1000E", "1000E"),
            ("1.5Ki", "1536"),
            ("2.5Ki", "2560"),
            ("0.0001Ki", "102400u"),
            ("+1Gi", "1Gi"),
            ("500000", "500k"),
        ];
        for (input, canonical) in cases {
            assert_eq!(q(input).to_string(), *canonical, "{input}");
        }
    }

    #[test]
    fn canonical_form_parses_back_to_the_same_value() {
        for input in [
            "100Mi", "1.5Gi", "0.1", "1e3", "1.5e3", "0.0001Ki", "1000E", "-7.5m", "1e-3",
        ] {
            let first = q(input);
            let again = q(&first.to_string());
            assert_eq!(first, again, "{input}");
        }
    }

    #[test]
    fn errors_say_what_was_expected() {
        let cases: &[(&str, &str)] = &[
            ("", "empty quantity"),
            (" 1", "whitespace"),
            ("1 Mi", "whitespace"),
            ("1Mi ", "whitespace"),
            ("--1", "more than one sign"),
            ("+-1", "more than one sign"),
            ("-", "no digits"),
            (".", "no digits"),
            ("Mi", "no digits"),
            ("1.2.3", "unknown suffix \".3\""),
            ("1KB", "unknown suffix \"KB\""),
            ("1K", "unknown suffix \"K\""),
            ("1ki", "unknown suffix \"ki\""),
            ("1mi", "unknown suffix \"mi\""),
            ("1Mib", "unknown suffix \"Mib\""),
            ("1%", "unknown suffix \"%\""),
            ("1e", "malformed exponent"),
            ("1e+", "malformed exponent"),
            ("1e3.5", "malformed exponent"),
            ("1e3Mi", "malformed exponent"),
            ("1e99999999999", "malformed exponent"),
            ("1e40", "out of range"),
            ("999999999999999999999999999999999", "out of range"),
            ("1000000000000Ei", "out of range"),
            ("ten", "no digits"),
            ("1µ", "unknown suffix"),
        ];
        for (input, needle) in cases {
            match input.parse::<Quantity>() {
                Ok(v) => panic!("{input:?} should be rejected, got {v}"),
                Err(e) => assert!(
                    e.to_string().contains(needle),
                    "{input:?}: {e} lacks {needle:?}"
                ),
            }
        }
    }

    #[test]
    fn value_rounds_up_away_from_zero_and_saturates() {
        assert_eq!(q("100Mi").value(), 104_857_600);
        assert_eq!(q("0.1").value(), 1);
        assert_eq!(q("1.000000001").value(), 2);
        assert_eq!(q("-0.1").value(), -1);
        assert_eq!(q("1n").value(), 1);
        assert_eq!(q("0").value(), 0);
        assert_eq!(q("1e20").value(), i64::MAX);
        assert_eq!(q("-1e20").value(), i64::MIN);
        assert_eq!(q("9223372036854775807").value(), i64::MAX);
    }

    #[test]
    fn order_and_equality_are_numeric_not_by_format() {
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1k"), q("1e3"));
        assert!(q("1Ki") > q("1k"));
        assert!(q("999m") < q("1"));
        assert!(q("-1") < q("0"));
        assert!(q("1Mi") < q("1.1M"));
        assert_eq!(q("1Mi").cmp(&q("1048576")), Ordering::Equal);
    }

    #[test]
    fn predicates() {
        assert!(q("1n").is_positive() && !q("1n").is_negative() && !q("1n").is_zero());
        assert!(q("-1n").is_negative() && !q("-1n").is_positive());
        assert!(q("0Ki").is_zero() && !q("0").is_positive() && !q("0").is_negative());
    }

    #[test]
    fn from_units_keeps_the_format() {
        assert_eq!(
            Quantity::from_units(1024, Format::BinarySI).to_string(),
            "1Ki"
        );
        assert_eq!(
            Quantity::from_units(1024, Format::DecimalSI).to_string(),
            "1024"
        );
        assert_eq!(
            Quantity::from_units(1000, Format::DecimalSI).to_string(),
            "1k"
        );
        assert_eq!(
            Quantity::from_units(1000, Format::DecimalExponent).to_string(),
            "1e3"
        );
        assert_eq!(
            Quantity::from_units(i64::MAX, Format::DecimalSI).value(),
            i64::MAX
        );
        assert_eq!(
            Quantity::from_units(i64::MIN, Format::BinarySI).value(),
            i64::MIN
        );
    }

    #[test]
    fn binary_values_below_one_unit_become_decimal() {
        assert_eq!(q("0.0001Ki").format(), Format::DecimalSI);
        assert_eq!(q("1Ki").format(), Format::BinarySI);
        assert_eq!(q("1e3").format(), Format::DecimalExponent);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn canonical_string_round_trips(units in any::<i64>(), suffix in 0usize..3, frac in 0u32..1000) {
                let s = match suffix {
                    0 => format!("{units}.{frac:03}"),
                    1 => format!("{}Mi", units / (1 << 20)),
                    _ => format!("{units}m"),
                };
                let parsed: Quantity = s.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
                let again: Quantity = parsed.to_string().parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(parsed, again);
            }

            #[test]
            fn parsing_never_panics(s in "[-+.0-9eEiKMGTPnumk ]{0,24}") {
                let _ = s.parse::<Quantity>();
            }
        }
    }
}
