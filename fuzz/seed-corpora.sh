#!/usr/bin/env bash
# Seed each fuzz target's corpus from the bundled inputs (nothing here is committed:
# fuzz/corpus is rebuilt from the repository's own files).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/topology corpus/eos corpus/bird corpus/scenario corpus/runbook
cp ../topologies/*.yaml ../tests/bad/*.yaml corpus/topology/
# The bundled scenarios cover every step kind (run: with stdin:, lease:, reboot:, inject:,
# top-level pinned:); the test scenarios add the kubeadm runbook and the refused ones.
cp ../scenarios/*.yaml ../tests/data/kubeadm-preflight.yaml ../tests/bad-scenarios/*.yaml corpus/scenario/
i=0
for f in ../tests/data/k-w3/*.cfg ../tests/data/calico-confd/*/*.cfg; do
  cp "$f" "corpus/bird/$i-$(basename "$f")"; i=$((i + 1))
done
# The EOS blocks of the bundled topologies, one file each.
python3 - <<'PY'
import glob, re
n = 0
for path in glob.glob("../topologies/*.yaml"):
    for block in re.findall(r"config: \|\n((?:      .*\n|\n)+)", open(path).read()):
        open(f"corpus/eos/{n}.txt", "w").write("\n".join(l[6:] for l in block.splitlines()))
        n += 1
# Runbook lines of the scenarios (steps' `run:` and checks' `run:`), one file each; a
# `-f -` line carries its step's stdin after the first newline, as the runbook target reads it.
for path in sorted(glob.glob("../scenarios/*.yaml") + glob.glob("../tests/data/*.yaml")):
    text = open(path).read()
    for m in re.finditer(r"run: \|\n((?:( +)\S.*\n)(?:\2.*\n)*)|run: ([^|\n][^,}\n]*)", text):
        lines = [l.strip() for l in m.group(1).splitlines()] if m.group(1) else [m.group(3).strip()]
        stdin = re.match(r"\s*stdin: \|\n((?:( +)\S.*\n)(?:\2.*\n|\n)*)", text[m.end():])
        for line in lines:
            body = line + "\n" + stdin.group(1) if stdin and line.endswith("-f -") else line
            open(f"corpus/runbook/{n}.txt", "w").write(body)
            n += 1
PY
