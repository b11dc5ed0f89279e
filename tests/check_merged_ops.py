#!/usr/bin/env python3
"""check_merged_ops.py: a batch compared --by-op, merged, against `tracefuse ops` run on each
pair by itself and summed here.

Usage: check_merged_ops.py TRACEFUSE MANIFEST OUT [--min-differences N]

For every row of MANIFEST (label, trace1, trace2; paths from the manifest's directory) it runs
`tracefuse ops TRACE1 TRACE2 --format json` and checks that OUT/<label>.ops.json, which the batch
wrote, holds the same (its timings apart). Then it sums the pairs' own JSON into what the merge
must say: each fusion difference once (kind, scope, op, relation, fusing side, fused kernel and
extra kernel families), with the pairs where it appears in manifest order and its instances,
extra kernels, times and savings summed; each matched op's times per side; each pair's share of
kernel time linked to ops. Sides are the merge's: a pair whose traces are the other way round
(NVIDIA first) counts with its sides swapped. `tracefuse merge OUT --format json` must agree,
to the nanosecond; its text must list the first difference's op and pairs. With
--min-differences, the merge must list at least N differences (so that the test is not vacuous).
Exits 0 when all agree, 1 listing each difference.
"""
import json
import os
import subprocess
import sys

TIMINGS = "tracefuse"  # the key of the ops JSON that holds its timings


def ops_json(tracefuse, trace1, trace2):
    run = subprocess.run([tracefuse, "ops", trace1, trace2, "--format", "json"],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def manifest_rows(path):
    rows, header = [], None
    base = os.path.dirname(os.path.abspath(path))
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        resolve = (lambda p: p if os.path.isabs(p) else os.path.join(base, p))
        rows.append((fields[0], resolve(fields[1]), resolve(fields[2])))
    return rows


def expected_summary(pairs, sides):
    """pairs: [(label, ops JSON)] in manifest order."""
    differences, order, ops, shares = {}, [], {}, {}
    for label, j in pairs:
        platforms = [t["platform"] for t in j["traces"]]
        swapped = sides != ["trace1", "trace2"] and platforms[0] == sides[1]
        on_side = (lambda values: list(reversed(values)) if swapped else list(values))
        shares[label] = [t["linked_kernel_time_us"] / t["kernel_time_us"]
                         if t["kernel_time_us"] > 0 else 0 for t in j["traces"]]
        for d in j["fusion_differences"]:
            fused_side = None  # relation "algorithm": neither side
            if d["fused_by"] is not None:
                fused = ["trace1", "trace2"].index(d["fused_by"])
                fused_side = sides[1 - fused if swapped else fused]
            families = tuple(k["name"] for k in d["extra_kernels"])
            key = (d["kind"], d["scope"], d["op"], d["relation"], fused_side,
                   d["fused_kernel"], families)
            if key not in differences:
                order.append(key)
                differences[key] = {"instances": 0, "extra_time_us": 0, "saving_us": 0,
                                    "time_us": [0, 0], "counts": [0] * len(families),
                                    "pair_labels": []}
            m = differences[key]
            m["instances"] += d["instances"]
            m["extra_time_us"] += d["extra_time_us"]
            m["saving_us"] += d["saving_us"] or 0
            times = on_side([d["trace1"]["time_us"], d["trace2"]["time_us"]])
            m["time_us"] = [a + b for a, b in zip(m["time_us"], times)]
            m["counts"] = [a + k["count"] for a, k in zip(m["counts"], d["extra_kernels"])]
            if label not in m["pair_labels"]:
                m["pair_labels"].append(label)
        for row in j["ops"]:
            if not row["matched"]:
                continue
            m = ops.setdefault((row["op"], row["scope"]),
                               {"time_us": [0, 0], "pairs": 0, "instances": 0})
            times = on_side([row["trace1"]["time_us"], row["trace2"]["time_us"]])
            m["time_us"] = [a + b for a, b in zip(m["time_us"], times)]
            m["pairs"] += 1
            m["instances"] += row["instances"]
    return differences, order, ops, shares


def close(a, b):
    return abs(a - b) <= 1e-3 + 1e-9 * abs(b)


def main():
    tracefuse, manifest, out = sys.argv[1:4]
    least = int(sys.argv[sys.argv.index("--min-differences") + 1]) \
        if "--min-differences" in sys.argv else 0
    problems = []
    pairs = []
    for label, trace1, trace2 in manifest_rows(manifest):
        single = ops_json(tracefuse, trace1, trace2)
        stored = json.load(open(os.path.join(out, label + ".ops.json")))
        for j in (single, stored):
            j.pop(TIMINGS, None)
            for t in j["traces"]:
                t.pop("path", None)
        if single != stored:
            problems.append(f"{label}: {label}.ops.json differs from `tracefuse ops` on the pair")
        pairs.append((label, single))
    merged = json.loads(subprocess.run([tracefuse, "merge", out, "--format", "json"],
                                       capture_output=True, text=True).stdout)
    sides = merged["sides"]
    differences, order, ops, shares = expected_summary(pairs, sides)
    if merged["pairs_with_ops"] != len(pairs):
        problems.append(f"pairs_with_ops {merged['pairs_with_ops']}, expected {len(pairs)}")
    got = {}
    for d in merged["fusion_differences"]:
        key = (d["kind"], d["scope"], d["op"], d["relation"], d["fused_by"], d["fused_kernel"],
               tuple(k["name"] for k in d["extra_kernels"]))
        got[key] = d
    for key in order:
        want, have = differences[key], got.get(key)
        if have is None:
            problems.append(f"missing from the merge: {key}")
            continue
        for field in ("instances", "pair_labels"):
            if have[field] != want[field]:
                problems.append(f"{key}: {field} {have[field]}, expected {want[field]}")
        if have["pairs"] != len(want["pair_labels"]):
            problems.append(f"{key}: pairs {have['pairs']}, expected {len(want['pair_labels'])}")
        for field in ("extra_time_us", "saving_us"):
            if not close(have[field], want[field]):
                problems.append(f"{key}: {field} {have[field]}, expected {want[field]}")
        if not all(close(a, b) for a, b in zip(have["time_us"], want["time_us"])):
            problems.append(f"{key}: time_us {have['time_us']}, expected {want['time_us']}")
        counts = [k["count"] for k in have["extra_kernels"]]
        if counts != want["counts"]:
            problems.append(f"{key}: extra kernel counts {counts}, expected {want['counts']}")
    for key in got:
        if key not in differences:
            problems.append(f"in the merge, found by no pair: {key}")
    if len(got) < least:
        problems.append(f"the merge lists {len(got)} fusion differences, expected {least} or more")
    merged_ops = {(o["op"], o["scope"]): o for o in merged["ops"]}
    if set(merged_ops) != set(ops):
        problems.append(f"ops: {len(merged_ops)} in the merge, {len(ops)} expected")
    for key, want in ops.items():
        have = merged_ops.get(key)
        if have is None:
            continue
        if (have["pairs"], have["instances"]) != (want["pairs"], want["instances"]) or \
                not all(close(a, b) for a, b in zip(have["time_us"], want["time_us"])) or \
                not close(have["delta_us"], want["time_us"][0] - want["time_us"][1]):
            problems.append(f"op {key}: {have}, expected {want}")
    deltas = [abs(o["delta_us"]) for o in merged["ops"]]
    if deltas != sorted(deltas, reverse=True):
        problems.append("ops are not in order of |delta_us|")
    for p in merged["pairs"]:
        want = shares.get(p["label"])
        have = p["ops"]["linked_kernel_share"] if p["ops"] else None
        if want is None or have is None or not all(close(a, b) for a, b in zip(have, want)):
            problems.append(f"{p['label']}: linked_kernel_share {have}, expected {want}")
    text = subprocess.run([tracefuse, "merge", out], capture_output=True, text=True).stdout
    words_of_text = " ".join(text.split())  # a bullet wraps onto a second line
    if order:
        first = merged["fusion_differences"][0]
        n = len(first["pair_labels"])
        words = f" in {n} pair{'s' if n != 1 else ''}"
        what = first["op"] or first["scope"].split("/")[-1]  # a module's: its scope
        if what not in words_of_text or words not in words_of_text:
            problems.append(f"the text summary does not list {what}{words}:\n{text}")
    for line in problems:
        print("check_merged_ops:", line)
    print(f"check_merged_ops: {len(pairs)} pairs, {len(got)} fusion differences, "
          f"{len(merged_ops)} ops: {'agree' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
