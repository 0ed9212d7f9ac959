//! The three patch formats the real server accepts for built-in types:
//! strategic merge patch (`k8s.io/apimachinery/pkg/util/strategicpatch`), JSON merge patch
//! (RFC 7386) and JSON patch (RFC 6902). Server-side apply is not implemented (415).

use serde_json::{Map, Value};

use super::resources::{ListStrategy, Resource};

/// Strategic merge patch of `original` with `patch`. The error text is answered as 400.
pub fn strategic_merge(res: &Resource, original: &Value, patch: &Value) -> Result<Value, String> {
    let Some(pm) = patch.as_object() else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            if patch.is_array() {
                "array"
            } else {
                "non-object"
            }
        ));
    };
    let orig = original.as_object().cloned().unwrap_or_default();
    match merge_map(res, "", orig, pm)? {
        Some(m) => Ok(Value::Object(m)),
        // `$patch: delete` at the top level empties the object.
        None => Ok(Value::Object(Map::new())),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Remove every directive (`$patch`, `$retainKeys`, `$setElementOrder/...`, ...) from a value
/// that is stored without merging (a new map or a replaced list).
fn clean(v: &Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.get("$patch").and_then(Value::as_str) == Some("delete") {
                return None;
            }
            let mut out = Map::new();
            for (k, x) in m {
                if k.starts_with('$') {
                    continue;
                }
                if let Some(c) = clean(x) {
                    out.insert(k.clone(), c);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(items.iter().filter_map(clean).collect())),
        other => Some(other.clone()),
    }
}

fn merge_map(
    res: &Resource,
    path: &str,
    orig: Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, String> {
    match patch.get("$patch") {
        None => {}
        Some(Value::String(s)) if s == "merge" => {}
        Some(Value::String(s)) if s == "replace" => {
            let mut p = patch.clone();
            p.remove("$patch");
            return Ok(clean(&Value::Object(p)).and_then(|v| v.as_object().cloned()));
        }
        Some(Value::String(s)) if s == "delete" => return Ok(None),
        Some(other) => {
            return Err(format!(
                "Unknown patch type: {other} in map: {}",
                Value::Object(patch.clone())
            ));
        }
    }
    let mut out = orig;
    if let Some(retain) = patch.get("$retainKeys") {
        let Some(keys) = retain.as_array().filter(|a| a.iter().all(Value::is_string)) else {
            return Err("invalid patch: $retainKeys must be a list of strings".into());
        };
        // Every key the patch sets must be listed in $retainKeys (ErrPatchContentNotMatchRetainKeys).
        for k in patch.keys().filter(|k| !k.starts_with('$')) {
            if !keys.iter().any(|x| x == k) {
                return Err(format!(
                    "content of $retainKeys is not a superset of the keys in the patch: {k}"
                ));
            }
        }
        out.retain(|k, _| keys.iter().any(|x| x == k));
    }
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let Some(del) = v.as_array() else {
                return Err(format!("invalid patch: {k} must be a list"));
            };
            if let Some(Value::Array(items)) = out.get_mut(field) {
                items.retain(|i| !del.contains(i));
            }
        }
    }
    for (k, v) in patch {
        if k.starts_with('$') {
            continue;
        }
        let p = join(path, k);
        match v {
            Value::Null => {
                out.remove(k);
            }
            Value::Object(pm) => {
                let existing = match out.remove(k) {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                if let Some(m) = merge_map(res, &p, existing, pm)? {
                    out.insert(k.clone(), Value::Object(m));
                }
            }
            Value::Array(items) => {
                let existing = match out.remove(k) {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                let order = patch.get(&format!("$setElementOrder/{k}"));
                let merged = merge_list(res, &p, existing, items, order)?;
                out.insert(k.clone(), Value::Array(merged));
            }
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    // An order-only directive for a list the patch does not otherwise touch.
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix("$setElementOrder/") {
            if patch.contains_key(field) {
                continue;
            }
            if let Some(Value::Array(items)) = out.remove(field) {
                let ordered = apply_order(res, &join(path, field), items, v)?;
                out.insert(field.to_string(), Value::Array(ordered));
            }
        }
    }
    Ok(Some(out))
}

fn merge_list(
    res: &Resource,
    path: &str,
    orig: Vec<Value>,
    patch: &[Value],
    order: Option<&Value>,
) -> Result<Vec<Value>, String> {
    let strategy = res.list_strategy(path);
    let is_replace = |i: &Value| i.get("$patch").and_then(Value::as_str) == Some("replace");
    if strategy == ListStrategy::Replace || patch.iter().any(is_replace) {
        // No patch strategy (e.g. spec.taints, spec.tolerations): the list is atomic.
        return Ok(patch
            .iter()
            .filter(|i| !is_replace(i))
            .filter_map(clean)
            .collect());
    }
    let mut out = orig;
    match strategy {
        ListStrategy::MergePrimitives => {
            for item in patch {
                if item.is_object() || item.is_array() {
                    return Err(format!(
                        "invalid patch: {path} is a list of primitives, got {item}"
                    ));
                }
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
        }
        ListStrategy::MergeByKey(key) => {
            for item in patch {
                let Some(m) = item.as_object() else {
                    return Err(format!(
                        "invalid patch: {path} items must be maps with merge key {key:?}, got {item}"
                    ));
                };
                let Some(kv) = m.get(key) else {
                    return Err(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    ));
                };
                let pos = out.iter().position(|o| o.get(key) == Some(kv));
                if m.get("$patch").and_then(Value::as_str) == Some("delete") {
                    out.retain(|o| o.get(key) != Some(kv));
                    continue;
                }
                let item_path = format!("{path}[]");
                match pos {
                    Some(i) => {
                        let existing = out[i].as_object().cloned().unwrap_or_default();
                        match merge_map(res, &item_path, existing, m)? {
                            Some(merged) => out[i] = Value::Object(merged),
                            None => {
                                out.remove(i);
                            }
                        }
                    }
                    None => {
                        if let Some(new) = merge_map(res, &item_path, Map::new(), m)? {
                            out.push(Value::Object(new));
                        }
                    }
                }
            }
        }
        ListStrategy::Replace => unreachable!("handled above"),
    }
    match order {
        Some(o) => apply_order(res, path, out, o),
        None => Ok(out),
    }
}

/// `$setElementOrder/<list>`: the listed elements in that order; elements only the server has
/// keep their relative order after them.
fn apply_order(
    res: &Resource,
    path: &str,
    items: Vec<Value>,
    order: &Value,
) -> Result<Vec<Value>, String> {
    let Some(order) = order.as_array() else {
        return Err(format!(
            "invalid patch: $setElementOrder/{path} must be a list"
        ));
    };
    let key = match res.list_strategy(path) {
        ListStrategy::MergeByKey(k) => Some(k),
        _ => None,
    };
    let ident = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let mut wanted = Vec::new();
    for o in order {
        let id = match key {
            Some(k) => o
                .get(k)
                .cloned()
                .ok_or_else(|| format!("$setElementOrder/{path} entry {o} lacks merge key {k}"))?,
            None => o.clone(),
        };
        wanted.push(id);
    }
    let mut rest = Vec::new();
    let mut placed: Vec<Option<Value>> = vec![None; wanted.len()];
    for item in items {
        match wanted.iter().position(|w| *w == ident(&item)) {
            Some(i) if placed[i].is_none() => placed[i] = Some(item),
            _ => rest.push(item),
        }
    }
    let mut out: Vec<Value> = placed.into_iter().flatten().collect();
    out.extend(rest);
    Ok(out)
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(pm) = patch else {
        return patch.clone();
    };
    let mut out = target.as_object().cloned().unwrap_or_default();
    for (k, v) in pm {
        if v.is_null() {
            out.remove(k);
        } else {
            let merged = merge_patch(out.get(k).unwrap_or(&Value::Null), v);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

/// Why a JSON patch failed: decoding (400) or applying (422).
#[derive(Debug)]
pub enum JsonPatchError {
    /// The patch document is not a list of operations.
    Decode(String),
    /// An operation did not apply (including a failed `test`).
    Apply(String),
}

fn parse_pointer(p: &str) -> Result<Vec<String>, String> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = p.strip_prefix('/') else {
        return Err(format!(
            "JSON pointer must be empty or start with a \"/\": {p}"
        ));
    };
    Ok(rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn array_index(tok: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && tok == "-" {
        return Ok(len);
    }
    if tok.is_empty()
        || !tok.bytes().all(|b| b.is_ascii_digit())
        || (tok.len() > 1 && tok.starts_with('0'))
    {
        return Err(format!("invalid array index: {tok}"));
    }
    let i: usize = tok
        .parse()
        .map_err(|_| format!("invalid array index: {tok}"))?;
    let max = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if i > max || (!allow_end && len == 0) {
        return Err(format!("index out of range: {i}"));
    }
    Ok(i)
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = doc;
    for tok in path {
        cur = match cur {
            Value::Object(m) => m.get(tok)?,
            Value::Array(a) => a.get(array_index(tok, a.len(), false).ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for tok in path {
        cur = match cur {
            Value::Object(m) => m.get_mut(tok)?,
            Value::Array(a) => {
                let i = array_index(tok, a.len(), false).ok()?;
                a.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn add(doc: &mut Value, raw: &str, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    let missing =
        || format!("add operation does not apply: doc is missing path: \"{raw}\": missing value");
    match get_mut(doc, parent).ok_or_else(missing)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = array_index(last, a.len(), true)?;
            a.insert(i, value);
        }
        _ => return Err(missing()),
    }
    Ok(())
}

fn remove(doc: &mut Value, raw: &str, path: &[String]) -> Result<Value, String> {
    let missing = || {
        format!("remove operation does not apply: doc is missing path: \"{raw}\": missing value")
    };
    let Some((last, parent)) = path.split_last() else {
        return Err(missing());
    };
    match get_mut(doc, parent).ok_or_else(missing)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i = array_index(last, a.len(), false).map_err(|_| missing())?;
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

/// RFC 6902 JSON patch (`add`, `remove`, `replace`, `move`, `copy`, `test`).
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let Some(ops) = patch.as_array() else {
        return Err(JsonPatchError::Decode(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into(),
        ));
    };
    if let Some(bad) = ops.iter().find(|o| !o.is_object()) {
        return Err(JsonPatchError::Decode(format!(
            "json: cannot unmarshal {bad} into Go value of type jsonpatch.Operation"
        )));
    }
    let mut doc = doc.clone();
    for op in ops {
        apply_op(&mut doc, op).map_err(JsonPatchError::Apply)?;
    }
    Ok(doc)
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), String> {
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
    let raw = op
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("operation missing path: {op}"))?;
    let path = parse_pointer(raw)?;
    let value = || {
        op.get("value")
            .cloned()
            .ok_or_else(|| format!("{kind} operation missing value"))
    };
    let from = || -> Result<(String, Vec<String>), String> {
        let f = op
            .get("from")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{kind} operation missing from"))?;
        Ok((f.to_string(), parse_pointer(f)?))
    };
    match kind {
        "add" => add(doc, raw, &path, value()?),
        "remove" => remove(doc, raw, &path).map(drop),
        "replace" => {
            let v = value()?;
            let target = get_mut(doc, &path).ok_or_else(|| {
                format!(
                    "replace operation does not apply: doc is missing key: {raw}: missing value"
                )
            })?;
            *target = v;
            Ok(())
        }
        "move" => {
            let (raw_from, f) = from()?;
            if path.len() > f.len() && path[..f.len()] == f[..] {
                return Err(format!(
                    "move operation does not apply: from {raw_from} is a prefix of path {raw}"
                ));
            }
            let v = remove(doc, &raw_from, &f)?;
            add(doc, raw, &path, v)
        }
        "copy" => {
            let (raw_from, f) = from()?;
            let v = get(doc, &f)
                .cloned()
                .ok_or_else(|| format!("copy operation does not apply: doc is missing from path: {raw_from}: missing value"))?;
            add(doc, raw, &path, v)
        }
        "test" => {
            let want = value()?;
            match get(doc, &path) {
                Some(actual) if *actual == want => Ok(()),
                // A missing path tests equal to null, as evanphx/json-patch treats it.
                None if want.is_null() => Ok(()),
                _ => Err(format!("testing value {raw} failed: test failed")),
            }
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}
