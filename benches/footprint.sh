#!/usr/bin/env bash
# Resident memory of `nodewarden run` standalone after 1,000 sample cycles: starts the release
# binary with a 10 ms update period, waits until /metrics counts 1,000 samples, then reads the
# peak resident set (VmHWM) and current RSS from /proc/<pid>/status and stops the agent (by PID).
#
# Usage: benches/footprint.sh   (prints one line: samples, VmHWM and VmRSS in KiB)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/config.toml" <<TOML
nodeName = "footprint"
nodeStatusUpdateFrequency = "10ms"
nodefsPath = "/"
imagefsPath = "/"
healthAddress = "127.0.0.1:$port"
[logging]
target = "stderr"
level = "warn"
TOML
./target/release/nodewarden run --config "$dir/config.toml" 2>"$dir/stderr" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
samples=0
for _ in $(seq 1 600); do
  sleep 0.1
  samples=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^nodewarden_samples_total /{print $2}') || samples=0
  [ "${samples:-0}" -ge 1000 ] && break
done
[ "${samples:-0}" -ge 1000 ] || { echo "only ${samples:-0} samples in 60 s" >&2; exit 1; }
hwm=$(awk '/^VmHWM:/{print $2}' "/proc/$pid/status")
rss=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status")
echo "samples=$samples VmHWM=${hwm}KiB VmRSS=${rss}KiB"
