#!/usr/bin/env python3
"""Test oracle for `tracefuse ops`: the same tables, built from whole traces held in memory.

Independent of the C++ streaming code: it loads each trace with json.load, links every kernel to
the CPU operator that launched it, aligns the two traces' top-level operators step by step and
prints the JSON document that `tracefuse ops --format json` writes (less the `tracefuse` block).
Small traces only (it holds everything). The rules it follows are those of docs/reports.md,
"ops: which operator is slower?", written down here a second time on purpose.

usage: oracle.py TRACE1 TRACE2 [--top N]
"""
import gzip
import json
import re
import sys

KERNEL_CATS = {"kernel", "Kernel"}
OP_CATS = {"cpu_op", "Operator"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
# Kinds, in the order that breaks ties between events with the same start and duration: the
# enclosing one first.
STEP, ANNOTATION, MODULE, OP = 0, 1, 2, 3


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def nanos(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    # Exact for up to three decimals, as the streaming reader converts them.
    return round(v * 1000) if isinstance(v, float) else v * 1000


def is_step(name):
    return (name.startswith("ProfilerStep#") or name.startswith("step[")
            or (name.startswith("execute_") and "context" in name))


def normalise(name):
    name = re.sub(r"0x[0-9a-fA-F]+", "0x", name)
    name = re.sub(r"\.py\(\d+\)", ".py", name)
    return re.sub(r"_\d+$", "", name)


def launch_unit_name(call):
    if "Graph" in call:
        return "[graph launch]"
    if "Memcpy" in call:
        return "[memcpy]"
    if "Memset" in call:
        return "[memset]"
    return "[kernel launch]"


def family(name):
    """Kernel names folded by family: no return type, signature or template arguments, digits as
    #; a C++ signature, "[return type] name[<args>](params)", is folded to its qualified function
    name whatever the return type; a generic wrapper (cutlass::Kernel2<K>, device_kernel<K>) is
    named by its first template argument unless that is a built-in type or a value."""

    def signature_name(name):
        # The last space-separated token outside any nesting before the parameter list, the first
        # "(" outside any nesting straight after a token ("Memcpy HtoD (Pageable -> Device)" has
        # none); None without one. ">" only closes a "<" ("(8)>(0)" compares), a closer pops up
        # to its own opener; past 256 levels, None, as the C++ gives up there.
        stack, token_start = [], 0
        for m in re.finditer(r"[ <>(){}\[\]]", name):
            c, at = m.group(), m.start()
            if c == " ":
                if not stack:
                    token_start = at + 1
            elif c == ">":
                if stack and stack[-1] == "<":
                    stack.pop()
            elif c in ")]}":
                opener = "([{"[")]}".index(c)]
                while stack and stack.pop() != opener:
                    pass
            else:
                token = name[token_start:at]
                if c == "(" and not stack and token and token != "decltype":
                    return token
                if len(stack) == 256:
                    return None
                stack.append(c)
        return None

    name = name.replace("(anonymous namespace)::", "")
    name = mangled_name(name) or name
    function = signature_name(name)
    if function is not None:
        name = function
    elif name.startswith("void "):
        name = name[5:]
    base, bracket, rest = name.partition("<")
    base = base.split("(", 1)[0].strip()
    if bracket and re.fullmatch(r"(?:[\w:]*::)?(?:[Kk]ernel|device_kernel)\d*", base):
        argument = re.split(r"[<>,(]", rest, 1)[0].strip()
        builtin = {"bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int",
                   "long", "signed", "unsigned", "float", "double", "void", "const", "volatile",
                   "true", "false"}
        if re.match(r"[A-Za-z_]", argument) and argument.split(" ")[0] not in builtin:
            base = argument
    folded = re.sub(r"\d+", "#", base)
    return folded[:64].rstrip(":") if len(folded) > 64 else folded


def mangled_name(symbol):
    """The source names of an Itanium-mangled symbol, "::"-joined, up to the first thing that is
    not one: "_ZN5aiter6kernelIfEEv" -> "aiter::kernel"; "" for anything else."""
    m = re.match(r"_Z(N?)", symbol)
    if not m:
        return ""
    i, parts = m.end(), []
    while True:
        d = re.match(r"\d+", symbol[i:])
        if not d:
            break
        length = int(d.group())
        i += d.end()
        if length == 0 or length > len(symbol) - i:
            return ""
        parts.append(symbol[i:i + length])
        i += length
        if not m.group(1):
            break
    return "::".join(parts)


class Trace:
    def __init__(self, path):
        self.path = path
        host = []  # (thread, ts, dur, kind, name, file order)
        launches = []  # (thread, ts, correlation, call)
        kernels = []  # (correlation or None, name, dur, ts, file order)
        for order, e in enumerate(load(path)):
            if not isinstance(e, dict):
                continue
            cat, name = e.get("cat"), e.get("name")
            if not isinstance(name, str):
                name = ""
            ts, dur = nanos(e.get("ts")), nanos(e.get("dur"))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            thread = (json.dumps(e.get("pid")), json.dumps(e.get("tid")))
            if cat in KERNEL_CATS:
                corr = args.get("correlation")
                corr = corr if isinstance(corr, int) and not isinstance(corr, bool) else None
                kernels.append((corr, name, dur or 0, ts or 0, order))
                continue
            if ts is None:
                continue
            if cat in RUNTIME_CATS:
                corr = args.get("correlation")
                if isinstance(corr, int) and not isinstance(corr, bool):
                    launches.append((thread, ts, corr, name, order))
                continue
            if dur is None:
                continue
            if cat in OP_CATS:
                host.append((thread, ts, dur, OP, name, order))
            elif cat == "user_annotation":
                host.append((thread, ts, dur, STEP if is_step(name) else ANNOTATION, name, order))
            elif cat == "python_function" and name.startswith("nn.Module: "):
                host.append((thread, ts, dur, MODULE, name[len("nn.Module: "):], order))
        self.kernels = kernels
        self.build_units(host, launches)
        self.assign_kernels()

    def build_units(self, host, launches):
        # Nesting per thread: events sorted by start, longer first, enclosing kind first; a
        # launch comes after the ops that start with it.
        items = [(h[0], h[1], 0, -h[2], h[3], h[5], "op", h) for h in host]
        items += [(l[0], l[1], 1, 0, 0, l[4], "launch", l) for l in launches]
        items.sort(key=lambda x: x[:6])
        nodes = []  # dicts: kind, name, ts, end, parent, thread, order
        stack, thread = [], None
        innermost = {}  # launch file order -> innermost op node (or None)
        steps = []
        for it in items:
            if it[0] != thread:
                thread, stack = it[0], []
            ts = it[1]
            while stack and nodes[stack[-1]]["end"] <= ts:
                stack.pop()
            parent = stack[-1] if stack else None
            if it[6] == "op":
                h = it[7]
                node = dict(kind=h[3], name=h[4], ts=ts, end=ts + h[2], parent=parent,
                            thread=thread, order=h[5], kernels={}, time=0, launches=[])
                nodes.append(node)
                stack.append(len(nodes) - 1)
            else:
                innermost[it[7][4]] = parent
        self.nodes = nodes
        # A kernel's launch: the first runtime call in the file that carries its correlation.
        self.launch_node = {}
        for l in launches:
            self.launch_node.setdefault(l[2], (innermost[l[4]], l[3], l[1], l[0], l[4]))
        # Steps: step annotations not inside another one.
        for i, n in enumerate(nodes):
            if n["kind"] == STEP and not any(nodes[a]["kind"] == STEP for a in self.ancestors(i)):
                steps.append((n["ts"], n["end"], n["order"]))
        self.steps = sorted(steps)

    def ancestors(self, i):
        p = self.nodes[i]["parent"]
        while p is not None:
            yield p
            p = self.nodes[p]["parent"]

    def unit_of(self, innermost):
        """The outermost cpu_op above a launch, else its nearest annotation that is not a step."""
        chain = [innermost] + list(self.ancestors(innermost))
        ops = [i for i in chain if self.nodes[i]["kind"] == OP]
        if ops:
            return ops[-1]
        for i in chain:
            if self.nodes[i]["kind"] == ANNOTATION:
                return i
        return None

    def scope(self, i):
        mods = [normalise(self.nodes[a]["name"]) for a in self.ancestors(i)
                if self.nodes[a]["kind"] == MODULE]
        return list(reversed(mods))

    def assign_kernels(self):
        self.units = {}  # key -> unit dict
        self.total = self.linked = self.launch_only = self.no_launch = 0
        self.kernel_count = len(self.kernels)
        for i, n in enumerate(self.nodes):
            if n["kind"] == OP and not any(self.nodes[a]["kind"] == OP for a in self.ancestors(i)):
                self.unit(("node", i))
        for corr, name, dur, ts, order in self.kernels:
            self.total += dur
            link = self.launch_node.get(corr) if corr is not None else None
            if link is None:
                self.no_launch += dur
                continue
            innermost, call, call_ts, thread, call_order = link
            node = self.unit_of(innermost) if innermost is not None else None
            if node is not None:
                u = self.unit(("node", node))
                self.linked += dur
            else:
                u = self.unit(("launch", call_order), call, call_ts, thread, innermost)
                self.launch_only += dur
            u["run"].append((ts, order, name, dur))
            if "Graph" in call:
                u["graph"] = True
            fam = family(name)
            c = u["kernels"].setdefault(fam, [0, 0])
            c[0] += 1
            c[1] += dur
            u["time"] += dur

    def unit(self, key, call=None, ts=None, thread=None, innermost=None):
        if key in self.units:
            return self.units[key]
        if key[0] == "node":
            n = self.nodes[key[1]]
            u = dict(name=normalise(n["name"]), scope=self.scope(key[1]), ts=n["ts"],
                     thread=n["thread"], order=n["order"])
        else:
            scope = []
            if innermost is not None:
                scope = self.scope(innermost)
                if self.nodes[innermost]["kind"] == MODULE:
                    scope.append(normalise(self.nodes[innermost]["name"]))
            u = dict(name=launch_unit_name(call), scope=scope, ts=ts, thread=thread,
                     order=key[1])
        u.update(kernels={}, time=0, run=[], graph=False)
        self.units[key] = u
        return u

    def sequences(self):
        """Units per step (None: outside every step), in thread order, then start order."""
        first = {}
        for u in self.units.values():
            first[u["thread"]] = min(first.get(u["thread"], u["ts"]), u["ts"])
        rank = {t: r for r, t in enumerate(sorted(first, key=lambda t: (first[t], t)))}
        per_step = {}
        for u in self.units.values():
            step = None
            for s, (b, e, _) in enumerate(self.steps):
                if b <= u["ts"] < e:
                    step = s
            per_step.setdefault(step, []).append(u)
        for units in per_step.values():
            units.sort(key=lambda u: (rank[u["thread"]], u["ts"], u["order"]))
        return per_step


def middle_snake(a, b, a0, a1, b0, b1):
    n, m = a1 - a0, b1 - b0
    delta = n - m
    odd = delta % 2 != 0
    size = n + m + 2
    vf = [0] * (2 * size + 1)
    vb = [0] * (2 * size + 1)
    off = size
    vf[off + 1] = 0
    vb[off + 1] = 0
    for d in range((n + m + 1) // 2 + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and vf[off + k - 1] < vf[off + k + 1]):
                x = vf[off + k + 1]
            else:
                x = vf[off + k - 1] + 1
            y = x - k
            xs, ys = x, y
            while x < n and y < m and a[a0 + x] == b[b0 + y]:
                x, y = x + 1, y + 1
            vf[off + k] = x
            if odd and -(d - 1) <= k - delta <= d - 1 and vf[off + k] + vb[off + delta - k] >= n:
                return xs, ys, x, y, 2 * d - 1
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and vb[off + k - 1] < vb[off + k + 1]):
                x = vb[off + k + 1]
            else:
                x = vb[off + k - 1] + 1
            y = x - k
            xs, ys = x, y
            while x < n and y < m and a[a1 - 1 - x] == b[b1 - 1 - y]:
                x, y = x + 1, y + 1
            vb[off + k] = x
            if not odd and -d <= k - delta <= d and vb[off + k] + vf[off + delta - k] >= n:
                return n - x, m - y, n - xs, m - ys, 2 * d
    raise AssertionError("no middle snake")


def diff(a, b):
    """Matched index pairs of a minimal edit script (Myers, linear space)."""
    out = []

    def rec(a0, a1, b0, b1):
        while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
            out.append((a0, b0))
            a0, b0 = a0 + 1, b0 + 1
        tail = []
        while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:
            a1, b1 = a1 - 1, b1 - 1
            tail.append((a1, b1))
        if a0 < a1 and b0 < b1:
            x, y, u, v, _ = middle_snake(a, b, a0, a1, b0, b1)
            rec(a0, a0 + x, b0, b0 + y)
            for i in range(u - x):
                out.append((a0 + x + i, b0 + y + i))
            rec(a0 + u, a1, b0 + v, b1)
        out.extend(reversed(tail))

    rec(0, len(a), 0, len(b))
    return out


def edit_distance_over(a, b, cap):
    """Whether the edit distance of a and b exceeds cap (Myers' greedy forward pass)."""
    n, m = len(a), len(b)
    v = {1: 0}
    for d in range(cap + 1):
        for k in range(-d, d + 1, 2):
            x = v.get(k + 1, 0) if k == -d or (k != d and v.get(k - 1, -1) < v.get(k + 1, -1)) \
                else v.get(k - 1, 0) + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                return False
    return True


def key(u):
    return (u["name"], tuple(u["scope"]))


def common_scope(units):
    scopes = [u["scope"] for u in units]
    out = []
    for parts in zip(*scopes):
        if any(p != parts[0] for p in parts):
            break
        out.append(parts[0])
    return out


def align(units1, units2, step, table, groups, instances, edit_cap):
    k1, k2 = [key(u) for u in units1], [key(u) for u in units2]
    capped = edit_distance_over(k1, k2, edit_cap)
    if capped:
        # Past the cap: the i-th unit of a key on one side with the i-th on the other, and what
        # is left grouped by scope.
        where = {}
        for j, k in enumerate(k2):
            where.setdefault(k, []).append(j)
        used = {}
        pairs = []
        for i, k in enumerate(k1):
            n = used.get(k, 0)
            if n < len(where.get(k, [])):
                pairs.append((i, where[k][n]))
            used[k] = n + 1
    else:
        pairs = diff(k1, k2)
    for i, j in pairs:
        add(table, units1[i], units2[j])
        instances.append((step, i + 1, units1[i], units2[j]))
    m1, m2 = {i for i, _ in pairs}, {j for _, j in pairs}
    left1 = [u for i, u in enumerate(units1) if i not in m1]
    left2 = [u for j, u in enumerate(units2) if j not in m2]
    for u in left1:
        add(table, u, None)
    for u in left2:
        add(table, None, u)
    if capped:
        stretches = {}
        for side, units in ((0, left1), (1, left2)):
            for u in units:
                stretches.setdefault(tuple(u["scope"]), ([], []))[side].append(u)
        for s in sorted(stretches):
            groups.append((step, stretches[s]))
        return
    # Stretches between anchors.
    anchors = pairs + [(len(units1), len(units2))]
    i0 = j0 = 0
    for i, j in anchors:
        s1, s2 = units1[i0:i], units2[j0:j]
        if s1 or s2:
            groups.append((step, (s1, s2)))
        i0, j0 = i + 1, j + 1


def add(table, u1, u2):
    u = u1 or u2
    entry = table.setdefault((u["name"], "/".join(u["scope"]), u1 is not None and u2 is not None),
                             [side_total(), side_total()])
    for side, unit in ((0, u1), (1, u2)):
        if unit is not None:
            accumulate(entry[side], unit)


def side_total():
    return dict(instances=0, kernels={}, time=0)


def accumulate(total, unit):
    total["instances"] += 1
    total["time"] += unit["time"]
    for fam, (count, time) in unit["kernels"].items():
        c = total["kernels"].setdefault(fam, [0, 0])
        c[0] += count
        c[1] += time


def accumulate_kernel(total, name, dur):
    total["time"] += dur
    c = total["kernels"].setdefault(family(name), [0, 0])
    c[0] += 1
    c[1] += dur


def us(ns):
    return ns / 1000


def side_json(total):
    kernels = sorted(total["kernels"].items(), key=lambda kv: (-kv[1][1], kv[0]))
    return {"instances": total["instances"],
            "kernels": [{"name": n, "count": c, "time_us": us(t)} for n, (c, t) in kernels],
            "time_us": us(total["time"])}


def ratio(a, b):
    return None if b == 0 else a / b


def report(t1, t2, top=20, edit_cap=2000, categorize=None):
    """categorize(side, kernel name) -> category; without it, no fusion differences."""
    seq1, seq2 = t1.sequences(), t2.sequences()
    table, groups, instances = {}, [], []
    steps = sorted(set(seq1) | set(seq2), key=lambda s: (s is None, s or 0))
    for step in steps:
        align(seq1.get(step, []), seq2.get(step, []), step, table, groups, instances, edit_cap)
    # Kernels no runtime call launched: one row, one unit per side that has any.
    entry = [side_total(), side_total()]
    for side, t in enumerate((t1, t2)):
        for corr, name, dur, _, _ in t.kernels:
            if corr is None or corr not in t.launch_node:
                entry[side]["instances"] = 1
                accumulate_kernel(entry[side], name, dur)
    if entry[0]["instances"] or entry[1]["instances"]:
        both = bool(entry[0]["instances"] and entry[1]["instances"])
        table[("[no CPU op]", "", both)] = entry
    ops = []
    for (name, scope, matched), (a, b) in table.items():
        delta = a["time"] - b["time"]
        ops.append({"op": name, "scope": scope, "matched": matched,
                    "instances": a["instances"] if matched else a["instances"] + b["instances"],
                    "trace1": side_json(a), "trace2": side_json(b), "delta_us": us(delta),
                    "ratio": ratio(a["time"], b["time"])})
    ops.sort(key=lambda o: (-abs(o["delta_us"]), o["op"], o["scope"], o["matched"]))
    unmatched = []
    for step, (s1, s2) in groups:
        sides = []
        for units in (s1, s2):
            total = side_total()
            for u in units:
                accumulate(total, u)
            j = side_json(total)
            j["op_count"] = len(units)
            j["ops"] = [u["name"] for u in units][:50]
            sides.append((j, total["time"]))
        unmatched.append({"step": step, "scope": "/".join(common_scope(s1 + s2)),
                          "trace1": sides[0][0], "trace2": sides[1][0],
                          "delta_us": us(sides[0][1] - sides[1][1])})
    top_instances = []
    for step, index, u1, u2 in instances:
        top_instances.append({"step": step, "index": index, "op": u1["name"],
                              "scope": "/".join(u1["scope"]),
                              "trace1": unit_json(u1), "trace2": unit_json(u2),
                              "delta_us": us(u1["time"] - u2["time"])})
    top_instances.sort(key=lambda i: (-abs(i["delta_us"]), i["step"] is None, i["step"] or 0,
                                      i["index"]))
    traces = []
    for t, seq in ((t1, seq1), (t2, seq2)):
        traces.append({"kernels": t.kernel_count, "kernel_time_us": us(t.total),
                       "linked_kernel_time_us": us(t.linked),
                       "launch_only_kernel_time_us": us(t.launch_only),
                       "no_launch_kernel_time_us": us(t.no_launch), "steps": len(t.steps),
                       "top_level_ops": sum(len(v) for v in seq.values())})
    out = {"traces": traces, "matched_ops": len(instances), "ops": ops,
           "unmatched_groups": unmatched, "top_instances": top_instances[:top]}
    if categorize is not None:
        out["fusion_differences"] = fusion_differences(seq1, instances, groups, categorize)
    return out


# Fusion differences (docs/reports.md, "Fusion differences by operator"), from the same alignment.
KIND_ORDER = {"op": 0, "module": 1, "graph": 2}


def start_order(units):
    """A stretch's kernels: each unit's in start order (file order breaks ties), units in turn."""
    run = []
    for u in units:
        run += [(name, dur) for _, _, name, dur in sorted(u["run"], key=lambda k: (k[0], k[1]))]
    return run


def pieces(kind, types1, types2):
    """(range1, range2, fused side, extras, fused position) for each difference of a pair."""
    more = 0 if len(types1) > len(types2) else 1
    seqs = (types1, types2)
    a, b = seqs[more], seqs[1 - more]
    matches = diff(a, b)
    out = []

    def emit(ra, rb, fused, extras, fused_at):
        ranges = [None, None]
        ranges[more], ranges[1 - more] = ra, rb
        if not all(t == "Communication" for t in extras):
            out.append((ranges[0], ranges[1], fused, extras, fused_at))

    if kind != "graph":
        matched_a = {i for i, _ in matches}
        matched_b = {j for _, j in matches}
        extras = [a[i] for i in range(len(a)) if i not in matched_a]
        free_b = [j for j in range(len(b)) if j not in matched_b]
        if free_b:
            fused_at = free_b[0]
        else:
            first_extra = min(i for i in range(len(a)) if i not in matched_a)
            before = [j for i, j in matches if i < first_extra]
            fused_at = before[-1] if before else matches[0][1]
        emit((0, len(a)), (0, len(b)), 1 - more, extras, fused_at)
        return out
    i0 = j0 = 0
    for i, j in matches + [(len(a), len(b))]:
        if i - i0 != j - j0:
            fused = 1 - more if j - j0 < i - i0 else more
            ra, rb = [i0, i], [j0, j]
            unfused_range = ra if fused != more else rb
            extras = list((a if fused != more else b)[unfused_range[0]:unfused_range[1]])
            fused_range = rb if fused != more else ra
            if fused_range[0] == fused_range[1]:
                if i0 > 0 or j0 > 0:
                    ra[0] -= 1
                    rb[0] -= 1
                    fused_at = fused_range[0]
                else:
                    fused_at = fused_range[1]
                    ra[1] += 1
                    rb[1] += 1
            else:
                fused_at = fused_range[0]
            emit(tuple(ra), tuple(rb), fused, extras, fused_at)
        i0, j0 = i + 1, j + 1
    return out


def fusion_differences(seq1, instances, groups, categorize):
    """categorize(side, kernel name) -> category."""
    index = {}
    for units in seq1.values():
        for i, u in enumerate(units):
            index[id(u)] = i + 1
    candidates = []  # (kind, step, scope, ops, (units1, units2))
    steps = sorted({i[0] for i in instances} | {g[0] for g in groups},
                   key=lambda s: (s is None, s or 0))
    for step in steps:
        for st, _, u1, u2 in instances:
            if st != step or not u1["run"] or not u2["run"] or len(u1["run"]) == len(u2["run"]):
                continue
            kind = "graph" if u1["graph"] and u2["graph"] else "op"
            candidates.append((kind, step, "/".join(u1["scope"]), ([u1], [u2])))
        for st, (s1, s2) in groups:
            if st != step:
                continue
            scope = "/".join(common_scope(s1 + s2))
            n1, n2 = (sum(len(u["run"]) for u in s) for s in (s1, s2))
            if scope and n1 and n2 and n1 != n2:
                candidates.append(("module", step, scope, (s1, s2)))
    found = {}  # signature -> totals, in the order first seen
    for kind, step, scope, units in candidates:
        runs = [start_order(units[0]), start_order(units[1])]
        types = [[categorize(side, name) for name, _ in runs[side]] for side in (0, 1)]
        ops = [tuple(u["name"] for u in units[0]), tuple(u["name"] for u in units[1])]
        for r1, r2, fused, extras, fused_at in pieces(kind, types[0], types[1]):
            ranges = (r1, r2)
            sig = (kind, scope, ops[0], ops[1], tuple(types[0][r1[0]:r1[1]]),
                   tuple(types[1][r2[0]:r2[1]]))
            times = [sum(d for _, d in runs[s][ranges[s][0]:ranges[s][1]]) for s in (0, 1)]
            entry = found.setdefault(sig, dict(instances=0, times=[0, 0], best=-1, fused=fused,
                                               extras=extras,
                                               fused_at=fused_at - ranges[fused][0]))
            entry["instances"] += 1
            entry["times"][0] += times[0]
            entry["times"][1] += times[1]
            if abs(times[0] - times[1]) > entry["best"]:
                entry["best"] = abs(times[0] - times[1])
                entry["example"] = (step, index[id(units[0][0])],
                                    [runs[s][ranges[s][0]:ranges[s][1]] for s in (0, 1)])
    out = []
    for (kind, scope, ops1, ops2, types1, types2), e in found.items():
        n = e["instances"]
        fused = e["fused"]
        step, idx, example = e["example"]
        sides = []
        for s, (ops, types) in enumerate(((ops1, types1), (ops2, types2))):
            counts = {}
            for t in types:
                counts[t] = counts.get(t, 0) + n
            sides.append({"ops": list(ops), "kernels": len(types) * n, "categories": counts,
                          "time_us": us(e["times"][s]), "kernel_types": list(types)})
        extras = {}
        for t in e["extras"]:
            extras[t] = extras.get(t, 0) + n
        saving = e["times"][1 - fused] - e["times"][fused]
        out.append({
            "kind": kind, "scope": scope, "op": None if kind == "module" else ops1[0],
            "fused_by": ("trace1", "trace2")[fused], "instances": n,
            "trace1": sides[0], "trace2": sides[1], "extra_categories": extras,
            "fused_kernel": family(example[fused][e["fused_at"]][0]),
            "saving_us": us(saving),
            "example": {"step": step, "index": idx,
                        "trace1": [{"name": family(k), "type": categorize(0, k),
                                    "time_us": us(d)} for k, d in example[0]],
                        "trace2": [{"name": family(k), "type": categorize(1, k),
                                    "time_us": us(d)} for k, d in example[1]]}})

    def order(d):
        unfused, fused = (d["trace2"], d["trace1"]) if d["fused_by"] == "trace1" else \
            (d["trace1"], d["trace2"])
        return (-d["saving_us"], KIND_ORDER[d["kind"]], d["scope"], d["op"] or "",
                unfused["kernel_types"], fused["kernel_types"], unfused["ops"], fused["ops"])

    out.sort(key=order)
    return out


def unit_json(u):
    kernels = sorted(u["kernels"].items(), key=lambda kv: (-kv[1][1], kv[0]))
    return {"kernels": [{"name": n, "count": c, "time_us": us(t)} for n, (c, t) in kernels],
            "time_us": us(u["time"])}


def main(argv):
    top, edit_cap = 20, 2000
    for flag in ("--top", "--max-edit-distance"):
        if flag in argv:
            i = argv.index(flag)
            value = int(argv[i + 1])
            del argv[i:i + 2]
            top, edit_cap = (value, edit_cap) if flag == "--top" else (top, value)
    t1, t2 = Trace(argv[0]), Trace(argv[1])
    json.dump(report(t1, t2, top, edit_cap), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
