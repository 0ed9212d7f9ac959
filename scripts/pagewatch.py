#!/usr/bin/env python3
"""Which pages of a process's own binary become resident, and when (issue 25).

Usage: pagewatch.py PID OUT BINARY

Polls /proc/PID/pagemap ten times a second (the present bit needs no root; only the frame
numbers do) for every mapping of BINARY. Writes to OUT one line per page the first time it is
present, `<unix time> page <file offset> <permissions>`, and after each poll one line
`<unix time> status VmHWM=… RssAnon=… RssFile=…` (kB). Ends when the process does.

Start it from a wrapper that then `exec`s the agent, so PID is the agent's. The kernel maps a
file's pages 16 at a time around a fault (fault-around), so a burst of 16 new pages is one
fault, not 16 functions run; `perf record -e page-faults -d -p PID` names the faulting address.
"""
import os
import struct
import sys
import time


def mappings(pid, binary):
    out = []
    for line in open(f"/proc/{pid}/maps"):
        cols = line.split()
        if len(cols) >= 6 and os.path.realpath(cols[5]) == binary:
            start, end = (int(x, 16) for x in cols[0].split("-"))
            out.append((start, end, int(cols[2], 16), cols[1]))
    return out


def main():
    pid, out_path, binary = int(sys.argv[1]), sys.argv[2], os.path.realpath(sys.argv[3])
    seen = set()
    with open(out_path, "w") as out:
        while True:
            try:
                maps = mappings(pid, binary)
                pagemap = open(f"/proc/{pid}/pagemap", "rb")
                status = [
                    l.split()
                    for l in open(f"/proc/{pid}/status")
                    if l.startswith(("VmHWM", "RssAnon", "RssFile"))
                ]
            except (FileNotFoundError, ProcessLookupError):
                return
            now = time.time()
            with pagemap:
                for start, end, offset, perms in maps:
                    try:
                        pagemap.seek(start // 4096 * 8)
                        data = pagemap.read((end - start) // 4096 * 8)
                    except OSError:
                        return  # the process ended between the reads
                    for i in range(len(data) // 8):
                        (entry,) = struct.unpack_from("<Q", data, i * 8)
                        page = offset + i * 4096
                        if entry >> 63 & 1 and page not in seen:
                            seen.add(page)
                            out.write(f"{now:.3f} page {page:#x} {perms}\n")
            fields = " ".join(f"{s[0].rstrip(':')}={s[1]}" for s in status)
            out.write(f"{now:.3f} status {fields}\n")
            out.flush()
            time.sleep(0.1)


if __name__ == "__main__":
    main()
