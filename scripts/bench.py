#!/usr/bin/env python3
"""The end-to-end part of scripts/bench (see there). Prints a markdown table. With --scaling
(scripts/bench --scaling) only the scaling table: `stats` and `compare` on Kineto's layout at 1, 2,
4, ... threads up to the machine's CPUs."""
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

CACHE = ".bench-cache"
SCALING = "--scaling" in sys.argv[1:]
SIZES = os.environ.get("BENCH_SIZES", "1G" if SCALING else "1G 4G").split()
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


def prepare(size, layout, gz=True, seeds=(1, 2)):
    """The cached AMD and NVIDIA traces of one size and layout, generated (and, with gz, their
    gzip copies written) where missing. Seeds other than the usual 1 and 2 name their files."""
    files = {}
    for plat, seed, usual in (("amd", seeds[0], 1), ("nvidia", seeds[1], 2)):
        suffix = "" if seed == usual else f"_seed{seed}"
        path = f"{CACHE}/{plat}_{layout}_{size.lower()}{suffix}.json"
        if not os.path.exists(path):
            print(f"generating {path}", file=sys.stderr)
            sh(f"build/tracefuse-gen --platform {plat} --size {size} --seed {seed} "
               f"--layout {layout} -o {path}")
        for ext, tool in COMPRESSED.items() if gz else ():
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
            (f"baseline ops {size} pair",
             f"{BASELINE} ops {a} {n} --format json --threads {THREADS}", gb_a + gb_n),
        ]
    cases += [
        (f"stats {size} AMD", f"{TF} stats {a} --threads {THREADS}", gb_a),
        (f"compare {size} pair", f"{TF} compare {a} {n} --format json --threads {THREADS}", gb_a + gb_n),
        (f"ops {size} pair", f"{TF} ops {a} {n} --format json --threads {THREADS}", gb_a + gb_n),
    ]
    for ext, tool in COMPRESSED.items():
        tool = tool.split()[0]
        cases += [
            (f"{tool} -dc {size} pair", f"{tool} -dc {a}.{ext} {n}.{ext} | wc -c", gb_a + gb_n),
            (f"compare {size} pair, {tool}",
             f"{TF} compare {a}.{ext} {n}.{ext} --format json --threads {THREADS}", gb_a + gb_n),
        ]
    return cases


def interleaved(commands):
    """Median seconds and largest peak RSS (MB) per key of [(key, command)], over RUNS rounds that
    each run every command once, so drift on a shared machine hits them alike."""
    samples = {key: [] for key, _cmd in commands}
    for _ in range(RUNS):
        for key, cmd in commands:
            samples[key].append(timed(cmd))
    return {key: (statistics.median(t for t, _ in s), max(r for _, r in s)) for key, s in samples.items()}


def measure(size):
    """Medians (seconds, peak RSS MB) per layout and case name, and each layout's cases. Every
    layout's runs of one size are interleaved."""
    cases = {layout: cases_for(size, layout) for layout in LAYOUTS}
    med = interleaved([((layout, name), cmd) for layout in LAYOUTS for name, cmd, _gb in cases[layout]])
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
    if name.startswith("ops"):
        parts.append(f"{t / med[f'compare {size} pair'][0]:.2f}x compare's time")
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
    # Issues 13 and 28: the op-level comparison reads the CPU side too, at most 30 % more than
    # compare; its memory is bounded (issue 28): 120 MB on the 1 GB pair, 300 MB on the 4 GB one.
    ops_t, ops_rss = med[f"ops {size} pair"]
    targets.append((f"{layout}: ops {size} pair: within 1.3x of compare", f"{ops_t / compare_t:.2f}x",
                    ops_t / compare_t <= 1.3))
    ops_rss_limit = {"1G": 120, "4G": 300}.get(size)
    if ops_rss_limit:
        targets.append((f"{layout}: ops {size} pair: peak RSS <= {ops_rss_limit} MB",
                        f"{ops_rss:.0f} MB", ops_rss <= ops_rss_limit))
    # Issue 26: the fusion differences by operator add at most 10 % to ops' time and peak RSS,
    # against a baseline binary without them (BENCH_BASELINE).
    if BASELINE:
        base_t, base_rss = med[f"baseline ops {size} pair"]
        targets.append((f"{layout}: ops {size} pair: within 1.1x of the baseline's time",
                        f"{ops_t / base_t:.2f}x", ops_t / base_t <= 1.1))
        targets.append((f"{layout}: ops {size} pair: peak RSS within 1.1x of the baseline's",
                        f"{ops_rss:.0f} MB / {base_rss:.0f} MB = {ops_rss / base_rss:.2f}x",
                        ops_rss / base_rss <= 1.1))
    # Issue 15: the HTML report costs under a tenth of the comparison and stays under 5 MB.
    page_s, compare_s, page_mb = html_page(size, layout)
    targets.append((f"{layout}: compare {size} pair --format html: page < 10 % of the comparison",
                    f"{page_s:.3f} s of {compare_s:.2f} s = {100 * page_s / compare_s:.2f} %",
                    page_s < 0.1 * compare_s))
    targets.append((f"{layout}: compare {size} pair --format html: page < 5 MB", f"{page_mb:.2f} MB",
                    page_mb < 5))
    return targets


def html_page(size, layout):
    """One `compare --format html` of the pair: the seconds the page took to lay out and the
    comparison's own (read and reduce, analyze), both from the page's footer, and its size in MB."""
    f = prepare(size, layout, gz=False)
    out = f"{CACHE}/report_{layout}_{size.lower()}.html"
    sh(f"{TF} compare {f['amd']} {f['nvidia']} --format html --threads {THREADS} -o {out}")
    footer = re.search(r"laid out in <span class=\"elapsed\">([0-9.]+) s, [0-9.]+% of the "
                       r"comparison's ([0-9.]+) s", open(out).read())
    size_mb = os.path.getsize(out) / 1e6
    os.remove(out)
    return float(footer[1]), float(footer[2]), size_mb


def scaling(layout, rows, pair_gb):
    """The largest pair's time over the smallest's, against linear with 10 % slack."""
    s0, s1 = SIZES[0], SIZES[-1]
    t0 = [float(r[3]) for r in rows if r[:2] == (layout, f"compare {s0} pair")][0]
    t1 = [float(r[3]) for r in rows if r[:2] == (layout, f"compare {s1} pair")][0]
    limit = 1.1 * pair_gb[(layout, s1)] / pair_gb[(layout, s0)]  # 4.4x for 4 GB against 1 GB
    row = (layout, f"compare {s1} / {s0}", "", f"{t1 / t0:.2f}x", "", "", "time ratio")
    return row, (f"{layout}: compare {s1} / {s0} pair time <= {limit:.1f}x", f"{t1 / t0:.2f}x", t1 / t0 <= limit)


STAGES = ("read", "inflate", "split", "parse", "classify", "summarize", "reduce", "merge")


def stats_cpu(path, threads):
    """`stats --format json`'s cpu_seconds for one trace: (the stages' CPU seconds, total, serial)."""
    out = subprocess.run([TF, "stats", path, "--format", "json", "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    cpu = json.loads(out)["cpu_seconds"]
    return cpu, sum(cpu[s] for s in STAGES), sum(cpu[s] for s in cpu["serial_stages"])


def stage_accounting():
    """Rows of `stats --format json`'s per-stage CPU seconds, one run per layout, size and input
    (plain, gzip and zstd): where the CPU goes, the serial share and Amdahl's ceiling on the
    speed-up (total CPU / serial CPU)."""
    rows = []
    for layout in LAYOUTS:
        for size in SIZES:
            a = prepare(size, layout)["amd"]
            for path in [a] + [f"{a}.{ext}" for ext in COMPRESSED]:
                cpu, total, serial = stats_cpu(path, THREADS)
                tool = {f".{ext}": f", {t.split()[0]}" for ext, t in COMPRESSED.items()}.get(
                    os.path.splitext(path)[1], "")
                rows.append([layout, f"stats {size} AMD{tool}"]
                            + [f"{cpu[s]:.2f}" for s in STAGES]
                            + [f"{100 * serial / total:.1f} %", f"{total / serial:.1f}x"])
    return rows


def quartiles(values):
    """The first and third quartiles of `values`, as "Q1–Q3"."""
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.2f}–{q[2]:.2f}"


def small_file_rate():
    """Issue 12's small-file line: `stats` on the 100 MB and 1 GB AMD traces in Kineto's layout,
    interleaved, BENCH_SMALL_RUNS times (default 31: a 100 MB run takes about 35 ms, and a hiccup
    of the VM's scheduler moves it by a quarter). The rate is stats's own (`gb_per_second`: from
    before the rule set is loaded to the result), with its quartiles to show that spread; the
    process's wall time, which adds starting the program, is given beside it. Returns the rows and
    the target."""
    runs = int(os.environ.get("BENCH_SMALL_RUNS", "31"))
    paths = {size: prepare(size, "kineto", gz=False)["amd"] for size in ("100M", "1G")}
    rate, wall = {size: [] for size in paths}, {size: [] for size in paths}
    out = f"{CACHE}/small_file_stats.json"
    for _ in range(runs):
        for size, path in paths.items():
            t, _rss = timed(f"{TF} stats {path} --format json --threads {THREADS} -o {out}")
            rate[size].append(json.load(open(out))["gb_per_second"])
            wall[size].append(os.path.getsize(path) / 1e9 / t)
    os.remove(out)
    med = {size: statistics.median(r) for size, r in rate.items()}
    med_wall = {size: statistics.median(w) for size, w in wall.items()}
    rows = [(size, f"{med[size]:.2f}", quartiles(rate[size]), f"{med_wall[size]:.2f}")
            for size in paths]
    ratio = med["100M"] / med["1G"]
    target = ("kineto: stats 100 MB at >= 90 % of its 1 GB rate (stats's gb_per_second)",
              f"{100 * ratio:.0f} % (process wall: {100 * med_wall['100M'] / med_wall['1G']:.0f} %)",
              ratio >= 0.9)
    return rows, runs, target


# Issue 28's many small pairs: BATCH_PAIRS pairs of 100 MB traces, each pair its own seeds (the
# first pair is small_file_rate()'s, seeds 1 and 2), in one `batch --all`.
BATCH_PAIRS = 10


def small_pairs_manifest():
    """A manifest of BATCH_PAIRS pairs of 100 MB traces in Kineto's layout (pair i: seeds 2i+1 and
    2i+2), generated where missing, in CACHE; returns its path and the pairs' input GB."""
    rows, gb = ["label\ttrace1\ttrace2"], 0
    for i in range(BATCH_PAIRS):
        f = prepare("100M", "kineto", gz=False, seeds=(2 * i + 1, 2 * i + 2))
        rows.append(f"pair{i}\t{os.path.basename(f['amd'])}\t{os.path.basename(f['nvidia'])}")
        gb += (os.path.getsize(f["amd"]) + os.path.getsize(f["nvidia"])) / 1e9
    path = f"{CACHE}/batch_kineto_100m.tsv"
    with open(path, "w") as out:
        out.write("\n".join(rows) + "\n")
    return path, gb


def many_small_pairs():
    """Issue 28: `batch --all` over BATCH_PAIRS pairs of 100 MB traces (about as many bytes as the
    1 GB pair) against `compare --format json` on the 1 GB pair of the same generator, Kineto's
    layout, interleaved, RUNS times: a batch pays the process's fixed costs once, so its time
    should stay within 1.1x of the one large pair's. --force re-runs the pairs each time (batch
    skips complete ones); each pair writes its JSON report and status. Returns the rows and the
    target."""
    manifest, batch_gb = small_pairs_manifest()
    f = prepare("1G", "kineto", gz=False)
    pair_gb = (os.path.getsize(f["amd"]) + os.path.getsize(f["nvidia"])) / 1e9
    out = f"{CACHE}/batch_out"
    med = interleaved([
        ("batch", f"{TF} batch {manifest} --out {out} --all --force --threads {THREADS} 2>/dev/null"),
        ("compare", f"{TF} compare {f['amd']} {f['nvidia']} --format json --threads {THREADS}"),
    ])
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    os.rmdir(out)
    (bt, brss), (ct, crss) = med["batch"], med["compare"]
    per_byte = (bt / batch_gb) / (ct / pair_gb)
    rows = [(f"batch --all, {BATCH_PAIRS} pairs of 100M", f"{batch_gb:.2f}", f"{bt:.2f}",
             f"{batch_gb / bt:.2f}", f"{brss:.0f}",
             f"{bt / ct:.2f}x the time; {per_byte:.2f}x per byte"),
            ("compare 1G pair", f"{pair_gb:.2f}", f"{ct:.2f}", f"{pair_gb / ct:.2f}", f"{crss:.0f}", "")]
    target = (f"kineto: batch --all over {BATCH_PAIRS} pairs of 100 MB within 1.1x of compare on "
              "the 1 GB pair", f"{bt / ct:.2f}x (per byte: {per_byte:.2f}x)", bt / ct <= 1.1)
    return rows, target


def small_pair_rate():
    """Issue 28's small-pair line, small_file_rate()'s for `compare`: `compare --format json` on
    the 100 MB and the 1 GB pair in Kineto's layout, interleaved, BENCH_SMALL_RUNS times (default
    31), with quartiles. The rate is the pair's bytes over the process's wall time, which counts
    every fixed cost a run pays (starting the program, loading the rule set, writing the report);
    compare's own clock (the report's read_and_reduce + analyze seconds, from after the rule set is
    loaded) is given beside it. Returns the rows and the target."""
    runs = int(os.environ.get("BENCH_SMALL_RUNS", "31"))
    pairs = {size: prepare(size, "kineto", gz=False) for size in ("100M", "1G")}
    gb = {size: (os.path.getsize(f["amd"]) + os.path.getsize(f["nvidia"])) / 1e9
          for size, f in pairs.items()}
    wall, own = {size: [] for size in pairs}, {size: [] for size in pairs}
    out = f"{CACHE}/small_pair_compare.json"
    for _ in range(runs):
        for size, f in pairs.items():
            # Timed here, without a shell or /usr/bin/time, whose 10 ms steps are 7 % of a
            # 100 MB pair's run.
            started = time.perf_counter()
            subprocess.run([TF, "compare", f["amd"], f["nvidia"], "--format", "json", "--threads",
                            THREADS, "-o", out], check=True)
            t = time.perf_counter() - started
            timings = json.load(open(out))["tracefuse"]["timings_seconds"]
            wall[size].append(gb[size] / t)
            own[size].append(gb[size] / (timings["read_and_reduce"] + timings["analyze"]))
    os.remove(out)
    med = {size: statistics.median(w) for size, w in wall.items()}
    med_own = {size: statistics.median(r) for size, r in own.items()}
    rows = [(f"{size} pair", f"{gb[size]:.2f}", f"{med[size]:.2f}", quartiles(wall[size]),
             f"{med_own[size]:.2f}", quartiles(own[size])) for size in pairs]
    ratio = med["100M"] / med["1G"]
    target = ("kineto: compare 100 MB pair at >= 80 % of the 1 GB pair's rate (process wall time)",
              f"{100 * ratio:.0f} % (compare's clock: {100 * med_own['100M'] / med_own['1G']:.0f} %)",
              ratio >= 0.8)
    return rows, runs, target


def print_table(header, alignment, rows):
    """Prints a Markdown table: `header` cells, `alignment` (the separator row without its outer
    bars) and `rows`, each a sequence of cells."""
    print("| " + " | ".join(header) + " |")
    print("|" + alignment + "|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


def machine():
    """The CPU model, from /proc/cpuinfo where there is one."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        pass
    return cpu


def thread_counts():
    """1, 2, 4, ... doubling up to the CPUs this process may run on (what nproc prints), and that
    count itself where it is not a power of two."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    return counts + ([cpus] if counts[-1] != cpus else [])


def scaling_table():
    """scripts/bench --scaling: `stats` on the AMD trace and `compare --format json` on the pair,
    Kineto's layout, at each thread count, runs interleaved; speed-up and parallel efficiency
    against one thread, and Amdahl's ceiling from the per-stage CPU seconds of `stats --threads 1`
    (total / serial CPU, and at the top thread count min(threads, total / serial))."""
    counts = thread_counts()
    print(f"\nMachine: {counts[-1]} CPUs ({machine()}); Kineto layout; medians of {RUNS} interleaved "
          f"runs, warm page cache.", end="")
    for size in SIZES:
        f = prepare(size, "kineto", gz=False)
        a, n = f["amd"], f["nvidia"]
        gb_a, gb_n = os.path.getsize(a) / 1e9, os.path.getsize(n) / 1e9
        med = interleaved([(("stats", k), f"{TF} stats {a} --threads {k}") for k in counts]
                          + [(("compare", k), f"{TF} compare {a} {n} --format json --threads {k}")
                             for k in counts])
        print(f"\n\n{size}: `stats` on the AMD trace ({gb_a:.2f} GB), `compare --format json` on the "
              f"pair ({gb_a + gb_n:.2f} GB).\n")
        print("| threads | stats s | stats GB/s | speed-up vs 1 thread | parallel efficiency | compare s "
              "| speed-up | efficiency | stats peak RSS MB | compare peak RSS MB |")
        print("|---:" * 10 + "|")
        for k in counts:
            (ts, rs), (tc, rc) = med[("stats", k)], med[("compare", k)]
            su, cu = med[("stats", 1)][0] / ts, med[("compare", 1)][0] / tc
            print(f"| {k} | {ts:.2f} | {gb_a / ts:.2f} | {su:.2f}x | {100 * su / k:.0f} % | {tc:.2f} "
                  f"| {cu:.2f}x | {100 * cu / k:.0f} % | {rs:.0f} | {rc:.0f} |")
        # The serial stages run one thread at a time beside the parallel ones (a pipeline), so a run
        # takes at least max(serial CPU, total CPU / threads): the ceiling at N threads is
        # min(N, total / serial), not 1 / (s + (1 - s) / N), which assumes they never overlap.
        _cpu, total, serial = stats_cpu(a, 1)
        top = counts[-1]
        print(f"\nAmdahl ceiling for `stats` (`stats --format json --threads 1` on the AMD trace: "
              f"{total:.2f} CPU s, serial share {100 * serial / total:.1f} %): "
              f"{min(top, total / serial):.2f}x at {top} threads (min(threads, total / serial CPU): the "
              f"serial stages run beside the parallel ones), {total / serial:.2f}x on any number of cores.")


def main():
    os.makedirs(CACHE, exist_ok=True)
    if SCALING:
        scaling_table()
        return
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
    print(f"\nMachine: {os.cpu_count()} CPUs ({machine()}); --threads {THREADS}; medians of {RUNS} interleaved runs, warm page cache.\n")
    print_table(["layout", "run", "input GB", "median s", "GB/s", "peak RSS MB",
                 "vs floor / gzip / zstd"], "---|---|---:|---:|---:|---:|---", rows)
    print("\nCPU seconds by stage (`stats --format json`, one run each); read, inflate, split, reduce "
          "and merge run serially:\n")
    print_table(["layout", "run", *STAGES, "serial share", "Amdahl ceiling"],
                "---|---|" + "|".join(["---:"] * (len(STAGES) + 2)), stage_accounting())
    small_rows, small_runs, small_target = small_file_rate()
    targets.append(small_target)
    print(f"\nSmall files (`stats`, Kineto's layout, AMD, medians of {small_runs} interleaved runs), "
          "GB/s by stats's clock and by the process's wall time:\n")
    print_table(["trace", "gb_per_second", "quartiles", "wall GB/s"], "---|---:|---:|---:",
                small_rows)
    pair_rows, pair_runs, pair_target = small_pair_rate()
    targets.append(pair_target)
    print(f"\nSmall pairs (`compare --format json`, Kineto's layout, medians of {pair_runs} "
          "interleaved runs), GB/s by the process's wall time and by compare's own clock "
          "(read_and_reduce + analyze):\n")
    print_table(["pair", "input GB", "wall GB/s", "quartiles", "compare's clock GB/s", "quartiles"],
                "---|---:|---:|---:|---:|---:", pair_rows)
    batch_rows, batch_target = many_small_pairs()
    targets.append(batch_target)
    print(f"\nMany small pairs in one process (Kineto's layout, pair i of seeds 2i+1 and 2i+2; "
          f"medians of {RUNS} interleaved runs):\n")
    print_table(["run", "input GB", "median s", "GB/s", "peak RSS MB", "against compare 1G pair"],
                "---|---:|---:|---:|---:|---", batch_rows)
    print()
    print_table(["target (issues 5, 12, 13, 15, 28)", "measured", ""], "---|---:|---",
                [(target, value, "met" if met else "NOT MET") for target, value, met in targets])


if __name__ == "__main__":
    main()
