#!/usr/bin/env bash
# Footprint at scale (issue 12), one command: builds the release agent and the harness
# (examples/footprint.rs, dev profile), installs prometheus-node-exporter (the Debian package) when
# it is missing, then prints, in markdown:
#   - the release binary's size;
#   - standalone, sampling once a second, beside node-exporter (collectors meminfo, filesystem,
#     pressure, loadavg, processes) scraped once a second for the same PEER_SECONDS: CPU seconds
#     (utime + stime) and VmHWM / VmRSS of both, and their ratios;
#   - connected in dry-run to the API test server on loopback with PODS realistic pods (about
#     9 KB of JSON each, three managers in managedFields): VmHWM, steady VmRSS, idle CPU per hour
#     and how long until every pod is known.
# Every process it starts is stopped by its PID. About 10 minutes with the defaults on a 2-vCPU
# machine (PODS=0,110,1000 takes about 4).
#
# Usage: benches/footprint.sh
#   PODS=0,110,1000,10000   pod counts, in increasing order
#   PEER_SECONDS=120        length of the side-by-side run
#   IDLE_SECONDS=20         idle CPU window of each connected run
#   NODEWARDEN_BASELINE_BIN=<path>   another release build measured in the same run (before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin nodewarden
cargo build --quiet --example footprint
exporter=/usr/bin/prometheus-node-exporter
if [ ! -x "$exporter" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-node-exporter >/dev/null \
      || echo "footprint: installing prometheus-node-exporter failed; measuring nodewarden alone" >&2
  else
    echo "footprint: $exporter missing and cannot be installed here (not root or no apt-get)" >&2
  fi
fi
args=(--bin target/release/nodewarden --exporter "$exporter"
  --pods "${PODS:-0,110,1000,10000}" --peer-seconds "${PEER_SECONDS:-120}"
  --idle-seconds "${IDLE_SECONDS:-20}")
if [ -n "${NODEWARDEN_BASELINE_BIN:-}" ]; then
  args+=(--baseline "$NODEWARDEN_BASELINE_BIN")
fi
echo "# nodewarden footprint, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
exec target/debug/examples/footprint "${args[@]}"
