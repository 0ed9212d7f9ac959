#!/bin/bash
# Regenerates link/hot-symbols.txt, the order build.rs gives the release link (issue 12).
# Run it after a dependency update or before a release: the list names symbols with their hashes,
# which change with the crates' versions, so an old list packs less and less of the code.
#
# What it does: builds the release agent with the linker's map, runs the footprint harness
# (standalone, then connected with 0, 110 and 1,000 realistic pods) with the agent under
# callgrind and its API server behind a TLS proxy (a real API server speaks TLS: the handshake
# and record code must be in the list), then maps the executed instructions to the functions'
# sections. Each connected run ends in a relist whose watch the harness refuses once (503)
# first, so kube's retry of a refused request is in the list too. A second harness run, over
# plain HTTP (the tests' and benchmarks' API server), adds the code only that path runs, after
# all of the TLS runs' code. Needs valgrind, openssl and python3; takes about 5 minutes on an
# idle machine here.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
cleanup() {
    # The TLS proxies this script started, by the PIDs the wrapper recorded.
    if [ -f "$work/proxies" ]; then
        while read -r p; do kill "$p" 2>/dev/null || true; done <"$work/proxies"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

NODEWARDEN_LINK_MAP="$work/map.txt" cargo build --release --locked
cp target/release/nodewarden "$work/nw-prof"
cargo build --example footprint

# A CA and a server certificate for 127.0.0.1 (webpki refuses a CA certificate as the server's).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" -days 1 \
    -subj /CN=profile-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/leaf.csr" \
    -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    >"$work/ext.cnf"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -out "$work/cert.pem" -days 1 -extfile "$work/ext.cnf" 2>/dev/null

cat >"$work/proxy.py" <<'EOF'
# TLS in front of the harness's plain-HTTP API server: argv upstream host, port, listen port.
import asyncio, ssl, sys
host, port, listen, cert, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
async def pipe(r, w):
    try:
        while b := await r.read(65536):
            w.write(b)
            await w.drain()
    except Exception:
        pass
    finally:
        w.close()
async def handle(r, w):
    try:
        ur, uw = await asyncio.open_connection(host, port)
    except OSError:
        w.close()
        return
    await asyncio.gather(pipe(r, uw), pipe(ur, w))
async def main():
    async with await asyncio.start_server(handle, "127.0.0.1", listen, ssl=ctx) as srv:
        await srv.serve_forever()
asyncio.run(main())
EOF

# The harness's --bin: called as `run --config PATH`. A connected configuration gets a copy
# whose kubeconfig points at a TLS proxy (unless PLAIN is set); each run's profile is named for
# its kind.
cat >"$work/agent.sh" <<EOF
#!/bin/bash
set -eu
cfg="\$3"
kind=standalone
kc=\$(sed -n 's/^kubeconfig = "\(.*\)"\$/\1/p' "\$cfg")
if [ -n "\$kc" ] && [ -n "\${PLAIN:-}" ]; then
    kind=plain
elif [ -n "\$kc" ]; then
    kind=connected
    up=\$(sed -n 's#^ *server: http://##p' "\$kc")
    port=\$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 "$work/proxy.py" "\${up%:*}" "\${up#*:}" "\$port" "$work/cert.pem" "$work/key.pem" &
    echo \$! >>"$work/proxies"
    ca=\$(base64 -w0 "$work/ca.pem")
    sed -e "s#server: .*#server: https://127.0.0.1:\$port\n    certificate-authority-data: \$ca#" "\$kc" >"\$kc.tls"
    sed -e "s#^kubeconfig = .*#kubeconfig = \"\$kc.tls\"#" "\$cfg" >"\$cfg.tls"
    cfg="\$cfg.tls"
    sleep 1
fi
exec valgrind --tool=callgrind --dump-instr=yes \
    --callgrind-out-file="$work/cg-\$kind.%p" "$work/nw-prof" run --config "\$cfg" 2>/dev/null
EOF
chmod +x "$work/agent.sh"
touch "$work/proxies"
status=0
target/debug/examples/footprint --bin "$work/agent.sh" --pods 0,110,1000 --partition-pods 0 \
    --heap-pods 0 --peer-seconds 5 --idle-seconds 10 || status=$?
if [ "$status" -eq 0 ]; then
    PLAIN=1 target/debug/examples/footprint --bin "$work/agent.sh" --pods 110,1000 \
        --partition-pods 0 --heap-pods 0 --peer-seconds 5 --idle-seconds 10 || status=$?
fi
if [ "$status" -ne 0 ]; then
    echo "hot-symbols: the harness failed ($status); link/hot-symbols.txt left as it was" >&2
    exit 1
fi
python3 scripts/hot_symbols.py "$work/map.txt" nw-prof "$work"/cg-standalone.* \
    -- "$work"/cg-connected.* -- "$work"/cg-plain.* >link/hot-symbols.txt
echo "hot-symbols: link/hot-symbols.txt written; rebuild the release binary to use it" >&2
