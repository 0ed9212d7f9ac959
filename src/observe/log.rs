//! Logging: structured records to journald when stderr is connected to the journal (or the
//! configuration says so), to stderr otherwise. Starting never fails because of logging: if the
//! journal was asked for and cannot be reached, records go to stderr and the first one says why.
//!
//! Record key-values (`condition = …`, `pod = …`) become journal fields (upper-cased by
//! systemd-journal-logger: CONDITION, POD, …) and `key=value` pairs on stderr. The node is the
//! same for every record of the process, so it is set once, here: a constant NODE field on every
//! journal record and `node=…` on every stderr line, and no log call passes it. The kube, hyper
//! and axum crates log through `tracing`; its `log` feature turns their events into records
//! here, and the `tracing::span` bookkeeping records are dropped. Their records are cut to a
//! bounded excerpt, and kube's per-request warnings are logged at debug (see `Logger::log`).

use std::io::Write;

use log::kv::{Key, Value, VisitSource};
use log::{Level, LevelFilter, Log, Metadata, Record};
use systemd_journal_logger::{JournalLog, connected_to_journal};

use crate::config::{LogTarget, LoggingConfig};

/// Where records are going, as decided at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    Journald,
    Stderr,
}

enum Sink {
    Journal(JournalLog),
    /// With the node, written on every line.
    Stderr(String),
}

struct Logger {
    sink: Sink,
    level: LevelFilter,
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= self.level && !metadata.target().starts_with("tracing::span")
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if record.target().starts_with("nodewarden") {
            return self.emit(record);
        }
        // Other crates' records are not written with our log budget in mind: kube's client
        // warns, on every request, with the whole body of an answer it could not decode
        // (megabytes from a wrong server), and logs an error for every 5xx answer ("failed with
        // status 502 Bad Gateway", several a second behind a proxy whose backend is gone). Our
        // own records report the same failures, once per change and with context, so kube's
        // warnings and errors go to debug; and every record of another crate is cut to a
        // bounded excerpt.
        let level = if record.target().starts_with("kube") && record.level() <= Level::Warn {
            Level::Debug
        } else {
            record.level()
        };
        if level > self.level {
            return;
        }
        let text = record.args().to_string();
        let text = crate::api::excerpt(&text);
        self.emit(
            &Record::builder()
                .args(format_args!("{text}"))
                .level(level)
                .target(record.target())
                .module_path(record.module_path())
                .file(record.file())
                .line(record.line())
                .key_values(record.key_values())
                .build(),
        );
    }

    fn flush(&self) {}
}

impl Logger {
    fn emit(&self, record: &Record) {
        match &self.sink {
            Sink::Journal(journal) => {
                // A record the journal refuses (socket gone mid-run) must not be lost silently.
                if journal.journal_send(record).is_err() {
                    write_stderr(record, None);
                }
            }
            Sink::Stderr(node) => write_stderr(record, Some(node)),
        }
    }
}

/// One record on stderr; `node` is added unless the record comes from the journal's fallback
/// (the journal path has it as a field already, and the node is then the same for the line).
fn write_stderr(record: &Record, node: Option<&str>) {
    let mut line = format!(
        "{} {} {}",
        crate::core::clock::rfc3339(std::time::SystemTime::now()),
        record.level(),
        record.args()
    );
    let mut kv = KvLine(&mut line);
    if let Some(node) = node {
        let _ = kv.visit_pair(Key::from_str("node"), Value::from(node));
    }
    // Visiting our own String sink cannot fail.
    let _ = record.key_values().visit(&mut kv);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

struct KvLine<'a>(&'a mut String);

impl<'kvs> VisitSource<'kvs> for KvLine<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), log::kv::Error> {
        let v = value.to_string();
        if v.contains(char::is_whitespace) || v.is_empty() {
            self.0.push_str(&format!(" {key}={v:?}"));
        } else {
            self.0.push_str(&format!(" {key}={v}"));
        }
        Ok(())
    }
}

/// Installs the process logger; every record carries `node` (NODE in the journal). Returns where
/// records go. Called once; a second call (tests) keeps the first logger and reports its
/// destination as stderr.
pub fn init(config: &LoggingConfig, node: &str) -> Destination {
    let want_journal = match config.target {
        LogTarget::Journald => true,
        LogTarget::Stderr => false,
        LogTarget::Auto => connected_to_journal(),
    };
    let mut fallback_reason = None;
    let sink = if want_journal {
        match JournalLog::new() {
            Ok(j) => Sink::Journal(
                j.with_syslog_identifier("nodewarden".to_string())
                    .with_extra_fields(vec![
                        ("VERSION", env!("CARGO_PKG_VERSION")),
                        ("NODE", node),
                    ]),
            ),
            Err(e) => {
                fallback_reason = Some(e.to_string());
                Sink::Stderr(node.to_string())
            }
        }
    } else {
        Sink::Stderr(node.to_string())
    };
    let destination = match sink {
        Sink::Journal(_) => Destination::Journald,
        Sink::Stderr(_) => Destination::Stderr,
    };
    let logger = Logger {
        sink,
        level: config.level,
    };
    if log::set_boxed_logger(Box::new(logger)).is_err() {
        return Destination::Stderr;
    }
    log::set_max_level(config.level);
    if let Some(reason) = fallback_reason {
        log::warn!(reason = reason.as_str(); "journald was requested but cannot be reached ({reason}); logging to stderr");
    }
    destination
}
