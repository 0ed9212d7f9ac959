//! Validation as the real registry strategies do it (docs/semantics.md §8): the shape check that
//! stands in for Go's typed decoding, then the per-type `Validate*` rules answered as 422 with
//! field paths and the upstream message texts.

use serde_json::Value;

use super::errors::{Cause, quote};
use super::names::{
    dns_label_errors, dns_subdomain_errors, label_value_errors, qualified_name_errors,
};
use super::resources::{Resource, Shape};

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Check the JSON types of known fields; the error text mirrors encoding/json's decode error
/// (`json: cannot unmarshal string into Go struct field ... of type ...`).
pub fn check_shapes(res: &Resource, obj: &Value) -> Result<(), String> {
    if !obj.is_object() {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type v1.{}",
            json_kind(obj),
            res.kind
        ));
    }
    walk_shapes(res, "", obj)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk_shapes(res: &Resource, path: &str, v: &Value) -> Result<(), String> {
    let Some(map) = v.as_object() else {
        return Ok(());
    };
    for (k, child) in map {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        // JSON null decodes to the zero value for every Go field type.
        if child.is_null() {
            continue;
        }
        let Some(shape) = res.shape(&p) else {
            // Unknown and unchecked fields are kept as they are (see the module docs of mod.rs).
            continue;
        };
        let ok = match shape {
            Shape::Str => child.is_string(),
            Shape::Int => child.as_i64().is_some(),
            Shape::Int32 => child.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
            Shape::Bool => child.is_boolean(),
            Shape::StrMap => child
                .as_object()
                .is_some_and(|m| m.values().all(|x| x.is_string() || x.is_null())),
            Shape::Object => child.is_object(),
            Shape::ObjList => child
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.is_object() || x.is_null())),
            Shape::StrList => child
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
        };
        if !ok {
            let ty = match shape {
                Shape::Str => "string",
                Shape::Int => "int64",
                Shape::Int32 => "int32",
                Shape::Bool => "bool",
                Shape::StrMap => "map[string]string",
                Shape::Object => "struct",
                Shape::ObjList => "[]struct",
                Shape::StrList => "[]string",
            };
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field {}.{p} of type {ty}",
                json_kind(child),
                res.kind
            ));
        }
        match shape {
            Shape::Object => walk_shapes(res, &p, child)?,
            Shape::ObjList => {
                for item in child.as_array().into_iter().flatten() {
                    walk_shapes(res, &format!("{p}[]"), item)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn invalid(field: String, value: &Value, detail: &str) -> Cause {
    let shown = match value {
        Value::String(s) => quote(s),
        other => other.to_string(),
    };
    let message = if detail.is_empty() {
        format!("Invalid value: {shown}")
    } else {
        format!("Invalid value: {shown}: {detail}")
    };
    Cause {
        reason: "FieldValueInvalid".into(),
        message,
        field,
    }
}

fn required(field: String, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    Cause {
        reason: "FieldValueRequired".into(),
        message,
        field,
    }
}

fn not_supported(field: String, value: &str, valid: &[&str]) -> Cause {
    let quoted: Vec<String> = valid.iter().map(|v| quote(v)).collect();
    Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!(
            "Unsupported value: {}: supported values: {}",
            quote(value),
            quoted.join(", ")
        ),
        field,
    }
}

fn forbidden(field: String, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {detail}"),
        field,
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Validate a create (`old == None`) or an update of `obj`.
pub fn validate(res: &Resource, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut errs = Vec::new();
    validate_meta(res, obj, &mut errs);
    match res.kind {
        "Node" => {
            validate_taints(obj.pointer("/spec/taints"), &mut errs);
            validate_conditions(
                "status.conditions",
                obj.pointer("/status/conditions"),
                &mut errs,
            );
        }
        "Pod" => {
            validate_pod(obj, old, &mut errs);
            validate_conditions(
                "status.conditions",
                obj.pointer("/status/conditions"),
                &mut errs,
            );
        }
        "Lease" => validate_lease(obj, &mut errs),
        "EndpointSlice" => validate_endpoint_slice(obj, old, &mut errs),
        "Event" => validate_event(obj, &mut errs),
        _ => {}
    }
    errs
}

fn validate_meta(res: &Resource, obj: &Value, errs: &mut Vec<Cause>) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        errs.push(required(
            "metadata.name".into(),
            "name or generateName is required",
        ));
    } else {
        for e in dns_subdomain_errors(name) {
            errs.push(invalid(
                "metadata.name".into(),
                &Value::String(name.into()),
                &e,
            ));
        }
    }
    if res.namespaced {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if ns.is_empty() {
            errs.push(required("metadata.namespace".into(), ""));
        }
    }
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            for e in qualified_name_errors(k) {
                errs.push(invalid(
                    "metadata.labels".into(),
                    &Value::String(k.clone()),
                    &e,
                ));
            }
            let v = v.as_str().unwrap_or("");
            for e in label_value_errors(v) {
                errs.push(invalid(
                    "metadata.labels".to_string(),
                    &Value::String(v.into()),
                    &e,
                ));
            }
        }
    }
}

/// docs/semantics.md §8.1: `validateNodeTaints` and `validateTaintEffect` in
/// `pkg/apis/core/validation/validation.go` — the key a qualified name, the value a label value
/// (its messages joined with ";"), the effect required and one of three, (key, effect) unique.
fn validate_taints(taints: Option<&Value>, errs: &mut Vec<Cause>) {
    let Some(list) = taints.and_then(Value::as_array) else {
        return;
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let idx = format!("spec.taints[{i}]");
        let key = str_at(t, "key");
        let value = str_at(t, "value");
        let effect = str_at(t, "effect");
        for e in qualified_name_errors(key) {
            errs.push(invalid(
                format!("{idx}.key"),
                &Value::String(key.into()),
                &e,
            ));
        }
        let verrs = label_value_errors(value);
        if !verrs.is_empty() {
            // Upstream joins the label-value messages with ";" into one error.
            errs.push(invalid(
                format!("{idx}.value"),
                &Value::String(value.into()),
                &verrs.join(";"),
            ));
        }
        if effect.is_empty() {
            errs.push(required(format!("{idx}.effect"), ""));
        } else if !EFFECTS.contains(&effect) {
            errs.push(not_supported(format!("{idx}.effect"), effect, &EFFECTS));
        }
        let pair = (key.to_string(), effect.to_string());
        if seen.contains(&pair) {
            errs.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!(
                    "Duplicate value: {t}: taints must be unique by key and effect pair"
                ),
                field: idx,
            });
            continue;
        }
        seen.push(pair);
    }
}

/// docs/semantics.md §8.2: `ValidateTolerations` in `pkg/apis/core/validation/validation.go`.
fn validate_tolerations(list: &[Value], errs: &mut Vec<Cause>) {
    for (i, t) in list.iter().enumerate() {
        let idx = format!("spec.tolerations[{i}]");
        let key = str_at(t, "key");
        let op = str_at(t, "operator");
        let value = str_at(t, "value");
        let effect = str_at(t, "effect");
        if !key.is_empty() {
            for e in qualified_name_errors(key) {
                errs.push(invalid(
                    format!("{idx}.key"),
                    &Value::String(key.into()),
                    &e,
                ));
            }
        }
        if key.is_empty() && op != "Exists" {
            errs.push(invalid(
                format!("{idx}.operator"),
                &Value::String(op.into()),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let has_seconds = t.get("tolerationSeconds").is_some_and(|s| !s.is_null());
        if has_seconds && effect != "NoExecute" {
            errs.push(invalid(
                format!("{idx}.effect"),
                &Value::String(effect.into()),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "" | "Equal" => {
                let verrs = label_value_errors(value);
                if !verrs.is_empty() {
                    errs.push(invalid(
                        format!("{idx}.operator"),
                        &Value::String(value.into()),
                        &verrs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(invalid(
                        format!("{idx}.operator"),
                        t,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(not_supported(
                format!("{idx}.operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            errs.push(not_supported(format!("{idx}.effect"), effect, &EFFECTS));
        }
    }
}

/// Identity of a toleration for §8.3: every field but `tolerationSeconds`, with Go zero values.
fn toleration_identity(t: &Value) -> [String; 4] {
    ["key", "operator", "value", "effect"].map(|k| str_at(t, k).to_string())
}

fn validate_pod(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let empty = Vec::new();
    let tolerations = obj
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let containers = obj.pointer("/spec/containers").and_then(Value::as_array);
    if old.is_none() && containers.is_none_or(|c| c.is_empty()) {
        errs.push(required("spec.containers".into(), ""));
    }
    let Some(old) = old else {
        validate_tolerations(tolerations, errs);
        return;
    };
    // docs/semantics.md §8.3: existing tolerations must survive, except for tolerationSeconds.
    let old_tols = old
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let new_ids: Vec<[String; 4]> = tolerations.iter().map(toleration_identity).collect();
    if old_tols
        .iter()
        .any(|o| !new_ids.contains(&toleration_identity(o)))
    {
        errs.push(forbidden(
            "spec.tolerations".into(),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    } else {
        validate_tolerations(tolerations, errs);
    }
    // ValidatePodUpdate: only images, activeDeadlineSeconds, tolerations and
    // terminationGracePeriodSeconds may change in a pod spec.
    let strip = |spec: Option<&Value>| {
        let mut s = spec.cloned().unwrap_or(Value::Null);
        if let Some(m) = s.as_object_mut() {
            for k in [
                "tolerations",
                "activeDeadlineSeconds",
                "terminationGracePeriodSeconds",
            ] {
                m.remove(k);
            }
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = m.get_mut(list) {
                    for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                        c.remove("image");
                    }
                }
            }
        }
        s
    };
    if strip(obj.get("spec")) != strip(old.get("spec")) {
        errs.push(forbidden(
            "spec".into(),
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
}

fn validate_conditions(path: &str, conds: Option<&Value>, errs: &mut Vec<Cause>) {
    let Some(list) = conds.and_then(Value::as_array) else {
        return;
    };
    for (i, c) in list.iter().enumerate() {
        if str_at(c, "type").is_empty() {
            errs.push(required(format!("{path}[{i}].type"), "must specify a type"));
        }
        if str_at(c, "status").is_empty() {
            errs.push(required(
                format!("{path}[{i}].status"),
                "must specify a status",
            ));
        }
    }
}

/// `ValidateLeaseSpec`.
fn validate_lease(obj: &Value, errs: &mut Vec<Cause>) {
    if let Some(d) = obj
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
        && d <= 0
    {
        errs.push(invalid(
            "spec.leaseDurationSeconds".into(),
            &Value::from(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = obj
        .pointer("/spec/leaseTransitions")
        .and_then(Value::as_i64)
        && t < 0
    {
        errs.push(invalid(
            "spec.leaseTransitions".into(),
            &Value::from(t),
            "must be greater than or equal to 0",
        ));
    }
}

/// `legacyValidateEvent` (core/v1 events): the involved object's namespace must match.
fn validate_event(obj: &Value, errs: &mut Vec<Cause>) {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved_ns = obj
        .pointer("/involvedObject/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if involved_ns.is_empty() {
        // Cluster-scoped involved objects: the event lives in "" or, for old clients, "default".
        if !ns.is_empty() && ns != "default" {
            errs.push(invalid(
                "involvedObject.namespace".into(),
                &Value::String(involved_ns.into()),
                "does not match event.namespace",
            ));
        }
    } else if involved_ns != ns {
        errs.push(invalid(
            "involvedObject.namespace".into(),
            &Value::String(involved_ns.into()),
            "does not match event.namespace",
        ));
    }
}

/// Scheme defaulting done when a body is decoded (before validation), for the fields served here:
/// an EndpointSlice port without `name` gets "" and without `protocol` gets "TCP"
/// (`SetDefaults_EndpointPort`).
pub fn apply_defaults(res: &Resource, obj: &mut Value) {
    if res.kind != "EndpointSlice" {
        return;
    }
    let Some(ports) = obj.get_mut("ports").and_then(Value::as_array_mut) else {
        return;
    };
    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
        for (field, default) in [("name", ""), ("protocol", "TCP")] {
            if port.get(field).is_none_or(Value::is_null) {
                port.insert(field.to_string(), Value::String(default.to_string()));
            }
        }
    }
}

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const PORT_PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ZONE_HINTS: usize = 8;

fn too_many(field: String, actual: usize, max: usize) -> Cause {
    Cause {
        reason: "FieldValueTooMany".into(),
        message: format!("Too many: {actual}: must have at most {max} items"),
        field,
    }
}

fn duplicate(field: String, value: &str) -> Cause {
    Cause {
        reason: "FieldValueDuplicate".into(),
        message: format!("Duplicate value: {}", quote(value)),
        field,
    }
}

/// Go's `netutils.ParseIPSloppy` for dotted IPv4: four decimal fields of at most 255, leading
/// zeros allowed (and read as decimal), which Rust's parser refuses.
fn parse_ipv4_sloppy(s: &str) -> Option<std::net::Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut fields = s.split('.');
    for octet in &mut octets {
        let f = fields.next()?;
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = f.trim_start_matches('0');
        if trimmed.len() > 3 {
            return None;
        }
        *octet = if trimmed.is_empty() {
            0
        } else {
            trimmed.parse::<u8>().ok()?
        };
    }
    fields
        .next()
        .is_none()
        .then_some(std::net::Ipv4Addr::from(octets))
}

/// The address as Go's sloppy parser reads it, v4-mapped IPv6 folded to IPv4 (Go's `To4`).
/// Deviation: IPv6 text goes through Rust's parser (no leading zeros in an embedded IPv4 part).
fn parse_ip_sloppy(s: &str) -> Option<std::net::IpAddr> {
    if let Some(v4) = parse_ipv4_sloppy(s) {
        return Some(v4.into());
    }
    s.parse::<std::net::Ipv6Addr>()
        .ok()
        .map(|v6| std::net::IpAddr::V6(v6).to_canonical())
}

/// `ValidateNonSpecialIP`.
fn special_ip_errors(ip: std::net::IpAddr, text: &str) -> Vec<String> {
    use std::net::IpAddr;
    let mut errs = Vec::new();
    if ip.is_unspecified() {
        errs.push(format!("may not be unspecified ({text})"));
    }
    if ip.is_loopback() {
        errs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    };
    if link_local {
        errs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    let link_local_multicast = match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.octets()[0] == 0xff && v6.octets()[1] & 0x0f == 0x02,
    };
    if link_local_multicast {
        errs.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string(),
        );
    }
    errs
}

/// `IsFullyQualifiedDomainName`: one error at most, as upstream.
fn fqdn_error(name: &str) -> Option<(String, String)> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = dns_subdomain_errors(name);
    if !errs.is_empty() {
        return Some((name.to_string(), errs.join(",")));
    }
    if name.split('.').count() < 2 {
        return Some((
            name.to_string(),
            "should be a domain with at least two segments separated by dots".to_string(),
        ));
    }
    name.split('.').find_map(|label| {
        let errs = dns_label_errors(label);
        (!errs.is_empty()).then(|| (label.to_string(), errs.join(",")))
    })
}

fn validate_address(address_type: &str, address: &str, field: String, errs: &mut Vec<Cause>) {
    let value = Value::String(address.into());
    match address_type {
        "IPv4" | "IPv6" => {
            let ip = parse_ip_sloppy(address);
            let right_family = match ip {
                Some(std::net::IpAddr::V4(_)) => address_type == "IPv4",
                Some(std::net::IpAddr::V6(_)) => address_type == "IPv6",
                None => false,
            };
            if !right_family {
                errs.push(invalid(
                    field.clone(),
                    &value,
                    &format!("must be a valid {address_type} address"),
                ));
            }
            match ip {
                None => errs.push(invalid(field, &value, "must be a valid IP address")),
                Some(ip) => {
                    for e in special_ip_errors(ip, address) {
                        errs.push(invalid(field.clone(), &value, &e));
                    }
                }
            }
        }
        "FQDN" => {
            if address.is_empty() {
                errs.push(required(field, ""));
            } else if let Some((shown, e)) = fqdn_error(address) {
                errs.push(invalid(field, &Value::String(shown), &e));
            }
        }
        // Unknown types are reported on addressType; their addresses are not checked.
        _ => {}
    }
}

/// `ValidateEndpointSliceCreate` / `ValidateEndpointSliceUpdate` (after defaulting).
fn validate_endpoint_slice(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let address_type = str_at(obj, "addressType");
    if address_type.is_empty() {
        errs.push(required("addressType".into(), ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errs.push(not_supported(
            "addressType".into(),
            address_type,
            &ADDRESS_TYPES,
        ));
    }
    validate_slice_ports(obj.get("ports"), errs);
    // Unchanged endpoints are not validated again on update (they may predate stricter rules).
    if old.is_none_or(|o| o.get("endpoints") != obj.get("endpoints")) {
        validate_slice_endpoints(obj.get("endpoints"), address_type, errs);
    }
    if let Some(old) = old {
        let old_type = str_at(old, "addressType");
        if old_type != address_type {
            errs.push(invalid(
                "addressType".into(),
                &Value::String(address_type.into()),
                "field is immutable",
            ));
        }
    }
}

fn validate_slice_endpoints(endpoints: Option<&Value>, address_type: &str, errs: &mut Vec<Cause>) {
    let list = endpoints
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if list.len() > MAX_ENDPOINTS {
        errs.push(too_many("endpoints".into(), list.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, ep) in list.iter().enumerate() {
        let idx = format!("endpoints[{i}]");
        let addresses = ep
            .get("addresses")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if addresses.is_empty() {
            errs.push(required(
                format!("{idx}.addresses"),
                "must contain at least 1 address",
            ));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(too_many(
                format!("{idx}.addresses"),
                addresses.len(),
                MAX_ADDRESSES,
            ));
        }
        for (j, a) in addresses.iter().enumerate() {
            validate_address(
                address_type,
                a.as_str().unwrap_or(""),
                format!("{idx}.addresses[{j}]"),
                errs,
            );
        }
        if let Some(node) = ep.get("nodeName").and_then(Value::as_str) {
            for e in dns_subdomain_errors(node) {
                errs.push(invalid(
                    format!("{idx}.nodeName"),
                    &Value::String(node.into()),
                    &e,
                ));
            }
        }
        if let Some(topology) = ep.get("deprecatedTopology").and_then(Value::as_object) {
            if topology.len() > MAX_TOPOLOGY_LABELS {
                errs.push(too_many(
                    format!("{idx}.deprecatedTopology"),
                    topology.len(),
                    MAX_TOPOLOGY_LABELS,
                ));
            }
            for (k, v) in topology {
                for e in qualified_name_errors(k) {
                    errs.push(invalid(
                        format!("{idx}.deprecatedTopology"),
                        &Value::String(k.clone()),
                        &e,
                    ));
                }
                let v = v.as_str().unwrap_or("");
                for e in label_value_errors(v) {
                    errs.push(invalid(
                        format!("{idx}.deprecatedTopology"),
                        &Value::String(v.into()),
                        &e,
                    ));
                }
            }
        }
        if let Some(hostname) = ep.get("hostname").and_then(Value::as_str) {
            for e in dns_label_errors(hostname) {
                errs.push(invalid(
                    format!("{idx}.hostname"),
                    &Value::String(hostname.into()),
                    &e,
                ));
            }
        }
        if let Some(zones) = ep.pointer("/hints/forZones").and_then(Value::as_array) {
            let path = format!("{idx}.hints.forZones");
            if zones.len() > MAX_ZONE_HINTS {
                errs.push(too_many(path, zones.len(), MAX_ZONE_HINTS));
                continue;
            }
            let mut seen: Vec<&str> = Vec::new();
            for (j, z) in zones.iter().enumerate() {
                let field = format!("{path}[{j}].name");
                let name = str_at(z, "name");
                if seen.contains(&name) {
                    errs.push(duplicate(field.clone(), name));
                } else {
                    seen.push(name);
                }
                for e in label_value_errors(name) {
                    errs.push(invalid(field.clone(), &Value::String(name.into()), &e));
                }
            }
        }
    }
}

fn validate_slice_ports(ports: Option<&Value>, errs: &mut Vec<Cause>) {
    let list = ports
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if list.len() > MAX_PORTS {
        errs.push(too_many("ports".into(), list.len(), MAX_PORTS));
        return;
    }
    // No range check of `port`: upstream has none for EndpointSlices (any int32 is stored).
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let idx = format!("ports[{i}]");
        let name = str_at(p, "name");
        if !name.is_empty() {
            for e in dns_label_errors(name) {
                errs.push(invalid(
                    format!("{idx}.name"),
                    &Value::String(name.into()),
                    &e,
                ));
            }
        }
        if names.contains(&name) {
            errs.push(duplicate(format!("{idx}.name"), name));
        } else {
            names.push(name);
        }
        let protocol = str_at(p, "protocol");
        if protocol.is_empty() {
            errs.push(required(format!("{idx}.protocol"), ""));
        } else if !PORT_PROTOCOLS.contains(&protocol) {
            errs.push(not_supported(
                format!("{idx}.protocol"),
                protocol,
                &PORT_PROTOCOLS,
            ));
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for e in qualified_name_errors(app) {
                errs.push(invalid(
                    format!("{idx}.appProtocol"),
                    &Value::String(app.into()),
                    &e,
                ));
            }
        }
    }
}
