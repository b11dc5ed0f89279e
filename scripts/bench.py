#!/usr/bin/env python3
"""The end-to-end part of scripts/bench (see there). Prints a markdown table."""
import glob
import json
import os
import platform
import statistics
import subprocess
import sys

CACHE = ".bench-cache"
SIZES = os.environ.get("BENCH_SIZES", "1G 4G").split()
# The generator's layouts to measure; Kineto's (what PyTorch writes) is reported first.
LAYOUTS = sorted(os.environ.get("BENCH_LAYOUTS", "kineto lines compact").split(),
                 key=lambda layout: layout != "kineto")
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
THREADS = os.environ.get("BENCH_THREADS", "2")
TF = "build/tracefuse"
FLOOR = "build/floor" if os.path.exists("build/floor") else None
# The floor program reads one event per line: it measures the "lines" layout only.
FLOOR_LAYOUT = "lines"
# Another tracefuse binary (an earlier build, say) whose stats and compare runs are interleaved
# with this build's, for a before/after ratio taken inside one run.
BASELINE = os.environ.get("BENCH_BASELINE")


# The compressed copies of each trace, at the tools' default levels: file extension -> tool.
COMPRESSED = {"gz": "gzip", "zst": "zstd -q"}


def compressed_name(name):
    """The compressor of a run on compressed copies ("gzip", "zstd"), or None."""
    for tool in ("gzip", "zstd"):
        if name.endswith(f", {tool}") or name.startswith(f"{tool} -dc"):
            return tool
    return None


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)


def prepare(size, layout):
    files = {}
    for plat, seed in (("amd", 1), ("nvidia", 2)):
        path = f"{CACHE}/{plat}_{layout}_{size.lower()}.json"
        if not os.path.exists(path):
            print(f"generating {path}", file=sys.stderr)
            sh(f"build/tracefuse-gen --platform {plat} --size {size} --seed {seed} "
               f"--layout {layout} -o {path}")
        for ext, tool in COMPRESSED.items():
            if not os.path.exists(f"{path}.{ext}"):
                print(f"compressing {path} with {tool}", file=sys.stderr)
                sh(f"{tool} -c {path} > {path}.{ext}.tmp && mv {path}.{ext}.tmp {path}.{ext}")
        files[plat] = path
    return files


def timed(cmd):
    """Wall seconds and peak RSS (MB) of a shell command, via /usr/bin/time."""
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", "sh", "-c", cmd + " >/dev/null"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {cmd}\n{out.stderr}")
    line = [l for l in out.stderr.splitlines() if l.startswith("TIME ")][-1]
    _, wall, rss = line.split()
    return float(wall), int(rss) / 1024


def cases_for(size, layout):
    """(name, command, input GB) of every run on one layout's pair of one size."""
    f = prepare(size, layout)
    a, n = f["amd"], f["nvidia"]
    gb_a, gb_n = os.path.getsize(a) / 1e9, os.path.getsize(n) / 1e9
    cases = []
    if FLOOR and layout == FLOOR_LAYOUT:
        cases += [(f"floor {size} AMD", f"{FLOOR} {a}", gb_a),
                  (f"floor {size} NVIDIA", f"{FLOOR} {n}", gb_n)]
    if BASELINE:
        cases += [
            (f"baseline stats {size} AMD", f"{BASELINE} stats {a} --threads {THREADS}", gb_a),
            (f"baseline compare {size} pair",
             f"{BASELINE} compare {a} {n} --format json --threads {THREADS}", gb_a + gb_n),
        ]
    cases += [
        (f"stats {size} AMD", f"{TF} stats {a} --threads {THREADS}", gb_a),
        (f"compare {size} pair", f"{TF} compare {a} {n} --format json --threads {THREADS}", gb_a + gb_n),
    ]
    for ext, tool in COMPRESSED.items():
        tool = tool.split()[0]
        cases += [
            (f"{tool} -dc {size} pair", f"{tool} -dc {a}.{ext} {n}.{ext} | wc -c", gb_a + gb_n),
            (f"compare {size} pair, {tool}",
             f"{TF} compare {a}.{ext} {n}.{ext} --format json --threads {THREADS}", gb_a + gb_n),
        ]
    return cases


def measure(size):
    """Medians (seconds, peak RSS MB) per layout and case name, and each layout's cases. Every
    layout's runs of one size are interleaved, so drift on a shared machine hits them alike."""
    cases = {layout: cases_for(size, layout) for layout in LAYOUTS}
    samples = {(layout, c[0]): [] for layout in LAYOUTS for c in cases[layout]}
    for _ in range(RUNS):
        for layout in LAYOUTS:
            for name, cmd, _gb in cases[layout]:
                samples[(layout, name)].append(timed(cmd))
    med = {key: (statistics.median(t for t, _ in s), max(r for _, r in s)) for key, s in samples.items()}
    return med, cases


def ratio_column(name, size, t, med):
    """The last column: the time against the floor, gzip -dc / zstd -dc and the plain pair's
    compare, or the baseline binary."""
    floor = med.get(f"floor {size} AMD", (None,))[0]
    floor_pair = floor + med[f"floor {size} NVIDIA"][0] if floor else None
    tool = compressed_name(name)
    parts = []
    if floor_pair and name.startswith("compare") and not tool:
        parts.append(f"floor {floor_pair:.2f} s / {t:.2f} s = {floor_pair / t:.2f}")
    if floor and name.startswith("stats"):
        parts.append(f"floor {floor:.2f} s / {t:.2f} s = {floor / t:.2f}")
    if name.startswith("compare") and tool:
        parts.append(f"{t / med[f'{tool} -dc {size} pair'][0]:.2f}x the time of {tool} -dc")
        parts.append(f"{t / med[f'compare {size} pair'][0]:.2f}x the plain pair's")
    if BASELINE and f"baseline {name}" in med:
        parts.append(f"{t / med[f'baseline {name}'][0]:.2f}x the baseline binary's time")
    return "; ".join(parts)


def targets_for(size, layout, med, pair_gb):
    """The targets of the scale issue for one layout's pair (the floor's on the lines layout)."""
    targets = []  # (target, measured, met)
    compare_t, compare_rss = med[f"compare {size} pair"]
    if f"floor {size} AMD" in med:
        floor_pair = med[f"floor {size} AMD"][0] + med[f"floor {size} NVIDIA"][0]
        targets.append((f"{layout}: compare {size} pair: floor time / compare time >= 1.2",
                        f"{floor_pair / compare_t:.2f}", floor_pair / compare_t >= 1.2))
    gz = med[f"compare {size} pair, gzip"][0] / med[f"gzip -dc {size} pair"][0]
    targets.append((f"{layout}: compare {size} pair, gzip: within 1.25x of gzip -dc", f"{gz:.2f}x", gz <= 1.25))
    # Issue 12: inflating (serial, on the critical path) costs at most a fifth of the plain time.
    gz_plain = med[f"compare {size} pair, gzip"][0] / compare_t
    targets.append((f"{layout}: compare {size} pair, gzip: within 1.2x of the plain pair",
                    f"{gz_plain:.2f}x", gz_plain <= 1.2))
    if pair_gb > 8:
        targets.append((f"{layout}: compare {size} pair: peak RSS < 300 MB", f"{compare_rss:.0f} MB",
                        compare_rss < 300))
    return targets


def scaling(layout, rows, pair_gb):
    """The largest pair's time over the smallest's, against linear with 10 % slack."""
    s0, s1 = SIZES[0], SIZES[-1]
    t0 = [float(r[3]) for r in rows if r[:2] == (layout, f"compare {s0} pair")][0]
    t1 = [float(r[3]) for r in rows if r[:2] == (layout, f"compare {s1} pair")][0]
    limit = 1.1 * pair_gb[(layout, s1)] / pair_gb[(layout, s0)]  # 4.4x for 4 GB against 1 GB
    row = (layout, f"compare {s1} / {s0}", "", f"{t1 / t0:.2f}x", "", "", "time ratio")
    return row, (f"{layout}: compare {s1} / {s0} pair time <= {limit:.1f}x", f"{t1 / t0:.2f}x", t1 / t0 <= limit)


STAGES = ("read", "inflate", "split", "parse", "classify", "summarize", "reduce", "merge")


def stage_accounting():
    """Rows of `stats --format json`'s per-stage CPU seconds, one run per layout, size and input
    (plain, gzip and zstd): where the CPU goes, the serial share and Amdahl's ceiling on the
    speed-up (total CPU / serial CPU)."""
    rows = []
    for layout in LAYOUTS:
        for size in SIZES:
            a = prepare(size, layout)["amd"]
            for path in [a] + [f"{a}.{ext}" for ext in COMPRESSED]:
                out = subprocess.run([TF, "stats", path, "--format", "json", "--threads", THREADS],
                                     capture_output=True, text=True, check=True).stdout
                cpu = json.loads(out)["cpu_seconds"]
                total = sum(cpu[s] for s in STAGES)
                serial = sum(cpu[s] for s in cpu["serial_stages"])
                tool = {f".{ext}": f", {t.split()[0]}" for ext, t in COMPRESSED.items()}.get(
                    os.path.splitext(path)[1], "")
                rows.append([layout, f"stats {size} AMD{tool}"]
                            + [f"{cpu[s]:.2f}" for s in STAGES]
                            + [f"{100 * serial / total:.1f} %", f"{total / serial:.1f}x"])
    return rows


def main():
    os.makedirs(CACHE, exist_ok=True)
    old = [p for p in glob.glob(f"{CACHE}/*.json*") if os.path.basename(p).count("_") == 1]
    if old:
        print(f"note: {CACHE} holds files named without a layout, from before BENCH_LAYOUTS "
              f"({', '.join(sorted(old))}): no longer used, they may be removed", file=sys.stderr)
    measured = {size: measure(size) for size in SIZES}
    rows, targets, pair_gb = [], [], {}
    for layout in LAYOUTS:
        for size in SIZES:
            med = {name: m for (lay, name), m in measured[size][0].items() if lay == layout}
            for name, _cmd, gb in measured[size][1][layout]:
                t, rss = med[name]
                rows.append((layout, name, f"{gb:.2f}", f"{t:.2f}", f"{gb / t:.2f}", f"{rss:.0f}",
                             ratio_column(name, size, t, med)))
            pair_gb[(layout, size)] = [gb for name, _cmd, gb in measured[size][1][layout]
                                       if name == f"compare {size} pair"][0]
            targets += targets_for(size, layout, med, pair_gb[(layout, size)])
        if len(SIZES) >= 2:
            row, target = scaling(layout, rows, pair_gb)
            rows.append(row)
            targets.append(target)
    cpu = platform.processor() or platform.machine()
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        pass
    print(f"\nMachine: {os.cpu_count()} CPUs ({cpu}); --threads {THREADS}; medians of {RUNS} interleaved runs, warm page cache.\n")
    print("| layout | run | input GB | median s | GB/s | peak RSS MB | vs floor / gzip / zstd |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\nCPU seconds by stage (`stats --format json`, one run each); read, inflate, split, reduce "
          "and merge run serially:\n")
    print("| layout | run | " + " | ".join(STAGES) + " | serial share | Amdahl ceiling |")
    print("|---|---|" + "---:|" * (len(STAGES) + 2))
    for r in stage_accounting():
        print("| " + " | ".join(r) + " |")
    print("\n| target (issues 5, 12) | measured | |")
    print("|---|---:|---|")
    for target, measured_value, met in targets:
        print(f"| {target} | {measured_value} | {'met' if met else 'NOT MET'} |")


if __name__ == "__main__":
    main()
