"""Validates prometheus-operator objects (PodMonitor, PrometheusRule) read as YAML documents from
the files named on the command line, strictly: each must validate against the operator's CRD
schema (as generated into cloudcoil-models-prometheus-operator's pydantic models: types,
patterns, enums, required fields), and dumping the validated model must give back exactly the
input, so a field the schema lacks (which pydantic would silently drop) is an error too.
Prints `<file>: <kind>/<name> passed` per object; exits 1 on the first failure.
Used by tests/monitoring.rs; installed by .ci/install-manifests.sh."""

import sys

import yaml
from cloudcoil.models.prometheus_operator import v1

KINDS = {"PodMonitor": v1.PodMonitor, "PrometheusRule": v1.PrometheusRule}


def diff(want, got, path="$"):
    """The first place where `got` differs from `want`, or None."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k in want:
            if k not in got:
                return f"{path}.{k}: not in the schema (dropped)"
            d = diff(want[k], got[k], f"{path}.{k}")
            if d:
                return d
        extra = set(got) - set(want)
        return f"{path}: gained {sorted(extra)}" if extra else None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path}: {len(want)} items became {len(got)}"
        for i, (w, g) in enumerate(zip(want, got)):
            d = diff(w, g, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if want == got else f"{path}: {want!r} became {got!r}"


def main():
    for name in sys.argv[1:]:
        with open(name) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            kind = doc.get("kind")
            model = KINDS.get(kind)
            if model is None:
                continue
            try:
                obj = model.model_validate(doc)
            except Exception as e:  # pydantic's ValidationError, with every field path
                print(f"{name}: {kind} does not validate: {e}")
                sys.exit(1)
            back = obj.model_dump(by_alias=True, exclude_unset=True, mode="json")
            d = diff(doc, back)
            if d:
                print(f"{name}: {kind}: {d}")
                sys.exit(1)
            print(f"{name}: {kind}/{doc['metadata']['name']} passed")


main()
