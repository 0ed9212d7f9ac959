//! The API server's name rules, written here from upstream and nowhere else: the test server is
//! the oracle the agent's own validator (`nodewarden::core::names`) is checked against, so it must
//! not share that code — a bug there would otherwise be agreed with, not caught.
//!
//! Upstream: `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `RegexError`, `MaxLenError`) and, in newer trees,
//! `staging/src/k8s.io/apimachinery/pkg/api/validate/content/` (`IsLabelKey`, formerly
//! `IsQualifiedName`; `IsLabelValue`, formerly `IsValidLabelValue`). The messages are the API
//! server's, word for word, because clients (and our tests) read them. Patterns are matched by
//! hand: each is a short character-class rule, and the regex text only appears in the messages.

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
const LABEL_PATTERN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
/// `dns1123SubdomainFmt`: labels joined by dots.
const SUBDOMAIN_PATTERN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
/// `qualifiedNameFmt`: `(` + `[A-Za-z0-9]` + `[-A-Za-z0-9_.]` + `*)?` + `[A-Za-z0-9]`.
const NAME_PATTERN: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// `RegexError`: the message, the examples each quoted and followed by `, ` (so every example
/// after the first reads `,  or '…'` with two spaces), then the pattern.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let quoted: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{pattern}')",
        quoted.join(" or ")
    )
}

/// `MaxLenError`.
fn too_long(limit: usize) -> String {
    format!("must be no more than {limit} characters")
}

/// Whether `s` is one or more characters of `inner`, starting and ending with one of `edge`.
fn edged(s: &str, edge: impl Fn(u8) -> bool, inner: impl Fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => edge(first) && edge(last) && b.iter().all(|&c| inner(c)),
        _ => false,
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn matches_label(s: &str) -> bool {
    edged(s, lower_alnum, |c| lower_alnum(c) || c == b'-')
}

fn matches_subdomain(s: &str) -> bool {
    s.split('.').all(matches_label)
}

fn matches_name(s: &str) -> bool {
    edged(
        s,
        |c| c.is_ascii_alphanumeric(),
        |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'),
    )
}

/// `IsDNS1123Label`: at most 63 bytes; a valid subdomain that is not a label has dots.
pub fn dns_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(too_long(63));
    }
    if !matches_label(s) {
        if matches_subdomain(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                LABEL_PATTERN,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: at most 253 bytes.
pub fn dns_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(too_long(253));
    }
    if !matches_subdomain(s) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN_PATTERN,
            &["example.com"],
        ));
    }
    errs
}

const NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `IsQualifiedName` / `IsLabelKey`: an optional DNS subdomain prefix and `/`, then a name of at
/// most 63 bytes.
pub fn qualified_name_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(NAME_MESSAGE, NAME_PATTERN, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", too_long(63)));
    }
    if !matches_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                NAME_MESSAGE,
                NAME_PATTERN,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue` / `IsLabelValue`: empty, or a name of at most 63 bytes.
pub fn label_value_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(too_long(63));
    }
    if !s.is_empty() && !matches_name(s) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({NAME_PATTERN})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}
