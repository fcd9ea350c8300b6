#!/usr/bin/env bash
# Seed each fuzz target's corpus from the bundled inputs (nothing here is committed:
# fuzz/corpus is rebuilt from the repository's own files).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/topology corpus/eos corpus/bird corpus/scenario
cp ../topologies/*.yaml ../tests/bad/*.yaml corpus/topology/
cp ../scenarios/*.yaml corpus/scenario/
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
PY
