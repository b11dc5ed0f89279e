#!/usr/bin/env python3
"""Decodes `tracefuse ops --format perfetto` with a perfetto_trace.proto (ours, or upstream's
protos/perfetto/trace/perfetto_trace.proto for an independent check) and checks it against the
input traces, read here with json.load, and against `tracefuse ops --format json`:
  - every kernel, memcpy and memset of both traces is a slice once, with its exact duration and
    its start moved only as --align says (none: by one constant per side, which the side's
    description states; steps: by its step's shift, never decreasing, the matched steps starting
    together); the trace begins at 0 (--align none: both sides); kernels carry their full name,
    category, role and op;
  - no two slices of one track overlap (overlapping kernels are on lanes of their own);
  - each side has a slice per top-level op; every matched op pair is linked by one flow, from the
    earlier of the two to the other, both carrying both sides' kernel time, the delta and ratio;
  - a slice per fusion difference, with its relation, op and fused kernel, and a flow to a
    top-level op of each side;
  - (--align none) each device's busy counter adds up to the GPU timeline's busy time.
With --negative, each check must also fail on the decoded trace with one fault planted: a kernel
dropped, a kernel moved by 1 ns, a kernel 1 ns longer, a pair flow's end dropped, a fusion
difference dropped (where there is one).
Exit 0 when all hold, 1 with what does not, 77 (skipped) when a trace is missing.

usage: check_perfetto.py [--proto FILE] [--align steps|none] [--negative]
                         TRACEFUSE TRACE1 TRACE2 WORKDIR [tracefuse ops options...]
"""
import argparse
import collections
import decimal
import gzip
import importlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUR_PROTO = os.path.join(HERE, "..", "..", "src", "report", "perfetto", "perfetto_trace.proto")
KERNEL_CATS = {"kernel", "Kernel"}
TRANSFER_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
PAIR_FLOWS = 1 << 33  # pair flows are below, fusion differences' from here


def compiled_proto(proto):
    out = tempfile.mkdtemp(prefix="perfetto_proto_")
    subprocess.run(["protoc", f"--proto_path={os.path.dirname(os.path.abspath(proto))}",
                    f"--python_out={out}", os.path.basename(proto)], check=True)
    sys.path.insert(0, out)
    return importlib.import_module(os.path.splitext(os.path.basename(proto))[0] + "_pb2")


Slice = collections.namedtuple("Slice", "track name start end args flows ending")


class Decoded:
    """The trace as trace_processor would see it: tracks, slices with their interned names and
    args resolved, counters."""

    def __init__(self, pb, data):
        trace = pb.Trace()
        trace.ParseFromString(data)
        self.tracks = {}  # uuid -> descriptor
        self.slices = []
        self.counters = collections.defaultdict(list)  # track -> [(ts, value)]
        names, arg_names, values = {}, {}, {}
        open_slices = collections.defaultdict(list)
        for packet in trace.packet:
            if packet.HasField("track_descriptor"):
                d = packet.track_descriptor
                self.tracks[d.uuid] = d
                continue
            if packet.sequence_flags & 1:  # SEQ_INCREMENTAL_STATE_CLEARED
                names, arg_names, values = {}, {}, {}
            interned = packet.interned_data
            names.update((n.iid, n.name) for n in interned.event_names)
            arg_names.update((n.iid, n.name) for n in interned.debug_annotation_names)
            values.update((v.iid, v.str.decode()) for v in interned.debug_annotation_string_values)
            if not packet.HasField("track_event"):
                continue
            e = packet.track_event
            if e.type == e.TYPE_SLICE_BEGIN:
                args = {}
                for a in e.debug_annotations:
                    kind = a.WhichOneof("value")
                    args[arg_names[a.name_iid]] = (values[a.string_value_iid]
                                                   if kind == "string_value_iid" else getattr(a, kind))
                open_slices[e.track_uuid].append(
                    [names[e.name_iid], packet.timestamp, args, list(e.flow_ids),
                     list(e.terminating_flow_ids)])
            elif e.type == e.TYPE_SLICE_END:
                name, start, args, flows, ending = open_slices[e.track_uuid].pop()
                self.slices.append(Slice(e.track_uuid, name, start, packet.timestamp, args, flows,
                                         ending))
            elif e.type == e.TYPE_COUNTER:
                self.counters[e.track_uuid].append(
                    (packet.timestamp, e.counter_value if e.HasField("counter_value")
                     else e.double_counter_value))
        self.unclosed = sum(len(v) for v in open_slices.values())

    def process_of(self, uuid):
        while uuid in self.tracks:
            d = self.tracks[uuid]
            if d.HasField("process"):
                return d.process.pid
            uuid = d.parent_uuid
        return None

    def track_name(self, uuid):
        return self.tracks[uuid].name


def nanos(v):
    """Microseconds as written (decimals read exactly: a float of 1.7e15 us is not exact to the
    nanosecond) to nanoseconds, rounded to the nearest."""
    if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)):
        return None
    return int((decimal.Decimal(v) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def process_track(decoded, pid):
    return next(u for u, d in decoded.tracks.items()
                if d.HasField("process") and d.process.pid == pid)


def recorded(path):
    """Per kind ("kernel", "transfer"): [(name, ts_ns, dur_ns)] of the trace's events with times."""
    events = {"kernel": [], "transfer": []}
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    for e in doc["traceEvents"] if isinstance(doc, dict) else doc:
        if e.get("ph") != "X":
            continue
        kind = ("kernel" if e.get("cat") in KERNEL_CATS else
                "transfer" if e.get("cat") in TRANSFER_CATS else None)
        ts, dur = nanos(e.get("ts")), nanos(e.get("dur"))
        if kind and ts is not None and dur is not None:
            events[kind].append((e.get("name", ""), ts, dur))
    return events


def check_placed(label, recorded_events, slices, align, step_shifts, errors):
    """Every recorded event is one slice with its name and duration, moved as `align` says."""
    if len(recorded_events) != len(slices):
        errors.append(f"{label}: {len(recorded_events)} in the trace, {len(slices)} slices")
        return None
    want = sorted(recorded_events, key=lambda e: (e[1], e[0], e[2]))
    got = sorted(slices, key=lambda s: (s[1], s[0], s[2]))
    shifts = []
    for (name, ts, dur), (got_name, start, got_dur) in zip(want, got):
        if (name, dur) != (got_name, got_dur):
            errors.append(f"{label}: recorded {name!r} at {ts} for {dur} ns, slice {got_name!r} "
                          f"at {start} for {got_dur} ns")
            return None
        shifts.append(start - ts)
    if align == "none" and len(set(shifts)) > 1:
        errors.append(f"{label}: --align none moved events by {sorted(set(shifts))[:5]}...")
    if align == "steps":
        if any(b < a for a, b in zip(shifts, shifts[1:])):
            errors.append(f"{label}: a later event moved less than an earlier one")
        if step_shifts and not set(shifts) <= set(step_shifts):
            errors.append(f"{label}: moved by {sorted(set(shifts) - set(step_shifts))[:5]}, not "
                          "a step's shift")
    return shifts[0] if shifts else None


def check(decoded, traces, report, align):
    errors = []
    if decoded.unclosed:
        errors.append(f"{decoded.unclosed} slices begun and never ended")
    by_track = collections.defaultdict(list)
    for s in decoded.slices:
        by_track[s.track].append(s)
    for track, slices in by_track.items():
        slices.sort(key=lambda s: (s.start, s.end))
        for a, b in zip(slices, slices[1:]):
            if b.start < a.end:
                errors.append(f"track {decoded.track_name(track)!r}: {a.name!r} [{a.start}, "
                              f"{a.end}) overlaps {b.name!r} [{b.start}, {b.end})")
                break
    labels = [t["label"] for t in report["traces"]]
    ops = {1: [], 2: []}
    first_step, first = {}, {}
    for side, path in ((1, traces[0]), (2, traces[1])):
        mine = [s for s in decoded.slices if decoded.process_of(s.track) == side]
        steps = sorted((s for s in mine if decoded.track_name(s.track) == "steps"),
                       key=lambda s: s.start)
        step_shifts = [s.args["shift (ns)"] for s in steps]
        if steps:
            first_step[side] = steps[0].start
        on_streams = [s for s in mine if " stream " in decoded.track_name(s.track)]
        kernels = [s for s in on_streams if "category" in s.args]
        transfers = [s for s in on_streams if "category" not in s.args]
        events = recorded(path)
        shift = check_placed(f"trace {side} kernels", events["kernel"],
                             [(s.args["name"], s.start, s.end - s.start) for s in kernels], align,
                             step_shifts, errors)
        check_placed(f"trace {side} memcpys and memsets", events["transfer"],
                     [(s.name, s.start, s.end - s.start) for s in transfers], align, step_shifts,
                     errors)
        first[side] = min((s.start for s in mine), default=0)
        if align == "none" and first[side] != 0:
            errors.append(f"trace {side} begins at {first[side]}, not 0")
        if align == "none" and shift is not None and f"plus {shift} ns" not in decoded.tracks[
                process_track(decoded, side)].description:
            errors.append(f"trace {side}: moved by {shift} ns, which its description does not say")
        for s in kernels[:1000]:
            for arg in ("name", "category", "role", "op"):
                if not isinstance(s.args.get(arg), str):
                    errors.append(f"trace {side} kernel {s.name!r}: no {arg}")
        ops[side] = [s for s in mine if decoded.track_name(s.track).startswith("CPU ops")]
        want_ops = report["traces"][side - 1]["top_level_ops"]
        if len(ops[side]) != want_ops:
            errors.append(f"trace {side}: {len(ops[side])} op slices, {want_ops} top-level ops")
        if align == "none":
            check_busy(decoded, side, report["traces"][side - 1], errors)
    if align == "steps" and len(first_step) == 2 and first_step[1] != first_step[2]:
        errors.append(f"the first steps start at {first_step[1]} and {first_step[2]}")
    if min(first.values()) != 0:
        errors.append(f"the trace begins at {min(first.values())}, not 0")
    check_pairs(ops, report, labels, errors)
    check_differences(decoded, ops, report, errors)
    return errors


def check_pairs(ops, report, labels, errors):
    begins, ends = {}, {}
    for side in (1, 2):
        for s in ops[side]:
            for f in s.flows:
                if f < PAIR_FLOWS:
                    begins.setdefault(f, []).append((side, s))
            for f in s.ending:
                if f < PAIR_FLOWS:
                    ends.setdefault(f, []).append((side, s))
    if len(begins) != report["matched_ops"] or begins.keys() != ends.keys():
        errors.append(f"{len(begins)} pair flows begun, {len(ends)} ended, "
                      f"{report['matched_ops']} matched ops")
        return
    times = [f"kernel time (ns), {labels[0]}", f"kernel time (ns), {labels[1]}"]
    for f, [(side_a, a)] in begins.items():
        if len(ends[f]) != 1:
            errors.append(f"flow {f} ends {len(ends[f])} times")
            continue
        side_b, b = ends[f][0]
        if side_a == side_b or a.name != b.name or b.start < a.start:
            errors.append(f"flow {f}: {a.name!r} (trace {side_a}, {a.start}) -> {b.name!r} "
                          f"(trace {side_b}, {b.start})")
            continue
        for s in (a, b):
            t1, t2 = s.args.get(times[0]), s.args.get(times[1])
            delta = s.args.get(f"delta (ns), {labels[0]} - {labels[1]}")
            ratio = s.args.get(f"ratio, {labels[0]} / {labels[1]}")
            if t1 is None or t2 is None or delta != t1 - t2 or (t2 > 0 and ratio != t1 / t2):
                errors.append(f"flow {f}: {s.name!r} args {s.args}")
                break
        if a.args.get(times[0]) != b.args.get(times[0]) or a.args.get(times[1]) != b.args.get(
                times[1]):
            errors.append(f"flow {f}: the two ends disagree on the kernel times")


def check_differences(decoded, ops, report, errors):
    diffs = [s for s in decoded.slices
             if decoded.tracks[s.track].name.startswith("fusion differences")]
    want = sorted((d["relation"], d["op"] or "", d["fused_kernel"] or "")
                  for d in report["fusion_differences"])
    got = sorted((s.args["relation"], s.args["op"], s.args["fused kernel"]) for s in diffs)
    if want != got:
        errors.append(f"fusion differences: report {want[:5]}, trace {got[:5]}")
    ending = {}
    for side in (1, 2):
        for s in ops[side]:
            for f in s.ending:
                if f >= PAIR_FLOWS:
                    ending[f] = (side, s)
    for d in diffs:
        sides = {ending[f][0] for f in d.flows if f in ending}
        if len(d.flows) == 0 or any(f not in ending for f in d.flows) or sides != {1, 2}:
            errors.append(f"fusion difference {d.name!r}: flows {d.flows[:5]} reach "
                          f"{sorted(sides)}")
        if any(ending[f][1].start < d.start for f in d.flows if f in ending):
            errors.append(f"fusion difference {d.name!r} starts after a place it was found in")


def check_busy(decoded, side, trace, errors):
    devices = {d["device"]: d for d in trace["gpu_timeline"]["devices"]}
    for uuid, values in decoded.counters.items():
        if decoded.process_of(uuid) != side:
            continue
        name = decoded.track_name(uuid)
        device = int(name.split()[1]) if name.split()[1] != "?" else -1
        if [v for _, v in values] != [1.0, 0.0] * (len(values) // 2) or len(values) % 2:
            errors.append(f"trace {side} {name}: values not 1, 0, 1, 0 ... 0")
            continue
        busy = sum(values[i + 1][0] - values[i][0] for i in range(0, len(values), 2))
        if device in devices and busy != round(devices[device]["busy_us"] * 1000):
            errors.append(f"trace {side} {name}: busy {busy} ns, the GPU timeline's "
                          f"{devices[device]['busy_us']} us")


def planted_faults(decoded):
    """(what, slices with the fault planted) for each fault --negative plants."""
    slices = decoded.slices
    kernel = next(i for i, x in enumerate(slices) if "category" in x.args)
    k = slices[kernel]
    yield "a kernel dropped", slices[:kernel] + slices[kernel + 1:]
    yield "a kernel moved", slices[:kernel] + [k._replace(start=k.start + 1, end=k.end + 1)] + \
        slices[kernel + 1:]
    yield "a kernel longer", slices[:kernel] + [k._replace(end=k.end + 1)] + slices[kernel + 1:]
    ended = next((i for i, x in enumerate(slices) if any(f < PAIR_FLOWS for f in x.ending)), None)
    if ended is not None:
        yield "a pair flow's end dropped", slices[:ended] + [slices[ended]._replace(ending=[])] + \
            slices[ended + 1:]
    difference = next((i for i, x in enumerate(slices)
                       if decoded.track_name(x.track).startswith("fusion differences")), None)
    if difference is not None:
        yield "a fusion difference dropped", slices[:difference] + slices[difference + 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto", default=OUR_PROTO)
    parser.add_argument("--align", default="steps", choices=["steps", "none"])
    parser.add_argument("--negative", action="store_true")
    parser.add_argument("tracefuse")
    parser.add_argument("trace1")
    parser.add_argument("trace2")
    parser.add_argument("workdir")
    args, extra = parser.parse_known_args()
    for t in (args.trace1, args.trace2):
        if not os.path.exists(t):
            print(f"SKIP: {t} not found")
            return 77
    pb = compiled_proto(args.proto)
    os.makedirs(args.workdir, exist_ok=True)
    out = os.path.join(args.workdir, f"{os.getpid()}.pftrace")
    run = [args.tracefuse, "ops", args.trace1, args.trace2, "--progress", "never"] + extra
    subprocess.run(run + ["--format", "perfetto", "--align", args.align, "-o", out], check=True)
    report = json.loads(subprocess.run(run + ["--format", "json"], check=True,
                                       capture_output=True, text=True).stdout)
    with open(out, "rb") as f:
        decoded = Decoded(pb, f.read())
    os.remove(out)
    errors = check(decoded, (args.trace1, args.trace2), report, args.align)
    for e in errors[:20]:
        print(e)
    if args.negative:
        whole = decoded.slices
        for what, faulty in planted_faults(decoded):
            decoded.slices = faulty
            found = check(decoded, (args.trace1, args.trace2), report, args.align)
            print(f"planted {what}: {found[0] if found else 'NOT FOUND'}")
            if not found:
                errors.append(f"planted {what}: not found")
        decoded.slices = whole
    print(f"{len(decoded.slices)} slices, {sum(map(len, decoded.counters.values()))} counter "
          f"values, {len(report['fusion_differences'])} fusion differences, "
          f"{report['matched_ops']} matched ops: {'FAIL' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
