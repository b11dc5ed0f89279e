#!/usr/bin/env python3
"""vendor_trace.py: an independent oracle for the vendors' profiler files.

Reads an Nsight Systems SQLite export (`nsys export --type sqlite`), a rocpd database or a
rocprofv3 JSON file (`--output-format json`, optionally gzipped) with nothing but Python's
sqlite3 and json, whole and in RAM, and prints what `tracefuse stats --format json` reports of
it: the kernel count and time, and per device the GPU timeline, its idle split, its launches and
its integrity, by the definitions of docs/reports.md ("Idle time and launches") and
docs/formats.md (devices, streams, names). Times in integer nanoseconds.

Usage: vendor_trace.py FILE
"""
import gzip
import json
import math
import re
import sqlite3
import sys


def columns(db, table):
    return {r[1] for r in db.execute(f"pragma table_info('{table}')")}


def nsys_ordinals(db, tables):
    """deviceId -> CUDA ordinal, where no GPU has two and no two GPUs share one."""
    if "TARGET_INFO_GPU" not in tables:
        return {}
    if "TARGET_INFO_CUDA_DEVICE" in tables:
        rows = db.execute("select g.id, d.cudaId from TARGET_INFO_GPU g "
                          "left join TARGET_INFO_CUDA_DEVICE d on d.gpuId = g.id").fetchall()
    elif "cuDevice" in columns(db, "TARGET_INFO_GPU"):
        rows = db.execute("select id, cuDevice from TARGET_INFO_GPU").fetchall()
    else:
        return {}
    pairs = {(i, o) for i, o in rows if o is not None}  # a GPU no process used has none
    ids, ordinals = {i for i, _ in pairs}, {o for _, o in pairs}
    if len(ids) != len(pairs) or len(ordinals) != len(pairs):
        return {}
    return dict(pairs)


def activities_from_nsys(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
    strings = dict(db.execute("select id, value from StringIds"))
    ordinals = nsys_ordinals(db, tables)
    kernels, activities, launches = [], [], {}

    def pid_of(global_id):
        return (global_id >> 24) & 0xFFFFFF

    name_column = ("demangledName" if "demangledName" in columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
                   else "shortName")
    for start, end, device, stream, corr, gpid, name in db.execute(
            "select start, end, deviceId, streamId, correlationId, globalPid, "
            f"{name_column} from CUPTI_ACTIVITY_KIND_KERNEL"):
        kernels.append((start, end, strings.get(name, "")))
        activities.append(dict(device=ordinals.get(device, device), start=start, end=end,
                               stream=stream, launch=(pid_of(gpid), corr), kind="kernel"))
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"),
                        ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if table not in tables:
            continue
        for start, end, device, stream, corr, gpid in db.execute(
                f"select start, end, deviceId, streamId, correlationId, globalPid from {table}"):
            activities.append(dict(device=ordinals.get(device, device), start=start, end=end,
                                   stream=stream, launch=(pid_of(gpid), corr), kind=kind))
    # eventClass 67 rows repeat a call to hold its stack (--cudabacktrace).
    backtrace = ("and eventClass <> 67" if "eventClass" in columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
                 else "")
    for start, end, tid, corr, name in db.execute(
            "select start, end, globalTid, correlationId, nameId from "
            f"CUPTI_ACTIVITY_KIND_RUNTIME where correlationId is not null {backtrace}"):
        api = re.sub(r"_v\d+$", "", strings.get(name, ""))
        launches.setdefault((pid_of(tid), corr), dict(start=start, end=end, api=api))
    return kernels, activities, launches


def whole_graph_replays(path):
    """Graph replays traced whole (nsys --cuda-graph-trace=graph): count and time."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if not db.execute("select 1 from sqlite_master where name = "
                      "'CUPTI_ACTIVITY_KIND_GRAPH_TRACE'").fetchall():
        return 0, 0
    return db.execute("select count(*), coalesce(sum(end - start), 0) from "
                      "CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()


def activities_from_rocpd(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kernels, activities, launches = [], [], {}
    for start, end, index, kind, stream, stack, pid, name in db.execute(
            "select start, end, agent_type_index, agent_type, stream_id, stack_id, pid, name "
            "from kernels"):
        kernels.append((start, end, name))
        activities.append(dict(device=index if kind == "GPU" else -1, start=start, end=end,
                               stream=stream, launch=(pid, stack), kind="kernel"))
    for start, end, dst, dst_kind, src, src_kind, stream, stack, pid in db.execute(
            "select start, end, dst_agent_type_index, dst_agent_type, src_agent_type_index, "
            "src_agent_type, stream_id, stack_id, pid from memory_copies"):
        device = dst if dst_kind == "GPU" else src if src_kind == "GPU" else -1
        activities.append(dict(device=device, start=start, end=end,
                               stream=-1 if stream is None else stream, launch=(pid, stack),
                               kind="memcpy"))
    for start, end, stack, pid, name in db.execute(
            "select start, end, stack_id, pid, name from regions where category like 'HIP%'"):
        launches.setdefault((pid, stack), dict(start=start, end=end, api=name))
    return kernels, activities, launches


READ_KINDS = {"kernel_dispatch", "hip_api", "memory_copy", "marker_api"}


def unread_rocprofv3_records(path):
    """Records tracefuse does not read, counted: by kind, and roctx calls that are no range (a
    mark, a thread's name) by their name."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    unread = {}
    for process in doc["rocprofiler-sdk-tool"]:
        kinds = process["strings"]["buffer_records"]
        for kind, records in process["buffer_records"].items():
            if kind not in READ_KINDS and records:
                unread[kind] = unread.get(kind, 0) + len(records)
        for m in process["buffer_records"].get("marker_api", []):
            name = kinds[m["kind"]]["operations"][m["operation"]]
            if "Range" not in name:
                unread[name] = unread.get(name, 0) + 1
    return unread


def activities_from_rocprofv3(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    kernels, activities, launches = [], [], {}
    for process in doc["rocprofiler-sdk-tool"]:
        pid = process["metadata"]["pid"]
        symbols = {s["kernel_id"]: s for s in process["kernel_symbols"]}
        gpus = {a["id"]["handle"]: a["logical_node_type_id"] for a in process["agents"]
                if a["type"] == 2}
        kinds = process["strings"]["buffer_records"]
        records = process["buffer_records"]

        def stream_of(record):
            if "stream_id" in record:
                return record["stream_id"]["handle"]
            return record.get("dispatch_info", {}).get("queue_id", {}).get("handle", -1)

        for k in records.get("kernel_dispatch", []):
            info = k["dispatch_info"]
            symbol = symbols.get(info["kernel_id"], {})
            name = (symbol.get("formatted_kernel_name")
                    or re.sub(r"\.kd$", "", symbol.get("demangled_kernel_name")
                              or symbol.get("kernel_name", "")))
            start, end = k["start_timestamp"], k["end_timestamp"]
            kernels.append((start, end, name))
            activities.append(dict(device=gpus.get(info["agent_id"]["handle"], -1), start=start,
                                   end=end, stream=stream_of(k),
                                   launch=(pid, k["correlation_id"]["internal"]), kind="kernel"))
        for m in records.get("memory_copy", []):
            dst, src = m["dst_agent_id"]["handle"], m["src_agent_id"]["handle"]
            activities.append(dict(device=gpus.get(dst, gpus.get(src, -1)),
                                   start=m["start_timestamp"], end=m["end_timestamp"],
                                   stream=stream_of(m),
                                   launch=(pid, m["correlation_id"]["internal"]), kind="memcpy"))
        for a in records.get("hip_api", []):
            api = kinds[a["kind"]]["operations"][a["operation"]]
            start = a["start_timestamp"]
            end = max(start, a.get("end_timestamp", start))  # without an end: no time
            launches.setdefault((pid, a["correlation_id"]["internal"]),
                                dict(start=start, end=end, api=api))
    return kernels, activities, launches


def union_ns(intervals):
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def nearest_rank(values, q):
    values = sorted(values)
    return values[max(1, math.ceil(q * len(values))) - 1]


def device_figures(acts, launches):
    acts = sorted(acts, key=lambda a: a["start"])
    span_start, span_end = acts[0]["start"], max(a["end"] for a in acts)
    busy = union_ns([(a["start"], a["end"]) for a in acts])
    idle = dict(cpu_wait_ns=0, launch_latency_ns=0, unattributed_ns=0, gaps=0)
    launched_at = {}  # start -> the activities starting then whose launch is in the file
    for a in acts:
        if a["launch"] in launches:
            launched_at.setdefault(a["start"], []).append(a)
    furthest = None
    for a in acts:
        if furthest is not None and a["start"] > furthest:
            g0, g1 = furthest, a["start"]
            starting = launched_at.get(g1, [])
            idle["gaps"] += 1
            if not starting:
                idle["unattributed_ns"] += g1 - g0
            else:
                first = min(starting, key=lambda b: (launches[b["launch"]]["end"], b["launch"][1]))
                e = min(max(launches[first["launch"]]["end"], g0), g1)
                idle["cpu_wait_ns"] += e - g0
                idle["launch_latency_ns"] += g1 - e
        furthest = a["end"] if furthest is None else max(furthest, a["end"])
    by_api, seen = {}, set()
    for a in acts:
        launch = launches.get(a["launch"])
        if launch is None or a["launch"] in seen:
            continue
        seen.add(a["launch"])
        cpu, delay = by_api.setdefault(launch["api"], ([], []))
        cpu.append(launch["end"] - launch["start"])
        delay.append(a["start"] - launch["end"])
    integrity = dict(same_stream_overlaps=0, same_stream_overlap_ns=0, before_launch=0)
    stream_end = {}
    for a in acts:
        if a["stream"] >= 0 and a["end"] > a["start"]:
            earlier = stream_end.get(a["stream"])
            if earlier is not None and a["start"] < earlier:
                integrity["same_stream_overlaps"] += 1
                integrity["same_stream_overlap_ns"] += min(earlier, a["end"]) - a["start"]
            stream_end[a["stream"]] = max(earlier or a["end"], a["end"])
        launch = launches.get(a["launch"])
        if launch is not None and a["start"] < launch["start"]:
            integrity["before_launch"] += 1
    return dict(
        activities=len(acts), span_ns=span_end - span_start, busy_ns=busy,
        memcpy_ns=union_ns([(a["start"], a["end"]) for a in acts if a["kind"] != "kernel"]),
        idle_ns=span_end - span_start - busy, idle=idle, integrity=integrity,
        launches=[dict(api=api, count=len(cpu),
                       cpu_ns=[nearest_rank(cpu, q) for q in (0.5, 0.9, 1.0)],
                       delay_ns=[nearest_rank(delay, q) for q in (0.5, 0.9, 1.0)])
                  for api, (cpu, delay) in sorted(by_api.items())])


def figures(path):
    """What the oracle reads of `path`, in the shape check_vendor_trace.py compares."""
    replays, unread = (0, 0), {}
    with open(path, "rb") as f:
        magic = f.read(16)
    if magic.startswith(b"SQLite format 3"):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        names = {r[0] for r in db.execute("select name from sqlite_master")}
        if "StringIds" in names:
            kernels, activities, launches = activities_from_nsys(path)
            replays = whole_graph_replays(path)
            fmt = "Nsight Systems SQLite"
        else:
            kernels, activities, launches = activities_from_rocpd(path)
            fmt = "rocpd SQLite"
    else:
        kernels, activities, launches = activities_from_rocprofv3(path)
        unread = unread_rocprofv3_records(path)
        fmt = "rocprofv3 JSON"
    by_device = {}
    for a in activities:
        by_device.setdefault(a["device"], []).append(a)
    return dict(
        format=fmt, kernels=len(kernels), kernel_time_ns=sum(e - s for s, e, _ in kernels),
        distinct_kernel_names=len({n for _, _, n in kernels}),
        whole_graph_replays=replays[0], whole_graph_replay_ns=replays[1], unread=unread,
        devices=[dict(device=d, **device_figures(acts, launches))
                 for d, acts in sorted(by_device.items())])


if __name__ == "__main__":
    print(json.dumps(figures(sys.argv[1]), indent=1))
