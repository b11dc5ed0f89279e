#!/usr/bin/env python3
"""check_same_ops.py: `tracefuse ops` of an eager pair read from the PyTorch profiler's traces
and from the vendors' formats (the AMD side as rocprofv3 JSON, the NVIDIA side as an Nsight
Systems export, their cpu_ops as the NVTX / roctx ranges emit_nvtx writes) finds the same
fusion differences of ops and graph replays, and links the same kernel time to ops.

Usage: check_same_ops.py TRACEFUSE TRACEFUSE_GEN OUTDIR

What the ranges do not carry is left out of the comparison, and checked to be absent: module
scopes (emit_nvtx writes no nn.Module frames, so module-level differences are the Kineto
traces' only) and recorded shapes (no FLOPs or bytes).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERT = os.path.join(HERE, "..", "..", "bench", "kineto_to_vendor.py")


def ops(tracefuse, a, b):
    return json.loads(subprocess.run([tracefuse, "ops", a, b, "--format", "json"], check=True,
                                     capture_output=True, text=True).stdout)


def without_scope(difference):
    return {k: v for k, v in difference.items() if k != "scope"}


def main():
    tracefuse, gen, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    amd, nvidia = os.path.join(outdir, "amd.json"), os.path.join(outdir, "nvidia.json")
    subprocess.run([gen, "--eager", "--platform", "amd", "--layout", "lines", "--steps", "2",
                    "-o", amd, "--pair-output", nvidia], check=True)
    rocprofv3 = os.path.join(outdir, "amd_results.json")
    nsys = os.path.join(outdir, "nvidia.sqlite")
    subprocess.run([sys.executable, CONVERT, amd, os.path.join(outdir, "amd.sqlite"), rocprofv3],
                   check=True)
    subprocess.run([sys.executable, CONVERT, nvidia, nsys, os.path.join(outdir, "n_results.json")],
                   check=True)
    kineto, vendor = ops(tracefuse, amd, nvidia), ops(tracefuse, rocprofv3, nsys)
    problems = []
    for k, v in zip(kineto["traces"], vendor["traces"]):
        for field in ("kernels", "kernel_time_us", "linked_kernel_time_us",
                      "launch_only_kernel_time_us", "no_launch_kernel_time_us", "steps",
                      "top_level_ops"):
            if k[field] != v[field]:
                problems.append(f"{k['label']} {field}: Kineto {k[field]}, vendor {v[field]}")
        if v["flops"] is not None:
            problems.append(f"{v['label']}: FLOPs {v['flops']} from ranges without shapes")
    expected = [without_scope(d) for d in kineto["fusion_differences"] if d["kind"] != "module"]
    found = [without_scope(d) for d in vendor["fusion_differences"]]
    for d in expected:
        if d not in found:
            problems.append(f"missing from the vendor formats: {json.dumps(d)[:300]}")
    for d in found:
        if d not in expected:
            problems.append(f"found only in the vendor formats: {json.dumps(d)[:300]}")
    for line in problems:
        print(line)
    modules = sum(d["kind"] == "module" for d in kineto["fusion_differences"])
    print(f"{len(expected)} fusion differences of ops and graphs (and {modules} of modules, "
          f"Kineto's only): {'the same' if not problems else 'differences'}")
    return 1 if problems or not expected else 0


if __name__ == "__main__":
    sys.exit(main())
