#!/usr/bin/env python3
"""kineto_to_vendor.py: the GPU side of a tracefuse-gen trace (`--layout lines`: one event per
line) as an Nsight Systems SQLite export and as a rocprofv3 JSON file, for scripts/bench to time
the importers against the Kineto reader on the same kernels.

Usage: kineto_to_vendor.py TRACE.json NSYS.sqlite ROCPROFV3.json [--grow-to BYTES]

Kernels, memcpy and memset events, runtime calls (cuda_runtime) and user annotations keep their
times (ns), devices, streams, threads and correlation ids; cpu_ops become NVTX ranges named as
torch.autograd.profiler.emit_nvtx() names them ("aten::mm, op_id = 7"), so that `ops` reads them. --grow-to repeats the database's rows, each copy
later in time and with correlation ids of its own, until the file reaches BYTES: a large export
from a small trace, to measure memory on.
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "oracles"))
import make_vendor_traces  # noqa: E402  (the nsys schema, written once)


def ns(us):
    return round(us * 1000)


def events(path):
    with open(path) as f:
        for line in f:
            if line.startswith('  {"ph"'):
                yield json.loads(line.strip().rstrip(","))


def convert(trace, nsys_path, rocprofv3_path):
    if os.path.exists(nsys_path):
        os.remove(nsys_path)
    db = sqlite3.connect(nsys_path)
    db.executescript("""
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
        INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.20.2');
        CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
            cuDevice INTEGER);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 0);
    """)
    make_vendor_traces.nsys_tables(db, modern=True)
    sid = make_vendor_traces.string_ids(db)

    gpid = 1234 << 24
    op_ids = 0

    def thread(event):
        tid = event.get("tid", 0)
        return tid if isinstance(tid, int) else 0
    kernels, copies, sets, calls, ranges = [], [], [], [], []
    symbols, dispatches, hip_calls, rocprof_copies = {}, [], [], []
    operations = ["HIP_RUNTIME_API_NONE"]
    for e in events(trace):
        cat, args = e.get("cat"), e.get("args", {})
        if "dur" not in e:
            continue
        start, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        corr = args.get("correlation")
        if cat == "kernel":
            kernels.append((start, end, args.get("device", 0), args.get("stream", 0), corr, gpid,
                            sid(e["name"]), sid(e["name"][:20])))
            kernel_id = symbols.setdefault(e["name"], len(symbols) + 1)
            dispatches.append({"start_timestamp": start, "end_timestamp": end,
                               "correlation_id": {"internal": corr, "external": 0},
                               "stream_id": {"handle": args.get("stream", 0)},
                               "dispatch_info": {"agent_id": {"handle": 2},
                                                 "queue_id": {"handle": 1},
                                                 "kernel_id": kernel_id}})
        elif cat in ("gpu_memcpy", "gpu_memset"):
            row = (start, end, args.get("device", 0), args.get("stream", 0), corr, gpid)
            (copies if cat == "gpu_memcpy" else sets).append(row)
            rocprof_copies.append({"start_timestamp": start, "end_timestamp": end,
                                   "correlation_id": {"internal": corr},
                                   "stream_id": {"handle": args.get("stream", 0)},
                                   "dst_agent_id": {"handle": 2}, "src_agent_id": {"handle": 1}})
        elif cat == "cuda_runtime" and corr is not None:
            calls.append((start, end, gpid + thread(e), corr, sid(e["name"])))
            if e["name"] not in operations:
                operations.append(e["name"])
            hip_calls.append({"kind": 1, "operation": operations.index(e["name"]),
                              "start_timestamp": start, "end_timestamp": end,
                              "thread_id": thread(e), "correlation_id": {"internal": corr}})
        elif cat == "user_annotation":
            ranges.append((start, end, e["name"], gpid + thread(e)))
        elif cat == "cpu_op":  # as torch.autograd.profiler.emit_nvtx() names it
            op_ids += 1
            ranges.append((start, end, f"{e['name']}, op_id = {op_ids}", gpid + thread(e)))
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                   "streamId, correlationId, globalPid, demangledName, shortName, gridX, gridY, "
                   "gridZ) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 1, 1, 1)", kernels)
    for table, rows, last in (("MEMCPY", copies, "bytes, copyKind) VALUES (?, ?, ?, 1, ?, ?, ?, "
                                                 "4096, 1)"),
                              ("MEMSET", sets, "value, bytes) VALUES (?, ?, ?, 1, ?, ?, ?, 0, "
                                               "4096)")):
        db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_{table} (start, end, deviceId, "
                       f"contextId, streamId, correlationId, globalPid, {last}", rows)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
                   "correlationId, nameId, returnValue) VALUES (?, ?, 0, ?, ?, ?, 0)", calls)
    db.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                   "VALUES (?, ?, 59, ?, ?, 0)", ranges)
    # roctx ranges: correlation ids of their own, above every call's.
    first_marker = 1 + max((c[3] for c in calls), default=0)
    markers = [{"kind": 2, "operation": 1, "start_timestamp": start, "end_timestamp": end,
                "thread_id": tid - gpid, "correlation_id": {"internal": first_marker + i}}
               for i, (start, end, _text, tid) in enumerate(ranges)]
    marker_texts = [{"key": first_marker + i, "value": text}
                    for i, (_start, _end, text, _tid) in enumerate(ranges)]
    db.commit()
    db.close()
    doc = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 1234},
        "agents": [{"id": {"handle": 1}, "type": 1, "logical_node_type_id": 0,
                    "product_name": "AMD EPYC"},
                   {"id": {"handle": 2}, "type": 2, "logical_node_type_id": 0,
                    "product_name": "AMD Instinct MI300X"}],
        "strings": {"buffer_records": [{"kind": "NONE", "operations": []},
                                       {"kind": "HIP_RUNTIME_API", "operations": operations},
                                       {"kind": "MARKER_CORE_API",
                                        "operations": ["NONE", "roctxRangePushA"]}],
                    "marker_api": marker_texts},
        "kernel_symbols": [{"kernel_id": i, "formatted_kernel_name": n}
                           for n, i in symbols.items()],
        "buffer_records": {"kernel_dispatch": dispatches, "hip_api": hip_calls,
                           "memory_copy": rocprof_copies, "marker_api": markers}}]}
    with open(rocprofv3_path, "w") as f:
        json.dump(doc, f)


def grow(nsys_path, target_bytes):
    """Doubles the database's rows, the copy later in time than every row and with correlation
    ids of its own, until it holds target_bytes."""
    db = sqlite3.connect(nsys_path)
    db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
    tables = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
              "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME"]
    while os.path.getsize(nsys_path) < target_bytes:
        span, top = db.execute("SELECT MAX(end) - MIN(start) + 1000, MAX(correlationId) + 1 "
                               "FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        for table in tables:
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            shifted = ", ".join(
                f"{c} + {span}" if c in ("start", "end") else
                f"{c} + {top}" if c == "correlationId" else c for c in columns)
            db.execute(f"INSERT INTO {table} SELECT {shifted} FROM {table}")
        db.commit()
    db.close()


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    convert(argv[1], argv[2], argv[3])
    if "--grow-to" in argv:
        grow(argv[2], int(argv[argv.index("--grow-to") + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
