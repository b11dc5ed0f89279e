#!/usr/bin/env python3
"""Checks a batch's merged summary (`tracefuse merge --format json`, schema in
include/tracefuse/report/merge.h) for the Slurm tests: it counts COMPLETE complete pairs and
lists PROBLEMS pairs that are not complete, each complete pair with both traces' numbers and
each failed or interrupted one with its exit code and error line.

    check_summary.py SUMMARY_JSON COMPLETE PROBLEMS

Exits 0, or 1 after one `check_summary: FAIL: ...` line per difference.
"""
import json
import sys


def main():
    path, complete, problems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    failures = []
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_summary: FAIL: {path}: {e}", file=sys.stderr)
        return 1
    counts = summary["counts"]
    if counts["complete"] != complete:
        failures.append(f"{counts['complete']} complete pairs, not {complete}")
    if len(summary["problems"]) != problems:
        failures.append(f"{len(summary['problems'])} problems, not {problems}: {summary['problems']}")
    if counts["pairs"] != complete + problems or len(summary["pairs"]) != counts["pairs"]:
        failures.append(f"{counts['pairs']} pairs ({len(summary['pairs'])} listed), not "
                        f"{complete + problems}")
    if summary["manifest"]["error"] is not None:
        failures.append(f"manifest not read: {summary['manifest']['error']}")
    for pair in summary["pairs"]:
        label, state = pair["label"], pair["state"]
        if state == "complete":
            for trace in pair["traces"]:
                if not trace["kernels"] or not trace["kernel_time_us"]:
                    failures.append(f"{label}: complete, but trace {trace} has no kernels")
        elif state in ("failed", "interrupted"):
            if pair["exit_code"] in (None, 0) or not pair["error"]:
                failures.append(f"{label}: {state} without exit code or error: {pair}")
    if summary["pairs"] and not summary["categories"] and complete:
        failures.append("no kernel time per category")
    for failure in failures:
        print(f"check_summary: FAIL: {path}: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
