#!/usr/bin/env python3
"""--lenient's property: a trace cut anywhere is read as the same trace with its events after the
cut removed.

  check_cuts.py TRACEFUSE TRACE [--cuts N] [--seed S] [--gzip]
  check_cuts.py TRACEFUSE TRACE1 --pair TRACE2

The first form cuts TRACE (plain or .gz, read whole) at N random byte offsets. For each cut it
writes the cut file and the expected trace: the bytes before the events array, every event that
closed before the cut (with the original bytes between them), and the array closed; trailing
top-level keys are dropped, as --lenient drops them. `tracefuse stats --format json --lenient` on
the cut file must equal `stats` on the expected trace in every field but the file's own (path,
bytes, timings), and its "truncated" object must say where the cut was and what was dropped.
Cuts before the events array must fail, with exit code 1. With --gzip the trace is compressed
and the compressed file is cut, mid-block: the cut is then where its inflated bytes end.

The second form is `compare --lenient` on a real pair whose gzip files are cut at half their
size: its JSON report must equal that of the two first halves, but for the "tracefuse" block,
whose traces say they were truncated.

Event boundaries are found here independently of tracefuse, by a tokenizer over strings and
brackets (Python's re). Exit 0 when every check holds, 1 otherwise, 77 (skipped) when a trace is
missing.
"""
import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import zlib

TOKENS = None  # compiled on first use


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def layout(text):
    """Returns (array_open, events, array_close): the offset of the events array's '[', each
    event's (begin, end) with end one past its '}', and the offset of the array's ']'."""
    import re

    global TOKENS
    TOKENS = TOKENS or re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
    depth, events_depth, array_open, array_close = 0, None, None, None
    events, begin, last_string = [], None, None
    for m in TOKENS.finditer(text):
        tok = m.group()
        if tok[0] == ord('"'):
            last_string = (tok, m.end())
            continue
        if tok in (b"[", b"{"):
            if events_depth is None and tok == b"[":
                bare = depth == 0
                key = depth == 1 and last_string and last_string[0] == b'"traceEvents"' and \
                    text[last_string[1]:m.start()].strip() == b":"
                if bare or key:
                    events_depth, array_open = depth + 1, m.start()
            elif events_depth is not None and array_close is None and depth == events_depth:
                begin = m.start()
            depth += 1
        else:
            depth -= 1
            if events_depth is not None and array_close is None:
                if depth == events_depth and tok == b"}":
                    events.append((begin, m.end()))
                elif depth == events_depth - 1:
                    array_close = m.start()
    assert array_open is not None and array_close is not None, "no events array"
    return array_open, events, array_close


def expected_trace(text, array_open, events, cut):
    kept = [e for e in events if e[1] <= cut]
    body = text[array_open + 1:kept[-1][1]] if kept else b""
    close = b"]" if text.lstrip()[:1] == b"[" else b"]}"
    return text[:array_open + 1] + body + close, (kept[-1][1] if kept else array_open + 1)


def run(tracefuse, args):
    r = subprocess.run([tracefuse] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


VOLATILE = {"trace", "bytes", "file_bytes", "compressed", "elapsed_seconds", "gb_per_second",
            "cpu_seconds", "truncated"}


def without_chunk_offsets(value):
    """`value` with the byte offsets of "... near byte N" reasons (a path's reason names the chunk
    where the reading noticed it, and chunks begin where the file's size puts them) left out."""
    import re

    if isinstance(value, dict):
        return {k: without_chunk_offsets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_chunk_offsets(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"near byte [0-9]+", "near byte N", value)
    return value


def stats(tracefuse, path, lenient):
    code, out, err = run(tracefuse, ["stats", path, "--format", "json", "--threads", "2"] +
                         (["--lenient"] if lenient else []))
    if code != 0:
        raise AssertionError(f"stats {path}{' --lenient' if lenient else ''}: exit {code}: {err}")
    return json.loads(out)


def check_cut(tracefuse, text, lay, cut, tmp, compressed_file=None):
    """Checks one cut at inflated offset `cut`; `compressed_file` is the cut .gz when given."""
    array_open, events, array_close = lay
    cut_path = compressed_file or os.path.join(tmp, "cut.json")
    if compressed_file is None:
        with open(cut_path, "wb") as f:
            f.write(text[:cut])
    if cut <= array_open:
        code, _, err = run(tracefuse, ["stats", cut_path, "--lenient"])
        assert code == 1 and "truncated" in err, f"cut {cut} before the events: exit {code}: {err}"
        return "before"
    want_text, kept = expected_trace(text, array_open, events, cut)
    want_path = os.path.join(tmp, "want.json")
    with open(want_path, "wb") as f:
        f.write(want_text)
    got, want = stats(tracefuse, cut_path, True), stats(tracefuse, want_path, False)
    t = got["truncated"]
    inside = any(b < cut < e for b, e in events)
    position = ("after the events array" if cut > array_close else
                "inside an event" if inside else "between two events")
    assert t is not None, f"cut {cut}: no truncated object"
    assert t["input_bytes"] == cut and t["kept_bytes"] == (array_close + 1 if cut > array_close
                                                            else kept), (cut, t)
    assert t["dropped_events"] == (1 if inside else 0) and t["cut"].startswith(position), (cut, t)
    assert t["dropped_bytes"] == t["input_bytes"] - t["kept_bytes"], (cut, t)
    got, want = without_chunk_offsets(got), without_chunk_offsets(want)
    for key in set(got) | set(want):
        if key not in VOLATILE:
            assert got.get(key) == want.get(key), f"cut {cut}: {key}: {got.get(key)} != {want.get(key)}"
    return position


def check_cuts(args):
    text = read(args.trace)
    lay = layout(text)
    rng = random.Random(args.seed)
    seen = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.gzip:
            packed = gzip.compress(text, compresslevel=6, mtime=0)
            cuts = sorted(rng.sample(range(10, len(packed) - 8), args.cuts))
            for c in cuts:
                path = os.path.join(tmp, "cut.json.gz")
                with open(path, "wb") as f:
                    f.write(packed[:c])
                inflated = len(zlib.decompressobj(31).decompress(packed[:c]))
                pos = check_cut(args.tracefuse, text, lay, inflated, tmp, compressed_file=path)
                seen[pos] = seen.get(pos, 0) + 1
        else:
            # Every kind of place: mostly anywhere, and some just around events' ends.
            cuts = rng.sample(range(1, len(text)), args.cuts - args.cuts // 4)
            for b, e in rng.sample(lay[1], min(args.cuts // 4, len(lay[1]))):
                cuts.append(e + rng.choice([-1, 0, 1, 2]))
            for c in sorted(cuts):
                pos = check_cut(args.tracefuse, text, lay, c, tmp)
                seen[pos] = seen.get(pos, 0) + 1
    print(f"{args.trace}: {len(cuts)} cuts{' (gzip)' if args.gzip else ''}, "
          f"{len(lay[1])} events: " + ", ".join(f"{n} {k}" for k, n in sorted(seen.items())))


def middle_kernel_end(text, events):
    """The end of the middle kernel event: Kineto writes GPU events last, so a trace cut at half
    its size holds no kernel."""
    kernels = [e for b, e in events if b'"cat": "kernel"' in text[b:e] or b'"cat":"kernel"' in text[b:e]]
    return kernels[len(kernels) // 2]


def compressed_cut_before(packed, inflated_offset):
    """The longest prefix of a gzip file that inflates (by zlib) to at most `inflated_offset`."""
    lo, hi = 0, len(packed)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(zlib.decompressobj(31).decompress(packed[:mid])) <= inflated_offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_pair(args):
    halves, firsts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate([args.trace, args.pair]):
            with open(path, "rb") as f:
                packed = f.read()
            full = read(path)
            lay = layout(full)
            cut = len(packed) // 2
            if args.mid_kernels:
                cut = compressed_cut_before(packed, middle_kernel_end(full, lay[1]))
            half = os.path.join(tmp, f"half{i}.json.gz")
            with open(half, "wb") as f:
                f.write(packed[:cut])
            text = zlib.decompressobj(31).decompress(packed[:cut])
            want, _ = expected_trace(full, lay[0], lay[1], len(text))
            first = os.path.join(tmp, f"first{i}.json")
            with open(first, "wb") as f:
                f.write(want)
            halves.append(half)
            firsts.append(first)
        code, out, err = run(args.tracefuse, ["compare", *halves, "--format", "json", "--lenient"])
        assert code == 0, f"compare --lenient: exit {code}: {err}"
        assert err.count("tracefuse: warning: ") == 2, err
        code, want_out, err = run(args.tracefuse, ["compare", *firsts, "--format", "json"])
        assert code == 0, f"compare of the first halves: exit {code}: {err}"
        got, want = json.loads(out), json.loads(want_out)
        for t in got["tracefuse"]["traces"]:
            assert t["truncated"] and t["truncated"]["dropped_bytes"] >= 0, t
        tf_got, tf_want = got.pop("tracefuse"), want.pop("tracefuse")
        assert got == want, "the reports differ"
        for g, w in zip(tf_got["traces"], tf_want["traces"]):
            for key in ("kernels", "kernel_time_us", "kernel_time_us_by_category"):
                assert g[key] == w[key], (key, g[key], w[key])
        where = "in the middle of their kernels" if args.mid_kernels else "at half"
        print(f"compare --lenient on {args.trace} and {args.pair} cut {where}: "
              f"the report of the first halves ({sum(t['kernels'] for t in tf_got['traces'])} "
              f"kernels)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tracefuse")
    p.add_argument("trace")
    p.add_argument("--pair")
    p.add_argument("--mid-kernels", action="store_true",
                   help="with --pair: cut each file in the middle of its kernels, not at half")
    p.add_argument("--cuts", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gzip", action="store_true")
    args = p.parse_args()
    missing = [t for t in (args.trace, args.pair) if t and not os.path.exists(t)]
    if missing:
        print(f"SKIP: {missing[0]} not found (../shared missing?)")
        return 77
    try:
        check_pair(args) if args.pair else check_cuts(args)
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
