#!/usr/bin/env python3
"""Writes two small crafted traces that hold every case the op linking must get right, and checks
what `tracefuse ops` reports for them, beyond the oracle's agreement (check_oracle.py):

- a kernel written before its launch, and CPU ops written after the launches and kernels;
- an `External id` that points at another op (ignored: the launch's time nests it);
- a step annotation inside another (only the outer one is a step); ops outside every step;
- a graph launch under an nn.Module frame and no cpu_op ("[graph launch]" under that scope);
- a launch under a user annotation only (a torch.compile region), a driver-API launch;
- an annotation and a cpu_op with the same start and duration (the annotation encloses);
- a launch at the very start of its op; a second thread with string tids;
- a kernel whose correlation id no launch carries, and one with none ("[no CPU op]");
- CPU ops whose ts or dur is not a number (skipped, counted);
- an op with FLOPs on one side only (left out of the achieved TFLOP/s by kernel type);
- fusion differences: a graph replay of three kernels against one, a GEMM against GEMM + split-K
  reduction (the fused side slower), and a stretch that differs in names only (none reported).

usage: crafted.py TRACEFUSE OUTDIR
"""
import json
import os
import subprocess
import sys


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = {k.replace("_", " "): v for k, v in args.items()}
    return e


def launch(name, ts, corr, tid=1, cat="cuda_runtime", **args):
    return x(cat, name, ts, 4, tid=tid, correlation=corr, **args)


def kernel(name, ts, dur, corr=None):
    args = {"device": 0, "stream": 7}
    if corr is not None:
        args["correlation"] = corr
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": args}


BF16 = "c10::BFloat16"


def shapes(dtype):
    """aten::addmm's recorded arguments: bias [64] + [32, 128] x [128, 64]."""
    return {"Input_Dims": [[64], [32, 128], [128, 64], [], []],
            "Input_type": [dtype, dtype, dtype, "Scalar", "Scalar"],
            "Concrete_Inputs": ["", "", "", "1", "1"]}


def trace_a():
    gpu = [
        kernel("void at::native::vectorized_elementwise_kernel<4, relu>(int)", 1230, 5, 11),
        kernel("Cijk_Alik_Bljk_HB_MT128x128x32_MI32x32x8", 1100, 30.5, 10),
        kernel("graph_kernel_a", 1310, 7, 12), kernel("graph_kernel_b", 1318, 8, 12),
        kernel("graph_kernel_c", 1327, 9, 12),
        kernel("triton_poi_fused_add_0", 1520, 11, 13),
        kernel("at::native::add_kernel", 1150, 3, 14),
        kernel("void at::native::mul_kernel<float>(float*)", 1720, 2, 16),
        kernel("void at::native::sub_kernel<float>(float*)", 1770, 2.25, 17),
        kernel("orphan_kernel", 1800, 6, 99), kernel("uncorrelated_kernel", 1810, 4),
        kernel("Cijk_Alik_Bljk_HB_MT64x64x32_MI32x32x8", 2450, 10, 19),
    ]
    cpu = [
        launch("hipLaunchKernel", 60, 10, External_id=5),
        launch("hipLaunchKernel", 220, 11),
        launch("hipGraphLaunch", 310, 12),
        launch("hipModuleLaunchKernel", 510, 13, cat="cuda_driver"),
        launch("hipLaunchKernel", 150, 14, tid="2"),
        launch("hipLaunchKernel", 710, 16), launch("hipLaunchKernel", 760, 17),
        launch("hipMemcpyAsync", 2010, 18),
        x("user_annotation", "ProfilerStep#3", 0, 1000),
        x("user_annotation", "step[DECODE bs=1]", 10, 890),
        x("python_function", "nn.Module: Model_0", 20, 780),
        x("python_function", "nn.Module: Linear_0", 30, 170),
        x("python_function", "model.py(12): forward", 35, 100),
        x("cpu_op", "aten::linear", 40, 110, External_id=1),
        x("cpu_op", "aten::addmm", 50, 90, External_id=2, **shapes(BF16)),
        x("cpu_op", "aten::relu", 210, 50, External_id=5),
        x("python_function", "nn.Module: Linear_1", 300, 100),
        x("user_annotation", "## Call CompiledFxGraph f0x1a2b ##", 500, 100),
        x("user_annotation", "my_region", 700, 50),
        x("cpu_op", "aten::mul", 700, 50, Input_Dims="not a list", Input_type=[BF16]),
        x("cpu_op", "aten::sub", 760, 20),
        x("cpu_op", "autograd::engine::evaluate_function: AddBackward0", 100.5, 600, tid="2"),
        x("cpu_op", "aten::add", 140.25, 30, tid="2"),
        x("cpu_op", "aten::copy_", 2000, 100, Input_Dims=[[32, 64], [32, 64], []],
          Input_type=[BF16, "float", "Scalar"], Concrete_Inputs=["", "", "False"]),
        x("cpu_op", "aten::empty", 2200, 10),
        x("cpu_op", "aten::mm", 2400, 30, Input_Dims=[[32, 128], [128, 64]],
          Input_type=[BF16, BF16]),
        launch("hipLaunchKernel", 2410, 19),
        x("cpu_op", "aten::ghost", "soon", 5),  # skipped and counted: no time to nest it by
        x("cpu_op", "aten::ghost", 2300, None),
    ]
    return {"schemaVersion": 1, "deviceProperties": [{"name": "AMD Instinct MI300X"}],
            "roctracer_version": 4, "traceEvents": gpu + cpu}


def trace_b():
    cpu = [
        x("user_annotation", "ProfilerStep#7", 0, 1000),
        x("python_function", "nn.Module: Model_0", 20, 780),
        x("python_function", "nn.Module: Linear_0", 30, 170),
        x("cpu_op", "aten::linear", 40, 110),
        x("cpu_op", "aten::addmm", 50, 90, **shapes("float")),
        launch("cudaLaunchKernel", 60, 20), launch("cudaLaunchKernel", 70, 21),
        x("cpu_op", "aten::clamp_min", 210, 50),
        launch("cudaLaunchKernel", 220, 22),
        x("cpu_op", "aten::contiguous", 270, 10),
        x("python_function", "nn.Module: Linear_1", 300, 100),
        launch("cudaGraphLaunch", 310, 23),
        x("user_annotation", "## Call CompiledFxGraph f0x9f9f ##", 500, 100),
        launch("cuLaunchKernel", 510, 24, cat="cuda_driver"),
        x("user_annotation", "my_region", 700, 50),
        x("cpu_op", "aten::mul", 700, 50), launch("cudaLaunchKernel", 710, 26),
        x("cpu_op", "aten::sub", 760, 20), launch("cudaLaunchKernel", 760, 27),
        x("cpu_op", "autograd::engine::evaluate_function: AddBackward0", 100, 600, tid="2"),
        x("cpu_op", "aten::add", 140, 30, tid="2", Input_Dims=[[1.5, 2]], Input_type=["float"]),
        launch("cudaLaunchKernel", 150, 25, tid="2"),
        x("cpu_op", "aten::copy_", 2000, 100),
    ]
    gpu = [
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 1100, 18, 20),
        kernel("void cublasLt::splitKreduce_kernel<32, 16, float>(float*)", 1120, 2.4, 21),
        kernel("void at::native::vectorized_elementwise_kernel<4, clamp>(int)", 1230, 3, 22),
        kernel("graph_kernel_ab", 1310, 10, 23),
        kernel("triton_poi_fused_add_0", 1520, 6, 24),
        kernel("at::native::add_kernel", 1150, 2, 25),
        kernel("void at::native::mul_kernel<float>(float*)", 1720, 2, 26),
        kernel("void at::native::sub_kernel<float>(float*)", 1770, 1, 27),
    ]
    return {"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA H100"}],
            "cupti_version": 22, "traceEvents": cpu + gpu}


def row(report, op, scope, matched=True):
    for r in report["ops"]:
        if (r["op"], r["scope"], r["matched"]) == (op, scope, matched):
            return r
    raise AssertionError(f"no row {op!r} under {scope!r} (matched={matched})")


def families(side):
    return [(k["name"], k["count"]) for k in side["kernels"]]


def check(report):
    t1, t2 = report["traces"]
    assert (t1["steps"], t2["steps"]) == (1, 1), (t1["steps"], t2["steps"])
    assert (t1["cpu_events_without_times"], t2["cpu_events_without_times"]) == (2, 0)
    # Kernel before its launch, External id pointing at aten::relu: still aten::linear's.
    linear = row(report, "aten::linear", "Model/Linear")
    assert families(linear["trace1"]) == [("Cijk_Alik_Bljk_HB_MT#x#x#_MI#x#x#", 1)], linear
    assert families(linear["trace2"]) == [
        ("sm#_xmma_gemm_bf#bf#_bf#f#_f#_tn_n_tilesize#x#x#", 1),
        ("cublasLt::splitKreduce_kernel", 1)], linear
    assert (linear["delta_us"], linear["trace1"]["time_us"]) == (10.1, 30.5), linear
    # Each family carries the full name of its kernel there: tile sizes and architecture.
    assert [k["example"] for k in linear["trace2"]["kernels"]] == [
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
        "void cublasLt::splitKreduce_kernel<32, 16, float>(float*)"], linear
    # Perf models (docs/perf-models.md): aten::linear counts its aten::addmm, at each side's dtype.
    gemm_bytes = 64 + 32 * 128 + 128 * 64 + 32 * 64
    assert [(linear[s]["flops"], linear[s]["bytes"], linear[s]["dtype"]) for s in
            ("trace1", "trace2")] == [(2 * 32 * 64 * 128, 2 * gemm_bytes, "bf16"),
                                      (2 * 32 * 64 * 128, 4 * gemm_bytes, "fp32")], linear
    assert linear["trace1"]["tflops_per_s"] == 2 * 32 * 64 * 128 / 30500 / 1e3, linear
    assert linear["trace1"]["bound"] == "memory", linear  # 32 x 64 x 128 is far below the ridge
    # Trace 2's GPU, "NVIDIA H100", is not in the peak table: rates, no percent.
    assert t1["peak"]["name"] == "MI300X" and t2["peak"] is None, (t1["peak"], t2["peak"])
    assert linear["trace1"]["percent_of_peak"] > 0 and linear["trace2"]["percent_of_peak"] is None
    # By kernel type: the linear's FLOPs go to GEMM, which holds its kernel time (the GEMM and, on
    # trace 2, its split-K reduction), over that time. Trace 1's aten::mm, outside the steps and
    # unmatched, is left out: the two sides' figures cover the same ops.
    gemm = 2 * 32 * 64 * 128
    assert [(t["type"], t["op_pairs"], t["trace1"]["flops"], t["trace1"]["time_us"],
             t["trace2"]["flops"], t["trace2"]["time_us"]) for t in report["achieved_by_type"]] == [
        ("GEMM", 1, gemm, 30.5, gemm, 20.4)], report["achieved_by_type"]
    left_out = report["achieved_by_type_left_out"]
    assert [(s["ops"], s["flops"], s["time_us"], s["all_flops"]) for s in
            (left_out["trace1"], left_out["trace2"])] == [(1, gemm, 10, 2 * gemm), (0, 0, 0, gemm)], \
        left_out
    # Malformed shapes give no figures; copy_ reads bf16 and writes float.
    assert row(report, "aten::mul", "Model")["trace1"]["bytes"] is None
    copy = row(report, "aten::copy_", "", matched=True)
    assert copy["trace1"]["bytes"] == 32 * 64 * (2 + 4) and copy["trace1"]["flops"] is None, copy
    assert copy["trace1"]["tb_per_s"] is None and copy["trace2"]["bytes"] is None, copy  # no kernel
    graph = row(report, "[graph launch]", "Model/Linear")
    assert families(graph["trace1"]) == [("graph_kernel_c", 1), ("graph_kernel_b", 1),
                                         ("graph_kernel_a", 1)], graph
    compiled = row(report, "## Call CompiledFxGraph f0x ##", "Model")
    assert compiled["trace1"]["time_us"] == 11 and compiled["trace2"]["time_us"] == 6, compiled
    assert row(report, "aten::mul", "Model")["instances"] == 1  # under my_region, same times
    assert row(report, "aten::sub", "Model")["trace1"]["time_us"] == 2.25
    assert row(report, "autograd::engine::evaluate_function: AddBackward0", "")["instances"] == 1
    no_op = row(report, "[no CPU op]", "", matched=False)
    assert families(no_op["trace1"]) == [("orphan_kernel", 1), ("uncorrelated_kernel", 1)]
    assert no_op["trace2"]["instances"] == 0
    assert t1["no_launch_kernel_time_us"] == 10 and t2["no_launch_kernel_time_us"] == 0
    assert t1["launch_only_kernel_time_us"] == 24 and t2["launch_only_kernel_time_us"] == 10
    # aten::relu against aten::clamp_min + aten::contiguous: one stretch, under Model.
    stretch = [g for g in report["unmatched_groups"] if g["step"] == 0]
    assert [(g["scope"], g["trace1"]["ops"], g["trace2"]["ops"]) for g in stretch] == [
        ("Model", ["aten::relu"], ["aten::clamp_min", "aten::contiguous"])], stretch
    outside = [g for g in report["unmatched_groups"] if g["step"] is None]
    assert [(g["trace1"]["ops"], g["trace2"]["ops"]) for g in outside] == [
        (["aten::empty", "aten::mm"], [])], outside
    # Fusion differences: the graph replay runs three kernels against one; the matched kernel
    # before the extras (the first) is taken in on both sides, so the fused side is not empty.
    graph, linear = report["fusion_differences"]
    assert (graph["kind"], graph["op"], graph["fused_by"], graph["instances"]) == (
        "graph", "[graph launch]", "trace2", 1), graph
    assert (graph["trace1"]["kernels"], graph["trace2"]["kernels"]) == (3, 1), graph
    assert (graph["trace1"]["time_us"], graph["trace2"]["time_us"]) == (24, 10), graph
    assert (graph["extra_categories"], graph["fused_kernel"], graph["saving_us"]) == (
        {"Other": 2}, "graph_kernel_ab", 14), graph
    # aten::linear: one GEMM against a GEMM and its split-K reduction; the fused one is slower.
    assert (linear["kind"], linear["scope"], linear["fused_by"]) == (
        "op", "Model/Linear", "trace1"), linear
    assert (linear["extra_categories"], linear["saving_us"]) == ({"GEMM": 1}, -10.1), linear
    assert linear["fused_kernel"] == "Cijk_Alik_Bljk_HB_MT#x#x#_MI#x#x#", linear
    # aten::relu against aten::clamp_min + aten::contiguous runs one kernel on each side: a
    # difference of names, not of fusion.
    assert all(d["kind"] != "module" for d in report["fusion_differences"])


def main(binary, outdir):
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for name, doc in (("crafted_a.json", trace_a()), ("crafted_b.json", trace_b())):
        path = os.path.join(outdir, name)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        paths.append(path)
    run = subprocess.run([binary, "ops", *paths, "--format", "json"], capture_output=True,
                         text=True, check=True)
    check(json.loads(run.stdout))
    # --full-names: the text names kernels as the trace does, not by family.
    for flag, shown, hidden in (
            ([], "sm#_xmma_gemm_bf#bf#_bf#f#_f#_tn_n_tilesize#x#x# x1",
             "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64 x1"),
            (["--full-names"], "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64 x1",
             "sm#_xmma_gemm_bf#bf#_bf#f#_f#_tn_n_tilesize#x#x# x1")):
        text = subprocess.run([binary, "ops", *paths, *flag], capture_output=True, text=True,
                              check=True).stdout
        assert shown in text and hidden not in text, (flag, text)
    print(f"crafted pair as expected: {paths[0]} {paths[1]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
