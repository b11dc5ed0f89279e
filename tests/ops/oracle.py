#!/usr/bin/env python3
"""Test oracle for `tracefuse ops`: the same tables, built from whole traces held in memory.

Independent of the C++ streaming code: it loads each trace with json.load, links every kernel to
the CPU operator that launched it, aligns the two traces' top-level operators step by step and
prints the JSON document that `tracefuse ops --format json` writes (less the `tracefuse` block).
Small traces only (it holds everything). The rules it follows are those of docs/reports.md,
"ops: which operator is slower?", written down here a second time on purpose. The FLOPs and
bytes of each op row and trace follow docs/perf-models.md, also implemented a second time here,
from the document alone (not from src/perf_model.cc).

usage: oracle.py TRACE1 TRACE2 [--top N] [--max-edit-distance N]
       oracle.py --self-test
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
            fam = family(name)
            c = u["kernels"].setdefault(fam, [0, 0])
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


def side_json(total, work=False):
    """work: with the FLOPs and bytes (op rows only, not the unmatched groups)."""
    kernels = sorted(total["kernels"].items(), key=lambda kv: (-kv[1][1], kv[0]))
    out = {"instances": total["instances"],
           "kernels": [{"name": n, "count": c, "time_us": us(t)} for n, (c, t) in kernels],
           "time_us": us(total["time"])}
    if work:
        out["flops"], out["bytes"] = total["flops"], total["bytes"]
    return out


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


def main(argv):
    if argv == ["--self-test"]:
        self_test()
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
