#!/usr/bin/env python3
"""No panic reachable from user input (issue #11): every `.unwrap()`, `.expect(`, `panic!(`,
`unreachable!(`, `todo!(` and `unimplemented!(` in `sim/` outside test code must be listed in
`.ci/panics-allowed.txt` with why it cannot fire. Fails on an unlisted occurrence and on a
listed one that no longer exists (so the list stays true).

Test code is skipped: files that are test modules (`tests.rs`, `tests_*.rs`, declared under
`#[cfg(test)]`) and, in other files, the item that follows a `#[cfg(test)]` attribute (brace
matched). Comments and string literals are blanked first, so prose about `unwrap()` does not
count.

Indexing and slicing (`v[i]`, `s[a..b]`) are checked the same way in the modules that read
what the user gives (`INPUT_BOUNDARY`: the parsers of every input kind, the BGP wire reader,
the runbook commands, the pipes of typed commands). Two forms are exempt because they cannot
panic on input: a full range `[..]`, and an index by a model id (`[x.idx()]`: ids are created
with the vectors they index — ARCHITECTURE.md "Panics"). Elsewhere (engine, views of the model)
indices are the model's own dense ids; the fuzz targets check them.

Allow-list format, one entry a line (`#` starts a comment line):
    FILE | TEXT | WHY
TEXT is a fragment of the occurrence's source line (trimmed); an entry covers every
occurrence in FILE whose line contains TEXT.
"""
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PATTERN = re.compile(r"\.unwrap\(\)|\.expect\(|\bpanic!\(|\bunreachable!\(|\btodo!\(|\bunimplemented!\(")
INPUT_BOUNDARY = [
    "sim/input/**/*.rs",
    "sim/wire/bgp_read.rs",
    "sim/scenario/file.rs",
    "sim/calico/datastore.rs",
    "sim/calico/datastore/*.rs",
    "sim/plan/*.rs",
    "sim/k8s/command.rs",
    "sim/k8s/*_cmd.rs",
    "sim/k8s/node_ops.rs",
    "sim/k8s/drain.rs",
    "sim/k8s/disruption.rs",
    "sim/k8s/termination.rs",
    "sim/k8s/sed.rs",
    "sim/k8s/control_plane.rs",
    "sim/k8s/etcd.rs",
    "sim/k8s/pod_facts.rs",
    "sim/views/pipe.rs",
    "sim/views/mod.rs",
]


def blank_comments_and_strings(src):
    """Same length and line structure; comments and string contents become spaces."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1:j]) + '"')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]) or src.startswith("'\\u{", i):
            j = src.find("'", i + 1)
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_items(src):
    """Blank the item after each `#[cfg(test)]` (a `mod x { … }`, a fn, or `mod x;`)."""
    lines = src.split("\n")
    out = list(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            depth, j, opened = 0, i, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                opened = opened or "{" in lines[j]
                out[j] = ""
                if (opened and depth <= 0) or (not opened and lines[j].rstrip().endswith(";") and j > i):
                    break
                j += 1
            i = j + 1
        else:
            i += 1
    return "\n".join(out)


def test_module_files():
    """Files declared as `#[cfg(test)] mod NAME;` (with or without a #[path])."""
    found = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "sim")):
        for f in files:
            if not f.endswith(".rs"):
                continue
            text = open(os.path.join(dirpath, f)).read()
            for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[path = \"([^\"]+)\"\]\s*)?mod (\w+);", text):
                base = dirpath if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(dirpath, f[:-3])
                found.add(os.path.normpath(os.path.join(base, m.group(1) or m.group(2) + ".rs")))
    return found


def index_expressions(line):
    """The bracketed part of each index or slice expression on a (blanked) line: a `[` right
    after an identifier, `)` or `]`, up to its matching `]`. Array types and literals (`[u8; 4]`,
    `vec![…]`, `&[…]`) follow other characters and are not matched."""
    for m in re.finditer(r"[A-Za-z0-9_)\]]\[", line):
        depth, j = 1, m.end()
        while j < len(line) and depth:
            depth += {"[": 1, "]": -1}.get(line[j], 0)
            j += 1
        inner = line[m.end():j - 1].strip()
        if inner != ".." and not inner.endswith(".idx()"):
            yield inner


def boundary_files():
    return {os.path.normpath(f) for g in INPUT_BOUNDARY for f in glob.glob(os.path.join(ROOT, g), recursive=True)}


def occurrences():
    skip = test_module_files()
    boundary = boundary_files()
    for dirpath, _, files in sorted(os.walk(os.path.join(ROOT, "sim"))):
        for f in sorted(files):
            path = os.path.normpath(os.path.join(dirpath, f))
            if not f.endswith(".rs") or path in skip:
                continue
            raw = open(path).read()
            code = strip_test_items(blank_comments_and_strings(raw))
            raw_lines = raw.split("\n")
            for no, line in enumerate(code.split("\n"), 1):
                found = len(PATTERN.findall(line))
                if path in boundary:
                    found += sum(1 for _ in index_expressions(line))
                for _ in range(found):
                    yield os.path.relpath(path, ROOT), no, raw_lines[no - 1].strip()


def main():
    allowed = []
    for no, line in enumerate(open(os.path.join(ROOT, ".ci", "panics-allowed.txt")), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ", 2)]
        if len(parts) != 3 or not all(parts):
            sys.exit(f".ci/panics-allowed.txt:{no}: expected `FILE | TEXT | WHY`")
        allowed.append([parts[0], parts[1], parts[2], 0, no])
    bad = []
    for file, no, text in occurrences():
        hit = [a for a in allowed if a[0] == file and a[1] in text]
        if hit:
            for a in hit:
                a[3] += 1
        else:
            bad.append(f"{file}:{no}: {text}")
    stale = [f".ci/panics-allowed.txt:{a[4]}: no `{a[1]}` in {a[0]} any more" for a in allowed if a[3] == 0]
    for b in bad:
        print(f"{b}\n  a panic reachable from input (unwrap/expect/panic!, or an index/slice in an input module)? return an error or use `get`, or list it in .ci/panics-allowed.txt with why it cannot fire")
    for s in stale:
        print(s)
    if bad or stale:
        sys.exit(1)
    print(f"panics: {sum(a[3] for a in allowed)} occurrences, each allowed with a reason ({len(allowed)} entries)")


if __name__ == "__main__":
    main()
