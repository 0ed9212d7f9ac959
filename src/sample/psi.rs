//! Pressure stall information from `/proc/pressure/{memory,io,cpu}` (our own signals, not the
//! kubelet's; docs/architecture.md §1). Each file has a `some` line (at least one task stalled) and
//! a `full` line (all non-idle tasks stalled):
//!
//! ```text
//! some avg10=1.96 avg60=1.25 avg300=0.86 total=4677275
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! The averages are percentages of wall time. Kernels before 5.13 write no `full` line for
//! `cpu`; that signal is then simply absent, as it never existed there. When `/proc/pressure`
//! itself is missing (PSI compiled out or disabled at boot) every PSI signal is omitted with a
//! single error rather than three.
//!
//! Each line is parsed by `procfs_core::pressure::parse_pressure_record`. Its whole-file
//! parsers (`CpuPressure` and the others) are not used: they require the `full` line, which
//! `cpu` lacks before 5.13. procfs-core yields `f32`; the kernel writes two decimals, which `f32`
//! holds exactly enough to round back to the `f64` of the written text.

use std::collections::BTreeMap;
use std::io;

use procfs_core::parse_pressure_record;

use super::{Files, SampleError, Unobserved, read_text};
use crate::core::signal::{PsiKind, PsiResource, PsiSignal, PsiWindow};

const WINDOWS: [PsiWindow; 3] = [PsiWindow::Avg10, PsiWindow::Avg60, PsiWindow::Avg300];

/// The resource's name as in `/proc/pressure/<name>` and in signal names.
pub(super) fn resource_name(resource: PsiResource) -> &'static str {
    match resource {
        PsiResource::Memory => "memory",
        PsiResource::Io => "io",
        PsiResource::Cpu => "cpu",
    }
}

/// Reads every PSI file, adding what parsed to `out` and what did not to `errors`.
pub(super) fn read(
    files: &Files,
    buf: &mut Vec<u8>,
    out: &mut BTreeMap<PsiSignal, f64>,
    errors: &mut Vec<SampleError>,
) {
    for (resource, path) in &files.pressure {
        let what = Unobserved::PsiResource(*resource);
        let text = match read_text(buf, path, what) {
            Ok(text) => text,
            Err(SampleError::Read { source, .. })
                if source.kind() == io::ErrorKind::NotFound && !files.pressure_dir.exists() =>
            {
                // Only the first file can get here: one error covers every PSI signal.
                errors.push(SampleError::PsiUnavailable {
                    path: files.pressure_dir.clone(),
                });
                return;
            }
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        match parse(text, *resource) {
            Ok(lines) => {
                for (kind, averages) in [(PsiKind::Some, lines.some), (PsiKind::Full, lines.full)] {
                    let Some(averages) = averages else { continue };
                    for (window, value) in WINDOWS.into_iter().zip(averages) {
                        out.insert(
                            PsiSignal {
                                resource: *resource,
                                kind,
                                window,
                            },
                            value,
                        );
                    }
                }
            }
            Err(problem) => errors.push(SampleError::malformed(what, path, problem)),
        }
    }
}

/// The averages (avg10, avg60, avg300) of a file's `some` and `full` lines.
#[derive(Debug, PartialEq)]
struct Lines {
    some: Option<[f64; 3]>,
    full: Option<[f64; 3]>,
}

/// Parses one PSI file. `some` is required everywhere; `full` is required except for `cpu`
/// (absent before Linux 5.13). A file that fails is reported whole, never half-inserted.
fn parse(text: &str, resource: PsiResource) -> Result<Lines, String> {
    let mut lines = Lines {
        some: None,
        full: None,
    };
    for line in text.lines() {
        let slot = match line.split_ascii_whitespace().next() {
            Some("some") => &mut lines.some,
            Some("full") => &mut lines.full,
            // Blank lines carry nothing; unknown record kinds from a future kernel are not ours.
            _ => continue,
        };
        if slot.is_some() {
            return Err(format!("more than one line {line:?}"));
        }
        *slot = Some(parse_averages(line)?);
    }
    if lines.some.is_none() {
        return Err("no `some` line (file empty or truncated?)".to_string());
    }
    if lines.full.is_none() && resource != PsiResource::Cpu {
        return Err("no `full` line (file truncated?)".to_string());
    }
    Ok(lines)
}

/// Parses one `some`/`full` line with procfs-core and checks its averages are percentages.
fn parse_averages(line: &str) -> Result<[f64; 3], String> {
    // procfs-core slices the record kind off as the first 5 bytes; a line cut right after the
    // kind, or with a multi-byte character there, would panic inside it.
    if !(line.starts_with("some ") || line.starts_with("full ")) {
        return Err(format!(
            "line {line:?} is not `some|full avg10=…` (truncated?)"
        ));
    }
    let record = parse_pressure_record(line).map_err(|_| {
        // procfs-core says only "incomplete"; the line says what is wrong.
        format!("line {line:?} lacks a numeric avg10, avg60, avg300 or total (truncated?)")
    })?;
    let mut averages = [0.0; 3];
    for ((slot, value), key) in averages
        .iter_mut()
        .zip([record.avg10, record.avg60, record.avg300])
        .zip(["avg10", "avg60", "avg300"])
    {
        if !value.is_finite() || value < 0.0 {
            return Err(format!(
                "{key}={value} is not a non-negative percentage in line {line:?}"
            ));
        }
        // Two decimals, as the kernel writes them (`%lu.%02lu`): 1.96 read as f32 is
        // 1.9600000381…, and rounding gives back the f64 nearest 1.96.
        *slot = (f64::from(value) * 100.0).round() / 100.0;
    }
    Ok(averages)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "some avg10=1.96 avg60=1.25 avg300=0.86 total=4677275\n\
                        full avg10=0.50 avg60=0.25 avg300=0.10 total=42\n";

    #[test]
    fn both_lines_parse() {
        let lines = parse(FULL, PsiResource::Memory);
        assert_eq!(
            lines,
            Ok(Lines {
                some: Some([1.96, 1.25, 0.86]),
                full: Some([0.50, 0.25, 0.10]),
            })
        );
    }

    #[test]
    fn full_line_is_optional_only_for_cpu() {
        let some_only = "some avg10=1.00 avg60=2.00 avg300=3.00 total=1\n";
        assert_eq!(
            parse(some_only, PsiResource::Cpu),
            Ok(Lines {
                some: Some([1.0, 2.0, 3.0]),
                full: None,
            })
        );
        assert!(parse(some_only, PsiResource::Io).is_err());
    }

    #[test]
    fn truncated_or_garbage_lines_are_errors() {
        assert!(parse("some avg10=1.00 avg6", PsiResource::Cpu).is_err());
        assert!(parse("some avg10=x avg60=1 avg300=1", PsiResource::Cpu).is_err());
        assert!(parse("some avg10=NaN avg60=1 avg300=1", PsiResource::Cpu).is_err());
        assert!(parse("some avg10=-1 avg60=1 avg300=1", PsiResource::Cpu).is_err());
        assert!(parse("", PsiResource::Cpu).is_err());
        assert!(parse(&format!("{FULL}{FULL}"), PsiResource::Cpu).is_err());
        assert!(parse("some avg10=1 avg60=1 avg300=1", PsiResource::Cpu).is_err());
        assert!(parse("some avg10=inf avg60=1 avg300=1 total=1", PsiResource::Cpu).is_err());
    }

    #[test]
    fn lines_procfs_core_would_slice_badly_are_errors_not_panics() {
        for text in ["some", "some\n", "someé avg10=1", "full", "full\tavg10=1"] {
            assert!(parse(text, PsiResource::Cpu).is_err(), "{text:?}");
        }
    }
}
