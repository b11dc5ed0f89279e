#!/usr/bin/env python3
"""Test oracle for `tracefuse ops`: the same tables, built from whole traces held in memory.

Independent of the C++ streaming code: it loads each trace with json.load, links every kernel to
the CPU operator that launched it, aligns the two traces' top-level operators step by step and
prints the JSON document that `tracefuse ops --format json` writes (less the `tracefuse` block).
Small traces only (it holds everything). The rules it follows are those of docs/reports.md,
"ops: which operator is slower?", written down here a second time on purpose. The FLOPs and
bytes of each op row and trace follow docs/perf-models.md, also implemented a second time here,
from the document alone (not from src/analyze/perf/models.cc).

usage: oracle.py TRACE1 TRACE2 [--top N] [--max-edit-distance N]
       oracle.py --self-test
"""
import gzip
import json
import os
import re
import sys
from collections import namedtuple

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


# Perf models (docs/perf-models.md): the FLOPs and bytes of one cpu_op from its recorded shapes.
ELEMENT_SIZES = {
    "double": 8, "float": 4, "c10::BFloat16": 2, "c10::Half": 2,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e5m2fnuz": 1, "signed char": 1, "unsigned char": 1, "short int": 2, "int": 4,
    "long int": 8, "long": 8, "bool": 1}

GEMMS = {  # name -> (A, B, batched)
    "aten::mm": (0, 1, False), "aten::addmm": (1, 2, False), "aten::bmm": (0, 1, True),
    "aten::baddbmm": (1, 2, True), "aten::_scaled_mm": (0, 1, False)}
# name -> (index of q, layout [B, L, H, D] (else [B, H, L, D]), index of causal, it is a mask
# type, backward)
ATTENTIONS = {
    "aten::_scaled_dot_product_flash_attention": (0, False, 4, False, False),
    "aten::_scaled_dot_product_efficient_attention": (0, False, 6, False, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, False, 6, False, False),
    "aten::_flash_attention_forward": (0, True, 8, False, False),
    "aten::_efficient_attention_forward": (0, True, 9, True, False),
    "aten::_scaled_dot_product_flash_attention_backward": (1, False, 11, False, True),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, False, 11, False, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, False, 14, False, True),
    "aten::_flash_attention_backward": (1, True, 11, False, True),
    "aten::_efficient_attention_backward": (1, True, 14, True, True)}
CONVOLUTIONS = {
    # name -> (input, weight, stride, padding, dilation, transposed, output_padding, groups,
    # output_mask); None: not recorded by that op (not transposed, no output padding, no mask).
    "aten::convolution": (0, 1, 3, 4, 5, 6, 7, 8, None),
    "aten::_convolution": (0, 1, 3, 4, 5, 6, 7, 8, None),
    "aten::cudnn_convolution": (0, 1, 3, 2, 4, None, None, 5, None),
    "aten::miopen_convolution": (0, 1, 4, 3, 5, None, None, 6, None),
    "aten::convolution_backward": (1, 2, 4, 5, 6, 7, 8, 9, 10)}
ELEMENTWISE = {"aten::" + n for n in (
    "add add_ sub sub_ mul mul_ div div_ neg exp log sqrt rsqrt pow abs relu relu_ gelu silu "
    "silu_ sigmoid tanh where clamp clamp_ masked_fill masked_fill_ gelu_backward silu_backward "
    "threshold_backward sigmoid_backward tanh_backward").split()}
REDUCTIONS = {"aten::" + n for n in (
    "sum mean amax amin argmax argmin var std norm linalg_vector_norm logsumexp").split()}
_NORMS = ["aten::" + n for n in (
    "native_layer_norm native_group_norm native_batch_norm _native_batch_norm_legit "
    "_native_batch_norm_legit_no_training cudnn_batch_norm miopen_batch_norm "
    "_fused_rms_norm").split()]
NORMS = set(_NORMS) | {"aten::" + n + "_backward" for n in (
    "native_layer_norm native_group_norm native_batch_norm cudnn_batch_norm miopen_batch_norm "
    "_fused_rms_norm").split()}
SOFTMAXES = {"aten::" + n for n in (
    "_softmax _log_softmax _softmax_backward_data _log_softmax_backward_data").split()}
MODEL_FAMILY = {}
MODEL_FAMILY.update({n: "gemm" for n in GEMMS})
MODEL_FAMILY.update({n: "attention" for n in ATTENTIONS})
MODEL_FAMILY.update({n: "convolution" for n in CONVOLUTIONS})
MODEL_FAMILY.update({n: "memory" for n in ELEMENTWISE | REDUCTIONS | NORMS | SOFTMAXES
                     | {"aten::copy_"}})


class NoFit(Exception):
    """The op's recorded shapes do not fit its model: no FLOPs, no bytes."""


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def product(values):
    out = 1
    for v in values:
        out *= v
    return out


class Inputs:
    """An op's inputs: the entries of Input Dims with their Input type, and Concrete Inputs."""

    def __init__(self, args):
        dims, types = args.get("Input Dims"), args.get("Input type")
        if not isinstance(dims, list) or not isinstance(types, list):
            raise NoFit
        self.dims, self.types = dims, types
        concrete = args.get("Concrete Inputs")
        self.concrete = concrete if isinstance(concrete, list) else None

    def need(self, n):
        if len(self.dims) < n or len(self.types) < n:
            raise NoFit

    def is_tensor(self, i):
        return (i < len(self.dims) and i < len(self.types) and isinstance(self.types[i], str)
                and self.types[i] in ELEMENT_SIZES)

    def tensors(self):
        return [i for i in range(len(self.dims)) if self.is_tensor(i)]

    def shape(self, i):
        self.need(i + 1)
        if not self.is_tensor(i):
            raise NoFit
        d = self.dims[i]
        if not isinstance(d, list) or not all(is_count(v) for v in d):
            raise NoFit
        return d

    def numel(self, i):
        return product(self.shape(i))

    def size(self, i):
        return ELEMENT_SIZES[self.types[i]]

    def read_bytes(self):
        """Every tensor input at its own element size."""
        return sum(self.numel(i) * self.size(i) for i in self.tensors())

    def dtype_size(self):
        """The element size of the op's dtype, its first tensor input's."""
        tensors = self.tensors()
        if not tensors:
            raise NoFit
        return self.size(tensors[0])

    def value(self, i):
        """Concrete input i as recorded ("" when not), None without Concrete Inputs."""
        if self.concrete is None:
            return None
        v = self.concrete[i] if i < len(self.concrete) else ""
        return v if isinstance(v, str) else ""


def parse_int(text):
    if not isinstance(text, str) or not re.fullmatch(r"\s*-?\d+\s*", text):
        raise NoFit
    return int(text)


def parse_bool(text):
    if text == "True":
        return True
    if text == "False":
        return False
    raise NoFit


def parse_list(text, parse):
    if not isinstance(text, str):
        raise NoFit
    m = re.fullmatch(r"\s*\[(.*)\]\s*", text)
    if not m:
        raise NoFit
    body = m.group(1).strip()
    return [parse(p.strip()) for p in body.split(",")] if body else []


def gemm(inp, a, b, batched):
    A, B = inp.shape(a), inp.shape(b)
    rank = 3 if batched else 2
    if len(A) != rank or len(B) != rank:
        raise NoFit
    batch = 1
    if batched:
        if A[0] != B[0]:
            raise NoFit
        batch, A, B = A[0], A[1:], B[1:]
    (m, k), (k2, n) = A, B
    if k != k2:
        raise NoFit
    return 2 * batch * m * n * k, inp.read_bytes() + batch * m * n * inp.dtype_size()


def attention(inp, first, blhd, causal_at, mask_type, backward):
    shapes = [inp.shape(first + j) for j in range(3)]
    if any(len(s) != 4 for s in shapes):
        raise NoFit
    if blhd:  # [B, L, H, D] -> [B, H, L, D]
        shapes = [[s[0], s[2], s[1], s[3]] for s in shapes]
    (b, h, lq, d), (bk, _, lk, dk), (bv, _, lv, dv) = shapes
    if not b == bk == bv or d != dk or lk != lv:
        raise NoFit
    causal = False
    v = inp.value(causal_at)
    if v is not None:
        if mask_type:
            causal = bool(re.fullmatch(r"-?\d+", v)) and int(v) != 0
        else:
            causal = v == "True"
    flops = (5 if backward else 2) * b * h * lq * lk * (d + dv)
    if causal:
        flops //= 2
    if backward:
        written = sum(product(s) for s in shapes)
    else:
        written = b * h * lq * dv
    return flops, inp.read_bytes() + written * inp.dtype_size()


def convolution(inp, x, w, stride_at, padding_at, dilation_at, transposed_at, output_padding_at,
                groups_at, mask_at):
    if inp.concrete is None:
        raise NoFit
    X, W = inp.shape(x), inp.shape(w)
    spatial = len(X) - 2
    if spatial < 1 or len(W) != len(X):
        raise NoFit

    def per_dim(at):
        values = parse_list(inp.value(at), parse_int)
        if len(values) == 1:
            values = values * spatial
        if len(values) != spatial:
            raise NoFit
        return values

    stride, padding, dilation = per_dim(stride_at), per_dim(padding_at), per_dim(dilation_at)
    transposed = parse_bool(inp.value(transposed_at)) if transposed_at is not None else False
    output_padding = per_dim(output_padding_at) if output_padding_at is not None else \
        [0] * spatial
    groups = parse_int(inp.value(groups_at))
    if groups < 1 or any(s < 1 for s in stride):
        raise NoFit
    n, c_in, sizes, kernel = X[0], X[1], X[2:], W[2:]
    if not transposed:
        # weight [Cout, Cin/groups, K...]
        c_out, c_in_group = W[0], W[1]
        if c_in_group * groups != c_in:
            raise NoFit
        out = [(s + 2 * p - dl * (k - 1) - 1) // st + 1
               for s, p, dl, k, st in zip(sizes, padding, dilation, kernel, stride)]
        if any(o < 1 for o in out):
            raise NoFit
        flops = 2 * n * c_out * product(out) * c_in_group * product(kernel)
    else:
        # weight [Cin, Cout/groups, K...]
        if W[0] != c_in:
            raise NoFit
        c_out_group = W[1]
        c_out = c_out_group * groups
        out = [(s - 1) * st - 2 * p + dl * (k - 1) + op + 1
               for s, st, p, dl, k, op in zip(sizes, stride, padding, dilation, kernel,
                                              output_padding)]
        if any(o < 1 for o in out):
            raise NoFit
        flops = 2 * n * c_in * product(sizes) * c_out_group * product(kernel)
    if mask_at is None:
        written = n * c_out * product(out)
        return flops, inp.read_bytes() + written * inp.dtype_size()
    # Backward: one forward for the input's gradient, one for the weight's, as output_mask asks.
    mask = inp.value(mask_at)
    if mask == "":
        grad_input = grad_weight = True
    else:
        bits = parse_list(mask, parse_bool)
        if len(bits) < 2:
            raise NoFit
        grad_input, grad_weight = bits[0], bits[1]
    written = (product(X) if grad_input else 0) + (product(W) if grad_weight else 0)
    return (flops * (int(grad_input) + int(grad_weight)),
            inp.read_bytes() + written * inp.dtype_size())


def broadcast(shapes):
    """NumPy broadcasting: the shape the inputs broadcast to; NoFit where they do not."""
    out = []
    for shape in shapes:
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for j, d in enumerate(shape):
            at = len(out) - len(shape) + j
            if out[at] == 1:
                out[at] = d
            elif d != 1 and d != out[at]:
                raise NoFit
    return out


def memory(inp, name):
    if name == "aten::copy_":
        # Reads src (1), writes self (0): each at its own size, nothing else.
        return None, inp.numel(1) * inp.size(1) + inp.numel(0) * inp.size(0)
    tensors = inp.tensors()
    if not tensors:
        raise NoFit
    read = inp.read_bytes()
    if name in REDUCTIONS:
        return None, read
    if name in ELEMENTWISE:
        written = product(broadcast([inp.shape(i) for i in tensors]))
    else:  # normalisation, softmax: the first tensor input's element count
        written = inp.numel(tensors[0])
    return None, read + written * inp.dtype_size()


def perf(name, args):
    """(FLOPs, bytes) of a cpu_op with a model, each None where it has none."""
    try:
        inp = Inputs(args if isinstance(args, dict) else {})
        if name in GEMMS:
            return gemm(inp, *GEMMS[name])
        if name in ATTENTIONS:
            return attention(inp, *ATTENTIONS[name])
        if name in CONVOLUTIONS:
            return convolution(inp, *CONVOLUTIONS[name])
        if MODEL_FAMILY.get(name) == "memory":
            return memory(inp, name)
    except NoFit:
        pass
    return None, None


def add_work(total, value):
    """Sums of FLOPs or bytes: None until some value is known."""
    if value is None:
        return total
    return value if total is None else total + value


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
                host.append((thread, ts, dur, OP, name, order, args))
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
                            thread=thread, order=h[5], kernels={}, time=0, launches=[],
                            args=h[6] if len(h) > 6 else {})
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
        self.count_work()
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
            c = u["kernels"].setdefault(name, [0, 0])  # by full name: families come at the end
            c[0] += 1
            c[1] += dur
            u["time"] += dur

    def count_work(self):
        """docs/perf-models.md, "Which ops count": an op with a model (by name) counts unless an
        op of the same family nested inside it on its thread has a model (then the innermost of
        those counts); counted ops' FLOPs and bytes add up to their top-level op's unit."""
        models = {}
        for i, n in enumerate(self.nodes):
            if n["kind"] == OP and n["name"] in MODEL_FAMILY:
                models[i] = MODEL_FAMILY[n["name"]]
        enclosing = set()  # ops with a same-family op with a model nested inside
        for i, fam in models.items():
            for a in self.ancestors(i):
                if models.get(a) == fam:
                    enclosing.add(a)
        for i in models:
            if i in enclosing:
                continue
            n = self.nodes[i]
            flops, nbytes = perf(n["name"], n["args"])
            tops = [a for a in self.ancestors(i) if self.nodes[a]["kind"] == OP]
            u = self.units[("node", tops[-1] if tops else i)]
            u["flops"] = add_work(u["flops"], flops)
            u["bytes"] = add_work(u["bytes"], nbytes)

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
        u.update(kernels={}, time=0, run=[], graph=False, flops=None, bytes=None)
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
    return dict(instances=0, kernels={}, time=0, flops=None, bytes=None)


def accumulate(total, unit):
    total["instances"] += 1
    total["time"] += unit["time"]
    total["flops"] = add_work(total["flops"], unit["flops"])
    total["bytes"] = add_work(total["bytes"], unit["bytes"])
    for name, (count, time) in unit["kernels"].items():
        c = total["kernels"].setdefault(name, [0, 0])
        c[0] += count
        c[1] += time


def accumulate_kernel(total, name, dur):
    total["time"] += dur
    c = total["kernels"].setdefault(name, [0, 0])
    c[0] += 1
    c[1] += dur


def kernels_json(by_name):
    """Kernels counted by full name, as the report lists them: by family, most time first (then
    family), each with its example, the family's name with the most time there (ties: the first
    in byte order)."""
    families = {}
    for name, (count, time) in by_name.items():
        f = families.setdefault(family(name), [0, 0, None, -1])
        f[0] += count
        f[1] += time
        if time > f[3] or time == f[3] and name.encode() < f[2].encode():
            f[2], f[3] = name, time
    return [{"name": fam, "example": example, "count": count, "time_us": us(time)}
            for fam, (count, time, example, _) in
            sorted(families.items(), key=lambda kv: (-kv[1][1], kv[0]))]


def us(ns):
    return ns / 1000


def side_json(total, work=False):
    """work: with the FLOPs and bytes (op rows only, not the unmatched groups)."""
    out = {"instances": total["instances"], "kernels": kernels_json(total["kernels"]),
           "time_us": us(total["time"])}
    if work:
        out["flops"], out["bytes"] = total["flops"], total["bytes"]
    return out


def ratio(a, b):
    return None if b == 0 else a / b


def report(t1, t2, top=20, edit_cap=2000, categorize=None, role_of=None):
    """categorize(side, kernel name) -> category, role_of(side, kernel name) -> Role (default: a
    plain main kernel); without categorize, no fusion differences."""
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
                    "trace1": side_json(a, work=True), "trace2": side_json(b, work=True),
                    "delta_us": us(delta),
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
        flops = nbytes = None
        for u in t.units.values():
            flops, nbytes = add_work(flops, u["flops"]), add_work(nbytes, u["bytes"])
        traces.append({"kernels": t.kernel_count, "kernel_time_us": us(t.total),
                       "linked_kernel_time_us": us(t.linked),
                       "launch_only_kernel_time_us": us(t.launch_only),
                       "no_launch_kernel_time_us": us(t.no_launch), "steps": len(t.steps),
                       "top_level_ops": sum(len(v) for v in seq.values()),
                       "flops": flops, "bytes": nbytes})
    out = {"traces": traces, "matched_ops": len(instances), "ops": ops,
           "unmatched_groups": unmatched, "top_instances": top_instances[:top]}
    if categorize is not None:
        out["fusion_differences"] = fusion_differences(seq1, seq2, instances, groups, categorize,
                                                       role_of or (lambda side, name: MAIN))
    return out


# Fusion differences (op_compare.h, FindFusionDifferences() and FusionRelation; docs/reports.md,
# "Fusion differences by operator"), from the same alignment, written a second time from the spec.
KIND_ORDER = {"op": 0, "module": 1, "graph": 2}
RELATION_ORDER = {"split": 0, "fusion": 1, "algorithm": 2}
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)


class Role(namedtuple("Role", "helper serves covers")):
    """A kernel's role (data/kernel-roles.yaml): a main kernel (helper "") that may state the
    operations it fuses (covers), or a helper of the operations (categories) it serves, "any"
    meaning whatever main kernel comes next."""

    @staticmethod
    def of(record):
        """From a line of `tracefuse classify --roles`."""
        if record.get("role") == "helper":
            return Role(record["helper"], tuple(record["serves"]), ())
        return Role("", (), tuple(record.get("covers", ())))

    def serves_category(self, category):
        return bool(self.helper) and ("any" in self.serves or category in self.serves)


MAIN = Role("", (), ())


class RolesData:
    """What data/kernel-roles.yaml says of categories (heavy, absorbs), and the rule set's
    category order, by which the side with more kernels is chosen when the counts tie."""

    def __init__(self, roles_path=None, rules_path=None):
        import yaml
        with open(roles_path or os.path.join(ROOT, "data", "kernel-roles.yaml")) as f:
            doc = yaml.safe_load(f)
        self.heavy = set(doc.get("heavy") or ())
        self.absorbs_map = {k: set(v) for k, v in (doc.get("absorbs") or {}).items()}
        with open(rules_path or os.path.join(ROOT, "data", "rules", "tracefuse.yaml")) as f:
            self.order = {c: i for i, c in enumerate(yaml.safe_load(f)["categories"])}

    def absorbs(self, by, category):
        return by == category or category in self.absorbs_map.get(by, ())


def start_order(units):
    """A stretch's kernels: each unit's in start order (file order breaks ties), units in turn."""
    run = []
    for u in units:
        run += [(name, dur) for _, _, name, dur in sorted(u["run"], key=lambda k: (k[0], k[1]))]
    return run


class Operation:
    """A main kernel and the helpers that serve it (main None: a helper that serves no neighbour,
    alone); key: the main kernel's category (the lone helper's)."""

    def __init__(self, key, main, kernels):
        self.key, self.main, self.kernels = key, main, kernels

    def span(self):
        return self.kernels[0], self.kernels[-1] + 1


def operations(seq):
    """seq: [(category, Role)] in start order -> its operations, in order of their main kernel
    (or lone helper)."""
    n = len(seq)
    is_main = [not role.helper for _, role in seq]
    owner = list(range(n))  # position of the main kernel a kernel belongs to; None: alone
    for i in range(n):
        if is_main[i]:
            continue
        role = seq[i][1]
        before = i  # across the other helpers next to it
        while before > 0 and not is_main[before - 1]:
            before -= 1
        after = i
        while after < n and not is_main[after]:
            after += 1
        prev = before - 1 if before > 0 else None
        nxt = after if after < n else None
        if "any" in role.serves:
            owner[i] = nxt if nxt is not None else prev
        elif prev is not None and seq[prev][0] in role.serves:
            owner[i] = prev
        elif nxt is not None and seq[nxt][0] in role.serves:
            owner[i] = nxt
        else:
            owner[i] = None
    ops, op_at = [], {}
    for i in range(n):
        if owner[i] is None:
            ops.append(Operation(seq[i][0], None, [i]))
        elif owner[i] == i:
            op_at[i] = len(ops)
            ops.append(Operation(seq[i][0], i, []))
    for i in range(n):
        if owner[i] is not None:
            ops[op_at[owner[i]]].kernels.append(i)
    return ops


def role_rank(role):
    """A total order of roles that does not depend on the traces: a plain main kernel first."""
    return (0,) if role == MAIN else (1, role.helper, role.serves, role.covers)


def pieces(types1, types2, data, more=None):
    """The differences within one pair of kernel sequences [(category, Role)]: dicts with
    `ranges` ([begin, end) of each side), `relation`, `fused` (the side with fewer kernels: 0, 1),
    `extras` (positions on the other side) and `fused_at` (a position on the fused side, None for
    "algorithm"). `more` (0, 1) overrides the side aligned first (tests only)."""
    seqs = (types1, types2)

    def content(seq):
        # Kernel count, then each kernel's category (the rule set's order) and whether it is a
        # helper (a helper first); then, so that no tie depends on which trace is which, the
        # roles themselves.
        return (len(seq), [(data.order[c], 1 if not r.helper else 0) for c, r in seq],
                [role_rank(r) for _, r in seq])

    if more is None:
        more = 0 if content(types1) > content(types2) else 1
    fewer = 1 - more
    ops = (operations(types1), operations(types2))
    # An operation is aligned by what it is: its category and the roles of its helpers (of a lone
    # helper, its own role).
    keys = [[(op.key, tuple(sorted((seqs[s][k][1] for k in op.kernels if k != op.main),
                                   key=role_rank)))
             for op in ops[s]] for s in (0, 1)]
    heavy = [[op.key in data.heavy for op in ops[s]] for s in (0, 1)]

    # Myers' diff of the keys, more side first; each match moved to the earliest operation of its
    # key after the previous match, on both sides.
    matches = []
    floor = {more: 0, fewer: 0}
    for pair in diff(keys[more], keys[fewer]):
        at = {}
        for side, p in ((more, pair[0]), (fewer, pair[1])):
            at[side] = next(x for x in range(floor[side], p + 1) if keys[side][x] == keys[side][p])
            floor[side] = at[side] + 1
        matches.append(at)
    partner = [[None] * len(ops[0]), [None] * len(ops[1])]
    column = [[None] * len(ops[0]), [None] * len(ops[1])]
    col = 0
    nxt = {more: 0, fewer: 0}
    for at in matches + [{more: len(ops[more]), fewer: len(ops[fewer])}]:
        for side in (more, fewer):  # unmatched: the more side's first
            for x in range(nxt[side], at[side]):
                column[side][x] = col
                col += 1
        if at[more] < len(ops[more]):
            partner[more][at[more]], partner[fewer][at[fewer]] = at[fewer], at[more]
            column[more][at[more]] = column[fewer][at[fewer]] = col
            col += 1
        nxt = {more: at[more] + 1, fewer: at[fewer] + 1}

    def regions_of(pairs):
        """Anchors: matched heavy pairs, those in order on both sides (in the more side's order,
        each after the last one kept on the other side); per side, each operation's anchors
        before it."""
        anchor, last = [set(), set()], -1
        for i, j in sorted(pairs):
            if j > last:
                anchor[more].add(i)
                anchor[fewer].add(j)
                last = j
        region = [[sum(1 for a in anchor[s] if a < x) for x in range(len(ops[s]))]
                  for s in (0, 1)]
        return anchor, region

    heavy_pairs = [(at[more], at[fewer]) for at in matches if heavy[more][at[more]]]
    anchor, region = regions_of(heavy_pairs)

    # Pairs again the unmatched operations of one category that differ in their helpers or moved:
    # an unmatched one of the more side with the first unmatched one of its category on the
    # other side within two columns or between the same anchors. Heavy ones close stretches too.
    for i in range(len(ops[more])):
        if partner[more][i] is not None:
            continue
        for j in range(len(ops[fewer])):
            if (partner[fewer][j] is None and ops[fewer][j].key == ops[more][i].key
                    and (abs(column[more][i] - column[fewer][j]) <= 2
                         or region[more][i] == region[fewer][j])):
                partner[more][i], partner[fewer][j] = j, i
                if heavy[more][i]:
                    heavy_pairs.append((i, j))
                break
    anchor, region = regions_of(heavy_pairs)

    out = []

    def only_communication(side, extras):
        return all(seqs[side][k][0] == "Communication" for k in extras)

    # Splits: matched operations whose kernel counts differ.
    for i in range(len(ops[more])):
        if partner[more][i] is None:
            continue
        pair = [None, None]
        pair[more], pair[fewer] = ops[more][i], ops[fewer][partner[more][i]]
        if len(pair[0].kernels) == len(pair[1].kernels):
            continue
        fused = 0 if len(pair[0].kernels) < len(pair[1].kernels) else 1
        unfused = 1 - fused
        # The unfused operation's kernels the fused one has no partner for: the main kernels
        # pair up; each helper takes the first free helper of the same category and role.
        free = [k for k in pair[fused].kernels if k != pair[fused].main]
        extras = []
        for k in pair[unfused].kernels:
            if k == pair[unfused].main and pair[fused].main is not None:
                continue
            same = [f for f in free if seqs[fused][f] == seqs[unfused][k]]
            if same:
                free.remove(same[0])
            else:
                extras.append(k)
        if only_communication(unfused, extras):
            continue
        f = pair[fused]
        out.append(dict(ranges=[pair[0].span(), pair[1].span()], relation="split", fused=fused,
                        extras=extras, fused_at=f.main if f.main is not None else f.kernels[0]))

    # Between consecutive anchors: the unmatched operations of each side.
    regions = len(anchor[0]) + 1
    unmatched = [[[] for _ in range(regions)] for _ in (0, 1)]
    matched = [[[] for _ in range(regions)] for _ in (0, 1)]  # with the anchors around them
    for s in (0, 1):
        for x in range(len(ops[s])):
            r = region[s][x]
            if x in anchor[s]:
                matched[s][r].append(x)
                matched[s][r + 1].append(x)
            elif partner[s][x] is not None:
                matched[s][r].append(x)
            else:
                unmatched[s][r].append(x)

    def covers(fused, k, e, is_unmatched):
        (kc, kr), (ec, er) = seqs[fused][k], seqs[1 - fused][e]
        can = kc == ec or ec in kr.covers or data.absorbs(kc, ec)
        if ec in data.heavy:
            return kc in data.heavy and can if is_unmatched else kc == ec
        return can or er.serves_category(kc)

    for r in range(regions):
        count = [sum(len(ops[s][x].kernels) for x in unmatched[s][r]) for s in (0, 1)]
        if count[0] == count[1]:
            continue
        fused = 0 if count[0] < count[1] else 1
        unfused = 1 - fused
        extras = sorted(k for x in unmatched[unfused][r] for k in ops[unfused][x].kernels)
        if only_communication(unfused, extras):
            continue
        # The covering kernel: a main kernel of the fused side, its unmatched operations first,
        # then the one whose category or stated operations name the most extras, then the one
        # nearest to the first extra in the alignment.
        where = column[unfused][unmatched[unfused][r][0]]

        def named(k):
            kc, kr = seqs[fused][k]
            return sum(1 for e in extras if seqs[unfused][e][0] == kc
                       or seqs[unfused][e][0] in kr.covers)

        candidates = sorted(
            (is_matched, -named(ops[fused][x].main), abs(column[fused][x] - where), x)
            for is_matched, group in ((0, unmatched[fused][r]), (1, matched[fused][r]))
            for x in group if ops[fused][x].main is not None)
        covering = None
        for is_matched, _, _, x in candidates:
            if all(covers(fused, ops[fused][x].main, e, not is_matched) for e in extras):
                covering = x
                break
        involved = [(s, x) for s in (0, 1) for x in unmatched[s][r]]
        if covering is not None:
            fused_at = ops[fused][covering].main
            involved.append((fused, covering))
            kc = seqs[fused][fused_at][0]
            helpers = all(seqs[unfused][e][1].serves_category(kc) for e in extras)
            relation = "split" if helpers else "fusion"
        elif unmatched[fused][r]:
            fused_at, relation = None, "algorithm"
        else:
            continue  # nothing on the fused side could do the extras' work
        # Columns of the involved operations, and of their partners (an operation paired again
        # after the diff stands apart from its partner).
        spanned = [column[s][x] for s, x in involved]
        spanned += [column[1 - s][partner[s][x]] for s, x in involved if partner[s][x] is not None]
        lo, hi = min(spanned), max(spanned)
        ranges = []
        for s in (0, 1):
            inside = [ops[s][x].span() for x in range(len(ops[s])) if lo <= column[s][x] <= hi]
            ranges.append((min(b for b, _ in inside), max(e for _, e in inside)) if inside
                          else (0, 0))
        out.append(dict(ranges=ranges, relation=relation, fused=fused, extras=extras,
                        fused_at=fused_at))
    out.sort(key=lambda p: (p["ranges"][more], RELATION_ORDER[p["relation"]]))
    return out


def fusion_differences(seq1, seq2, instances, groups, categorize, role_of, data=None):
    """categorize(side, kernel name) -> category; role_of(side, kernel name) -> Role."""
    data = data or RolesData()
    position = [{}, {}]  # id(unit) -> its position in its step
    for side, seq in ((0, seq1), (1, seq2)):
        for units in seq.values():
            for i, u in enumerate(units):
                position[side][id(u)] = i
    candidates = []  # (kind, step, scope, (units1, units2))
    steps = sorted({i[0] for i in instances} | {g[0] for g in groups},
                   key=lambda s: (s is None, s or 0))
    for step in steps:
        replays = ([], [])
        for st, _, u1, u2 in instances:
            if st != step:
                continue
            if u1["graph"] and u2["graph"]:
                replays[0].append(u1)
                replays[1].append(u2)
            elif u1["run"] and u2["run"] and len(u1["run"]) != len(u2["run"]):
                candidates.append(("op", step, "/".join(u1["scope"]), ([u1], [u2])))
        if replays[0]:
            # One candidate for all the step's replays, each side's in its step order.
            units2 = sorted(replays[1], key=lambda u: position[1][id(u)])
            candidates.append(("graph", step, "/".join(replays[0][0]["scope"]),
                               (replays[0], units2)))
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
        types = [[(categorize(s, name), role_of(s, name)) for name, _ in runs[s]] for s in (0, 1)]
        # A difference's identity holds the op (op, graph) or the stretch's ops (module): a step's
        # replays, however many, are its graph candidate's ops, each name once.
        ops = [tuple(u["name"] for u in units[0]), tuple(u["name"] for u in units[1])]
        if kind == "graph":
            ops = [tuple(dict.fromkeys(o)) for o in ops]
        for p in pieces(types[0], types[1], data):
            ranges, fused = p["ranges"], p["fused"]
            unfused = 1 - fused
            at = [ranges[s][0] for s in (0, 1)]
            sig = (kind, scope, ops[0], ops[1],
                   tuple(types[0][ranges[0][0]:ranges[0][1]]),
                   tuple(types[1][ranges[1][0]:ranges[1][1]]),
                   p["relation"], fused,
                   None if p["fused_at"] is None else p["fused_at"] - at[fused],
                   tuple(e - at[unfused] for e in p["extras"]))
            times = [sum(d for _, d in runs[s][ranges[s][0]:ranges[s][1]]) for s in (0, 1)]
            entry = found.setdefault(sig, dict(instances=0, times=[0, 0], extra_time=0, best=-1))
            entry["instances"] += 1
            entry["times"][0] += times[0]
            entry["times"][1] += times[1]
            entry["extra_time"] += sum(runs[unfused][e][1] for e in p["extras"])
            if abs(times[0] - times[1]) > entry["best"]:
                entry["best"] = abs(times[0] - times[1])
                example = []
                for s in (0, 1):
                    extra = set(p["extras"]) if s == unfused else set()
                    example.append([
                        {"name": family(name), "full_name": name, "type": categorize(s, name),
                         "time_us": us(d), "extra": k in extra}
                        for k, (name, d) in enumerate(runs[s]) if ranges[s][0] <= k < ranges[s][1]])
                entry["example"] = (step, position[0][id(units[0][0])] + 1, example)
    out = []
    for sig, e in found.items():
        kind, scope, ops1, ops2, types1, types2, relation, fused, fused_at, _ = sig
        n = e["instances"]
        unfused = 1 - fused
        step, idx, example = e["example"]
        sides = []
        for s, (ops, types) in enumerate(((ops1, types1), (ops2, types2))):
            counts = {}
            for category, _ in types:
                counts[category] = counts.get(category, 0) + n
            sides.append({"ops": list(ops), "kernels": len(types) * n, "categories": counts,
                          "time_us": us(e["times"][s]),
                          "kernel_types": [category for category, _ in types]})
        extra_categories, extra_kernels, extra_examples = {}, {}, {}
        for k in example[unfused]:
            if k["extra"]:
                extra_categories[k["type"]] = extra_categories.get(k["type"], 0) + n
                extra_kernels[(k["name"], k["type"])] = extra_kernels.get((k["name"], k["type"]),
                                                                          0) + n
                extra_examples.setdefault((k["name"], k["type"]), k["full_name"])
        fused_kernel = None if fused_at is None else example[fused][fused_at]
        out.append({
            "kind": kind, "scope": scope, "op": None if kind == "module" else ops1[0],
            "relation": relation,
            "fused_by": None if relation == "algorithm" else ("trace1", "trace2")[fused],
            "instances": n, "trace1": sides[0], "trace2": sides[1],
            "extra_categories": extra_categories,
            "extra_kernels": [{"name": name, "example": extra_examples[(name, category)],
                               "category": category, "count": count}
                              for (name, category), count in
                              sorted(extra_kernels.items(), key=lambda kv: (-kv[1], kv[0]))],
            "extra_time_us": us(e["extra_time"]),
            "fused_kernel": (fused_kernel or {}).get("name") or None,
            "fused_kernel_full_name": (fused_kernel or {}).get("full_name") or None,
            "fused_kernel_category": (fused_kernel or {}).get("type") or None,
            "saving_us": us(e["times"][unfused] - e["times"][fused]),
            "example": {"step": step, "index": idx, "trace1": example[0],
                        "trace2": example[1]},
            "_fused": fused})

    def order(d):
        fused = d["_fused"]
        unfused = ("trace1", "trace2")[1 - fused]
        fused = ("trace1", "trace2")[fused]
        return (-d["saving_us"], KIND_ORDER[d["kind"]], RELATION_ORDER[d["relation"]], d["scope"],
                d["op"] or "", d[unfused]["kernel_types"], d[fused]["kernel_types"],
                d[unfused]["ops"], d[fused]["ops"])

    out.sort(key=order)
    for d in out:
        del d["_fused"]
    return out


def unit_json(u):
    return {"kernels": kernels_json(u["kernels"]),
            "time_us": us(u["time"])}


def self_test():
    """Hand-computed FLOPs and bytes, one or more shapes per model, and the counting rules."""
    import os
    import tempfile

    def op(name, dims, types, concrete=None):
        args = {"Input Dims": dims, "Input type": types}
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        return perf(name, args)

    bf, f32 = "c10::BFloat16", "float"
    # GEMM. addmm of BERT-small (tl_h100_bert_small): bias [512], A [141, 512], B [512, 512].
    assert op("aten::addmm", [[512], [141, 512], [512, 512], [], []],
              [bf, bf, bf, "Scalar", "Scalar"], ["", "", "", "1", "1"]) == \
        (2 * 141 * 512 * 512, (512 + 141 * 512 + 512 * 512) * 2 + 141 * 512 * 2)
    assert op("aten::mm", [[32, 1000], [1000, 2048]], [f32, f32]) == \
        (2 * 32 * 2048 * 1000, (32 * 1000 + 1000 * 2048) * 4 + 32 * 2048 * 4)
    assert op("aten::mm", [[32, 1000], [999, 2048]], [f32, f32]) == (None, None)  # K differs
    assert op("aten::mm", [[32, 1000]], [f32]) == (None, None)  # too few inputs
    assert op("aten::mm", [[32, 1000], [1000, 2048]], [f32, "Scalar"]) == (None, None)
    assert perf("aten::mm", {"Input Dims": [[2, 3], [3, 4]]}) == (None, None)  # no types
    # bmm: [b, M, K] x [b, K, N], TimeSformer's attention scores.
    assert op("aten::bmm", [[96, 3137, 64], [96, 64, 3137]], [bf, bf]) == \
        (2 * 96 * 3137 * 3137 * 64, (2 * 96 * 3137 * 64) * 2 + 96 * 3137 * 3137 * 2)
    assert op("aten::bmm", [[4, 8, 16], [5, 16, 32]], [f32, f32]) == (None, None)  # batch
    assert op("aten::baddbmm", [[4, 8, 32], [4, 8, 16], [4, 16, 32], [], []],
              [f32, f32, f32, "Scalar", "Scalar"]) == \
        (2 * 4 * 8 * 32 * 16, (4 * 8 * 32 + 4 * 8 * 16 + 4 * 16 * 32) * 4 + 4 * 8 * 32 * 4)
    # _scaled_mm: fp8 inputs, float scales (0-d), output at fp8 size.
    fp8 = "c10::Float8_e4m3fn"
    assert op("aten::_scaled_mm", [[16, 64], [64, 32], [], []], [fp8, fp8, f32, f32]) == \
        (2 * 16 * 32 * 64, 16 * 64 + 64 * 32 + 4 + 4 + 16 * 32)
    # Attention, [B, H, L, D]: the outer SDPA op of BERT-small, not causal.
    q = [1, 8, 141, 64]
    sdpa = (["", "", "", "0.", "False", "False", "0.125"],
            [q, q, q, [], [], [], []], [bf, bf, bf, "Scalar", "Scalar", "Scalar", "Scalar"])
    assert op("aten::_scaled_dot_product_flash_attention", sdpa[1], sdpa[2], sdpa[0]) == \
        (2 * 8 * 141 * 141 * 128, 3 * 8 * 141 * 64 * 2 + 8 * 141 * 64 * 2)
    # Causal (Concrete 4 "True"): half the FLOPs, same bytes.
    causal = ["", "", "", "0.", "True", "False", "0.125"]
    assert op("aten::_scaled_dot_product_flash_attention", sdpa[1], sdpa[2], causal) == \
        (8 * 141 * 141 * 128, 3 * 8 * 141 * 64 * 2 + 8 * 141 * 64 * 2)
    # Without Concrete Inputs: not causal.
    assert op("aten::_scaled_dot_product_flash_attention", sdpa[1], sdpa[2])[0] == \
        2 * 8 * 141 * 141 * 128
    # [B, L, H, D], grouped-query: q [2, 128, 8, 64], k [2, 256, 2, 64], v [2, 256, 2, 32];
    # causal at Concrete 8.
    fa = [[2, 128, 8, 64], [2, 256, 2, 64], [2, 256, 2, 32]] + [[]] * 12
    fa_types = [bf, bf, bf, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar",
                "", "", "", ""]
    fa_concrete = ["", "", "", "", "", "128", "256", "0.", "True", "False", "0.125", "", "",
                   "", ""]
    assert op("aten::_flash_attention_forward", fa, fa_types, fa_concrete) == \
        (2 * 2 * 8 * 128 * 256 * (64 + 32) // 2,
         (2 * 128 * 8 * 64 + 2 * 256 * 2 * 64 + 2 * 256 * 2 * 32) * 2 + 2 * 8 * 128 * 32 * 2)
    fa_concrete[8] = "False"
    assert op("aten::_flash_attention_forward", fa, fa_types, fa_concrete)[0] == \
        2 * 2 * 8 * 128 * 256 * (64 + 32)
    # Packed 3-D (variable length): no model.
    assert op("aten::_flash_attention_forward", [[256, 8, 64]] * 3, [bf] * 3) == (None, None)
    # Backward: 5·B·H·Lq·Lk·(D + Dv), halved rounded down when causal; _efficient_attention_
    # backward's mask type at Concrete 14. B=H=1, Lq=Lk=3, D=1, Dv=2: 135 -> 67.
    eb_dims = [[1, 3, 1, 2], [1, 3, 1, 1], [1, 3, 1, 1], [1, 3, 1, 2]] + [[]] * 11
    eb_types = [f32] * 4 + [""] * 11
    eb_concrete = [""] * 14 + ["1"]
    grads = 3 + 3 + 3 * 2  # q, k, v element counts
    assert op("aten::_efficient_attention_backward", eb_dims, eb_types, eb_concrete) == \
        (67, (6 + 3 + 3 + 6) * 4 + grads * 4)
    eb_concrete[14] = "0"
    assert op("aten::_efficient_attention_backward", eb_dims, eb_types, eb_concrete)[0] == 135
    # SDPA flash backward, [B, H, L, D]: grad_out, q, k, v, out, logsumexp (float); causal at 11.
    sb_dims = [[2, 4, 16, 8]] * 5 + [[2, 4, 16]] + [[]] * 9
    sb_types = [bf] * 5 + [f32] + ["Scalar"] * 9
    sb_concrete = [""] * 11 + ["True"] + [""] * 3
    assert op("aten::_scaled_dot_product_flash_attention_backward", sb_dims, sb_types,
              sb_concrete) == \
        (5 * 2 * 4 * 16 * 16 * 16 // 2, 5 * 1024 * 2 + 128 * 4 + 3 * 1024 * 2)
    # Convolution, grouped and strided: x [2, 8, 10, 10], w [16, 4, 3, 3], groups 2, stride [2]
    # (one value for both dims), padding 1: O = (10 + 2 - 2 - 1) // 2 + 1 = 5.
    conv_concrete = ["", "", "", "[2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2"]
    conv_types = [f32, f32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar",
                  "ScalarList", "Scalar"]
    conv_dims = [[2, 8, 10, 10], [16, 4, 3, 3]] + [[]] * 7
    assert op("aten::convolution", conv_dims, conv_types, conv_concrete) == \
        (2 * 2 * 16 * 25 * 4 * 9, (2 * 8 * 100 + 16 * 4 * 9) * 4 + 2 * 16 * 25 * 4)
    assert op("aten::convolution", conv_dims, conv_types) == (None, None)  # no Concrete Inputs
    conv_concrete[8] = "1"  # Cin 8 != 4 * 1
    assert op("aten::convolution", conv_dims, conv_types, conv_concrete) == (None, None)
    # cudnn_convolution (padding 2, stride 3, dilation 4, groups 5), dilation 2:
    # O = (7 - 2·2 - 1) // 1 + 1 = 3.
    assert op("aten::cudnn_convolution", [[1, 3, 7, 7], [6, 3, 3, 3], [], [], [], [], [], [], []],
              [bf, bf, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar",
               "Scalar"], ["", "", "[0, 0]", "[1, 1]", "[2, 2]", "1", "False", "False", "True"]) \
        == (2 * 6 * 9 * 3 * 9, (3 * 49 + 6 * 27) * 2 + 6 * 9 * 2)
    # miopen_convolution of ResNet-18's stem (padding 3, stride 4): x [512, 3, 224, 224],
    # w [64, 3, 7, 7], padding 3, stride 2: O = 112.
    assert op("aten::miopen_convolution", [[512, 3, 224, 224], [64, 3, 7, 7]] + [[]] * 7,
              [bf, bf, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar",
               "Scalar"], ["", "", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False"]) == \
        (2 * 512 * 64 * 112 * 112 * 3 * 49,
         (512 * 3 * 224 * 224 + 64 * 3 * 49) * 2 + 512 * 64 * 112 * 112 * 2)
    # Transposed: x [1, 4, 5, 5], w [Cin 4, Cout/groups 3, 3, 3], stride 2, padding 1,
    # output_padding 1: O = 4·2 - 2 + 2 + 1 + 1 = 10; FLOPs 2·N·Cin·ΠS·(Cout/groups)·ΠK.
    t_dims = [[1, 4, 5, 5], [4, 3, 3, 3]] + [[]] * 11
    t_concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1", "False",
                  "False", "True", "True"]
    t_types = [f32, f32] + ["ScalarList"] * 11
    assert op("aten::_convolution", t_dims, t_types, t_concrete) == \
        (2 * 4 * 25 * 3 * 9, (100 + 108) * 4 + 3 * 100 * 4)
    t_concrete[8] = "2"  # groups 2: Cout 6, same FLOPs
    assert op("aten::_convolution", t_dims, t_types, t_concrete) == \
        (2 * 4 * 25 * 3 * 9, (100 + 108) * 4 + 6 * 100 * 4)
    # Backward: grad_output (0), input (1), weight (2); output_mask at 10.
    bw_dims = [[2, 16, 5, 5], [2, 8, 10, 10], [16, 4, 3, 3]] + [[]] * 8
    bw_types = [f32] * 3 + ["ScalarList"] * 8
    bw_concrete = ["", "", "", "[0]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2",
                   "[False, True, False]"]
    forward = 2 * 2 * 16 * 25 * 4 * 9
    read = (2 * 16 * 25 + 2 * 8 * 100 + 16 * 4 * 9) * 4
    assert op("aten::convolution_backward", bw_dims, bw_types, bw_concrete) == \
        (forward, read + 16 * 4 * 9 * 4)
    bw_concrete[10] = "[True, True, False]"
    assert op("aten::convolution_backward", bw_dims, bw_types, bw_concrete) == \
        (2 * forward, read + (2 * 8 * 100 + 16 * 4 * 9) * 4)
    assert op("aten::convolution_backward", bw_dims, bw_types, bw_concrete[:10]) == \
        (2 * forward, read + (2 * 8 * 100 + 16 * 4 * 9) * 4)  # mask not recorded: both
    # Memory-bound. copy_ with two dtypes: reads src (uint8), writes self (float).
    assert op("aten::copy_", [[3, 224, 224], [3, 224, 224], []], [f32, "unsigned char", "Bool"]) \
        == (None, 3 * 224 * 224 * 4 + 3 * 224 * 224)
    assert op("aten::copy_", [[32], [32], []], ["int", "long int", "Scalar"]) == \
        (None, 32 * 4 + 32 * 8)
    # Element-wise, broadcast output; a Scalar is no tensor, a 0-d tensor is one element.
    assert op("aten::add", [[128, 197, 768], [1, 197, 768], []], [bf, bf, "Scalar"]) == \
        (None, (128 * 197 * 768 + 197 * 768) * 2 + 128 * 197 * 768 * 2)
    assert op("aten::add_", [[4, 768, 14, 14], [1, 768, 1, 1], []], [bf, bf, "Scalar"]) == \
        (None, (4 * 768 * 196 + 768) * 2 + 4 * 768 * 196 * 2)
    assert op("aten::div", [[3, 224, 224], []], [f32, "long int"]) == \
        (None, 3 * 224 * 224 * 4 + 8 + 3 * 224 * 224 * 4)
    assert op("aten::mul", [[3, 4], [5, 4]], [f32, f32]) == (None, None)  # no broadcast
    assert op("aten::add", [[], [], []], ["Scalar", "Scalar", "Scalar"]) == (None, None)
    # Reduction: what it reads only. Normalisation, softmax: the first tensor's element count.
    assert op("aten::sum", [[512, 1000], [], [], []], [bf, "ScalarList", "Scalar", ""]) == \
        (None, 512 * 1000 * 2)
    assert op("aten::native_layer_norm", [[1, 141, 512], [], [512], [512], []],
              [bf, "ScalarList", bf, bf, "Scalar"]) == \
        (None, (141 * 512 + 512 + 512) * 2 + 141 * 512 * 2)
    assert op("aten::_softmax", [[3136, 12, 8, 8], [], []], [bf, "Scalar", "Scalar"]) == \
        (None, 2 * 3136 * 12 * 64 * 2)
    assert op("aten::cudnn_batch_norm_backward",
              [[2, 4, 3, 3], [2, 4, 3, 3], [4], [4], [4], [4], [4], [], [0]],
              [f32] * 7 + ["Double", "unsigned char"]) == \
        (None, (72 + 72 + 5 * 4) * 4 + 72 * 4)
    assert perf("aten::linear", {"Input Dims": [[2, 3], [4, 3]], "Input type": [f32, f32]}) == \
        (None, None)

    # Counting: the innermost op of each family counts, into its top-level op.
    ev = []

    def cpu(name, ts, dur, dims=None, types=None, concrete=None, tid=1):
        args = {}
        if dims is not None:
            args = {"Input Dims": dims, "Input type": types}
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts,
                   "dur": dur, "args": args})

    addmm = ([[512], [141, 512], [512, 512], [], []], [bf, bf, bf, "Scalar", "Scalar"])
    addmm_flops = 2 * 141 * 512 * 512
    addmm_bytes = (512 + 141 * 512 + 512 * 512) * 2 + 141 * 512 * 2
    copy_bytes = 141 * 512 * 2 * 2
    # linear > addmm > copy_ (another family: both count), linear has no model.
    cpu("aten::linear", 0, 100, [[1, 141, 512], [512, 512], [512]], [bf, bf, bf])
    cpu("aten::addmm", 10, 80, *addmm)
    cpu("aten::copy_", 20, 10, [[141, 512], [141, 512], []], [bf, bf, "Scalar"])
    # SDPA > _scaled_dot_product_flash_attention > _flash_attention_forward: only the innermost.
    cpu("aten::scaled_dot_product_attention", 200, 100, [q, q, q], [bf, bf, bf])
    cpu("aten::_scaled_dot_product_flash_attention", 210, 80, sdpa[1], sdpa[2], sdpa[0])
    inner = [[1, 141, 8, 64]] * 3 + [[]] * 12
    cpu("aten::_flash_attention_forward", 220, 60, inner, fa_types,
        ["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "", "", "", ""])
    # An addmm nested in an addmm: only the inner one; the outer's own shapes are ignored.
    cpu("aten::addmm", 400, 100, [[7], [3, 5], [5, 7], [], []], [f32] * 3 + ["Scalar"] * 2)
    cpu("aten::addmm", 410, 50, *addmm)
    # Convolution chain without Concrete Inputs: the innermost has no model, no FLOPs anywhere
    # (the outer ones do not count either).
    cpu("aten::convolution", 600, 100, conv_dims, conv_types)
    cpu("aten::_convolution", 610, 80, conv_dims, conv_types, conv_concrete[:9])
    cpu("aten::cudnn_convolution", 620, 60, [[2, 8, 10, 10], [16, 4, 3, 3]], [f32, f32])
    # A top-level op with no model at all; and the same family on another thread is no nesting.
    cpu("aten::view", 800, 10, [[4], []], [f32, "ScalarList"])
    cpu("aten::add", 900, 100, [[4], [4], []], [f32, f32, "Scalar"])
    cpu("aten::mul", 910, 50, [[4], [4]], [f32, f32], tid=2)
    path = None
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"traceEvents": ev}, f)
            path = f.name
        t = Trace(path)
        got = {(u["name"], u["ts"] // 1000): (u["flops"], u["bytes"]) for u in t.units.values()}
        assert got == {
            ("aten::linear", 0): (addmm_flops, addmm_bytes + copy_bytes),
            ("aten::scaled_dot_product_attention", 200):
                (2 * 8 * 141 * 141 * 128, 3 * 8 * 141 * 64 * 2 + 8 * 141 * 64 * 2),
            ("aten::addmm", 400): (addmm_flops, addmm_bytes),
            ("aten::convolution", 600): (None, None),
            ("aten::view", 800): (None, None),
            ("aten::add", 900): (None, 3 * 16),
            ("aten::mul", 910): (None, 3 * 16)}, got
        # Rows and traces: sums over the units, null where none has a value.
        r = report(t, Trace(path))
        rows = {o["op"]: o for o in r["ops"]}
        assert rows["aten::linear"]["trace1"]["flops"] == addmm_flops
        assert rows["aten::linear"]["trace2"]["bytes"] == addmm_bytes + copy_bytes
        assert rows["aten::view"]["trace1"]["flops"] is None
        assert rows["aten::add"]["trace1"]["flops"] is None
        assert rows["aten::add"]["trace1"]["bytes"] == 48
        assert r["traces"][0]["flops"] == 2 * addmm_flops + 2 * 8 * 141 * 141 * 128
        assert r["traces"][1]["bytes"] == (2 * addmm_bytes + copy_bytes + 3 * 8 * 141 * 64 * 2
                                           + 8 * 141 * 64 * 2 + 96)
        assert all("flops" not in g["trace1"] for g in r["unmatched_groups"])
        assert all("flops" not in i["trace1"] for i in r["top_instances"])
    finally:
        if path:
            os.unlink(path)


def fusion_self_test():
    """Hand-computed pieces of kernel sequences (the spec above FindFusionDifferences()), and that
    swapping the sequences swaps the sides and nothing else."""
    data = RolesData()
    split_k = Role("split-K reduce", ("GEMM", "MoE_GEMM"), ())
    g, k = ("GEMM", MAIN), ("GEMM", split_k)
    e, r = ("Elementwise", MAIN), ("RMSNorm", MAIN)
    add_rms = ("RMSNorm", Role("", (), ("RMSNorm", "Elementwise")))
    fill = ("Elementwise", Role("fill", ("any",), ()))
    combine = ("Attention", Role("split-KV combine", ("Attention",), ()))
    a, comm, softmax, reduce = (("Attention", MAIN), ("Communication", MAIN), ("Softmax", MAIN),
                                ("Reduce", MAIN))

    # Operations: a fill joins the next main kernel (the previous one at the end), split-K the
    # GEMM before it; a combine with no attention beside it is an operation alone.
    got = [(o.key, o.main, o.kernels)
           for o in operations([fill, g, k, e, combine, reduce, g, fill])]
    assert got == [("GEMM", 1, [0, 1, 2]), ("Elementwise", 3, [3]), ("Attention", None, [4]),
                   ("Reduce", 5, [5]), ("GEMM", 6, [6, 7])], got

    def check(types1, types2, expected):
        got = [(p["ranges"], p["relation"], p["fused"], p["extras"], p["fused_at"])
               for p in pieces(types1, types2, data)]
        assert got == expected, (types1, types2, got)
        back = sorted((p["ranges"][::-1], p["relation"], 1 - p["fused"], p["extras"], p["fused_at"])
                      for p in pieces(types2, types1, data))
        assert back == sorted(expected), (types2, types1, back)

    # GEMM + split-K reduction against one GEMM: a split of the matched GEMMs.
    check([g, k], [g], [([(0, 2), (0, 1)], "split", 1, [1], 0)])
    # An add and an RMSNorm against a fused add + RMSNorm that states it covers the add (the
    # collective before them covers nothing): a fusion over the add and its nearest neighbours.
    check([comm, e, r, g], [comm, add_rms, g], [([(1, 3), (1, 2)], "fusion", 1, [1], 1)])
    # The same beside a GEMM, which absorbs an add too: the kernel that names the add covers it.
    check([g, e, r, g], [g, add_rms, g], [([(1, 3), (1, 2)], "fusion", 1, [1], 1)])
    # Softmax + element-wise against a reduction: nothing on either side covers the other's.
    check([g, softmax, e, g], [g, reduce, g], [([(1, 3), (1, 2)], "algorithm", 1, [1, 2], None)])
    # A GEMM only a light kernel could cover: no claim. Extras all collectives: none either.
    check([a, g, r], [a, r], [])
    check([g, comm, g], [g, g], [])
    # The element-wise op moved past the GEMM: paired again, and the GEMM's split-K remains.
    check([a, g, k, e, a], [a, e, g, a], [([(1, 3), (2, 3)], "split", 1, [2], 2)])
    # Equal kernel counts: the side aligned first is chosen by content (categories, then helpers
    # before main kernels), whichever is trace 1. Operations align by category and helpers: the
    # GEMM with its split-K is trace 2's, which covers trace 1's two GEMMs before it.
    gelu = ("GEMM", Role("", (), ("GEMM", "GELU")))
    check([g, gelu, g, k], [g, k, a, a], [([(0, 4), (0, 2)], "fusion", 1, [0, 1], 0)])
    # The same categories and helpers in the same places, different roles: a fill joins the add
    # after it, a layout transform with no convolution beside it stands alone. The roles break
    # the tie (the layout transform's side first): the add with its fill is a split of the plain
    # add, and the GEMM absorbs the lone layout transform.
    zero = ("MemCopy", Role("fill", ("any",), ()))
    layout = ("MemCopy", Role("layout transform", ("Conv",), ()))
    check([g, zero, e], [g, layout, e],
          [([(0, 1), (0, 2)], "fusion", 0, [1], 0), ([(1, 3), (2, 3)], "split", 1, [1], 2)])


def main(argv):
    if argv == ["--self-test"]:
        self_test()
        fusion_self_test()
        print("self-test passed")
        return
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
