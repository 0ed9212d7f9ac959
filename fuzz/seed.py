#!/usr/bin/env python3
"""Adds the seed inputs of every fuzz target to fuzz/corpus/<target>/ (files named by their
SHA-1, as libFuzzer names them) from the repository's fixtures (tests/data,
config.example.toml, packaging/config.toml) and this machine's /proc. The kept corpus is these
seeds plus what fuzzing found, minimised with `cargo fuzz cmin`; see fuzz/README.md. Run from anywhere: python3 fuzz/seed.py"""

import glob
import hashlib
import os

FUZZ = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(FUZZ)
OUT = os.path.join(FUZZ, "corpus")


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def repo(*parts):
    return os.path.join(REPO, *parts)


# config: the example, the package's default, every test fixture.
for path in [repo("config.example.toml"), repo("packaging", "config.toml")] + sorted(
    glob.glob(repo("tests", "data", "config", "*.toml"))
):
    put("config", read(path))

for q in ["100Mi", "1.5Gi", "500m", "1e3", "5E-3", "-1k", "0", "12345678901234567890Ei",
          "0.000000001", "1n", "999u", "7Ki", "+3M", "1.0e+9"]:
    put("quantity", q.encode())

for d in ["10s", "1m30s", "1h2m3.5s", ".5s", "+300ms", "0", "-0s", "1m 30s", "2 hours",
          "1d", "99999999999h", "1µs", "5min"]:
    put("duration", d.encode())

for t in ["\x00h memory.available=100Mi\nh nodefs.available=10%\n",
          "\x01s memory.available=1.5Gi\ng memory.available=1m30s\nr memory.available=5%\n",
          "\x03h imagefs.inodesFree=5%\nh pid.available=0%\nr nodefs.available=500Mi\n",
          "\x00p memory.full.avg10=20\np io.some.avg60=100\np cpu.some.avg300=0.5\n"]:
    put("threshold", t.encode("latin-1"))

# kernel_files: each fixture tree, and this machine (sections in the target's order).
ORDER = ["proc/meminfo", "memory.stat", "memory.usage_in_bytes", "proc/loadavg",
         "proc/sys/kernel/pid_max", "proc/sys/kernel/threads-max", "proc/pressure/memory",
         "proc/pressure/io", "proc/pressure/cpu", "proc/stat"]


def kernel(proc, cgroup_stat, usage):
    parts = []
    for name in ORDER:
        if name == "memory.stat":
            data = read(cgroup_stat)
        elif name == "memory.usage_in_bytes":
            data = read(usage) if usage else b"0\n"
        else:
            data = read(os.path.join(proc, name[len("proc/"):]))
        parts.append(data if data is not None else b"")
    return b"\x00".join(parts)


for tree in sorted(glob.glob(repo("tests", "data", "sample", "*"))):
    cg = os.path.join(tree, "sys", "fs", "cgroup")
    v1 = os.path.join(cg, "memory")
    if os.path.isdir(v1):
        put("kernel_files", kernel(os.path.join(tree, "proc"), os.path.join(v1, "memory.stat"),
                                   os.path.join(v1, "memory.usage_in_bytes")))
    else:
        put("kernel_files", kernel(os.path.join(tree, "proc"), os.path.join(cg, "memory.stat"), None))
stat = "/sys/fs/cgroup/memory.stat" if os.path.exists("/sys/fs/cgroup/memory.stat") else \
    "/sys/fs/cgroup/memory/memory.stat"
put("kernel_files", kernel("/proc", stat, "/sys/fs/cgroup/memory/memory.usage_in_bytes"))

# cgroup_paths: this machine's mountinfo and cgroup file, and a v2 kubelet-shaped one.
put("cgroup_paths", b"\x00".join([read("/proc/self/mountinfo") or b"",
                                  b"/sys/fs/cgroup/pids/kubepods/burstable",
                                  read("/proc/self/cgroup") or b"", b"pids"]))
put("cgroup_paths", b"\x00".join([
    b"30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
    b"31 30 0:27 /sub\\040dir /mnt/cg rw - cgroup cgroup rw,pids\n",
    b"/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice",
    b"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice/cri.scope\n",
    b"name=systemd"]))

# explain: each node fixture with each pod fixture.
ex = repo("tests", "data", "explain")
nodes = [p for p in sorted(glob.glob(os.path.join(ex, "*"))) if "node" in os.path.basename(p)]
pods = [p for p in sorted(glob.glob(os.path.join(ex, "*"))) if "node" not in os.path.basename(p)]
for n in nodes:
    for p in pods:
        put("explain", read(n) + b"\x00" + read(p))

for body in [b'{"from":"worker-1","zone":"eu-1a"}',
             b'{"node":"worker-2","zone":"eu-1a","reachable":true,"lastContactAgeMillis":1500}',
             b'{"node":"w","zone":"","reachable":false,"lastContactAgeMillis":null}',
             b"0123456789abcdef0123456789abcdef", b"1700000000",
             b"1700000000\n0123456789abcdef0123456789abcdef\n" + b"ab" * 32]:
    put("peer", body)
