"""tracefuse from Python: the command line's analyses as functions that return dicts.

A drop-in for wafer-core's trace_compare::

    from tracefuse import analyze_fusion_differences
    result = analyze_fusion_differences("amd.json.gz", "nvidia.json.gz")

Every function streams its traces through the same C++ library as the `tracefuse` command, with
the GIL released (other Python threads keep running), and returns what the command's
`--format json` writes, as a dict in the same key order. Traces may be plain, gzip or zstd; paths
may be str or os.PathLike.

Errors carry the command's one-line message:
    MalformedTraceError   malformed or truncated JSON (file and byte offset)  ValueError
    UnsupportedTraceError well-formed input that is not a Kineto trace       ValueError
    RuleSetError          a rule file that does not load, an unknown set     ValueError
    OSError               a missing or unreadable file (errno set: FileNotFoundError, ...)
    TypeError             an argument of the wrong type
MalformedTraceError and UnsupportedTraceError derive from TraceError.
"""

import json as _json
import os as _os

from . import _core
from ._core import (
    MalformedTraceError,
    RuleSetError,
    TraceError,
    UnsupportedTraceError,
    __version__,
)

__all__ = [
    "analyze_fusion_differences",
    "compare",
    "ops",
    "stats",
    "breakdown",
    "classify",
    "RuleSet",
    "TraceError",
    "MalformedTraceError",
    "UnsupportedTraceError",
    "RuleSetError",
    "__version__",
]


def _path(value, name):
    """A path argument as str: str, bytes or os.PathLike, else TypeError."""
    try:
        path = _os.fspath(value)
    except TypeError:
        raise TypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}") from None
    return _os.fsdecode(path)


class RuleSet(_core.RuleSet):
    """A rule set: a built-in set's name ("tracefuse", "wafer-kernel", "wafer-op") or a rule
    file's path (str or os.PathLike), loaded and compiled; RuleSetError when it does not load.

    name, description, categories and len() describe it; check() loads it again (a file may have
    changed) and returns `tracefuse rules --check`'s line; classify(names, platform=None) is
    tracefuse.classify() with this set.
    """

    def __init__(self, name_or_path):
        super().__init__(_path(name_or_path, "name_or_path"))


def _ruleset(value):
    """A rule set argument: a built-in set's name, a rule file's path, or a RuleSet."""
    if isinstance(value, _core.RuleSet):
        return value.source
    return _path(value, "ruleset")


def _int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return value


def _read_options(threads, lenient, max_event_bytes, progress):
    """The options every reading function takes, checked, in _core's order."""
    threads = 0 if threads is None else _int(threads, "threads", 1)
    max_event_bytes = _int(max_event_bytes, "max_event_bytes", 1)
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable as progress(bytes_read, bytes_total)")
    return threads, bool(lenient), max_event_bytes, progress


def _labels(labels):
    """None, or a pair of str, as _core takes them."""
    if labels is None:
        return ("", "")
    if (not isinstance(labels, (tuple, list)) or len(labels) != 2
            or not all(isinstance(label, str) for label in labels)):
        raise TypeError("labels must be None or a pair of str")
    return tuple(labels)


def compare(trace1, trace2, ruleset="tracefuse", min_group_size=50, threads=None, labels=None,
            *, lenient=False, max_event_bytes=_core.DEFAULT_MAX_EVENT_BYTES, progress=None,
            name_only=False, by_op=False):
    """The fusion comparison of two traces: `tracefuse compare --format json` as a dict.

    The reference's keys (metadata, global_counts, fusion_opportunities, fusion_mappings) with
    float('inf') for infinite ratios, then "tracefuse": labels, each trace's platform, GPU,
    kernel time per category, truncation and timings.

    labels: None (each side's platform), or (label1, label2) for the "tracefuse" block.
    threads: None for every CPU this process may use (or SLURM_CPUS_PER_TASK).
    lenient: read a trace cut short up to its last complete event (see "truncated").
    progress: called as progress(bytes_read, bytes_total) from time to time while reading;
    an exception it raises stops nothing but is raised once the traces are read.
    name_only: as --name-only, kernels no rule names stay unclassified rather than take the
    category of the op that launched them.
    by_op: as --by-op, also read the CPU side and align the operators: "tracefuse" then holds
    the fusion differences of eager traces and graph replays ("fusion_differences") and each
    kernel type's achieved TFLOP/s ("achieved_by_type").
    """
    labels = _labels(labels)
    text = _core.compare_json(
        _path(trace1, "trace1"), _path(trace2, "trace2"), _ruleset(ruleset),
        _int(min_group_size, "min_group_size", 1), labels[0], labels[1], False, bool(name_only),
        bool(by_op), *_read_options(threads, lenient, max_event_bytes, progress))
    return _json.loads(text)


def ops(trace1, trace2, ruleset="tracefuse", top=20, threads=None, labels=None, *,
        lenient=False, max_event_bytes=_core.DEFAULT_MAX_EVENT_BYTES, progress=None,
        max_edit_distance=2000, gpu_spec=None):
    """The op-level comparison of two traces: `tracefuse ops --format json` as a dict (schema
    "tracefuse.ops/1"): each trace with the kernel time linked to ops and its peaks, every op row
    (op and module scope, matched or not, each side's kernels and time, the perf models' rates),
    the unmatched groups, the `top` instances that differ most, the ops furthest from peak, the
    fusion differences and the achieved TFLOP/s by kernel type.

    labels, threads, lenient, progress: as for compare().
    max_edit_distance: as --max-edit-distance (per step).
    gpu_spec: as --gpu-spec, a peak table (YAML) whose rows are added to the built-in one, each
    replacing the built-in row of its name; a file that does not load raises ValueError
    (OSError when it cannot be read).
    """
    labels = _labels(labels)
    text = _core.ops_json(
        _path(trace1, "trace1"), _path(trace2, "trace2"), _ruleset(ruleset), _int(top, "top", 1),
        _int(max_edit_distance, "max_edit_distance", 1), labels[0], labels[1],
        "" if gpu_spec is None else _path(gpu_spec, "gpu_spec"),
        *_read_options(threads, lenient, max_event_bytes, progress))
    return _json.loads(text)


def _in_reference_order(result, hash_order):
    """Orders what the reference orders by Python's string hash as it does, replaying its set
    iterations with this interpreter's sets (the same PYTHONHASHSEED gives the same order) over
    the types the analysis recorded in order of first appearance (HashOrderInputs, tracefuse/analyze/fusion.h).
    tracefuse's own order breaks those ties by the rule set's category order instead."""
    types1, types2 = hash_order["trace_types"]
    global_order = list(set(types1) | set(types2))
    counts = result["global_counts"]
    result["global_counts"] = {t: counts[t] for t in global_order if t in counts}
    result["fusion_opportunities"] = _opportunities_in_reference_order(
        result["fusion_opportunities"], hash_order, global_order)
    result["fusion_mappings"] = _mappings_in_reference_order(result["fusion_mappings"], hash_order)
    return result


def _opportunities_in_reference_order(opportunities, hash_order, global_order):
    """Step 6's opportunities in fusion_diffs order (filled pair by pair from set(group1 types) |
    set(group2 types)), then step 7's in global order, then the stable sort by impact."""
    diffs_order = {}
    for _cg1, _cg2, (group1, group2) in hash_order["pairs"]:
        for t in set(group1) | set(group2):
            diffs_order.setdefault(t, len(diffs_order))
    from_groups = dict(zip((o["kernel_type"] for o in opportunities), hash_order["from_groups"]))
    listed = sorted((o for o in opportunities if from_groups[o["kernel_type"]]),
                    key=lambda o: diffs_order[o["kernel_type"]])
    listed += sorted((o for o in opportunities if not from_groups[o["kernel_type"]]),
                     key=lambda o: global_order.index(o["kernel_type"]))
    return sorted(listed, key=lambda o: o["ratio"] * (o["trace1_total"] + o["trace2_total"]),
                  reverse=True)


def _mapping_rule(m):
    """The reference's loop that emitted mapping `m` and the type it iterated, from the evidence
    sentence's form (spec §4.3)."""
    evidence, sequence = m["evidence"], m["unfused_sequence"]
    if " groups where " in evidence:
        return "partial", sequence[0]
    if " in chains of " in evidence:
        return "chain", sequence[0]
    if " separately, " in evidence:
        return ("only1" if m["unfused_platform"] == "Trace 1" else "only2"), sequence[1]
    return "both", sequence[0]


def _set_order(rule, types1, types2):
    """The reference's iteration for `rule` over two sides' types (§4.1 steps 9, 10; §4.2)."""
    if rule == "only1":
        order = set(types1) - set(types2)
    elif rule == "only2":
        order = set(types2) - set(types1)
    elif rule == "both":
        order = set(types1) & set(types2)
    else:
        order = set(types1) | set(types2)
    return {t: i for i, t in enumerate(order)}


def _mappings_in_reference_order(mappings, hash_order):
    """Each run of mappings one loop of the reference emitted (a matched pair's §4.2 rules, the
    partial and chain blocks, the global §4.2 rules) reordered by that loop's set iteration."""
    pairs = {(cg1, cg2): types for cg1, cg2, types in hash_order["pairs"]}
    ordered, run, run_key = [], [], None

    def flush():
        if run:
            rule, pair = run_key
            if pair is not None:
                types = pairs[pair]
            elif rule == "partial":
                types = hash_order["matched_types"]
            else:
                types = hash_order["ts_types"]
            position = _set_order(rule, *types)
            ordered.extend(sorted(run, key=lambda m: position.get(_mapping_rule(m)[1], len(position))))
            run.clear()

    for m in mappings:
        pair = ((m["correlation_group_trace1"], m["correlation_group_trace2"])
                if "correlation_group_trace1" in m else None)
        key = (_mapping_rule(m)[0], pair)
        if key != run_key:
            flush()
            run_key = key
        run.append(m)
    flush()
    return ordered


def analyze_fusion_differences(trace1_path=None, trace2_path=None, min_group_size=50, *,
                               amd_trace_path=None, nv_trace_path=None):
    """wafer-core's analyze_fusion_differences, result for result (its spec §4.4).

    The same dict: keys in the same order, ints and floats alike, float('inf') where the
    reference has infinity, "Trace 1"/"Trace 2" in the platform fields. It classifies with the
    wafer-kernel rule set, as the reference does, and orders global_counts and the opportunities
    as the reference does under this interpreter's string hash, so that under
    PYTHONHASHSEED=0 the reference's formatter step (inf to None, then json.dumps(result,
    indent=2)) gives its published expected.json byte for byte. wafer's keyword names
    (amd_trace_path, nv_trace_path) are accepted too.
    """
    if amd_trace_path is not None:
        if trace1_path is not None:
            raise TypeError("give trace1_path or amd_trace_path, not both")
        trace1_path = amd_trace_path
    if nv_trace_path is not None:
        if trace2_path is not None:
            raise TypeError("give trace2_path or nv_trace_path, not both")
        trace2_path = nv_trace_path
    if trace1_path is None or trace2_path is None:
        raise TypeError("analyze_fusion_differences() needs two trace paths")
    text, hash_order = _core.compare_json(
        _path(trace1_path, "trace1_path"), _path(trace2_path, "trace2_path"), "wafer-kernel",
        _int(min_group_size, "min_group_size", 1), "", "", True, True, False,
        *_read_options(None, False, _core.DEFAULT_MAX_EVENT_BYTES, None))
    result = _json.loads(text)
    del result["tracefuse"]
    return _in_reference_order(result, hash_order)


def stats(path, ruleset="tracefuse", threads=None, *, lenient=False,
          max_event_bytes=_core.DEFAULT_MAX_EVENT_BYTES, progress=None):
    """One trace's summary: `tracefuse stats --format json` as a dict (platform and why, GPU,
    bytes, events per category, kernels, correlation groups, elapsed seconds, GB/s, ...)."""
    text = _core.stats_json(_path(path, "path"), _ruleset(ruleset),
                            *_read_options(threads, lenient, max_event_bytes, progress))
    return _json.loads(text)


def breakdown(path, ruleset="tracefuse", top=5, threads=None, *, lenient=False,
              max_event_bytes=_core.DEFAULT_MAX_EVENT_BYTES, progress=None, by_op=False,
              name_only=False):
    """Where one trace's kernel time goes: `tracefuse breakdown --format json` as a dict
    (categories by time with their `top` kernels, and the top unclassified kernels); with
    `by_op`, as `--by-op`: each category's achieved TFLOP/s where the trace recorded shapes;
    with `name_only`, as `--name-only`: no classification by launching op."""
    text = _core.breakdown_json(_path(path, "path"), _ruleset(ruleset), _int(top, "top", 1),
                                bool(by_op), bool(name_only),
                                *_read_options(threads, lenient, max_event_bytes, progress))
    return _json.loads(text)


def classify(names, ruleset="tracefuse", platform=None):
    """The category and pattern label (None where the rule has none) of each kernel name, as a
    list of (category, pattern) tuples in the names' order; platform is None, "amd" or "nvidia"
    (some rule sets tell the platforms' names apart)."""
    if isinstance(names, (str, bytes)):
        raise TypeError("names must be an iterable of str, not a single str")
    names = list(names)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"names must hold str, not {type(name).__name__}")
    rules = ruleset if isinstance(ruleset, RuleSet) else RuleSet(_ruleset(ruleset))
    return rules.classify(names, platform)
