//! Query strings and selectors: `fieldSelector` (only the labels each resource supports, as the
//! real server's field-label conversion functions) and `labelSelector` (equality and existence
//! requirements; set-based syntax is rejected with 400 rather than ignored).

use serde_json::Value;

use super::errors::ApiError;
use super::resources::Resource;

/// Percent-decode a query component (`+` is a space in form encoding).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parsed query parameters, in order.
#[derive(Debug, Default, Clone)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// Parse `a=b&c=d`.
    pub fn parse(q: Option<&str>) -> Query {
        let mut out = Vec::new();
        for part in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            out.push((percent_decode(k), percent_decode(v)));
        }
        Query(out)
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter (`1`, `true`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("1" | "true" | "True"))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq,
    NotEq,
    Exists,
    NotExists,
}

#[derive(Debug, Clone)]
struct Requirement {
    key: String,
    op: Op,
    value: String,
}

/// A parsed field and label selector for one resource.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    fields: Vec<Requirement>,
    labels: Vec<Requirement>,
}

/// Split on unescaped commas (field selector values may escape `,` `=` `!` with `\`).
fn split_terms(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ',' => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn unescape(s: &str) -> Result<String, ApiError> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n @ ('\\' | ',' | '=' | '!')) => out.push(n),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "invalid field selector: invalid escape sequence: \\{}",
                        other.map(String::from).unwrap_or_default()
                    )));
                }
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

impl Selector {
    /// Parse `fieldSelector` and `labelSelector` for `res`.
    pub fn parse(
        res: &Resource,
        field: Option<&str>,
        label: Option<&str>,
    ) -> Result<Selector, ApiError> {
        let mut sel = Selector::default();
        for term in split_terms(field.unwrap_or("")) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (key, op, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, Op::NotEq, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, Op::Eq, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, Op::Eq, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: invalid selector: '{term}'; can't understand '{term}'"
                )));
            };
            let key = key.trim();
            if !res.field_labels.contains(&key) {
                // The real server answers an unknown field label with this exact text.
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {key}"
                )));
            }
            sel.fields.push(Requirement {
                key: key.to_string(),
                op,
                value: unescape(value)?,
            });
        }
        for term in label.unwrap_or("").split(',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            if term.contains('(') || term.contains(' ') {
                return Err(ApiError::bad_request(format!(
                    "unable to parse requirement: set-based label selector {term:?} is not supported by the test server"
                )));
            }
            let req = if let Some((k, v)) = term.split_once("!=") {
                Requirement {
                    key: k.into(),
                    op: Op::NotEq,
                    value: v.into(),
                }
            } else if let Some((k, v)) = term.split_once("==") {
                Requirement {
                    key: k.into(),
                    op: Op::Eq,
                    value: v.into(),
                }
            } else if let Some((k, v)) = term.split_once('=') {
                Requirement {
                    key: k.into(),
                    op: Op::Eq,
                    value: v.into(),
                }
            } else if let Some(k) = term.strip_prefix('!') {
                Requirement {
                    key: k.into(),
                    op: Op::NotExists,
                    value: String::new(),
                }
            } else {
                Requirement {
                    key: term.into(),
                    op: Op::Exists,
                    value: String::new(),
                }
            };
            if req.key.is_empty() || req.key.contains(['=', '!', '<', '>']) {
                return Err(ApiError::bad_request(format!(
                    "unable to parse requirement: invalid label key {:?}",
                    req.key
                )));
            }
            sel.labels.push(req);
        }
        Ok(sel)
    }

    /// Whether `obj` matches every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.fields.iter().all(|r| {
            let actual = field_value(obj, &r.key);
            match r.op {
                Op::Eq => actual == r.value,
                Op::NotEq => actual != r.value,
                Op::Exists | Op::NotExists => false,
            }
        }) && self.labels.iter().all(|r| {
            let actual = obj
                .pointer("/metadata/labels")
                .and_then(|l| l.get(&r.key))
                .and_then(Value::as_str);
            match r.op {
                Op::Eq => actual == Some(r.value.as_str()),
                Op::NotEq => actual != Some(r.value.as_str()),
                Op::Exists => actual.is_some(),
                Op::NotExists => actual.is_none(),
            }
        })
    }
}

/// The string the real field-label conversion yields for `key` (missing → "", booleans as
/// `true`/`false`, `source` is `source.component`).
fn field_value(obj: &Value, key: &str) -> String {
    let path = if key == "source" {
        "source.component"
    } else {
        key
    };
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => {
                return if key == "spec.unschedulable" || key == "spec.hostNetwork" {
                    "false".into()
                } else {
                    String::new()
                };
            }
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
