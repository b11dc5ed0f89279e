#!/usr/bin/env python3
"""The fusion differences of `tracefuse ops` on real pairs say only what a user can check by hand.

For every pair given (TRACE1 TRACE2 alternating), in both orders:
- a `fusion` or `split` names a fused kernel, and no kernel of a light operation (an element-wise,
  norm, activation, RoPE... kernel: not `heavy` in data/kernel-roles.yaml) covers an extra kernel
  of a heavy one (GEMM, attention, MoE GEMM, convolution);
- an `algorithm` has no fused_by and no fused kernel;
- the extra kernels' time is part of the unfused side's time, and their counts add up to the
  extra categories';
- swapping the traces swaps fused_by, the trace1/trace2 blocks and the example's sides, and
  nothing else.
With --qwen3 the first pair is the SGLang Qwen3-30B-A3B decode pair (MI300X, B300) and its
differences must be exactly those the README shows (QK norm, attention reduce, split-K reduces,
MoE routing and finalize), with nothing for the RoPE / KV-cache store kernels.

Exit 0 when all hold, 1 with one line per problem, 77 (skipped) when a trace is missing.

usage: real_pairs.py [--qwen3] TRACEFUSE ROLES_YAML TRACE1 TRACE2 [TRACE1 TRACE2 ...]
"""
import json
import os
import subprocess
import sys

import yaml

OTHER = {"trace1": "trace2", "trace2": "trace1"}


def differences(tracefuse, a, b):
    run = subprocess.run([tracefuse, "ops", a, b, "--format", "json", "--progress", "never"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"tracefuse ops {a} {b} exited {run.returncode}: {run.stderr}")
    return json.loads(run.stdout)["fusion_differences"]


def swapped(d):
    s = dict(d)
    s["trace1"], s["trace2"] = d["trace2"], d["trace1"]
    if d["fused_by"] is not None:
        s["fused_by"] = OTHER[d["fused_by"]]
    example = dict(d["example"])
    example["trace1"], example["trace2"] = d["example"]["trace2"], d["example"]["trace1"]
    example["index"] = None  # the trace-1 unit's position: the other trace's after a swap
    s["example"] = example
    return s


def comparable(d):
    d = dict(d)
    d["example"] = dict(d["example"], index=None)
    return json.dumps(d, sort_keys=True)


def check_claims(label, diffs, heavy, problems):
    for d in diffs:
        what = f"{label}: {d['relation']} {d['op'] or d['scope']} {d['extra_categories']}"
        if d["relation"] == "algorithm":
            if d["fused_by"] is not None or d["fused_kernel"] is not None:
                problems.append(f"{what}: an algorithm names who fuses")
            continue
        if d["fused_by"] not in OTHER or not d["fused_kernel"]:
            problems.append(f"{what}: no fusing side or fused kernel")
            continue
        light = d["fused_kernel_category"] not in heavy
        for k in d["extra_kernels"]:
            if k["category"] in heavy and light:
                problems.append(f"{what}: {d['fused_kernel']} ({d['fused_kernel_category']}) "
                                f"claims the work of {k['name']} ({k['category']})")
        unfused = OTHER[d["fused_by"]]
        if d["extra_time_us"] > d[unfused]["time_us"] + 1e-6:
            problems.append(f"{what}: extra time {d['extra_time_us']} over the unfused side's")
        counts = {}
        for k in d["extra_kernels"]:
            counts[k["category"]] = counts.get(k["category"], 0) + k["count"]
        if counts != d["extra_categories"]:
            problems.append(f"{what}: extra kernels {counts} vs categories {d['extra_categories']}")


# The Qwen3-30B-A3B decode pair: (relation, fused_by, instances, a word of the fused kernel,
# words of the extra kernels).
QWEN3 = [
    ("fusion", "trace2", 48, "fused_qknorm", ["elementwise_kernel", "add_rmsnorm_quant"]),
    ("split", "trace2", 48, "fmhaSm", ["paged_attention_ll#mi_reduce_kernel"]),
    ("split", "trace1", 96, "Cijk_", ["splitKreduce"]),
    ("fusion", "trace2", 48, "routingIndices", ["ck_tile::kentry"]),
    ("fusion", "trace1", 48, "kernel_moe_gemm", ["finalizeKernel"]),
]


def check_qwen3(diffs, problems):
    left = list(diffs)
    for relation, fused_by, instances, fused, extras in QWEN3:
        found = [d for d in left
                 if d["relation"] == relation and d["fused_by"] == fused_by
                 and d["instances"] == instances and fused in (d["fused_kernel"] or "")
                 and all(any(e in k["name"] for k in d["extra_kernels"]) for e in extras)]
        if len(found) != 1:
            problems.append(f"qwen3: {relation} by {fused_by} x{instances} with {fused} over "
                            f"{extras}: found {len(found)}")
            continue
        left.remove(found[0])
    for d in left:
        problems.append(f"qwen3: unexpected {d['relation']} by {d['fused_by']} "
                        f"x{d['instances']}: {d['extra_kernels']}")
    for d in diffs:
        if any(k["category"] in ("RoPE", "KV_Cache") for k in d["extra_kernels"]):
            problems.append(f"qwen3: the RoPE / KV-cache store is reported: {d['extra_kernels']}")


def main(argv):
    qwen3 = argv[0] == "--qwen3"
    if qwen3:
        argv = argv[1:]
    tracefuse, roles, traces = argv[0], argv[1], argv[2:]
    for t in traces:
        if not os.path.exists(t):
            print(f"skipped: {t} is not present on this machine")
            return 77
    with open(roles) as f:
        heavy = set(yaml.safe_load(f)["heavy"])
    problems = []
    for i in range(0, len(traces), 2):
        a, b = traces[i], traces[i + 1]
        label = f"{os.path.basename(a)} vs {os.path.basename(b)}"
        forward, backward = differences(tracefuse, a, b), differences(tracefuse, b, a)
        check_claims(label, forward, heavy, problems)
        if sorted(map(comparable, map(swapped, forward))) != sorted(map(comparable, backward)):
            problems.append(f"{label}: swapping the traces changes more than the sides")
        if qwen3 and i == 0:
            check_qwen3(forward, problems)
        print(f"{label}: {len(forward)} differences: "
              + ", ".join(f"{d['relation']} x{d['instances']}" for d in forward))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
