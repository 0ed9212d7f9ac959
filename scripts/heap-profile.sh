#!/usr/bin/env bash
# Heap profile of the agent connected with many pods (issue 25): runs the footprint harness
# (examples/footprint.rs) with the agent started under heaptrack (the Debian package, installed
# when missing), then prints heaptrack's peak consumers of each agent run.
#
# The agent is started through a small wrapper that preloads heaptrack's library and then
# `exec`s the agent, so the harness's PID, signals and /proc readings are the agent's own.
# heaptrack needs symbols: the default is the dev build of the agent (the same code and
# allocations; the release profile strips its symbols). BIN=path profiles another build.
#
# Usage: scripts/heap-profile.sh [harness arguments]
#   default arguments: --pods 1000 --shape heavy --peer-seconds 1 --idle-seconds 5
#                      --heap-pods 0 --partition-pods 0
#   OUT=target/heap-profile   where the profiles go (heaptrack.<pid>.gz, one per agent run)
#   BIN=<path>                the agent to profile (default: target/debug/nodewarden, built)
#   TOP=15                    peak consumers printed per profile
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${OUT:-target/heap-profile}" && cd "${OUT:-target/heap-profile}" && pwd)
preload=/usr/lib/heaptrack/libheaptrack_preload.so
interpret=/usr/lib/heaptrack/libexec/heaptrack_interpret
if [ ! -f "$preload" ] || ! command -v heaptrack_print >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq heaptrack >/dev/null
  else
    echo "heap-profile: heaptrack is missing and cannot be installed here" >&2
    exit 1
  fi
fi
if [ -z "${BIN:-}" ]; then
  cargo build --quiet --bin nodewarden
fi
bin=$(realpath "${BIN:-target/debug/nodewarden}")
cargo build --quiet --example footprint
rm -f "$out"/heaptrack.*.gz "$out"/fifo.*
cat >"$out/agent" <<EOF
#!/bin/sh
# The agent under heaptrack, as its own PID (see scripts/heap-profile.sh).
pipe="$out/fifo.\$\$"
mkfifo "\$pipe"
"$interpret" <"\$pipe" | gzip -c >"$out/heaptrack.\$\$.gz" &
LD_PRELOAD="$preload" DUMP_HEAPTRACK_OUTPUT="\$pipe" exec "$bin" "\$@"
EOF
chmod +x "$out/agent"
if [ $# -eq 0 ]; then
  set -- --pods 1000 --shape heavy --peer-seconds 1 --idle-seconds 5 --heap-pods 0 \
    --partition-pods 0
fi
target/debug/examples/footprint --bin "$out/agent" "$@"
# The interpreters finish when their agent has exited and closed its pipe.
sleep 2
rm -f "$out"/fifo.*
for f in "$out"/heaptrack.*.gz; do
  echo "## $f"
  heaptrack_print -f "$f" --print-peaks 1 --print-allocators 0 --print-temporary 0 \
    --print-leaks 0 --peak-limit "${TOP:-15}" --sub-peak-limit 3 2>/dev/null
done
