#!/usr/bin/env python3
"""`tracefuse ops` finds the fusion differences that `tracefuse-gen --eager` plants, exactly.

The generator writes a pair of eager traces (trace 1 on one platform, trace 2 on the other) and
the `fusion_differences` that `ops --format json` must report for them, built from what it
planted (times in integer ns). For each seed, layout and thread count this checks:

- `ops A B`: every entry, every field (relation, fused_by, counts, extra kernels, extra time,
  fused kernel and its category, the example's kernels and which of them are extra), in order (by
  saving, ties as FindFusionDifferences() breaks them); time_us == ns / 1000 exactly;
- `ops B A`: the same entries with fused_by (null for an algorithm stays null), the trace1/trace2
  blocks and the example's sides swapped, and nothing else (the example's index is then trace 2's
  unit, as the generator says) -- against the expectation, and against `ops A B` itself;
- the expectation does not depend on the layout, and the seeds between them plant every kind and
  relation, split and fusion fused by either side;
- the MoE replay (--replay moe, which --plant replay chooses) is in three graph launches a step,
  with two adjacent kernels swapped in one layer on one side, in every run that has it; in the
  controls' run, where both sides run as many kernels, the launches end at different kernels;
- the controls alone (--plant none, with either replay: kernel names, durations and op names
  that differ, the replay's pieces and the swapped kernels): nothing.

One line per mismatch; exit 1 when any, 0 when all hold.

usage: planted.py TRACEFUSE TRACEFUSE_GEN WORKDIR
"""
import copy
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

LAYOUTS = ("kineto", "lines", "compact")
THREADS = (1, 2)
# seed: (trace 1's platform, layers, planted kinds). Seed 4 leaves the module kind out; `replay`
# plants in the MoE replay, in every layer (a layer alone on seed 7). A plant's fused side is
# (seed + plant) % 2, so the seeds of each group between them have each plant fused by each side.
RUNS = {
    1: ("amd", 3, "op,module,graph"),
    2: ("nvidia", 4, "op,module,graph"),
    3: ("nvidia", 2, "module,graph,op"),
    4: ("amd", 3, "graph,op"),
    5: ("amd", 2, "replay"),
    6: ("nvidia", 3, "op,replay"),
    7: ("amd", 1, "module,replay"),
    8: ("nvidia", 2, "replay,op,module"),
}
CONTROLS = {9: ("amd", 3, "llama"), 10: ("nvidia", 2, "moe")}  # seed: (platform, layers, replay)
STEPS = 3
OTHER = {"trace1": "trace2", "trace2": "trace1"}
SIDES = ("trace1", "trace2")


def generate(gen, workdir, name, seed, platform, layers, plant, layout, replay=None):
    paths = [os.path.join(workdir, f"{name}_{layout}_{x}.json") for x in ("a", "b", "expected")]
    extra = ["--replay", replay] if replay else []
    subprocess.run([gen, "--eager", "--seed", str(seed), "--platform", platform, "--layers",
                    str(layers), "--steps", str(STEPS), "--layout", layout, "--plant", plant,
                    "-o", paths[0], "--pair-output", paths[1], "--expect", paths[2]] + extra,
                   check=True)
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
        return [{"name": k["name"], "type": k["type"], "time_us": k["time_ns"] / 1000,
                 "extra": k["extra"]} for k in ks]

    example = entry["example"]
    fused_by = entry["fused_by"]
    return {"kind": entry["kind"], "scope": entry["scope"], "op": entry["op"],
            "relation": entry["relation"],
            "fused_by": OTHER[fused_by] if reverse and fused_by else fused_by,
            "instances": entry["instances"], "trace1": side(entry[first]),
            "trace2": side(entry[second]), "extra_categories": entry["extra_categories"],
            "extra_kernels": entry["extra_kernels"],
            "extra_time_us": entry["extra_time_ns"] / 1000,
            "fused_kernel": entry["fused_kernel"],
            "fused_kernel_category": entry["fused_kernel_category"],
            "saving_us": entry["saving_ns"] / 1000,
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
    """What tells two entries apart: kind, relation, scope, op, each side's ops and kernel
    categories."""
    sides = [e.get(t) if isinstance(e.get(t), dict) else {} for t in SIDES]
    return json.dumps([e.get("kind"), e.get("relation"), e.get("scope"), e.get("op")]
                      + [[s.get("ops"), s.get("kernel_types")] for s in sides])


def describe(e):
    """An entry in a line: "fusion op aten::linear under Model/X: [GEMM, Elementwise] vs
    [GEMM]"."""
    sides = [e.get(t) if isinstance(e.get(t), dict) else {} for t in SIDES]
    what = [f"{','.join(s.get('ops') or [])} [{', '.join(s.get('kernel_types') or [])}]"
            if e.get("kind") == "module" else f"[{', '.join(s.get('kernel_types') or [])}]"
            for s in sides]
    op = f" {e.get('op')}" if e.get("op") is not None else ""
    return (f"{e.get('relation')} {e.get('kind')}{op} under {e.get('scope')!r}: {what[0]} vs "
            f"{what[1]}")


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


def without_full_names(e, problems, label):
    """The entry without its full kernel names (the generator plants families), each checked to
    fold to the family it stands beside."""
    e = copy.deepcopy(e)
    pairs = [(e, "fused_kernel_full_name", "fused_kernel")]
    pairs += [(k, "example", "name") for k in e.get("extra_kernels") or []]
    pairs += [(k, "full_name", "name") for t in SIDES
              for k in (e.get("example") or {}).get(t) or []]
    for holder, full_key, family_key in pairs:
        full = holder.pop(full_key, None)
        if holder.get(family_key) is not None and (full is None or
                                                   oracle.family(full) != holder[family_key]):
            problems.append(f"{label}: {describe(e)}: {full_key} {full!r} does not fold to "
                            f"{holder[family_key]!r}")
    return e


def compare(label, actual, expected, problems):
    """Entries matched by identity, then field by field, then their order."""
    actual = [without_full_names(e, problems, label) for e in actual]
    got = {identity(e): e for e in actual}
    want = {identity(e): e for e in expected}
    if len(got) != len(actual):
        problems.append(f"{label}: two entries with the same kind, relation, scope, ops and "
                        "kernel types")
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


def replay_kernels(trace):
    """The names of the trace's graph-replay kernels in start order, each with its launch's
    correlation id, and how many graph launches the trace has."""
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    launches = {e["args"]["correlation"] for e in events
                if e.get("name") in ("hipGraphLaunch", "cudaGraphLaunch")}
    kernels = sorted((e["ts"], e["args"]["correlation"], e["name"]) for e in events
                     if e.get("cat") == "kernel" and e["args"]["correlation"] in launches)
    return [(corr, name) for _, corr, name in kernels], len(launches)


def replay_controls(pair, label, problems):
    """The MoE replay's controls are in the pair: each step's replay is three graph launches on
    each side, and one side runs a layer's quantization before its MoE sort (the other order
    elsewhere). Returns each side's launch sizes in kernels."""
    sizes, swapped_any = [], False
    for side, trace in zip(SIDES, pair):
        kernels, launches = replay_kernels(trace)
        if launches != 3 * STEPS:
            problems.append(f"{label}: {side} has {launches} graph launches, not {3 * STEPS}")
        order = ["quant" if "dynamic_per_token" in n else "sort" for _, n in kernels
                 if "dynamic_per_token" in n or "MoeSorting" in n or "moe_align_block_size" in n]
        pairs = list(zip(order[::2], order[1::2]))
        if ("sort", "quant") not in pairs:
            problems.append(f"{label}: {side} never runs the MoE sort before the quantization")
        swapped_any = swapped_any or ("quant", "sort") in pairs
        sizes.append([])
        last = None
        for corr, _ in kernels:
            if corr != last:
                sizes[-1].append(0)
                last = corr
            sizes[-1][-1] += 1
    if not swapped_any:
        problems.append(f"{label}: no side swaps the MoE sort and the quantization")
    return sizes


def check_seed(tracefuse, gen, workdir, seed, problems, seen):
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
        if "replay" in plant.split(","):
            replay_controls((a, b), f"seed {seed} {layout}", problems)
        for e in expected:
            seen.add((e["kind"], e["relation"], e["fused_by"]))
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
    for seed, (platform, layers, replay) in CONTROLS.items():
        for layout in LAYOUTS:
            name = f"controls_{replay}"
            a, b, expected_path = generate(gen, workdir, name, seed, platform, layers, "none",
                                           layout, replay)
            with open(expected_path) as f:
                if json.load(f)["fusion_differences"]:
                    problems.append(f"{name} {layout}: the generator expects differences")
            if replay == "moe":
                # Both sides run as many kernels: launch sizes that differ are cuts elsewhere.
                sizes = replay_controls((a, b), f"{name} {layout}", problems)
                if sum(sizes[0]) != sum(sizes[1]) or sizes[0] == sizes[1]:
                    problems.append(f"{name} {layout}: launch sizes {sizes[0]} and {sizes[1]}: "
                                    "not the same kernels cut at different places")
            for order in ((a, b), (b, a)):
                for threads in THREADS:
                    label = f"{name} {layout} {'A B' if order[0] == a else 'B A'} threads {threads}"
                    got = fusion_differences(tracefuse, *order, threads, problems, label)
                    if got:
                        problems.append(f"{label}: reported {[describe(e) for e in got]}")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    tracefuse, gen, workdir = argv
    os.makedirs(workdir, exist_ok=True)
    problems = []
    seen = set()
    for seed in RUNS:
        check_seed(tracefuse, gen, workdir, seed, problems, seen)
    wanted = [(kind, "fusion", side) for kind in ("op", "module", "graph") for side in SIDES]
    wanted += [(kind, "split", side) for kind in ("op", "graph") for side in SIDES]
    wanted += [("graph", "algorithm", None)]
    for kind, relation, side in wanted:
        if (kind, relation, side) not in seen:
            problems.append(f"no seed plants a {relation} of kind {kind} fused by {side}")
    check_controls(tracefuse, gen, workdir, problems)
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"ok: {len(RUNS)} seeds x {len(LAYOUTS)} layouts x threads {THREADS}, both orders; "
          f"controls ({', '.join(r for _, _, r in CONTROLS.values())} replays) empty")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
