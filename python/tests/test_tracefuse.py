"""The Python module against the reference's golden outputs and against the command line.

Run by ctest (python.pytest) with PYTHONPATH at the build tree's module and the CLI, the
generator and ../shared given in TRACEFUSE_BINARY, TRACEFUSE_GEN and TRACEFUSE_SHARED_DIR.
Cases that need ../shared skip with the missing directory named (pytest -rs lists them).
"""
import errno
import glob
import json
import math
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import tracefuse

BINARY = os.environ.get("TRACEFUSE_BINARY", "tracefuse")
GEN = os.environ.get("TRACEFUSE_GEN", "tracefuse-gen")
SHARED = pathlib.Path(os.environ.get("TRACEFUSE_SHARED_DIR", "../shared"))
GOLDEN_CASES = sorted(glob.glob(str(SHARED / "golden" / "fusion" / "*")))


def needs_shared():
    if not GOLDEN_CASES:
        pytest.skip(f"{SHARED}/golden/fusion (../shared) is not present on this machine")


def sanitized(value):
    """The reference formatter's step before json.dumps: every float inf or NaN becomes None."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    if isinstance(value, dict):
        return {k: sanitized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitized(v) for v in value]
    return value


def cli(*args, expect=0):
    """Runs the tracefuse command; returns (stdout, stderr) after checking its exit code."""
    done = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == expect, done.stderr
    return done.stdout, done.stderr


def cli_error(*args, expect=1):
    """The CLI's one-line error, without its "tracefuse: error: " prefix."""
    _out, err = cli(*args, expect=expect)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracefuse: error: "), err
    return lines[0][len("tracefuse: error: "):]


def without(document, *paths):
    """`document` with the keys at `paths` ("a.b", "a.*.b" for every item of a list) removed:
    the timings, which differ from run to run."""
    for path in paths:
        stack = [(document, path.split("."))]
        while stack:
            node, keys = stack.pop()
            if keys[0] == "*":
                stack += [(item, keys[1:]) for item in node]
            elif len(keys) == 1:
                node.pop(keys[0], None)
            elif keys[0] in node:
                stack.append((node[keys[0]], keys[1:]))
    return document


@pytest.fixture(scope="session")
def work():
    path = pathlib.Path(os.environ.get("TRACEFUSE_TEST_WORK", "/tmp/tracefuse-pytest"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def pair(work):
    """A generated AMD and NVIDIA pair, small."""
    paths = []
    for platform, seed in (("amd", 1), ("nvidia", 2)):
        path = work / f"{platform}.json"
        subprocess.run([GEN, "--platform", platform, "--steps", "40", "--seed", str(seed),
                        "-o", str(path)], check=True)
        paths.append(path)
    return paths


@pytest.fixture(scope="session")
def trace_100mb(work):
    path = work / "amd_100m.json"
    if not path.exists():
        subprocess.run([GEN, "--platform", "amd", "--size", "100M", "--seed", "3",
                        "-o", str(path) + ".tmp"], check=True)
        os.replace(str(path) + ".tmp", path)
    return path


# --- analyze_fusion_differences: the drop-in -----------------------------------------------------

@pytest.mark.parametrize("case", GOLDEN_CASES or ["(no golden case)"],
                         ids=[os.path.basename(c) for c in GOLDEN_CASES] or ["missing"])
def test_analyze_fusion_differences_gives_the_reference_json_byte_for_byte(case):
    needs_shared()
    # The reference orders some keys by the string hash; its files were made under seed 0.
    assert os.environ.get("PYTHONHASHSEED") == "0", "run with PYTHONHASHSEED=0 (ctest sets it)"
    case = pathlib.Path(case)
    result = tracefuse.analyze_fusion_differences(case / "trace1.json.gz", case / "trace2.json.gz")
    expected = (case / "expected.json").read_text()
    assert json.dumps(sanitized(result), indent=2) == expected.rstrip("\n")
    assert list(result) == ["metadata", "global_counts", "fusion_opportunities", "fusion_mappings"]


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_analyze_fusion_differences_under_another_hash_seed_differs_in_order_only(seed, work):
    """The reference's output under seeds 0 to 3 is the same but for hash-ordered ties (spec
    §4.4): so is the drop-in's, which replays those orders with the interpreter's sets."""
    needs_shared()
    case = SHARED / "golden" / "fusion" / "synth_graph_decode"
    out = work / f"seed{seed}.json"
    script = ("import json, math, sys, tracefuse\n"
              "r = tracefuse.analyze_fusion_differences(sys.argv[1], sys.argv[2])\n"
              "inf = lambda v: None if isinstance(v, float) and math.isinf(v) else v\n"
              "fix = lambda v: {k: fix(x) for k, x in v.items()} if isinstance(v, dict) else "
              "[fix(x) for x in v] if isinstance(v, list) else inf(v)\n"
              "open(sys.argv[3], 'w').write(json.dumps(fix(r), indent=2))\n")
    env = dict(os.environ, PYTHONHASHSEED=seed)
    subprocess.run([sys.executable, "-c", script, str(case / "trace1.json.gz"),
                    str(case / "trace2.json.gz"), str(out)], env=env, check=True)
    compare = SHARED / "tools" / "compare_fusion.py"
    done = subprocess.run([sys.executable, str(compare), str(case / "expected.json"), str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_analyze_fusion_differences_keeps_the_references_types(pair):
    result = tracefuse.analyze_fusion_differences(*pair, min_group_size=20)
    assert result["fusion_opportunities"], "the generated pair has opportunities"
    for o in result["fusion_opportunities"]:
        assert o["fused_by"] in ("Trace 1", "Trace 2")
        assert isinstance(o["trace1_total"], int) and isinstance(o["ratio"], float)
        assert isinstance(o["trace1_time_ms"], float) and isinstance(o["time_ratio"], float)
    infinite = [o["ratio"] for o in result["fusion_opportunities"] if math.isinf(o["ratio"])]
    assert infinite, "a type one side never runs has ratio float('inf'), as in the reference"
    for m in result["fusion_mappings"]:
        assert m["fused_platform"] in ("Trace 1", "Trace 2")
        assert isinstance(m["pattern_count"], int)


def test_analyze_fusion_differences_takes_wafers_keyword_names(pair):
    by_position = tracefuse.analyze_fusion_differences(str(pair[0]), str(pair[1]))
    by_keyword = tracefuse.analyze_fusion_differences(amd_trace_path=pair[0], nv_trace_path=pair[1])
    assert by_keyword == by_position
    with pytest.raises(TypeError, match="give trace1_path or amd_trace_path, not both"):
        tracefuse.analyze_fusion_differences(pair[0], pair[1], amd_trace_path=pair[0])


# --- the other functions against the command line's JSON -----------------------------------------

TIMINGS = ("tracefuse.timings_seconds", "tracefuse.traces.*.cpu_seconds")


def test_compare_equals_the_clis_json(pair):
    result = tracefuse.compare(*pair, ruleset="wafer-op", min_group_size=20,
                               labels=("MI300X", "H100"), threads=2)
    out, _err = cli("compare", *pair, "--format", "json", "--ruleset", "wafer-op",
                    "--min-group-size", 20, "--label1", "MI300X", "--label2", "H100")
    assert without(sanitized(result), *TIMINGS) == without(json.loads(out), *TIMINGS)
    assert [t["label"] for t in result["tracefuse"]["traces"]] == ["MI300X", "H100"]


# Every pair in ../shared: the reference's golden cases and the real same-model pairs.
REAL_PAIRS = [("tl_mi300_bert_small", "tl_h100_bert_small"),
              ("tl_mi300_falconsai_nsfw", "tl_h100_falconsai_nsfw"),
              ("tl_mi300_timesformer", "tl_h100_timesformer"),
              ("tl_sp_qwen3_30b_a3b_mi300x_decode", "tl_sp_qwen3_30b_a3b_b300_decode")]
SHARED_PAIRS = [(pathlib.Path(c) / "trace1.json.gz", pathlib.Path(c) / "trace2.json.gz")
                for c in GOLDEN_CASES] + \
    [(SHARED / "traces" / "real" / f"{a}.json.gz", SHARED / "traces" / "real" / f"{b}.json.gz")
     for a, b in REAL_PAIRS if GOLDEN_CASES]
OPS_TIMINGS = ("tracefuse.read_seconds", "tracefuse.analyze_seconds")


@pytest.mark.parametrize("shared_pair", SHARED_PAIRS or [None],
                         ids=[f"{p[0].parent.name}/{p[0].name}" for p in SHARED_PAIRS] or ["missing"])
def test_ops_and_compare_by_op_equal_the_clis_json_on_every_shared_pair(shared_pair):
    if shared_pair is None:
        needs_shared()
    trace1, trace2 = shared_pair
    out, _err = cli("ops", trace1, trace2, "--format", "json")
    result = tracefuse.ops(trace1, trace2, threads=2)
    assert without(result, *OPS_TIMINGS) == without(json.loads(out), *OPS_TIMINGS)
    out, _err = cli("compare", trace1, trace2, "--format", "json", "--by-op")
    result = tracefuse.compare(trace1, trace2, by_op=True, threads=2)
    assert "fusion_differences" in result["tracefuse"]
    assert without(sanitized(result), *TIMINGS) == without(json.loads(out), *TIMINGS)


@pytest.fixture(scope="session")
def eager_pair(work):
    """A generated eager pair with planted fusion differences (no ../shared needed)."""
    paths = [work / "eager.1.json", work / "eager.2.json"]
    subprocess.run([GEN, "--eager", "--platform", "amd", "--seed", "5", "--steps", "3",
                    "-o", str(paths[0]), "--pair-output", str(paths[1])], check=True)
    return paths


def test_ops_takes_the_clis_options(eager_pair, work):
    out, _err = cli("ops", *eager_pair, "--format", "json", "--top", 3, "--label1", "A",
                    "--label2", "B", "--max-edit-distance", 50, "--ruleset", "wafer-op")
    result = tracefuse.ops(*eager_pair, top=3, labels=("A", "B"), max_edit_distance=50,
                           ruleset="wafer-op")
    assert without(result, *OPS_TIMINGS) == without(json.loads(out), *OPS_TIMINGS)
    assert result["schema"] == "tracefuse.ops/1" and result["fusion_differences"]
    assert [t["label"] for t in result["traces"]] == ["A", "B"] and len(result["top_instances"]) == 3
    out, _err = cli("compare", *eager_pair, "--format", "json", "--by-op")
    by_op = tracefuse.compare(*eager_pair, by_op=True)
    assert by_op["tracefuse"]["fusion_differences"] == json.loads(out)["tracefuse"]["fusion_differences"]
    assert "fusion_differences" not in tracefuse.compare(*eager_pair)["tracefuse"]
    # --gpu-spec adds and replaces rows by name: H100 SXM is ours, the MI300X keeps its row.
    spec = write(work, "gpus.yaml", "gpus:\n  - name: H100 SXM\n    match: [\"nvidia h100\"]\n"
                 "    source: our measurement\n    tflops: {bf16: 700}\n")
    out, _err = cli("ops", *eager_pair, "--format", "json", "--gpu-spec", spec)
    result = tracefuse.ops(*eager_pair, gpu_spec=spec)
    assert without(result, *OPS_TIMINGS) == without(json.loads(out), *OPS_TIMINGS)
    peaks = [t["peak"] for t in result["traces"]]
    assert [(p["name"], p["source"]) for p in peaks][1] == ("H100 SXM", "our measurement")
    assert peaks[1]["bf16_tflops"] == 700 and peaks[1]["fp32_tflops"] is None
    assert peaks[0]["name"] == "MI300X" and peaks[0]["bf16_tflops"] == 1307.4
    spec = write(work, "bad_gpus.yaml", "gpus: [\n")
    message = cli_error("ops", *eager_pair, "--gpu-spec", spec, expect=2)
    with pytest.raises(ValueError) as raised:
        tracefuse.ops(*eager_pair, gpu_spec=spec)
    assert str(raised.value) == message
    with pytest.raises(FileNotFoundError):
        tracefuse.ops(*eager_pair, gpu_spec=work / "missing.yaml")


def test_stats_and_breakdown_equal_the_clis_json(pair):
    timings = ("elapsed_seconds", "gb_per_second", "cpu_seconds")
    out, _err = cli("stats", pair[0], "--format", "json")
    assert without(tracefuse.stats(pair[0]), *timings) == without(json.loads(out), *timings)
    out, _err = cli("breakdown", pair[1], "--format", "json", "--top", 3, "--ruleset", "wafer-kernel")
    assert tracefuse.breakdown(pair[1], ruleset="wafer-kernel", top=3) == json.loads(out)
    out, _err = cli("breakdown", pair[1], "--format", "json", "--by-op")
    assert tracefuse.breakdown(pair[1], by_op=True) == json.loads(out)


@pytest.mark.parametrize("name", ["pipit_saxpy_nsys.sqlite", "tl_rocprof_908_results.json.gz"])
def test_vendor_files_read_as_the_cli_reads_them(name):
    trace = SHARED / "traces" / "real" / name
    if not trace.exists():
        pytest.skip(f"{trace} (../shared) is not present on this machine")
    timings = ("elapsed_seconds", "gb_per_second", "cpu_seconds")
    out, _err = cli("stats", trace, "--format", "json")
    assert without(tracefuse.stats(trace), *timings) == without(json.loads(out), *timings)
    out, _err = cli("breakdown", trace, "--format", "json")
    assert tracefuse.breakdown(trace) == json.loads(out)


def test_breakdown_by_op_gives_each_category_its_tflops():
    trace = SHARED / "traces" / "real" / "tl_h100_timesformer.json.gz"
    if not trace.exists():
        pytest.skip(f"{trace} (../shared) is not present on this machine")
    result = tracefuse.breakdown(trace, by_op=True)
    out, _err = cli("breakdown", trace, "--format", "json", "--by-op")
    assert result == json.loads(out)
    gemm = next(c for c in result["categories"] if c["category"] == "GEMM")
    assert gemm["flops"] > 0
    assert gemm["tflops_per_s"] == pytest.approx(gemm["flops"] / (gemm["flops_time_us"] * 1e6))
    assert "flops" not in tracefuse.breakdown(trace)["categories"][0]


def test_breakdown_classifies_uninformative_names_by_their_launching_op(work):
    correlation = {"correlation": 1}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10, "dur": 1, "args": correlation},
        {"ph": "X", "cat": "kernel", "name": "main_kernel", "pid": 0, "tid": 7,
         "ts": 1000, "dur": 50, "args": {**correlation, "device": 0, "stream": 7}},
    ]
    trace = work / "eager.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    result = tracefuse.breakdown(trace)
    out, _err = cli("breakdown", trace, "--format", "json")
    assert result == json.loads(out)
    kernel = result["categories"][0]["top_kernels"][0]
    assert (result["categories"][0]["category"], kernel["by_op"], kernel["launching_op"]) == \
        ("GEMM", True, "aten::mm")
    name_only = tracefuse.breakdown(trace, name_only=True)
    out, _err = cli("breakdown", trace, "--format", "json", "--name-only")
    assert name_only == json.loads(out)
    assert name_only["unclassified"][0]["name"] == "main_kernel"


def test_classify_equals_the_clis_classify(work):
    names = ["Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x1", "nvjet_tst_128x64_64x6_2x1_v_bz_TNT",
             "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "my_custom_kernel", "ü name, with comma"]
    (work / "names.txt").write_text("\n".join(names) + "\n")
    for ruleset in ("tracefuse", "wafer-op"):
        for platform in (None, "amd"):
            args = ["classify", work / "names.txt", "--ruleset", ruleset]
            out, _err = cli(*args, *(["--platform", platform] if platform else []))
            expected = [(line["category"], line.get("pattern") or None)
                        for line in map(json.loads, out.splitlines())]
            assert tracefuse.classify(names, ruleset=ruleset, platform=platform) == expected


def test_rule_set_loads_checks_and_classifies(work):
    path = work / "rules.yaml"
    path.write_text("extends: tracefuse\nrules:\n  - {category: Mine, prefix: my_custom_}\n")
    rules = tracefuse.RuleSet(path)
    assert rules.check() == f"{path}: OK ({len(rules)} rules, {len(rules.categories)} categories)"
    assert "Mine" in rules.categories
    assert tracefuse.classify(["my_custom_kernel"], ruleset=rules) == [("Mine", None)]
    out, _err = cli("rules", "--check", "--ruleset", path)
    assert out.strip() == rules.check()


# --- errors: the CLI's message, a Python exception class, no result ------------------------------

def write(work, name, text):
    path = work / name
    path.write_text(text)
    return path


def stats_raises_the_clis_error(error, path):
    """tracefuse.stats(path) raises `error` with the line `tracefuse stats` prints; returns both."""
    message = cli_error("stats", path)
    with pytest.raises(error) as caught:
        tracefuse.stats(path)
    assert str(caught.value) == message
    return caught, message


def test_a_malformed_trace_raises_malformed_trace_error_with_the_clis_message(work):
    bad = write(work, "bad.json", '{"traceEvents": [{"ph": "X", "cat": "kernel"}}, {}]}')
    caught, message = stats_raises_the_clis_error(tracefuse.MalformedTraceError, bad)
    assert "malformed JSON at byte" in message
    assert isinstance(caught.value, tracefuse.TraceError) and isinstance(caught.value, ValueError)


def test_a_truncated_trace_raises_unless_lenient(pair, work):
    cut = work / "cut.json"
    cut.write_bytes(pair[0].read_bytes()[: pair[0].stat().st_size // 2])
    stats_raises_the_clis_error(tracefuse.MalformedTraceError, cut)
    assert tracefuse.stats(cut, lenient=True)["truncated"]["dropped_bytes"] > 0


def test_a_trace_that_is_not_kineto_raises_unsupported_trace_error(work):
    other = write(work, "other.json", '{"schemaVersion": 1, "events": []}')
    caught, message = stats_raises_the_clis_error(tracefuse.UnsupportedTraceError, other)
    assert "not a Kineto trace" in message and isinstance(caught.value, tracefuse.TraceError)
    csv = write(work, "table.csv", "name,dur\nk,1\n")
    with pytest.raises(tracefuse.UnsupportedTraceError, match="not a JSON trace"):
        tracefuse.compare(csv, csv)


def test_a_missing_file_raises_file_not_found_error_with_errno(pair, work):
    missing = work / "missing.json"
    message = cli_error("compare", pair[0], missing, expect=3)
    with pytest.raises(FileNotFoundError) as caught:
        tracefuse.compare(pair[0], missing)
    assert caught.value.errno == errno.ENOENT and caught.value.strerror == message


def test_a_bad_rule_file_raises_rule_set_error_with_its_line(work, pair):
    bad = write(work, "bad.yaml", "categories: [A]\nrules:\n  - {category: A, prefix: x}\n  - {bogus: 1}\n")
    message = cli_error("rules", "--check", "--ruleset", bad)
    for call in (lambda: tracefuse.RuleSet(bad), lambda: tracefuse.stats(pair[0], ruleset=bad),
                 lambda: tracefuse.classify(["x"], ruleset=bad)):
        with pytest.raises(tracefuse.RuleSetError) as caught:
            call()
        assert str(caught.value) == message
    assert message == f"{bad}:4: rule without 'category'"
    with pytest.raises(tracefuse.RuleSetError, match="unknown rule set"):
        tracefuse.RuleSet("no-such-set")


@pytest.mark.parametrize("call, message", [
    (lambda p: tracefuse.stats(42), "path must be a path"),
    (lambda p: tracefuse.compare(p[0], None), "trace2 must be a path"),
    (lambda p: tracefuse.compare(p[0], p[1], min_group_size="50"), "min_group_size must be an int"),
    (lambda p: tracefuse.compare(p[0], p[1], labels="AB"), "labels must be None or a pair of str"),
    (lambda p: tracefuse.classify("one name"), "names must be an iterable of str"),
    (lambda p: tracefuse.classify([b"bytes"]), "names must hold str"),
    (lambda p: tracefuse.stats(p[0], progress=3), "progress must be callable"),
    (lambda p: tracefuse.stats(p[0], threads=2.0), "threads must be an int"),
])
def test_wrong_arguments_raise_type_error(pair, call, message):
    with pytest.raises(TypeError, match=message):
        call(pair)


def test_out_of_range_arguments_raise_value_error(pair):
    with pytest.raises(ValueError, match="threads must be at least 1, not 0"):
        tracefuse.stats(pair[0], threads=0)
    with pytest.raises(ValueError, match="platform must be None, 'amd' or 'nvidia', not 'intel'"):
        tracefuse.classify(["x"], platform="intel")


# --- streaming: the GIL, progress -----------------------------------------------------------------

def test_another_thread_keeps_running_while_a_100mb_trace_streams(trace_100mb):
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.05)
        started = time.monotonic()
        result = tracefuse.stats(trace_100mb, threads=2)
        ended = time.monotonic()
    finally:
        done.set()
        thread.join()
    assert result["bytes"] >= 100_000_000
    during = [t for t in ticks if started < t < ended]
    # Held GIL: no tick at all while the call runs. Released: about one per millisecond.
    assert len(during) >= 0.2 * (ended - started) * 1000, (len(during), ended - started)


def test_progress_reports_bytes_read_up_to_the_total(trace_100mb):
    calls = []
    tracefuse.stats(trace_100mb, progress=lambda read, total: calls.append((read, total)))
    size = trace_100mb.stat().st_size
    assert calls and calls[-1] == (size, size)
    assert [read for read, _total in calls] == sorted(read for read, _total in calls)


def test_an_exception_in_progress_is_raised_and_no_result_returned(pair):
    def fail(read, total):
        raise ZeroDivisionError("stop")

    with pytest.raises(ZeroDivisionError, match="stop"):
        tracefuse.compare(*pair, progress=fail)
