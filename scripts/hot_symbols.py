#!/usr/bin/env python3
"""The release binary's executed functions, for link/hot-symbols.txt (issue 12).

Usage: hot_symbols.py MAP BINARY_NAME FIRST_RUN... [-- LATER_RUN...]... > link/hot-symbols.txt
       hot_symbols.py --check MAP LIST [MIN_PERCENT]

MAP is the linker map of the profiled build (NODEWARDEN_LINK_MAP=path cargo build --release);
each RUN is a callgrind output (`valgrind --tool=callgrind --dump-instr=yes`) of that build.
Prints one symbol per executed `.text` input section: those the first runs executed (the
standalone agent) first, then those only the next group executed (connected over TLS), then
those only the group after it executed (connected over plain HTTP), and so on, each group the
most executed first. A standalone agent touches only the start of the list, and the code a
later group adds never spreads an earlier group's.

With --check, fails when fewer than MIN_PERCENT (90) of the symbols of LIST are functions of
the build MAP describes: the list has gone stale (a dependency update changes its symbols'
hashes) and the packing it gives is lost until it is regenerated (scripts/hot-symbols.sh).
"""
import bisect
import re
import sys


def sections(map_path):
    """(start, end, symbol) of every .text input section, sorted by start."""
    out = []
    in_text = False
    pending = None
    for line in open(map_path, encoding="utf-8", errors="replace"):
        cols = line.split()
        if len(cols) == 5 and cols[4].startswith("."):
            in_text = cols[4] == ".text"
            continue
        if not in_text or len(cols) < 5:
            continue
        vma, size = int(cols[0], 16), int(cols[2], 16)
        rest = " ".join(cols[4:])
        m = re.search(r":\(\.text\.(?:(?:unlikely|hot|startup|exit)\.)?(.+)\)$", rest)
        if m:
            out.append([vma, vma + size, m.group(1)])
            pending = None
        elif rest.endswith(":(.text)"):
            # A section holding several functions (C and assembly objects): named by its first
            # symbol, which the next line lists.
            pending = [vma, vma + size, None]
            out.append(pending)
        elif pending is not None and pending[2] is None and ":(" not in rest:
            pending[2] = rest
    return sorted((s for s in out if s[2]), key=lambda s: s[0])


def executed(paths, binary):
    """Executed instruction addresses in `binary` (offsets as callgrind reports them) -> count."""
    counts = {}
    for path in paths:
        names = {}
        ob = None
        last = 0
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith(("ob=", "cob=")):
                # The object names are numbered where first seen, by either kind of line.
                m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith("ob="):
                    ob = names.get(m.group(1))
                continue
            if line.startswith("calls="):
                continue
            c = line[:1]
            if not (c.isdigit() or c in "+-*"):
                continue
            cols = line.split()
            p = cols[0]
            if p.startswith("0x"):
                last = int(p, 16)
            elif p[0] == "+":
                last += int(p[1:], 16) if p[1:].startswith("0x") else int(p[1:])
            elif p[0] == "-":
                last -= int(p[1:], 16) if p[1:].startswith("0x") else int(p[1:])
            elif p != "*":
                last = int(p)
            if ob and ob.endswith("/" + binary):
                cost = int(cols[-1]) if len(cols) >= 3 else 1
                counts[last] = counts.get(last, 0) + cost
    return counts


def check(map_path, list_path, min_percent):
    """Exit status 1 when the list has gone stale for the build of `map_path`."""
    have = {s[2] for s in sections(map_path)}
    wanted = [l.strip() for l in open(list_path, encoding="utf-8") if l.strip()]
    found = sum(1 for w in wanted if w in have)
    percent = 100.0 * found / max(len(wanted), 1)
    print(
        f"hot symbols: {found} of {len(wanted)} ({percent:.1f}%) are in this build "
        f"(at least {min_percent}% wanted)",
        file=sys.stderr,
    )
    if percent < min_percent:
        print(
            "hot symbols: the list is stale; run scripts/hot-symbols.sh and commit "
            "link/hot-symbols.txt",
            file=sys.stderr,
        )
        return 1
    return 0


def main():
    if sys.argv[1:2] == ["--check"]:
        args = sys.argv[2:]
        sys.exit(check(args[0], args[1], float(args[2]) if len(args) > 2 else 90.0))
    map_path, binary, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    groups = [[]]
    for run in runs:
        if run == "--":
            groups.append([])
        else:
            groups[-1].append(run)
    secs = sections(map_path)
    starts = [s[0] for s in secs]
    printed = set()
    for group in groups:
        if not group:
            continue
        hot = {}
        missed = 0
        for addr, n in executed(group, binary).items():
            i = bisect.bisect_right(starts, addr) - 1
            if i >= 0 and addr < secs[i][1]:
                hot[i] = hot.get(i, 0) + n
            else:
                missed += 1  # .plt, .init: not ordered
        new = [i for i in sorted(hot, key=lambda i: -hot[i]) if i not in printed]
        size = sum(secs[i][1] - secs[i][0] for i in new)
        print(
            f"{len(new)} more of {len(secs)} sections executed, {size} bytes; "
            f"{missed} addresses outside .text",
            file=sys.stderr,
        )
        for i in new:
            printed.add(i)
            print(secs[i][2])


if __name__ == "__main__":
    main()
