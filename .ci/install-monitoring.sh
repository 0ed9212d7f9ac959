#!/usr/bin/env bash
# Installs what tests/monitoring.rs needs on a fresh Debian machine, only what is missing:
# promtool and prometheus (Debian's `prometheus` package: `promtool check rules|config|metrics`,
# `promtool test rules`, and the real server the end-to-end test scrapes the agent with) and
# cloudcoil-models-prometheus-operator (PyPI: the prometheus-operator CRD schemas, which
# tests/support/prometheus_operator.py validates the PodMonitor and PrometheusRule against).
# `.ci/run` calls this before the tests.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  apt-get update -q
  # Without recommends: no node exporter, no service started on install where systemd runs
  # (the package enables one; the tests start their own server on a loopback port).
  apt-get install -y -q --no-install-recommends prometheus
fi
promtool --version >/dev/null
prometheus --version >/dev/null

# Pinned: the release pip resolved on Debian 12's CPython 3.11 when this was written; its models are
# generated from the operator's CRDs, and the validator relies on their pydantic (v2) API.
CLOUDCOIL_PROMETHEUS_OPERATOR=0.80.1.0
models_installed() {
  python3 -c 'import sys, importlib.metadata as m, yaml, cloudcoil.models.prometheus_operator.v1
sys.exit(m.version("cloudcoil-models-prometheus-operator") != sys.argv[1])' \
    "$CLOUDCOIL_PROMETHEUS_OPERATOR" 2>/dev/null
}
if ! models_installed; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3-pip python3-yaml
  fi
  spec="cloudcoil-models-prometheus-operator==$CLOUDCOIL_PROMETHEUS_OPERATOR"
  # Debian's system Python refuses a plain `pip install` (PEP 668); the flag exists only in
  # pip >= 23, so try without it first.
  python3 -m pip install --quiet "$spec" pyyaml \
    || python3 -m pip install --quiet --break-system-packages "$spec" pyyaml
fi
models_installed || {
  echo "cloudcoil-models-prometheus-operator $CLOUDCOIL_PROMETHEUS_OPERATOR does not import" >&2
  exit 1
}
