//! Pressure stall information from `/proc/pressure/{memory,io,cpu}` (our own signals, not the
//! kubelet's; DESIGN §1). Each file has a `some` line (at least one task stalled) and a `full`
//! line (all non-idle tasks stalled):
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
//! We parse by hand rather than with `procfs_core::pressure`: that parser requires the `full`
//! line, yields `f32`, and allocates a map per line, on a path that runs every 10 s.

use std::collections::BTreeMap;
use std::io;

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
        let mut tokens = line.split_ascii_whitespace();
        let slot = match tokens.next() {
            Some("some") => &mut lines.some,
            Some("full") => &mut lines.full,
            // Blank lines carry nothing; unknown record kinds from a future kernel are not ours.
            _ => continue,
        };
        if slot.is_some() {
            return Err(format!("more than one line {line:?}"));
        }
        *slot = Some(parse_averages(tokens, line)?);
    }
    if lines.some.is_none() {
        return Err("no `some` line (file empty or truncated?)".to_string());
    }
    if lines.full.is_none() && resource != PsiResource::Cpu {
        return Err("no `full` line (file truncated?)".to_string());
    }
    Ok(lines)
}

/// Parses `avg10=… avg60=… avg300=… total=…` (in any order; `total` is not used).
fn parse_averages<'a>(
    tokens: impl Iterator<Item = &'a str>,
    line: &str,
) -> Result<[f64; 3], String> {
    let mut averages = [None; 3];
    for token in tokens {
        let (key, value) = token
            .split_once('=')
            .ok_or_else(|| format!("{token:?} is not key=value in line {line:?}"))?;
        let index = match key {
            "avg10" => 0,
            "avg60" => 1,
            "avg300" => 2,
            _ => continue,
        };
        let parsed = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!("{key}={value:?} is not a non-negative percentage in line {line:?}")
            })?;
        averages[index] = Some(parsed);
    }
    match averages {
        [Some(avg10), Some(avg60), Some(avg300)] => Ok([avg10, avg60, avg300]),
        _ => Err(format!(
            "line {line:?} lacks one of avg10, avg60, avg300 (truncated?)"
        )),
    }
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
    }
}
