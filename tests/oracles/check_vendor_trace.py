#!/usr/bin/env python3
"""check_vendor_trace.py: `tracefuse stats --format json` of a vendor's profiler file against
the oracle (vendor_trace.py), every value exact.

Usage: check_vendor_trace.py TRACEFUSE FILE [--kernels N] [--threads N,N...]
Exits 0 when they agree, 1 listing each difference, 77 (skip) when FILE is missing. With
--threads, stats runs at each of those thread counts, and each run must agree.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vendor_trace  # noqa: E402


def ns(us):
    """A report's microseconds (three decimals) as integer nanoseconds."""
    return None if us is None else round(us * 1000)


def tracefuse_figures(report):
    devices = []
    for d in report["gpu_timeline"]["devices"]:
        idle = d["idle"]
        devices.append(dict(
            device=d["device"], activities=d["activities"], span_ns=ns(d["span_us"]),
            busy_ns=ns(d["busy_us"]), memcpy_ns=ns(d["memcpy_us"]), idle_ns=ns(d["idle_us"]),
            idle=dict(cpu_wait_ns=ns(idle["cpu_wait_us"]),
                      launch_latency_ns=ns(idle["launch_latency_us"]),
                      unattributed_ns=ns(idle["unattributed_us"]), gaps=idle["gaps"]),
            integrity=dict(same_stream_overlaps=d["integrity"]["same_stream_overlaps"],
                           same_stream_overlap_ns=ns(d["integrity"]["same_stream_overlap_us"]),
                           before_launch=d["integrity"]["before_launch"]),
            launches=sorted(
                (dict(api=l["api"], count=l["count"],
                      cpu_ns=[ns(l["cpu_us"][q]) for q in ("median", "p90", "max")],
                      delay_ns=[ns(l["delay_us"][q]) for q in ("median", "p90", "max")])
                 for l in d["launches"]), key=lambda l: l["api"])))
    return dict(format=report["format"], kernels=report["kernels"],
                kernel_time_ns=ns(report["kernel_time_us"]),
                distinct_kernel_names=report["distinct_kernel_names"],
                whole_graph_replays=report["whole_graph_replays"],
                unread={kind: count for kind, count in report["events_by_category"].items()
                        if kind not in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime",
                                        "user_annotation", "cpu_op", "cuda_graph_replay")},
                whole_graph_replay_ns=ns(report["whole_graph_replay_us"]),
                devices=sorted(devices, key=lambda d: d["device"]))


def differences(expected, actual, where=""):
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            yield from differences(expected.get(key), actual.get(key), f"{where}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from differences(e, a, f"{where}[{i}]")
    elif expected != actual:
        yield f"{where or '.'}: oracle {expected!r}, tracefuse {actual!r}"


def main():
    tracefuse, path = sys.argv[1], sys.argv[2]
    if not os.path.exists(path):
        print(f"SKIP: {path} is missing (../shared is not here)")
        return 77
    expected = vendor_trace.figures(path)
    threads = [None]
    if "--threads" in sys.argv:
        threads = sys.argv[sys.argv.index("--threads") + 1].split(",")
    found = []
    for count in threads:
        command = [tracefuse, "stats", path, "--format", "json"]
        if count is not None:
            command += ["--threads", count]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"tracefuse stats exited {run.returncode}: {run.stderr.strip()}")
            return 1
        actual = tracefuse_figures(json.loads(run.stdout))
        at = "" if count is None else f" (--threads {count})"
        found += [line + at for line in differences(expected, actual)]
    for line in found:
        print(line)
    if "--kernels" in sys.argv:
        wanted = int(sys.argv[sys.argv.index("--kernels") + 1])
        if expected["kernels"] != wanted:
            print(f"the oracle counts {expected['kernels']} kernels, the test expects {wanted}")
            return 1
    print(f"{path}: {expected['kernels']} kernels, {len(expected['devices'])} devices, "
          f"{'agree' if not found else f'{len(found)} differences'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
