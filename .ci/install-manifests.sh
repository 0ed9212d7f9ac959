#!/usr/bin/env bash
# Installs what tests/manifests.rs needs on a fresh Debian machine, only what is missing:
# kubernetes-validate (PyPI; the Kubernetes OpenAPI schemas for 1.25–1.37 ship inside it) and
# kubectl (for `kubectl kustomize`). `.ci/run` calls this before the tests.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if ! command -v kubernetes-validate >/dev/null; then
  if ! command -v python3 >/dev/null; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3-pip
  fi
  # Debian's system Python refuses a plain `pip install` (PEP 668); the flag exists only in
  # pip >= 23, so try without it first.
  python3 -m pip install --quiet 'kubernetes-validate>=1.32' \
    || python3 -m pip install --quiet --break-system-packages 'kubernetes-validate>=1.32'
  hash -r
fi
kubernetes-validate --version >/dev/null

if ! command -v kubectl >/dev/null; then
  apt-get update -q
  apt-get install -y -q kubectl || apt-get install -y -q kubernetes-client
fi
kubectl kustomize --help >/dev/null
