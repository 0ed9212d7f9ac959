#!/usr/bin/env python3
"""Rewrites citations of the team's working notes (DESIGN.md, SEMANTICS.md, STYLE.md, which a
clone of this repository does not have) into citations of the repository's own docs/.

Re-run it after merging a branch written against the old notes:

    python3 scripts/doc-citations.py          # rewrite in place, list what is left
    python3 scripts/doc-citations.py --dry-run

tests/docs.rs fails while any old citation is left, or when a docs/ section cited does not
exist. The mapping below is the whole translation; docs/semantics.md keeps SEMANTICS.md's
section numbers, so those map one to one.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What is scanned: the code and everything shipped beside it. Not fuzz/ (its corpus is mutated
# input, not prose) and not docs/ (the target).
SCAN = ["src", "tests", "benches", "examples", "packaging", "systemd", "scripts", ".ci",
        "README.md", "BENCHMARKS.md", "config.example.toml", "build.rs"]
SKIP = {"scripts/doc-citations.py", "tests/docs.rs"}

# A line break inside a comment: newline, indentation, the comment marker.
BR = r"(?:[ \t]*\n[ \t]*(?://[/!]?|#)[ \t]*|[ \t]+)"

# Literal rewrites first (one place each, where the generic rule would say less).
LITERAL = [
    ("src/lib.rs", "See README.md; the design is DESIGN.md's §2.",
     "See README.md; the design is docs/architecture.md."),
    ("src/agent/connected.rs", "(DESIGN §2)", "(docs/architecture.md §3)"),
    ("src/terminate/mod.rs", "(DESIGN §2, §6\n//! rule 4)",
     "(docs/architecture.md §2,\n//! docs/fence.md §4)"),
]

# DESIGN.md §N [rule R] → docs/….md §M. Most specific first.
DESIGN = [
    (("6", "1"), "docs/fence.md §2"),   # last contact
    (("6", "2"), "docs/fence.md §3"),   # eviction time
    (("6", "3"), "docs/fence.md §3"),   # stopped by
    (("6", "4"), "docs/fence.md §4"),   # termination, keep dead
    (("6", "5"), "docs/fence.md §7"),   # contact returns
    (("6", "6"), "docs/fence.md §5"),   # the peer quorum
    (("6", "7"), "docs/fence.md §8"),   # modes
    (("6", "8"), "docs/fence.md §9"),   # the pod view
    (("1", None), "docs/architecture.md §1"),
    (("2", None), "docs/architecture.md §2"),
    (("3", None), "docs/architecture.md §4"),
    (("4", None), "docs/architecture.md §5"),
    (("5", None), "docs/architecture.md §6"),
    (("6", None), "docs/fence.md"),
    (("7", None), "docs/architecture.md §7"),
    (("8", None), "docs/architecture.md §8"),
]
# STYLE.md §N → docs/….
STYLE = {"6": "docs/architecture.md §2"}


def rewrite(text):
    """The text with every old citation rewritten, and the number of rewrites."""
    n = 0

    def design(m):
        nonlocal n
        section, rule = m.group("sec"), m.group("rule")
        for (s, r), new in DESIGN:
            if s == section and r == rule:
                n += 1
                # Keep a line break the old citation had, so no comment line grows.
                br = re.search(r"[ \t]*\n[ \t]*(?://[/!]?|#)[ \t]*", m.group(0))
                if br and " §" in new:
                    doc, sec = new.split(" §")
                    return doc + br.group(0) + "§" + sec
                return new
        for (s, r), new in DESIGN:
            if s == section and r is None:
                n += 1
                return new + (m.group("rest") or "")
        return m.group(0)

    text = re.sub(r"DESIGN(?:\.md)?" + BR + r"§(?P<sec>\d+)(?:(?P<rest>" + BR + r"rule )(?P<rule>\d+))?",
                  design, text)

    def semantics(m):
        nonlocal n
        n += 1
        return "docs/semantics.md" + m.group("br") + "§"

    text = re.sub(r"SEMANTICS(?:\.md)?(?P<br>" + BR + r")§", semantics, text)

    def style(m):
        nonlocal n
        if m.group(1) in STYLE:
            n += 1
            return STYLE[m.group(1)]
        return m.group(0)

    text = re.sub(r"STYLE(?:\.md)? §(\d+)", style, text)
    return text, n


WIDTH = 100
COMMENT = re.compile(r"^(\s*(?://[/!]?|#)\s?)(\s*)(\S.*)$")


def reflow(old, new):
    """Pushes the words a rewrite moved past WIDTH onto the comment line below (or a new one),
    within the same comment paragraph, so that no rewritten line overflows. Lines that were
    already long, code, tables and fenced blocks are left alone."""
    before = set(old.splitlines())
    lines = new.split("\n")
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        m = COMMENT.match(line)
        if m and m.group(3).startswith("```"):
            fenced = not fenced
        if (fenced or not m or len(line) <= WIDTH or line in before
                or m.group(3).startswith("|")):
            i += 1
            continue
        head = line
        cut = head.rfind(" ", 0, WIDTH + 1)
        while cut > len(m.group(1)) + len(m.group(2)) and head[cut - 1] == " ":
            cut -= 1
        if cut <= len(m.group(1)) + len(m.group(2)):
            i += 1
            continue
        rest = head[cut:].strip()
        lines[i] = head[:cut].rstrip()
        nxt = COMMENT.match(lines[i + 1]) if i + 1 < len(lines) else None
        same = (nxt and nxt.group(1) == m.group(1) and not fenced
                and not re.match(r"([-*|]|\d+\.|```)", nxt.group(3)))
        if same:
            lines[i + 1] = nxt.group(1) + nxt.group(2) + rest + " " + nxt.group(3)
        else:
            lines.insert(i + 1, m.group(1) + m.group(2) + rest)
        i += 1
    return "\n".join(lines)


def files():
    for top in SCAN:
        path = os.path.join(ROOT, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, _, names in os.walk(path):
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                if rel not in SKIP:
                    yield rel


def main():
    dry = "--dry-run" in sys.argv[1:]
    total, left = 0, []
    for rel in files():
        path = os.path.join(ROOT, rel)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        new = text
        for where, old, repl in LITERAL:
            if rel == where and old in new:
                new = new.replace(old, repl)
                total += 1
        new, n = rewrite(new)
        total += n
        if new != text and not rel.endswith(".md"):
            new = reflow(text, new)
        if new != text and not dry:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
        for i, line in enumerate(new.splitlines(), 1):
            if re.search(r"\b(DESIGN|SEMANTICS)\b|\bSTYLE(\.md)? §", line):
                left.append(f"{rel}:{i}: {line.strip()}")
    print(f"{total} citation(s) {'would be ' if dry else ''}rewritten")
    for line in left:
        print("left:", line)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
