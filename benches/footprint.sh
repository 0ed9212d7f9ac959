#!/usr/bin/env bash
# Footprint at scale (issue 12), one command: builds the release agent, the harness
# (examples/footprint.rs, dev profile) and two benches (bench profile with LTO off), installs
# prometheus-node-exporter (the Debian package) when it is missing, then prints, in markdown:
#   - per cycle: sample, decide, report decision and fence plan, each beside its floor measured
#     in the same run (benches/growth.rs);
#   - growth: converting and planning 10 / 100 / 1,000 / 10,000 realistic pods, and the decide
#     cycle and fence plan with 1 / 20 / 200 taints (benches/growth.rs);
#   - API requests and bytes per node-hour, idle and with one change a minute, beside the
#     kubelet's, and both extrapolated to a 5,000-node cluster (benches/api_hour.rs);
#   - where the heap goes with HEAP_PODS realistic pods, through the agent's own code;
#   - the release binary's size;
#   - standalone, sampling once a second, beside node-exporter (collectors meminfo, filesystem,
#     pressure, loadavg, processes) scraped once a second for the same PEER_SECONDS: CPU seconds
#     (utime + stime) and VmHWM / VmRSS of both, and their ratios;
#   - connected in dry-run to the API test server on loopback with PODS realistic pods (about
#     9 KB of JSON each, three managers in managedFields): VmHWM, steady VmRSS, idle CPU per hour
#     and how long until every pod is known;
#   - a partition with PARTITION_PODS pods known (one of PODS), dry-run at short settings: time
#     until every pod is "killed", CPU, VmHWM and VmRSS during it.
# Every process it starts is stopped by its PID. About 10 minutes with the defaults on a 2-vCPU
# machine (PODS=0,110,1000 takes about 4).
#
# Usage: benches/footprint.sh
#   PODS=0,110,1000,10000   pod counts, in increasing order
#   PEER_SECONDS=120        length of the side-by-side run
#   IDLE_SECONDS=20         idle CPU window of each connected run
#   HEAP_PODS=1000          pods of the heap table (0: skipped)
#   PARTITION_PODS=1000     pods of the partition run (0: skipped)
#   SHAPE=realistic         the pods' shape (tests/support/realistic.rs SHAPES: heavy, sidecars,
#                           last-applied, tolerations are issue 25's and heavier)
#   NODEWARDEN_BASELINE_BIN=<path>   another release build measured in the same run (before/after)
#   PERF=1                  also count each connected idle window with `perf stat` (linux-perf)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bench_env=(env CARGO_PROFILE_BENCH_LTO=false CARGO_PROFILE_BENCH_CODEGEN_UNITS=16)
# The benches first: `cargo bench` builds the agent's binary too, in the bench profile (no LTO),
# into the same target/release/nodewarden. The release build after it puts the real one back,
# and the copy taken then is the one measured.
"${bench_env[@]}" cargo bench --quiet --no-run --bench growth --bench api_hour
cargo build --quiet --example footprint
cargo build --release --quiet --bin nodewarden
agent=target/footprint-nodewarden
cp target/release/nodewarden "$agent"
built=$(date +%s)
exporter=/usr/bin/prometheus-node-exporter
if [ ! -x "$exporter" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-node-exporter >/dev/null \
      || echo "footprint: installing prometheus-node-exporter failed; measuring nodewarden alone" >&2
  else
    echo "footprint: $exporter missing and cannot be installed here (not root or no apt-get)" >&2
  fi
fi
args=(--bin "$agent" --exporter "$exporter"
  --pods "${PODS:-0,110,1000,10000}" --peer-seconds "${PEER_SECONDS:-120}"
  --idle-seconds "${IDLE_SECONDS:-20}" --heap-pods "${HEAP_PODS:-1000}"
  --partition-pods "${PARTITION_PODS:-1000}" --shape "${SHAPE:-realistic}")
if [ -n "${NODEWARDEN_BASELINE_BIN:-}" ]; then
  args+=(--baseline "$NODEWARDEN_BASELINE_BIN")
fi
if [ -n "${PERF:-}" ]; then
  args+=(--perf)
fi
echo "# nodewarden footprint, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Built in $((built - start)) s."
echo
"${bench_env[@]}" cargo bench --quiet --bench growth
echo
echo "## API cost per node-hour (benches/api_hour.rs)"
echo
"${bench_env[@]}" cargo bench --quiet --bench api_hour | sed -n '/^| scenario/,$p'
echo
target/debug/examples/footprint "${args[@]}"
echo
echo "Measured in $(( $(date +%s) - built )) s after the build; load at the end $(cut -d' ' -f1-3 /proc/loadavg)."
