#!/usr/bin/env python3
"""Runs `tracefuse ops --format json` and the oracle on the same pair and compares them: every
value the oracle computes must be in tracefuse's report, equal (floats exactly: both derive them
from integer nanoseconds). Then checks what the options ask of the report:
  --linked PCT     each trace has at least PCT % of its kernel time linked to an op
  --matched PCT    at least PCT % of each trace's top-level ops are matched
  --complete       linked, launch-only and no-launch kernel time add up to the total
  --flops TRACES   the traces named (1, 2 or 12) have FLOPs from the perf models, and so has a
                   row side of each: the agreement is not that of two nulls
Exit 0 when all hold, 1 with the differences otherwise, 77 (skipped) when a trace is missing.

usage: check_oracle.py [--linked PCT] [--matched PCT] [--complete] [--flops TRACES]
                       TRACEFUSE TRACE1 TRACE2
                       [tracefuse ops options...]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402


def differences(expected, actual, path="$"):
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            yield f"{path}: expected an object, got {actual!r}"
            return
        for key, value in expected.items():
            if key not in actual:
                yield f"{path}.{key}: missing"
            else:
                yield from differences(value, actual[key], f"{path}.{key}")
    elif isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            yield f"{path}: expected {len(expected)} items, got {actual!r:.300}"
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from differences(e, a, f"{path}[{i}]")
    elif expected != actual or type(expected) is bool and type(actual) is not bool:
        yield f"{path}: expected {expected!r}, got {actual!r}"


def extra_keys(expected, actual, path):
    """Keys of `actual` that `expected` does not have, at every depth: the fusion differences'
    schema is exactly the oracle's."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in actual.keys() - expected.keys():
            yield f"{path}.{key}: not in the schema"
        for key in actual.keys() & expected.keys():
            yield from extra_keys(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from extra_keys(e, a, f"{path}[{i}]")


def expectations(report, linked, matched, complete, flops):
    for i, t in enumerate(report["traces"], 1):
        if str(i) in flops:
            if t["flops"] is None:
                yield f"trace {i}: no FLOPs from the perf models"
            if not any(row[f"trace{i}"]["flops"] for row in report["ops"]):
                yield f"trace {i}: no op row with FLOPs"
        total = t["kernel_time_us"]
        if linked is not None and t["linked_kernel_time_us"] < total * linked / 100:
            yield (f"trace {i}: {t['linked_kernel_time_us']} of {total} us linked to an op, "
                   f"under {linked} %")
        if matched is not None and report["matched_ops"] < t["top_level_ops"] * matched / 100:
            yield (f"trace {i}: {report['matched_ops']} of {t['top_level_ops']} top-level ops "
                   f"matched, under {matched} %")
        parts = (t["linked_kernel_time_us"] + t["launch_only_kernel_time_us"]
                 + t["no_launch_kernel_time_us"])
        if complete and abs(parts - total) > 1e-6 * max(1.0, total):
            yield f"trace {i}: linked + launch-only + no-launch = {parts} us, total {total} us"


def classifier(binary, traces, platforms):
    """(categorize(side, name), role_of(side, name)): the kernel categories of `tracefuse
    classify`, which golden tests check on their own, for the platform the report detected on
    each side, and the kernels' roles (data/kernel-roles.yaml) that `classify --roles` adds."""
    categories, roles = [], []
    for trace, platform in zip(traces, platforms):
        names = sorted({k[1] for k in trace.kernels})
        command = [binary, "classify", "--input", "jsonl", "--roles"]
        if platform in ("AMD", "NVIDIA"):
            command += ["--platform", platform.lower()]
        run = subprocess.run(command, input="".join(json.dumps(n) + "\n" for n in names),
                             capture_output=True, text=True, check=True)
        records = [json.loads(line) for line in run.stdout.splitlines()]
        categories.append({r["name"]: r["category"] for r in records})
        roles.append({r["name"]: oracle.Role.of(r) for r in records})
    return (lambda side, name: categories[side][name]), (lambda side, name: roles[side][name])


def main(argv):
    linked = matched = None
    complete = False
    flops = ""
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if flag == "--complete":
            complete = True
        elif flag == "--linked":
            linked = float(argv.pop(0))
        elif flag == "--matched":
            matched = float(argv.pop(0))
        elif flag == "--flops":
            flops = argv.pop(0)
    binary, trace1, trace2, options = argv[0], argv[1], argv[2], argv[3:]
    for trace in (trace1, trace2):
        if not os.path.exists(trace):
            print(f"skipped: {trace} is not present on this machine")
            return 77
    oracle_options = {"--top": 20, "--max-edit-distance": 2000}
    for flag in oracle_options:
        if flag in options:
            oracle_options[flag] = int(options[options.index(flag) + 1])
    run = subprocess.run([binary, "ops", trace1, trace2, "--format", "json"] + options,
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(f"tracefuse ops failed ({run.returncode}): {run.stderr}")
        return 1
    actual = json.loads(run.stdout)
    traces = (oracle.Trace(trace1), oracle.Trace(trace2))
    categorize, role_of = classifier(binary, traces, [t["platform"] for t in actual["traces"]])
    expected = oracle.report(traces[0], traces[1], oracle_options["--top"],
                             oracle_options["--max-edit-distance"], categorize, role_of)
    found = list(differences(expected, actual))
    found += list(extra_keys(expected["fusion_differences"], actual.get("fusion_differences"),
                             "$.fusion_differences"))
    found += list(expectations(actual, linked, matched, complete, flops))
    for line in found[:10]:
        print(line)
    if found:
        print(f"{len(found)} differences from the oracle or the expectations")
        return 1
    t = actual["traces"]
    print(f"agree: {actual['matched_ops']} matched ops of {t[0]['top_level_ops']} / "
          f"{t[1]['top_level_ops']}, {len(actual['ops'])} rows, "
          f"{len(actual['unmatched_groups'])} unmatched groups, {actual['capped_steps']} capped "
          f"steps, {len(actual['fusion_differences'])} fusion differences; linked {t[0]['linked_kernel_time_us']:.3f} / {t[0]['kernel_time_us']:.3f} us, "
          f"{t[1]['linked_kernel_time_us']:.3f} / {t[1]['kernel_time_us']:.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
