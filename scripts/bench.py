#!/usr/bin/env python3
"""The end-to-end part of scripts/bench (see there). Prints a markdown table."""
import os
import platform
import statistics
import subprocess
import sys

CACHE = ".bench-cache"
SIZES = os.environ.get("BENCH_SIZES", "1G 4G").split()
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
THREADS = os.environ.get("BENCH_THREADS", "2")
TF = "build/tracefuse"
FLOOR = "build/floor" if os.path.exists("build/floor") else None
# Another tracefuse binary (an earlier build, say) whose stats and compare runs are interleaved
# with this build's, for a before/after ratio taken inside one run.
BASELINE = os.environ.get("BENCH_BASELINE")


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)


def prepare(size):
    files = {}
    for plat, seed in (("amd", 1), ("nvidia", 2)):
        path = f"{CACHE}/{plat}_{size.lower()}.json"
        if not os.path.exists(path):
            print(f"generating {path}", file=sys.stderr)
            sh(f"build/tracefuse-gen --platform {plat} --size {size} --seed {seed} -o {path}")
        if not os.path.exists(path + ".gz"):
            print(f"compressing {path}", file=sys.stderr)
            sh(f"gzip -c {path} > {path}.gz.tmp && mv {path}.gz.tmp {path}.gz")
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


def main():
    os.makedirs(CACHE, exist_ok=True)
    rows = []
    targets = []  # (target, measured, met)
    pair_gb = {}
    for size in SIZES:
        f = prepare(size)
        a, n = f["amd"], f["nvidia"]
        gb_a, gb_n = os.path.getsize(a) / 1e9, os.path.getsize(n) / 1e9
        cases = []
        if FLOOR:
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
            (f"gzip -dc {size} pair", f"gzip -dc {a}.gz {n}.gz | wc -c", gb_a + gb_n),
            (f"compare {size} pair, gzip", f"{TF} compare {a}.gz {n}.gz --format json --threads {THREADS}", gb_a + gb_n),
        ]
        samples = {c[0]: [] for c in cases}
        for _ in range(RUNS):  # interleaved, so drift on a shared machine hits every case alike
            for name, cmd, _gb in cases:
                samples[name].append(timed(cmd))
        med = {name: (statistics.median(t for t, _ in s), max(r for _, r in s)) for name, s in samples.items()}
        floor_pair = (med[f"floor {size} AMD"][0] + med[f"floor {size} NVIDIA"][0]) if FLOOR else None
        for name, _cmd, gb in cases:
            t, rss = med[name]
            ratio = ""
            if floor_pair and name.startswith("compare") and "gzip" not in name:
                ratio = f"floor {floor_pair:.2f} s / {t:.2f} s = {floor_pair / t:.2f}"
            if floor_pair and name.startswith("stats"):
                ratio = f"floor {med[f'floor {size} AMD'][0]:.2f} s / {t:.2f} s = {med[f'floor {size} AMD'][0] / t:.2f}"
            if name.startswith("compare") and "gzip" in name:
                g = med[f"gzip -dc {size} pair"][0]
                ratio = f"{t / g:.2f}x the time of gzip -dc"
            if BASELINE and f"baseline {name}" in med:
                ratio += f"; {t / med[f'baseline {name}'][0]:.2f}x the baseline binary's time"
            rows.append((name, f"{gb:.2f}", f"{t:.2f}", f"{gb / t:.2f}", f"{rss:.0f}", ratio))
        compare_t, compare_rss = med[f"compare {size} pair"]
        pair_gb[size] = (gb_a + gb_n, compare_t)
        if floor_pair:
            targets.append((f"compare {size} pair: floor time / compare time >= 1.2",
                            f"{floor_pair / compare_t:.2f}", floor_pair / compare_t >= 1.2))
        gz = med[f"compare {size} pair, gzip"][0] / med[f"gzip -dc {size} pair"][0]
        targets.append((f"compare {size} pair, gzip: within 1.25x of gzip -dc", f"{gz:.2f}x", gz <= 1.25))
        if gb_a + gb_n > 8:
            targets.append((f"compare {size} pair: peak RSS < 300 MB", f"{compare_rss:.0f} MB",
                            compare_rss < 300))
    if len(SIZES) >= 2:
        s0, s1 = SIZES[0], SIZES[-1]
        c0 = [r for r in rows if r[0] == f"compare {s0} pair"][0]
        c1 = [r for r in rows if r[0] == f"compare {s1} pair"][0]
        rows.append((f"compare {s1} / {s0}", "", f"{float(c1[2]) / float(c0[2]):.2f}x", "", "", "time ratio"))
        (gb0, t0), (gb1, t1) = pair_gb[s0], pair_gb[s1]
        limit = 1.1 * gb1 / gb0  # linear, with 10 % slack: 4.4x for 4 GB against 1 GB
        targets.append((f"compare {s1} / {s0} pair time <= {limit:.1f}x", f"{t1 / t0:.2f}x", t1 / t0 <= limit))
    cpu = platform.processor() or platform.machine()
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        pass
    print(f"\nMachine: {os.cpu_count()} CPUs ({cpu}); --threads {THREADS}; medians of {RUNS} interleaved runs, warm page cache.\n")
    print("| run | input GB | median s | GB/s | peak RSS MB | vs floor / gzip |")
    print("|---|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\n| target (issue 5) | measured | |")
    print("|---|---:|---|")
    for target, measured, met in targets:
        print(f"| {target} | {measured} | {'met' if met else 'NOT MET'} |")


if __name__ == "__main__":
    main()
