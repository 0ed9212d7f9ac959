//! Server-set metadata: timestamps, UIDs and `managedFields`.
//!
//! `managedFields` are coarse but real-shaped: one entry per (manager, operation, subresource)
//! with a `time` and a `fieldsV1` set built from the fields the write changed; list items with a
//! merge key are named `k:{"type":"Ready"}` as the real field manager names them. Like the real
//! server, fields a manager sets through an Update are taken away from other managers.

use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

use super::resources::{ListStrategy, Resource};

/// Now as RFC 3339 with second precision (`metav1.Time`).
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// A wall-clock time as RFC 3339 UTC with second precision.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// A UUID-shaped, unique-per-server UID.
pub fn uid(seed: u64, n: u64) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (seed >> 32) as u32,
        (seed >> 16) as u16,
        (seed & 0xfff) as u16,
        (n >> 48) as u16 & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

/// Metadata fields the server owns; they never appear in a manager's field set.
const SERVER_META: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The field set (FieldsV1 JSON) of what changed from `old` to `new`, restricted to `.status`
/// for a status write and to everything but `.status` otherwise.
pub fn changed_fields(
    res: &Resource,
    old: Option<&Value>,
    new: &Value,
    status_write: bool,
) -> Map<String, Value> {
    let empty = Value::Object(Map::new());
    let old = old.unwrap_or(&empty);
    let mut out = Map::new();
    let (Some(new_map), Some(old_map)) = (new.as_object(), old.as_object()) else {
        return out;
    };
    for (k, v) in new_map {
        if k == "kind" || k == "apiVersion" {
            continue;
        }
        if status_write != (k == "status") {
            continue;
        }
        let sub = if k == "metadata" {
            let mut m = v.clone();
            if let Some(obj) = m.as_object_mut() {
                for f in SERVER_META {
                    obj.remove(f);
                }
            }
            let mut o = old_map.get(k).cloned().unwrap_or(Value::Null);
            if let Some(obj) = o.as_object_mut() {
                for f in SERVER_META {
                    obj.remove(f);
                }
            }
            diff(res, k, Some(&o), &m)
        } else {
            diff(res, k, old_map.get(k), v)
        };
        if let Some(sub) = sub.filter(|s| s.as_object().is_none_or(|m| !m.is_empty())) {
            out.insert(format!("f:{k}"), sub);
        }
    }
    // Removed top-level fields count as touched.
    for k in old_map.keys() {
        if !new_map.contains_key(k) && status_write == (k == "status") && k != "metadata" {
            out.insert(format!("f:{k}"), json!({}));
        }
    }
    out
}

fn diff(res: &Resource, path: &str, old: Option<&Value>, new: &Value) -> Option<Value> {
    if old == Some(new) {
        return None;
    }
    match new {
        Value::Object(m) => {
            let old_m = old.and_then(Value::as_object);
            let mut out = Map::new();
            for (k, v) in m {
                if let Some(s) = diff(res, &format!("{path}.{k}"), old_m.and_then(|o| o.get(k)), v)
                {
                    out.insert(format!("f:{k}"), s);
                }
            }
            if let Some(o) = old_m {
                for k in o.keys() {
                    if !m.contains_key(k) {
                        out.insert(format!("f:{k}"), json!({}));
                    }
                }
            }
            // "." (the entry's own existence) is recorded for new list items and map-typed
            // fields, not for struct fields, as the real field manager does.
            if old_m.is_none()
                && (path.ends_with("[]")
                    || path.ends_with("labels")
                    || path.ends_with("annotations"))
            {
                out.insert(".".into(), json!({}));
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let ListStrategy::MergeByKey(key) = res.list_strategy(path) else {
                return Some(json!({}));
            };
            let old_items = old.and_then(Value::as_array);
            let mut out = Map::new();
            for item in items {
                let Some(kv) = item.get(key) else { continue };
                let prev = old_items.and_then(|o| o.iter().find(|i| i.get(key) == Some(kv)));
                // A new item gets "." (its existence) from the object branch of `diff`.
                if let Some(s) = diff(res, &format!("{path}[]"), prev, item) {
                    out.insert(format!("k:{}", json!({ key: kv })), s);
                }
            }
            Some(Value::Object(out))
        }
        _ => Some(json!({})),
    }
}

/// `a ∪ b` for field sets.
pub fn union(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        match (a.get_mut(k), v.as_object()) {
            (Some(Value::Object(am)), Some(bm)) => union(am, bm),
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `a \ b` for field sets: a leaf in `b` removes the whole subtree from `a`.
pub fn subtract(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        let Some(bm) = v.as_object() else { continue };
        if bm.is_empty() || k == "." {
            a.remove(k);
            continue;
        }
        if let Some(Value::Object(am)) = a.get_mut(k) {
            subtract(am, bm);
            if am.is_empty() || (am.len() == 1 && am.contains_key(".")) {
                a.remove(k);
            }
        }
    }
}

/// Record a write by `manager` in `obj.metadata.managedFields`.
pub fn record_managed_fields(
    obj: &mut Value,
    manager: &str,
    api_version: &str,
    subresource: &str,
    set: Map<String, Value>,
) {
    if set.is_empty() {
        return;
    }
    let mut entries: Vec<Value> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let is_mine = |e: &Value| {
        e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == subresource
    };
    for e in entries.iter_mut().filter(|e| !is_mine(e)) {
        if let Some(Value::Object(fs)) = e.get_mut("fieldsV1") {
            subtract(fs, &set);
        }
    }
    entries.retain(|e| {
        is_mine(e)
            || e.get("fieldsV1")
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
    });
    let mut fields = Map::new();
    if let Some(existing) = entries.iter().find(|e| is_mine(e))
        && let Some(m) = existing.get("fieldsV1").and_then(Value::as_object)
    {
        fields = m.clone();
    }
    union(&mut fields, &set);
    entries.retain(|e| !is_mine(e));
    let mut entry = json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    });
    if !subresource.is_empty() {
        entry["subresource"] = json!(subresource);
    }
    entries.push(entry);
    obj["metadata"]["managedFields"] = Value::Array(entries);
}
