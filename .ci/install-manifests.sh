#!/usr/bin/env bash
# Installs what tests/manifests.rs and tests/admission_policy.rs need on a fresh Debian machine,
# only what is missing: kubernetes-validate (PyPI; the Kubernetes OpenAPI schemas for 1.25–1.37
# ship inside it), cel-expr-python (PyPI; cel-cpp, Google's CEL implementation, with the
# optional-types library Kubernetes enables) and kubectl (for `kubectl kustomize`). `.ci/run`
# calls this before the tests.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# Debian's system Python refuses a plain `pip install` (PEP 668); the flag exists only in
# pip >= 23, so try without it first.
pip_install() {
  if ! command -v python3 >/dev/null; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3-pip
  fi
  python3 -m pip install --quiet "$@" \
    || python3 -m pip install --quiet --break-system-packages "$@"
  hash -r
}

if ! command -v kubernetes-validate >/dev/null; then
  pip_install 'kubernetes-validate>=1.32'
fi
kubernetes-validate --version >/dev/null

# Pinned: the admission-policy test's emulation of the apiserver (tests/support/
# admission_policy.py) is written against this binding's API. It needs CPython >= 3.11 (Debian
# 12's python3 is 3.11, for which a manylinux x86_64 wheel is published).
CEL_EXPR_PYTHON=0.1.3
cel_installed() {
  python3 -c 'import sys, importlib.metadata as m, cel_expr_python.cel
sys.exit(m.version("cel-expr-python") != sys.argv[1])' "$CEL_EXPR_PYTHON" 2>/dev/null
}
if ! cel_installed; then
  pip_install "cel-expr-python==$CEL_EXPR_PYTHON"
fi
cel_installed || { echo "cel-expr-python $CEL_EXPR_PYTHON does not import" >&2; exit 1; }

if ! command -v kubectl >/dev/null; then
  apt-get update -q
  apt-get install -y -q kubectl || apt-get install -y -q kubernetes-client
fi
kubectl kustomize --help >/dev/null
