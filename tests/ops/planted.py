#!/usr/bin/env python3
"""`tracefuse ops` finds the fusion differences that `tracefuse-gen --eager` plants, exactly.

The generator writes a pair of eager traces (trace 1 on one platform, trace 2 on the other) and
the `fusion_differences` that `ops --format json` must report for them, built from what it
planted (times in integer ns). For each seed, layout and thread count this checks:

- `ops A B`: every entry, every field, in order (by saving, ties as FindFusionDifferences()
  breaks them); time_us == ns / 1000 exactly;
- `ops B A`: the same entries with fused_by, the trace1/trace2 blocks and the example's sides
  swapped, and nothing else (the example's index is then trace 2's unit, as the generator says);
- the expectation does not depend on the layout, and the seeds between them plant every kind,
  fused by either side;
- `--plant none` (kernel names, durations and op names differ, counts do not): nothing.

One line per mismatch; exit 1 when any, 0 when all hold.

usage: planted.py TRACEFUSE TRACEFUSE_GEN WORKDIR
"""
import copy
import json
import os
import subprocess
import sys

LAYOUTS = ("kineto", "lines", "compact")
THREADS = (1, 2)
# seed: (trace 1's platform, layers, planted kinds). Seed 4 leaves the module kind out.
RUNS = {
    1: ("amd", 3, "op,module,graph"),
    2: ("nvidia", 4, "op,module,graph"),
    3: ("nvidia", 2, "module,graph,op"),
    4: ("amd", 3, "graph,op"),
}
STEPS = 3
OTHER = {"trace1": "trace2", "trace2": "trace1"}


def generate(gen, workdir, name, seed, platform, layers, plant, layout):
    paths = [os.path.join(workdir, f"{name}_{layout}_{x}.json") for x in ("a", "b", "expected")]
    subprocess.run([gen, "--eager", "--seed", str(seed), "--platform", platform, "--layers",
                    str(layers), "--steps", str(STEPS), "--layout", layout, "--plant", plant,
                    "-o", paths[0], "--pair-output", paths[1], "--expect", paths[2]], check=True)
    return paths


def fusion_differences(tracefuse, trace1, trace2, threads, problems, label):
    run = subprocess.run([tracefuse, "ops", trace1, trace2, "--format", "json", "--progress",
                          "never", "--threads", str(threads)], capture_output=True, text=True)
    if run.returncode != 0:
        problems.append(f"{label}: tracefuse ops exited {run.returncode}: {run.stderr.strip()}")
        return None
    report = json.loads(run.stdout)
    if "fusion_differences" not in report:
        problems.append(f"{label}: no fusion_differences in the report")
        return None
    return report["fusion_differences"]


def report_form(entry, reverse):
    """An expected entry as `ops` reports it: trace 1 first, or trace 2 first when `reverse`."""
    first, second = ("trace2", "trace1") if reverse else ("trace1", "trace2")

    def side(s):
        return {"ops": s["ops"], "kernels": s["kernels"], "categories": s["categories"],
                "time_us": s["time_ns"] / 1000, "kernel_types": s["kernel_types"]}

    def kernels(ks):
        return [{"name": k["name"], "type": k["type"], "time_us": k["time_ns"] / 1000} for k in ks]

    example = entry["example"]
    return {"kind": entry["kind"], "scope": entry["scope"], "op": entry["op"],
            "fused_by": OTHER[entry["fused_by"]] if reverse else entry["fused_by"],
            "instances": entry["instances"], "trace1": side(entry[first]),
            "trace2": side(entry[second]), "extra_categories": entry["extra_categories"],
            "fused_kernel": entry["fused_kernel"], "saving_us": entry["saving_ns"] / 1000,
            "example": {"step": example["step"], "index": example["indices"][first],
                        "trace1": kernels(example[first]), "trace2": kernels(example[second])}}


def swapped(entry):
    """A reported entry with the traces' roles exchanged, less what names a trace's unit."""
    e = copy.deepcopy(entry)
    e["trace1"], e["trace2"] = e.get("trace2"), e.get("trace1")
    e["fused_by"] = OTHER.get(e.get("fused_by"), e.get("fused_by"))
    example = e.get("example")
    if isinstance(example, dict):
        example["trace1"], example["trace2"] = example.get("trace2"), example.get("trace1")
        example.pop("index", None)
    return e


def without_index(entry):
    e = copy.deepcopy(entry)
    if isinstance(e.get("example"), dict):
        e["example"].pop("index", None)
    return e


def identity(e):
    """What tells two entries apart: kind, scope, op, each side's ops and kernel categories."""
    sides = [e.get(t) if isinstance(e.get(t), dict) else {} for t in ("trace1", "trace2")]
    return json.dumps([e.get("kind"), e.get("scope"), e.get("op")]
                      + [[s.get("ops"), s.get("kernel_types")] for s in sides])


def describe(e):
    """An entry in a line: "op aten::linear under Model/X: [GEMM, Elementwise] vs [GEMM]"."""
    sides = [e.get(t) if isinstance(e.get(t), dict) else {} for t in ("trace1", "trace2")]
    what = [f"{','.join(s.get('ops') or [])} [{', '.join(s.get('kernel_types') or [])}]"
            if e.get("kind") == "module" else f"[{', '.join(s.get('kernel_types') or [])}]"
            for s in sides]
    op = f" {e.get('op')}" if e.get("op") is not None else ""
    return f"{e.get('kind')}{op} under {e.get('scope')!r}: {what[0]} vs {what[1]}"


def field_differences(actual, expected, path, out):
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in sorted(set(actual) | set(expected)):
            if key not in expected:
                out.append(f"{path}.{key}: unexpected field ({json.dumps(actual[key])})")
            elif key not in actual:
                out.append(f"{path}.{key}: missing (expected {json.dumps(expected[key])})")
            else:
                field_differences(actual[key], expected[key], f"{path}.{key}", out)
    elif isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected):
        for i, (a, x) in enumerate(zip(actual, expected)):
            field_differences(a, x, f"{path}[{i}]", out)
    elif type(actual) is not type(expected) or actual != expected:
        out.append(f"{path}: {json.dumps(actual)} != expected {json.dumps(expected)}")


def compare(label, actual, expected, problems):
    """Entries matched by identity, then field by field, then their order."""
    got = {identity(e): e for e in actual}
    want = {identity(e): e for e in expected}
    if len(got) != len(actual):
        problems.append(f"{label}: two entries with the same kind, scope, ops and kernel types")
    for key, e in want.items():
        if key not in got:
            problems.append(f"{label}: missing {describe(e)} (saving {e['saving_us']} us)")
    for key, e in got.items():
        if key not in want:
            problems.append(f"{label}: unexpected {describe(e)} (saving {e.get('saving_us')} us)")
    for key in sorted(want.keys() & got.keys()):
        lines = []
        field_differences(got[key], want[key], "", lines)
        problems.extend(f"{label}: {describe(want[key])}: {line[1:]}" for line in lines)
    order_got = [describe(e) for e in actual if identity(e) in want]
    order_want = [describe(e) for e in expected if identity(e) in got]
    if order_got != order_want:
        problems.append(f"{label}: order {order_got} != expected {order_want}")


def check_seed(tracefuse, gen, workdir, seed, problems, kinds_fused):
    platform, layers, plant = RUNS[seed]
    expected_text = None
    for layout in LAYOUTS:
        a, b, expected_path = generate(gen, workdir, f"seed{seed}", seed, platform, layers, plant,
                                       layout)
        with open(expected_path) as f:
            text = f.read()
        if expected_text is None:
            expected_text = text
        elif text != expected_text:
            problems.append(f"seed {seed}: the {layout} layout's expectation differs from kineto's")
        expected = json.loads(text)["fusion_differences"]
        if not expected:
            problems.append(f"seed {seed} {layout}: the generator planted nothing")
        for e in expected:
            kinds_fused.add((e["kind"], e["fused_by"]))
        forward = [report_form(e, False) for e in expected]
        backward = [report_form(e, True) for e in expected]
        for threads in THREADS:
            label = f"seed {seed} {layout} threads {threads}"
            got = fusion_differences(tracefuse, a, b, threads, problems, f"{label} A B")
            if got is not None:
                compare(f"{label} A B", got, forward, problems)
            got_back = fusion_differences(tracefuse, b, a, threads, problems, f"{label} B A")
            if got_back is not None:
                compare(f"{label} B A", got_back, backward, problems)
            if got is not None and got_back is not None:
                mirrored = [swapped(e) for e in got]
                if mirrored != [without_index(e) for e in got_back]:
                    problems.append(f"{label}: B A is not A B with the traces swapped")


def check_controls(tracefuse, gen, workdir, problems):
    for layout in LAYOUTS:
        a, b, expected_path = generate(gen, workdir, "controls", 5, "amd", 3, "none", layout)
        with open(expected_path) as f:
            if json.load(f)["fusion_differences"]:
                problems.append(f"controls {layout}: the generator expects differences")
        for order in ((a, b), (b, a)):
            label = f"controls {layout} {'A B' if order[0] == a else 'B A'}"
            got = fusion_differences(tracefuse, *order, 2, problems, label)
            if got:
                problems.append(f"{label}: reported {[describe(e) for e in got]}")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    tracefuse, gen, workdir = argv
    os.makedirs(workdir, exist_ok=True)
    problems = []
    kinds_fused = set()
    for seed in RUNS:
        check_seed(tracefuse, gen, workdir, seed, problems, kinds_fused)
    for kind in ("op", "module", "graph"):
        for side in ("trace1", "trace2"):
            if (kind, side) not in kinds_fused:
                problems.append(f"no seed plants a {kind} difference fused by {side}")
    check_controls(tracefuse, gen, workdir, problems)
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"ok: {len(RUNS)} seeds x {len(LAYOUTS)} layouts x threads {THREADS}, both orders; "
          "controls empty")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
