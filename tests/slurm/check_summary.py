#!/usr/bin/env python3
"""check_summary.py SUMMARY_JSON COMPLETE PROBLEMS: the merged summary (`tracefuse merge
--format json`, schema in include/tracefuse/report/merge.h) counts COMPLETE complete pairs and
PROBLEMS others, lists each problem with its state, and has per-category totals."""
import json
import sys

path, complete, problems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    s = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"check_summary: FAIL: {path}: {e}")
failures = []
counts = s["counts"]
if counts["complete"] != complete:
    failures.append(f"counts.complete is {counts['complete']}, not {complete}")
if counts["pairs"] != complete + problems:
    failures.append(f"counts.pairs is {counts['pairs']}, not {complete + problems}")
if len(s["problems"]) != problems:
    failures.append(f"{len(s['problems'])} problems listed, not {problems}")
states = sorted(p["state"] for p in s["problems"])
if states != ["failed", "interrupted"][:problems] and problems == 2:
    failures.append(f"problem states {states}, not failed and interrupted")
if complete and not s["categories"]:
    failures.append("no per-category kernel time")
for f in failures:
    print("check_summary: FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
