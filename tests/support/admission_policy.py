"""Evaluates a ValidatingAdmissionPolicy's CEL expressions the way kube-apiserver does, with
cel-cpp (PyPI `cel-expr-python`) and its optional-types library. Driven by
tests/admission_policy.rs: one JSON request on stdin, one JSON answer on stdout.

Request:  {"mode": "compile", "spec": <policy spec>}
          {"mode": "evaluate", "spec": <policy spec>,
           "request": <AdmissionRequest>, "object": <new>, "oldObject": <old>}
Answer:   {"evaluator": "cel-expr-python <version>",
           "errors": [{"at": "validations[1].expression", "error": "..."}],
           # evaluate only:
           "matched": bool,             # every matchCondition true
           "variables": {name: value},
           "violations": [{"validation": i, "reason": "...", "message": "..."}]}

What this mirrors, from k8s.io/apiserver/pkg/admission/plugin/cel and .../policy/validating:
- `object`, `oldObject` and `params` are declared `dyn` and bound as the objects' JSON (the
  apiserver converts them to unstructured maps), so `object.spec.?podCIDR` is an optional
  selection on a map: optional.none() when the key is absent. `request` is typed there (a
  `kubernetes.AdmissionRequest` whose `userInfo.extra` is map(string, list(string))); here it is
  `dyn`, bound as the AdmissionRequest's JSON, which selects the same values.
- The optional-types library is on (Kubernetes enables it from 1.28). The other Kubernetes
  libraries (quantity, ip, cidr, authorizer, strings, sets, ...) are not declared: an expression
  using one fails to compile here, a loud false failure and never a false pass.
- Return types: validations and matchConditions must be bool, messageExpression string; because
  our declarations are looser (`dyn` where Kubernetes has typed fields), `dyn` is accepted too.
- matchConditions: any false -> the policy does not apply; otherwise any error -> failure.
- variables: Kubernetes evaluates each lazily, on first reference as `variables.<name>`, and
  caches it. Here each is evaluated once, in the order listed (so later variables may use earlier
  ones), before the validations, and its value is bound into a `variables` map. The difference
  shows only when a variable fails: Kubernetes fails just the expressions that reference it;
  here the failure is reported in `errors` and the variable is left unbound.
- A failed validation's message is the messageExpression's value when that evaluates to a
  non-empty single-line string, otherwise `message`, otherwise "failed expression: <expr>";
  the reason defaults to Invalid.
"""

import importlib.metadata
import json
import sys

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional

DYN = cel.Type.DYN


def new_env():
    return cel.NewEnv(
        variables={
            "request": DYN,
            "object": DYN,
            "oldObject": DYN,
            "params": DYN,
            "namespaceObject": DYN,
            "variables": cel.Type.Map(cel.Type.STRING, DYN),
        },
        extensions=[ext_optional.ExtOptional()],
    )


def expressions(spec):
    """(location, expression, required result type or None) for every CEL expression."""
    out = []
    for i, m in enumerate(spec.get("matchConditions") or []):
        out.append((f"matchConditions[{i}] ({m.get('name')})", m["expression"], cel.Type.BOOL))
    for i, v in enumerate(spec.get("variables") or []):
        out.append((f"variables[{i}] ({v.get('name')})", v["expression"], None))
    for i, v in enumerate(spec.get("validations") or []):
        out.append((f"validations[{i}].expression", v["expression"], cel.Type.BOOL))
        if "messageExpression" in v:
            out.append((f"validations[{i}].messageExpression", v["messageExpression"], cel.Type.STRING))
    for i, a in enumerate(spec.get("auditAnnotations") or []):
        out.append((f"auditAnnotations[{i}].valueExpression", a["valueExpression"], None))
    return out


def compile_all(env, spec, errors):
    compiled = {}
    for at, text, want in expressions(spec):
        try:
            program = env.compile(text)
        except Exception as e:  # cel-cpp reports parse and check errors as RuntimeError
            errors.append({"at": at, "error": str(e)})
            continue
        got = program.return_type()
        if want is not None and not (got == want or got == DYN):
            errors.append({"at": at, "error": f"must evaluate to {want.name()} but got {got.name()}"})
            continue
        compiled[at] = program
    return compiled


def run(program, data):
    """(value, error): the result as plain JSON-like data, or the evaluation error's text."""
    result = program.eval(data=data)
    # cel-cpp returns an evaluation error as a value of type ERROR. This binding also reports an
    # optional *result* that way (it cannot convert one to Python); the policy's expressions
    # only use optionals inside, so such a result is reported as an error, never guessed at.
    if result.type() == cel.Type.ERROR:
        return None, f"evaluation error: {result.value()}"
    return result.plain_value(), None


def evaluate(env, spec, doc, errors):
    compiled = compile_all(env, spec, errors)
    answer = {"matched": False, "variables": {}, "violations": []}
    if errors:
        return answer
    data = {
        "request": doc["request"],
        "object": doc.get("object"),
        "oldObject": doc.get("oldObject"),
        "params": None,
        "namespaceObject": None,
        "variables": {},
    }
    condition_failed = False
    for i, m in enumerate(spec.get("matchConditions") or []):
        value, err = run(compiled[f"matchConditions[{i}] ({m.get('name')})"], data)
        if err is not None:
            errors.append({"at": f"matchConditions[{i}]", "error": err})
            condition_failed = True
        elif not isinstance(value, bool):
            errors.append({"at": f"matchConditions[{i}]", "error": f"not a bool: {value!r}"})
            condition_failed = True
        elif not value:
            return answer
    if condition_failed:
        return answer
    answer["matched"] = True
    for i, v in enumerate(spec.get("variables") or []):
        value, err = run(compiled[f"variables[{i}] ({v.get('name')})"], data)
        if err is not None:
            errors.append({"at": f"variables[{i}] ({v['name']})", "error": err})
            continue
        data["variables"][v["name"]] = value
        answer["variables"][v["name"]] = value
    for i, v in enumerate(spec.get("validations") or []):
        value, err = run(compiled[f"validations[{i}].expression"], data)
        if err is not None:
            errors.append({"at": f"validations[{i}].expression", "error": err})
            continue
        if not isinstance(value, bool):
            errors.append({"at": f"validations[{i}].expression", "error": f"not a bool: {value!r}"})
            continue
        if value:
            continue
        message = None
        if "messageExpression" in v:
            text, err = run(compiled[f"validations[{i}].messageExpression"], data)
            if err is not None:
                errors.append({"at": f"validations[{i}].messageExpression", "error": err})
            elif isinstance(text, str) and text.strip() and "\n" not in text:
                message = text
        if message is None:
            message = v.get("message") or f"failed expression: {v['expression']}"
        answer["violations"].append(
            {"validation": i, "reason": v.get("reason", "Invalid"), "message": message}
        )
    return answer


def main():
    doc = json.load(sys.stdin)
    env = new_env()
    errors = []
    if doc["mode"] == "compile":
        compiled = compile_all(env, doc["spec"], errors)
        answer = {"compiled": sorted(compiled)}
    elif doc["mode"] == "evaluate":
        answer = evaluate(env, doc["spec"], doc, errors)
    else:
        raise SystemExit(f"unknown mode {doc['mode']!r}")
    answer["errors"] = errors
    answer["evaluator"] = "cel-expr-python " + importlib.metadata.version("cel-expr-python")
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
