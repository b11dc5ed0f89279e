#!/usr/bin/env python3
"""check_same_kernels.py: the same GPU work read from a Kineto trace, an Nsight Systems export
and a rocprofv3 JSON file gives the same figures.

Usage: check_same_kernels.py TRACEFUSE TRACEFUSE_GEN OUTDIR

Generates a trace (tracefuse-gen, graph replays and eager kernels, one event per line), writes
its GPU side in the two vendor formats (bench/kineto_to_vendor.py), and compares what
`tracefuse stats --format json` reports of the three: kernels, kernel time, names, correlation
groups, time per category, and per device the timeline, the idle split and the launches.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_vendor_trace  # noqa: E402


def figures(tracefuse, path):
    report = json.loads(subprocess.run([tracefuse, "stats", path, "--format", "json"],
                                       check=True, capture_output=True, text=True).stdout)
    f = check_vendor_trace.tracefuse_figures(report)
    del f["format"], f["unread"]  # the formats hold other events beside the GPU work
    f["correlation_groups"] = report["correlation_groups"]
    f["categories"] = {c["category"]: (c["kernels"], c["time_us"]) for c in report["categories"]}
    return f


def main():
    tracefuse, gen, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    kineto = os.path.join(outdir, "same.json")
    subprocess.run([gen, "--platform", "nvidia", "--size", "3M", "--seed", "51", "--layout",
                    "lines", "-o", kineto], check=True)
    nsys, rocprofv3 = os.path.join(outdir, "same.sqlite"), os.path.join(outdir, "same_results.json")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "bench", "kineto_to_vendor.py"),
                    kineto, nsys, rocprofv3], check=True)
    expected = figures(tracefuse, kineto)
    if expected["kernels"] == 0:
        print("the generated trace holds no kernels")
        return 1
    failed = False
    for path in (nsys, rocprofv3):
        found = list(check_vendor_trace.differences(expected, figures(tracefuse, path)))
        for line in found:
            print(f"{os.path.basename(path)}: {line.replace('oracle', 'Kineto')}")
        failed |= bool(found)
    print(f"{expected['kernels']} kernels, {expected['correlation_groups']} groups: "
          f"{'differences' if failed else 'the same'} in the three formats")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
