#!/usr/bin/env python3
"""make_corpus.py: the fuzzers' seed inputs, from ../shared, the generator and the repo's files.

    fuzz/make_corpus.py --gen BUILD/tracefuse-gen --out BUILD/fuzz-seeds [--shared ../shared]

writes OUT/trace, OUT/rules and OUT/classify, one file per seed (the directories are emptied
first). Seeds are small (the fuzzers mutate small inputs fastest) and cut from real data:

  trace     the first events of each real trace behind its own top-level keys, closed again; the
            same with one event of each `cat`; cut mid-header and mid-event; a few with one
            damage each (a string time, a huge duration, a missing bracket); small generated
            traces in every layout; several of them gzip- or zstd-compressed, whole or cut
            (byte 0 of a trace seed is trace_fuzzer.cc's Handover byte)
  rules     data/rules/*.yaml and the rule files under tests/, whole and cut into their rules,
            and small files using every predicate
  classify  the kernel names of ../shared/golden/classify and tests/data/kernel_names, a few
            dozen per file

Without ../shared the trace and classify seeds come from the generator and the repo only (a
message says so). Python 3 standard library only.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Handover bytes (trace_fuzzer.cc): format in bits 0-1, cut in bit 2, fraction/32 in bits 3-7.
PLAIN, GZIP, GZIP_MEMBERS, ZSTD, CUT = 0, 1, 2, 3, 4


def handover(fmt, cut=False, fraction=16):
    return bytes([fmt | (CUT if cut else 0) | (fraction << 3)])


class Seeds:
    """Seeds collects one directory's files, named by their order and a word on what they are."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.count = 0

    def add(self, label, data):
        if isinstance(data, str):
            data = data.encode()
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:60]
        with open(os.path.join(self.dir, f"{self.count:04d}_{label}"), "wb") as f:
            f.write(data)
        self.count += 1


def events_of(text, limit=400):
    """The header (up to the events array's '['), each event's (start, end) and the offset where
    the first undecodable event starts, for the first `limit` events found in `text`."""
    key = text.find('"traceEvents"')
    if key < 0:
        return None
    bracket = text.find("[", key)
    if bracket < 0:
        return None
    decoder = json.JSONDecoder()
    spans = []
    at = bracket + 1
    while len(spans) < limit:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] != "{":
            break
        try:
            event, end = decoder.raw_decode(text, at)
        except ValueError:
            break
        spans.append((at, end, event))
        at = end
    return text[: bracket + 1], spans


def trace_from(header, text, spans, separator=",\n"):
    body = separator.join(text[s:e] for s, e, _ in spans)
    if header.lstrip().startswith("["):
        return header + body + "]"
    return header + body + "]}"


def first_events(header, text, spans, budget):
    """As many leading events as fit `budget` bytes, with their original separators."""
    if not spans:
        return header + "]}"
    end = spans[0][1]
    for s, e, _ in spans:
        if e - spans[0][0] + len(header) > budget:
            break
        end = e
    return header + text[spans[0][0] : end] + "]}"


def one_per_cat(spans):
    seen, out = set(), []
    for span in spans:
        event = span[2]
        cat = event.get("cat") if isinstance(event, dict) else None
        if cat not in seen:
            seen.add(cat)
            out.append(span)
    return out


def damaged(text):
    """A few copies of `text`, each with one damage a writer or a transfer might leave."""
    out = []
    for pattern, replacement in [
        (r'"dur": ?[0-9.]+', '"dur": "12"'),
        (r'"ts": ?[0-9.]+', '"ts": 1e400'),
        (r'"dur": ?[0-9.]+', '"dur": 9223372036854.775807'),
        (r'"correlation": ?[0-9]+', '"correlation": -1'),
        (r'"name": ?"', '"name": null, "x": "'),
    ]:
        changed, n = re.subn(pattern, replacement, text, count=1)
        if n:
            out.append(changed)
    closing = text.rfind("}")
    if closing > 0:
        out.append(text[:closing] + text[closing + 1 :])
    return out


def add_real_traces(seeds, shared):
    real = os.path.join(shared, "traces", "real")
    for name in sorted(os.listdir(real)):
        if not name.endswith(".json.gz"):
            continue
        with gzip.open(os.path.join(real, name), "rb") as f:
            head = f.read(256 << 10).decode("utf-8", errors="replace")
        short = name.split(".")[0]
        for cut in (200, 1500, 5000):
            seeds.add(f"{short}_cut{cut}", handover(PLAIN) + head[:cut].encode())
        parsed = events_of(head)
        if parsed is None:
            continue
        header, spans = parsed
        if len(header) > 16 << 10:  # keep seeds small: the events matter, not a long header
            header = '{"traceEvents": ['
        first = first_events(header, head, spans, 6 << 10)
        sampled = trace_from(header, head, one_per_cat(spans))
        seeds.add(f"{short}_first", handover(PLAIN) + first.encode())
        seeds.add(f"{short}_per_cat", handover(PLAIN) + sampled.encode())
        seeds.add(f"{short}_per_cat_compact", handover(PLAIN) + sampled.replace("\n", "").encode())
        seeds.add(f"{short}_first_gzip", handover(GZIP) + first.encode())
        seeds.add(f"{short}_first_gzip_cut", handover(GZIP, cut=True, fraction=20) + first.encode())
        for i, d in enumerate(damaged(sampled)):
            seeds.add(f"{short}_damaged{i}", handover(PLAIN) + d.encode())


def add_generated_traces(seeds, gen, work):
    small = ["--steps", "1", "--layers", "1", "--python-per-step", "2", "--python-per-kernel",
             "0", "--cpu-ops-per-step", "2", "--eager-per-step", "2"]
    for platform in ("amd", "nvidia"):
        for layout in ("kineto", "lines", "compact"):
            path = os.path.join(work, f"{platform}_{layout}.json")
            subprocess.run([gen, "--platform", platform, "--layout", layout, "-o", path] + small,
                           check=True)
            with open(path, "rb") as f:
                data = f.read()
            seeds.add(f"gen_{platform}_{layout}", handover(PLAIN) + data)
            formats = {"kineto": GZIP_MEMBERS, "lines": ZSTD, "compact": GZIP}
            seeds.add(f"gen_{platform}_{layout}_compressed", handover(formats[layout]) + data)
            seeds.add(f"gen_{platform}_{layout}_cut", handover(PLAIN) + data[: len(data) * 3 // 5])
    hand_made = [
        '{"traceEvents": []}',
        "[]",
        '[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"correlation": 1}}]',
        '{"traceEvents": [{"cat": "kernel", "name": "a"},{"cat": "Kernel", "name": "b", "ts": "x"}],'
        ' "deviceProperties": [{"name": "AMD Instinct MI300X", "warpSize": 64}]}',
        '{"a": [{"b": 1},{"c": 2}], "traceEvents": [{"args": {"x": [{"y": "},{"}]}}], "z": "]"}',
    ]
    for i, text in enumerate(hand_made):
        seeds.add(f"hand{i}", handover(PLAIN) + text.encode())


def add_vendor_files(seeds, work, shared):
    """The vendors' formats (importer.h): the small files of every schema that
    tests/oracles/make_vendor_traces.py writes, plain and (JSON only) gzipped, the head of the
    real nsys export cut (a database cut short), and the rocprofv3 fixture's first bytes."""
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "oracles",
                                                 "make_vendor_traces.py"), work], check=True)
    for name in sorted(os.listdir(work)):
        path = os.path.join(work, name)
        if name.endswith(".json.gz"):
            with gzip.open(path, "rb") as f:
                data = f.read()
            seeds.add(f"vendor_{name}", handover(PLAIN) + data[:60 << 10])
            seeds.add(f"vendor_{name}_gzip", handover(GZIP) + data[:60 << 10])
        elif name.endswith((".sqlite", ".db")):
            with open(path, "rb") as f:
                data = f.read()
            if len(data) <= 64 << 10:
                seeds.add(f"vendor_{name}", handover(PLAIN) + data)
            seeds.add(f"vendor_{name}_cut", handover(PLAIN) + data[: len(data) * 3 // 5])
    if shared:
        real = os.path.join(shared, "traces", "real")
        with open(os.path.join(real, "pipit_saxpy_nsys.sqlite"), "rb") as f:
            seeds.add("vendor_pipit_nsys_head", handover(PLAIN) + f.read(48 << 10))
        with gzip.open(os.path.join(real, "tl_rocprof_908_results.json.gz"), "rb") as f:
            seeds.add("vendor_rocprofv3_head", handover(PLAIN) + f.read(48 << 10))


def rule_files():
    files = [os.path.join(REPO, "data", "rules", f) for f in
             sorted(os.listdir(os.path.join(REPO, "data", "rules")))]
    for root, _, names in sorted(os.walk(os.path.join(REPO, "tests"))):
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith((".yaml", ".yml"))]
    return files


def add_rules(seeds):
    for path in rule_files():
        with open(path) as f:
            text = f.read()
        short = os.path.basename(path)
        seeds.add(short, text)
        # The header and the first rules, and each rule alone under a minimal header.
        rules_at = text.find("\nrules:")
        if rules_at > 0:
            header = text[: rules_at + 8]
            items = re.split(r"(?m)^(?=  - )", text[rules_at + 8 :])
            seeds.add(short + "_head", header + "".join(items[:4]))
            for i, item in enumerate(items[1:13]):
                seeds.add(f"{short}_rule{i}", "rules:\n" + item)
        seeds.add(short + "_cut", text[: len(text) // 3])
    hand_made = [
        "name: a\nrules:\n  - category: GEMM\n    contains: gemm\n",
        "extends: wafer-kernel\nrules:\n  - {category: GEMM, prefix: Cijk_, case: sensitive}\n",
        "caseless: false\ncategories: [A, B]\ndefault: {category: B, pattern: '{name:8}'}\n"
        "rules:\n  - category: A\n    words: [conv, fwd]\n    pattern: 'x_{name}'\n",
        "rules:\n  - category: A\n    all: [{platform: amd}, {not: {regex: '^k[0-9]+$'}}]\n"
        "  - category: F\n    fallback: true\n    any: [a, {words: b}]\n",
        "rules: [{category: A, regex: '(a|b)*c'}]\n",
    ]
    for i, text in enumerate(hand_made):
        seeds.add(f"hand{i}", text)


def add_names(seeds, shared):
    names = []
    golden = os.path.join(shared, "golden", "classify", "kernel_names.jsonl") if shared else None
    if golden and os.path.exists(golden):
        with open(golden) as f:
            names += [json.loads(line)["name"] for line in f if line.strip()]
    tsv_dir = os.path.join(REPO, "tests", "data", "kernel_names")
    for name in sorted(os.listdir(tsv_dir)):
        with open(os.path.join(tsv_dir, name)) as f:
            names += [line.split("\t")[0] for line in f if line.strip() and not line.startswith("#")]
    names = list(dict.fromkeys(n for n in names if "\n" not in n))
    for i in range(0, len(names), 24):
        seeds.add(f"names{i // 24}", "\n".join(names[i : i + 24]))
    seeds.add("odd", "\n\n\xff\x00\n" + "a" * 300 + "\n_ZN5aiter6kernelIfEEvPT_\nLinear_3")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gen", required=True, help="the tracefuse-gen binary")
    parser.add_argument("--out", required=True, help="where the seed directories go")
    parser.add_argument("--shared", default=os.path.join(REPO, "..", "shared"))
    args = parser.parse_args()
    shared = args.shared if os.path.isdir(os.path.join(args.shared, "traces", "real")) else None
    if shared is None:
        print(f"make_corpus: {args.shared} is missing: trace and name seeds from the generator and "
              "the repo only", file=sys.stderr)
    traces = Seeds(args.out, "trace")
    if shared:
        add_real_traces(traces, shared)
    work = os.path.join(args.out, "generated")
    os.makedirs(work, exist_ok=True)
    add_generated_traces(traces, args.gen, work)
    add_vendor_files(traces, os.path.join(work, "vendor"), shared)
    rules = Seeds(args.out, "rules")
    add_rules(rules)
    names = Seeds(args.out, "classify")
    add_names(names, shared)
    for s in (traces, rules, names):
        print(f"make_corpus: {s.count} seeds in {s.dir}")


if __name__ == "__main__":
    main()
