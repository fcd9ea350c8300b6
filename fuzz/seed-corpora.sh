#!/usr/bin/env bash
# Seed each fuzz target's corpus from the bundled inputs (nothing here is committed:
# fuzz/corpus is rebuilt from the repository's own files).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/topology corpus/eos corpus/bird corpus/scenario corpus/runbook corpus/frr \
  corpus/containerlab corpus/pod_facts corpus/plan corpus/bgp_message corpus/lab
cp ../topologies/*.yaml ../tests/bad/*.yaml corpus/topology/
# The bundled scenarios cover every step kind (run: with stdin:, lease:, reboot:, inject:,
# top-level pinned:); the test scenarios add the kubeadm runbook and the refused ones.
cp ../scenarios/*.yaml ../tests/data/kubeadm-preflight.yaml ../tests/bad-scenarios/*.yaml corpus/scenario/
i=0
for f in ../tests/data/k-w3/*.cfg ../tests/data/calico-confd/*/*.cfg; do
  cp "$f" "corpus/bird/$i-$(basename "$f")"; i=$((i + 1))
done
# Every bundled and test frr.conf (the FRR lab's, the RFC 7938 spines', the differential cases').
i=0
for f in $(find ../topologies ../tests -name '*.conf' -o -name 'frr.conf*' | sort); do
  grep -q '^router \|^interface \|^frr ' "$f" || continue
  cp "$f" "corpus/frr/$i-$(basename "$f")"; i=$((i + 1))
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

# containerlab: the bundled lab and the test labs. The target reads its input as
# tests/bad/fuzz.clab.yml, so relative startup-config and bind paths are rewritten to reach the
# files beside each lab from there (their EOS and FRR configurations are parsed too).
python3 - <<'PY'
import glob, os, re
for n, path in enumerate(sorted(glob.glob("../topologies/**/*.clab.y*ml", recursive=True)
                                + glob.glob("../tests/**/*.clab.y*ml", recursive=True))):
    rel = os.path.relpath(os.path.dirname(path), "../tests/bad")
    text = open(path).read()
    if rel != ".":
        text = re.sub(r"(?<=startup-config: )(?=[\w.-]+)", rel + "/", text)
        text = re.sub(r"(?<=- )(?=[\w.-]+:/etc/)", rel + "/", text)
        text = re.sub(r'(?<=")(?=[\w.-]+:/etc/)', rel + "/", text)
    open(f"corpus/containerlab/{n}.clab.yml", "w").write(text)
# pod_facts: the `inject: pods:` lists of the scenarios, dedented (the target indents its input
# back under a step's `inject: pods:`), plus lists aimed at the kubeadm-preflight cluster's pods.
n = 0
for path in sorted(glob.glob("../scenarios/*.yaml") + glob.glob("../tests/**/*.yaml", recursive=True)):
    for m in re.finditer(r"\n( +)pods:\n((?:\1  .*\n|\n)+)", open(path).read()):
        indent = len(m.group(1)) + 2
        body = "".join(l[indent:] + "\n" for l in m.group(2).splitlines())
        if body.lstrip().startswith("- "):
            open(f"corpus/pod_facts/{n}.yaml", "w").write(body)
            n += 1
for body in [
    "- namespace: kube-system\n  selector: k8s-app=calico-node\n  ready: 0/1\n  status: Running\n  restarts: 3\n  last_restart: 2m\n  log: |\n    line one\n  previous_log: gone\n  events:\n    - {type: Warning, reason: Unhealthy, message: probe failed, count: 5, first_seen: 1h, last_seen: 30s}\n",
    "- namespace: kube-system\n  selector: k8s-app=kube-dns\n  status: CrashLoopBackOff\n  restarts: 0\n  events:\n    - {type: Normal, reason: Pulled, from: kubelet, message: ok}\n",
]:
    open(f"corpus/pod_facts/{n}.yaml", "w").write(body)
    n += 1
PY

# plan: the pools files written by tests/plan.rs (its string literals holding a `pools:` key), and
# one with every key.
python3 - <<'PY'
import ast, re
text = open("../tests/plan.rs").read()
n = 0
for lit in re.findall(r'"((?:[^"\\]|\\.)*pools:(?:[^"\\]|\\.)*)"', text):
    open(f"corpus/plan/{n}.yaml", "w").write(ast.literal_eval('"' + lit + '"'))
    n += 1
open(f"corpus/plan/{n}.yaml", "w").write(
    "supernet: 10.20.0.0/16\nbuffer_pct: 30\nreserved: 4\npools:\n"
    "  - {name: a, max_pods: 40, nodes: 30, nic_ip_limit: 50, nics: 2, warm_per_node: 5,"
    " in_use: 700, dedicated_pct: 50, zones: 3}\n"
    "  - {name: b, cluster_cidr: 10.244.0.0/16, node_mask: 24, subnet: /22, buffer_pct: 10}\n")
PY
# bgp_message: a KEEPALIVE, an OPEN with 4-octet AS and ADD-PATH, an UPDATE with ADD-PATH ids
# (as fabsim encodes them; the byte values are RFC 4271/6793/7911's layouts).
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\000\023\004' > corpus/bgp_message/keepalive
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\000\053\001\004\375\350\000\360\177\000\000\002\016\002\014\101\004\000\000\375\350\105\004\000\001\001\003' > corpus/bgp_message/open
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\000\063\002\000\000\000\024\100\001\001\000\100\002\006\002\001\000\000\375\350\100\003\004\012\000\013\001\000\000\000\001\030\012\102\157' > corpus/bgp_message/update
# lab: structure-aware, it needs no seeds: any bytes choose a lab and its runbook.
