#!/usr/bin/env python3
"""make_vendor_traces.py: small profiler files of the schemas that ../shared has no sample of,
written from the vendors' documented schemas, for the importers' tests.

Usage: make_vendor_traces.py OUTDIR

Writes, from one seeded simulation of processes launching kernels, copies and sets on several
GPUs and streams (with overlaps on a stream, calls without activities, activities without calls,
and synchronous copies inside their call):
  nsys_2021.sqlite         an Nsight Systems export before the metadata table (2021): no
                           mangledName, TARGET_INFO_GPU without cuDevice, no eventClass column;
                           its GPU rows in no order (the others are in start order per process)
  nsys_2025_multi.sqlite   schema 3.x: META_DATA_EXPORT, ENUM tables, two processes on two GPUs
                           whose nsys ids are not their CUDA ordinals (TARGET_INFO_CUDA_DEVICE),
                           --cudabacktrace twins (eventClass 67), NVTX steps, memsets
  nsys_2025_graph.sqlite   --cuda-graph-trace=graph: graph replays in GRAPH_TRACE, their kernels
                           absent
  rocpd_multi.db           a rocpd database, schema 3 (ROCm 7), with its suffixed tables and
                           views, two GPUs
  rocprofv3_multi.json.gz  rocprofv3 JSON: two processes, HIP calls, copies, roctx ranges
  nsys_2025_blocks.sqlite  as nsys_2025_multi, three processes of about 5,000 kernels each: a
  rocpd_blocks.db          table's runs and a view's sorted rows are read in several blocks
                           (TablesByStart reads 4,096 rows a block)
"""
import gzip
import json
import os
import random
import sqlite3
import sys

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "triton_poi_fused_add_mul_0",
]


def simulate(seed, processes=2, devices=2, steps=3, launches_per_step=40):
    """Per process: launches {api, start, end, corr, tid}, activities {kind, start, end,
    device, stream, corr, name} and ranges {text, start, end}, in ns."""
    rng = random.Random(seed)
    result = []
    for p in range(processes):
        t = 1_000_000_000 + p * 777
        stream_free = {}
        launches, activities, ranges = [], [], []
        corr = 1
        device = p % devices
        for step in range(steps):
            step_start = t
            for _ in range(launches_per_step):
                t += rng.randint(200, 40_000)
                kind = rng.choices(["kernel", "memcpy", "memset"], [8, 1, 1])[0]
                api = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync",
                       "memset": "cudaMemsetAsync"}[kind]
                if kind == "memcpy" and rng.random() < 0.3:
                    api = "cudaMemcpy"  # synchronous: the copy runs inside the call
                cpu = rng.randint(2_000, 9_000)
                stream = rng.choice([7, 13])
                begin = max(stream_free.get((device, stream), 0), t + cpu + rng.randint(500, 3000))
                if api == "cudaMemcpy":
                    begin = t + cpu // 3
                if rng.random() < 0.05:  # overlaps the stream's previous activity
                    begin = max(t + 1, stream_free.get((device, stream), begin) - 700)
                dur = rng.randint(1_000, 60_000)
                end_call = begin + dur + 500 if api == "cudaMemcpy" else t + cpu
                if rng.random() > 0.03:  # a few activities without their call
                    launches.append(dict(api=api, start=t, end=end_call, corr=corr, tid=p * 10 + 1))
                if rng.random() > 0.02:  # a few calls without activities
                    activities.append(dict(kind=kind, start=begin, end=begin + dur, device=device,
                                           stream=stream, corr=corr,
                                           name=rng.choice(KERNELS) if kind == "kernel" else ""))
                    stream_free[(device, stream)] = max(stream_free.get((device, stream), 0),
                                                        begin + dur)
                corr += 1
                t = end_call
            ranges.append(dict(text=f"ProfilerStep#{step}", start=step_start, end=t + 100))
            ranges.append(dict(text=f"aten::linear, seq = {step}, op_id = {step}",
                               start=step_start + 10, end=t))
        result.append(dict(pid=4000 + p, launches=launches, activities=activities,
                           ranges=ranges))
    return result


# --- Nsight Systems ------------------------------------------------------------------------

def nsys_tables(db, modern):
    extra_kernel = ", mangledName INTEGER" if modern else ""
    extra_kernel += ", greenContextId INTEGER, graphId INTEGER" if modern else ""
    db.executescript(f"""
        CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
            shortName INTEGER NOT NULL{extra_kernel}, gridX INTEGER NOT NULL,
            gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
            copyKind INTEGER NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
            bytes INTEGER NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
            endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
    """)
    db.execute(f"""CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL,
        end INTEGER NOT NULL, {'eventClass INTEGER NOT NULL,' if modern else ''}
        globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""")


def string_ids(db):
    """The function that gives a text its id in an nsys export's StringIds, adding it there the
    first time."""
    strings = {}

    def sid(text):
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]
    return sid


def write_nsys(path, processes, modern, graph=False):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    nsys_tables(db, modern)
    sid = string_ids(db)

    # nsys numbers the GPUs its own way: id 0 is CUDA device 1 and id 1 CUDA device 0.
    gpu_id_of_ordinal = {0: 1, 1: 0} if modern else {0: 0, 1: 1}
    if modern:
        db.executescript("""
            CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
            INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.20.2');
            CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
            INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME',
                'CUDA Runtime API');
            INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER',
                'CUDA Driver API');
            INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (67, 'TRACE_PROCESS_EVENT_CUDABACKTRACE',
                'CUDA Backtrace');
            CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
                busLocation TEXT, cuDevice INTEGER);
            CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL,
                pid INTEGER NOT NULL);
        """)
        for ordinal, gpu in gpu_id_of_ordinal.items():
            db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 'NVIDIA H100 80GB HBM3', ?, ?)",
                       (gpu, f"0000:0{gpu}:00.0", ordinal))
            for p in processes:
                db.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, ?)",
                           (gpu, ordinal, p["pid"]))
        # A GPU of the node that no process used: no CUDA ordinal in TARGET_INFO_CUDA_DEVICE.
        db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 7, 'NVIDIA H100 80GB HBM3', "
                   "'0000:07:00.0', 7)")
    else:
        db.execute("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, "
                   "name TEXT)")
        for gpu in gpu_id_of_ordinal.values():
            db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 'NVIDIA A100-SXM4-40GB')",
                       (gpu,))
    if graph:
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL,
            end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
            greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
            globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)""")
    for p in processes:
        gpid = (p["pid"] << 24)
        gtid = gpid + p["pid"]
        versions = {"cudaLaunchKernel": "_v7000", "cudaMemcpyAsync": "_v3020",
                    "cudaMemcpy": "_v3020", "cudaMemsetAsync": "_v3020",
                    "cudaGraphLaunch": "_v10000"}
        replayed = set()
        activities = list(p["activities"])
        if not modern:  # rows in no order: read sorted by SQLite, not run by run
            random.Random(7).shuffle(activities)
        for a in activities:
            device = gpu_id_of_ordinal[a["device"]]
            if graph and a["kind"] == "kernel" and a["corr"] % 4 == 0:
                # One replay of a graph of this kernel and what it stands for; its kernels are
                # not in the file.
                replayed.add(a["corr"])
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES "
                           "(?, ?, ?, 1, NULL, ?, ?, ?, 5, 9)",
                           (a["start"], a["end"], device, a["stream"], a["corr"], gpid))
            elif a["kind"] == "kernel":
                name = sid(a["name"])
                extra = [None, None, None] if modern else []
                db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
                           f"(?, ?, ?, 1, ?, ?, ?, ?, ?{', ?' * len(extra)}, 64, 1, 1)",
                           [a["start"], a["end"], device, a["stream"], a["corr"], gpid, name,
                            sid(a["name"][:12])] + extra)
            elif a["kind"] == "memcpy":
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, ?, ?, ?, "
                           "4096, 1)", (a["start"], a["end"], device, a["stream"], a["corr"], gpid))
            else:
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, 1, ?, ?, ?, "
                           "0, 4096)", (a["start"], a["end"], device, a["stream"], a["corr"], gpid))
        for call in p["launches"]:
            api = "cudaGraphLaunch" if call["corr"] in replayed else call["api"]
            name = api + versions[api] if modern else api
            row = [call["start"], call["end"]] + ([0] if modern else [])
            row += [gtid, call["corr"], sid(name), 0, None]
            db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "
                       f"({', '.join('?' * len(row))})", row)
            if modern and call["corr"] % 3 == 0:  # its --cudabacktrace twin, enclosing it
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 67, ?, ?, ?, "
                           "0, 1)", (call["start"] - 250, call["end"] + 180, gtid, call["corr"],
                                     sid(api)))
        for i, r in enumerate(p["ranges"]):
            text, text_id = (r["text"], None) if i % 2 else (None, sid(r["text"]))
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, NULL, NULL, ?, ?, NULL, ?, "
                       "0)", (r["start"], r["end"], text, gtid, text_id))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, NULL, 34, NULL, NULL, NULL, 'a mark', ?, "
                   "NULL, NULL, 0)", (p["ranges"][0]["start"] + 5, gtid))
    db.commit()
    db.close()


# --- rocpd ---------------------------------------------------------------------------------

ROCPD_UUID = "_0198a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b"
ROCPD_GUID = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def write_rocpd(path, processes):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    u, g = ROCPD_UUID, ROCPD_GUID
    db.executescript(f"""
    CREATE TABLE "rocpd_metadata{u}" ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "tag" TEXT NOT NULL, "value" TEXT NOT NULL);
    CREATE TABLE `rocpd_string{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "string" TEXT NOT NULL UNIQUE ON CONFLICT ABORT);
    CREATE TABLE `rocpd_info_process{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "ppid" INTEGER,
        "pid" INTEGER NOT NULL, "init" BIGINT, "fini" BIGINT, "start" BIGINT, "end" BIGINT,
        "command" TEXT, "environment" JSONB DEFAULT "{{}}" NOT NULL,
        "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_info_thread{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "ppid" INTEGER,
        "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL, "name" TEXT, "start" BIGINT,
        "end" BIGINT, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_info_agent{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "type" TEXT CHECK ("type" IN ('CPU', 'GPU')), "absolute_index" INTEGER,
        "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT,
        "model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT,
        "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_info_queue{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "name" TEXT, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_info_stream{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "name" TEXT, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_info_kernel_symbol{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "code_object_id" INTEGER NOT NULL, "kernel_name" TEXT, "display_name" TEXT,
        "kernel_object" INTEGER, "kernarg_segment_size" INTEGER,
        "kernarg_segment_alignment" INTEGER, "group_segment_size" INTEGER,
        "private_segment_size" INTEGER, "sgpr_count" INTEGER, "arch_vgpr_count" INTEGER,
        "accum_vgpr_count" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_event{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "category_id" INTEGER, "stack_id" INTEGER,
        "parent_stack_id" INTEGER, "correlation_id" INTEGER,
        "call_stack" JSONB DEFAULT "{{}}" NOT NULL, "line_info" JSONB DEFAULT "{{}}" NOT NULL,
        "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_region{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "tid" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL,
        "name_id" INTEGER NOT NULL, "event_id" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_kernel_dispatch{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "tid" INTEGER, "agent_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL,
        "dispatch_id" INTEGER NOT NULL, "queue_id" INTEGER NOT NULL,
        "stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL,
        "private_segment_size" INTEGER, "group_segment_size" INTEGER,
        "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL,
        "workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL,
        "grid_size_y" INTEGER NOT NULL, "grid_size_z" INTEGER NOT NULL,
        "region_name_id" INTEGER, "event_id" INTEGER, "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE `rocpd_memory_copy{u}` ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        "guid" TEXT DEFAULT "{g}" NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "tid" INTEGER, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL,
        "name_id" INTEGER NOT NULL, "dst_agent_id" INTEGER, "dst_address" INTEGER,
        "src_agent_id" INTEGER, "src_address" INTEGER, "size" INTEGER NOT NULL,
        "queue_id" INTEGER, "stream_id" INTEGER, "region_name_id" INTEGER, "event_id" INTEGER,
        "extdata" JSONB DEFAULT "{{}}" NOT NULL);
    """)
    for t in ["metadata", "string", "info_process", "info_thread", "info_agent", "info_queue",
              "info_stream", "info_kernel_symbol", "event", "region", "kernel_dispatch",
              "memory_copy"]:
        db.execute(f"CREATE VIEW `rocpd_{t}` AS SELECT * FROM `rocpd_{t}{u}`")
    # data_views.sql (ROCm 7.0): kernels and regions as written; memory_copies with the columns
    # the importer reads.
    db.executescript("""
    CREATE VIEW `kernels` AS
    SELECT K.id, K.guid, T.tid,
        (SELECT string FROM `rocpd_string` RS WHERE RS.id = E.category_id AND RS.guid = E.guid)
            AS category,
        R.string AS region, S.display_name AS name, K.nid, P.pid,
        A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
        A.type_index AS agent_type_index, A.type AS agent_type,
        S.code_object_id AS code_object_id, K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id,
        Q.name AS queue, ST.name AS stream, K.start, K.end, (K.end - K.start) AS duration,
        K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
        K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
        K.workgroup_size_z AS workgroup_z, K.group_segment_size AS lds_size,
        K.private_segment_size AS scratch_size, S.group_segment_size AS static_lds_size,
        S.private_segment_size AS static_scratch_size, E.stack_id, E.parent_stack_id,
        E.correlation_id AS corr_id
    FROM `rocpd_kernel_dispatch` K
        INNER JOIN `rocpd_info_agent` A ON A.id = K.agent_id AND A.guid = K.guid
        INNER JOIN `rocpd_event` E ON E.id = K.event_id AND E.guid = K.guid
        INNER JOIN `rocpd_string` R ON R.id = K.region_name_id AND R.guid = K.guid
        INNER JOIN `rocpd_info_kernel_symbol` S ON S.id = K.kernel_id AND S.guid = K.guid
        LEFT JOIN `rocpd_info_stream` ST ON ST.id = K.stream_id AND ST.guid = K.guid
        LEFT JOIN `rocpd_info_queue` Q ON Q.id = K.queue_id AND Q.guid = K.guid
        INNER JOIN `rocpd_info_process` P ON P.id = Q.pid AND P.guid = Q.guid
        INNER JOIN `rocpd_info_thread` T ON T.id = K.tid AND T.guid = K.guid;
    CREATE VIEW `regions` AS
    SELECT R.id, R.guid,
        (SELECT string FROM `rocpd_string` RS WHERE RS.id = E.category_id AND RS.guid = E.guid)
            AS category,
        S.string AS name, R.nid, P.pid, T.tid, R.start, R.end, (R.end - R.start) AS duration,
        R.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata,
        E.call_stack, E.line_info
    FROM `rocpd_region` R
        INNER JOIN `rocpd_event` E ON E.id = R.event_id AND E.guid = R.guid
        INNER JOIN `rocpd_string` S ON S.id = R.name_id AND S.guid = R.guid
        INNER JOIN `rocpd_info_process` P ON P.id = R.pid AND P.guid = R.guid
        INNER JOIN `rocpd_info_thread` T ON T.id = R.tid AND T.guid = R.guid;
    CREATE VIEW `memory_copies` AS
    SELECT M.id, M.guid, 'MEMORY_COPY' AS category, M.nid, P.pid, T.tid, M.start, M.end,
        (M.end - M.start) AS duration, S.string AS name, M.stream_id, M.queue_id,
        M.size, DA.name AS dst_device, DA.absolute_index AS dst_agent_abs_index,
        DA.type_index AS dst_agent_type_index, DA.type AS dst_agent_type,
        SA.name AS src_device, SA.absolute_index AS src_agent_abs_index,
        SA.type_index AS src_agent_type_index, SA.type AS src_agent_type,
        E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
    FROM `rocpd_memory_copy` M
        INNER JOIN `rocpd_info_agent` DA ON DA.id = M.dst_agent_id AND DA.guid = M.guid
        INNER JOIN `rocpd_info_agent` SA ON SA.id = M.src_agent_id AND SA.guid = M.guid
        INNER JOIN `rocpd_event` E ON E.id = M.event_id AND E.guid = M.guid
        INNER JOIN `rocpd_string` S ON S.id = M.name_id AND S.guid = M.guid
        INNER JOIN `rocpd_info_process` P ON P.id = M.pid AND P.guid = M.guid
        INNER JOIN `rocpd_info_thread` T ON T.id = M.tid AND T.guid = M.guid;
    """)
    strings = {}

    def sid(text):
        if text not in strings:
            cur = db.execute(f"INSERT INTO `rocpd_string{u}` (string) VALUES (?)", (text,))
            strings[text] = cur.lastrowid
        return strings[text]

    sid("")
    db.execute(f"INSERT INTO `rocpd_metadata{u}` (tag, value) VALUES ('schema_version', '3')")
    db.execute(f"INSERT INTO `rocpd_metadata{u}` (tag, value) VALUES ('uuid', '{u}')")
    db.execute(f"INSERT INTO `rocpd_info_agent{u}` (id, nid, pid, type, absolute_index, "
               "logical_index, type_index, name, product_name) VALUES (0, 1, 0, 'CPU', 0, 0, 0, "
               "'AMD EPYC', 'AMD EPYC 9575F')")
    for index in range(2):  # KFD nodes 2 and 3: GPUs 0 and 1
        db.execute(f"INSERT INTO `rocpd_info_agent{u}` (id, nid, pid, type, absolute_index, "
                   "logical_index, type_index, name, product_name) VALUES (?, 1, 0, 'GPU', ?, ?, "
                   "?, 'gfx942', 'AMD Instinct MI300X')", (index + 2, index + 2, index + 1, index))
    symbols = {}
    event_id = 0
    hip = {"cudaLaunchKernel": "hipLaunchKernel", "cudaMemcpyAsync": "hipMemcpyAsync",
           "cudaMemcpy": "hipMemcpy", "cudaMemsetAsync": "hipMemsetAsync"}

    def event(category, stack, extdata="{}"):
        nonlocal event_id
        event_id += 1
        db.execute(f"INSERT INTO `rocpd_event{u}` (id, category_id, stack_id, parent_stack_id, "
                   "correlation_id, extdata) VALUES (?, ?, ?, 0, 0, ?)",
                   (event_id, sid(category), stack, extdata))
        return event_id

    for p in processes:
        pid, tid = p["pid"], p["pid"] + 1
        db.execute(f"INSERT INTO `rocpd_info_process{u}` (id, nid, pid) VALUES (?, 1, ?)",
                   (pid, pid))
        db.execute(f"INSERT INTO `rocpd_info_thread{u}` (id, nid, pid, tid) VALUES (?, 1, ?, ?)",
                   (tid, pid, tid))
        for stream in (7, 13):
            db.execute(f"INSERT OR IGNORE INTO `rocpd_info_queue{u}` (id, nid, pid, name) "
                       "VALUES (?, 1, ?, ?)", (stream + 100 * pid, pid, f"Queue {stream}"))
            db.execute(f"INSERT OR IGNORE INTO `rocpd_info_stream{u}` (id, nid, pid, name) "
                       "VALUES (?, 1, ?, ?)", (stream + 100 * pid, pid, f"Stream {stream}"))
        for call in p["launches"]:
            e = event("HIP_RUNTIME_API_EXT", call["corr"])
            db.execute(f"INSERT INTO `rocpd_region{u}` (nid, pid, tid, start, end, name_id, "
                       "event_id) VALUES (1, ?, ?, ?, ?, ?, ?)",
                       (pid, tid, call["start"], call["end"], sid(hip[call["api"]]), e))
        for a in p["activities"]:
            e = event("KERNEL_DISPATCH" if a["kind"] == "kernel" else "MEMORY_COPY", a["corr"])
            stream = a["stream"] + 100 * pid
            if a["kind"] == "kernel":
                if a["name"] not in symbols:
                    symbols[a["name"]] = len(symbols) + 1
                    db.execute(f"INSERT INTO `rocpd_info_kernel_symbol{u}` (id, nid, pid, "
                               "code_object_id, kernel_name, display_name) VALUES "
                               "(?, 1, ?, 1, ?, ?)", (symbols[a["name"]], pid,
                                                      "_Z" + a["name"][:8] + ".kd", a["name"]))
                db.execute(f"INSERT INTO `rocpd_kernel_dispatch{u}` (nid, pid, tid, agent_id, "
                           "kernel_id, dispatch_id, queue_id, stream_id, start, end, "
                           "workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, "
                           "grid_size_y, grid_size_z, region_name_id, event_id) VALUES "
                           "(1, ?, ?, ?, ?, ?, ?, ?, ?, ?, 256, 1, 1, 65536, 1, 1, ?, ?)",
                           (pid, tid, a["device"] + 2, symbols[a["name"]], a["corr"], stream,
                            stream, a["start"], a["end"], sid(""), e))
            else:  # copies, and sets as the device-to-device copies HIP makes of them
                host_to_device = a["kind"] == "memcpy"
                db.execute(f"INSERT INTO `rocpd_memory_copy{u}` (nid, pid, tid, start, end, "
                           "name_id, dst_agent_id, src_agent_id, size, queue_id, stream_id, "
                           "event_id) VALUES (1, ?, ?, ?, ?, ?, ?, ?, 4096, ?, ?, ?)",
                           (pid, tid, a["start"], a["end"], sid("MEMORY_COPY_HOST_TO_DEVICE"),
                            a["device"] + 2, 0 if host_to_device else a["device"] + 2, stream,
                            stream, e))
        for i, r in enumerate(p["ranges"]):
            e = event("MARKER_CORE_RANGE_API", 90_000 + i,
                      json.dumps({"message": r["text"]}))
            db.execute(f"INSERT INTO `rocpd_region{u}` (nid, pid, tid, start, end, name_id, "
                       "event_id) VALUES (1, ?, ?, ?, ?, ?, ?)",
                       (pid, tid, r["start"], r["end"], sid("roctxThreadRangeA"), e))
    db.commit()
    db.close()


# --- rocprofv3 JSON ------------------------------------------------------------------------

def write_rocprofv3(path, processes):
    operations = {11: ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE",
                       "KERNEL_DISPATCH_COMPLETE"],
                  3: ["HIP_RUNTIME_API_NONE", "hipLaunchKernel", "hipMemcpyAsync", "hipMemcpy",
                      "hipMemsetAsync"],
                  6: ["MARKER_CORE_API_NONE", "roctxRangePushA", "roctxMarkA"],
                  12: ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_DEVICE"]}
    kinds = [{"kind": f"KIND_{i}", "operations": operations.get(i, [])} for i in range(13)]
    op = {"cudaLaunchKernel": 1, "cudaMemcpyAsync": 2, "cudaMemcpy": 3, "cudaMemsetAsync": 4}
    doc = {"rocprofiler-sdk-tool": []}
    for p in processes:
        agents = [{"id": {"handle": 500}, "type": 1, "logical_node_type_id": 0,
                   "product_name": "AMD EPYC 9575F"}]
        agents += [{"id": {"handle": 501 + i}, "type": 2, "logical_node_type_id": i,
                    "name": "gfx950", "product_name": "AMD Instinct MI355X"} for i in range(2)]
        symbols, dispatches, copies = {}, [], []
        for a in p["activities"]:
            record = {"start_timestamp": a["start"], "end_timestamp": a["end"],
                      "correlation_id": {"internal": a["corr"], "external": 0},
                      "stream_id": {"handle": a["stream"]}, "thread_id": p["pid"]}
            if a["kind"] == "kernel":
                if a["name"] not in symbols:
                    symbols[a["name"]] = len(symbols) + 1
                record.update(kind=11, operation=2, dispatch_info={
                    "agent_id": {"handle": 501 + a["device"]}, "queue_id": {"handle": 3},
                    "kernel_id": symbols[a["name"]], "grid_size": {"x": 65536, "y": 1, "z": 1}})
                dispatches.append(record)
            else:
                host_to_device = a["kind"] == "memcpy"
                gpu, cpu = {"handle": 501 + a["device"]}, {"handle": 500}
                # Every other copy of a second process back to the host: the GPU is the source.
                to_host = host_to_device and p["pid"] % 2 == 1 and a["corr"] % 2 == 1
                record.update(kind=12, operation=1, bytes=4096,
                              dst_agent_id=cpu if to_host else gpu,
                              src_agent_id=gpu if to_host or not host_to_device else cpu)
                copies.append(record)
        calls = [{"kind": 3, "operation": op[c["api"]], "start_timestamp": c["start"],
                  "end_timestamp": c["end"], "thread_id": c["tid"],
                  "correlation_id": {"internal": c["corr"], "external": 0}}
                 for c in p["launches"]]
        del calls[5]["end_timestamp"]  # a call without its end: it takes no time
        markers = [{"kind": 6, "operation": 1, "start_timestamp": r["start"],
                    "end_timestamp": r["end"], "correlation_id": {"internal": 90_000 + i}}
                   for i, r in enumerate(p["ranges"])]
        # A mark (no range): counted by its name, not read.
        markers.append({"kind": 6, "operation": 2, "start_timestamp": p["ranges"][0]["start"],
                        "end_timestamp": p["ranges"][0]["start"],
                        "correlation_id": {"internal": 99_999}})
        doc["rocprofiler-sdk-tool"].append({
            "metadata": {"pid": p["pid"]},
            "agents": agents,
            "strings": {"buffer_records": kinds,
                        # the value before the key in every other entry: any order is JSON's
                        "marker_api": [{"key": 90_000 + i, "value": r["text"]} if i % 2 else
                                       {"value": r["text"], "key": 90_000 + i}
                                       for i, r in enumerate(p["ranges"])]},
            "kernel_symbols": [{"kernel_id": i, "kernel_name": "_Z" + n[:8] + ".kd",
                                "formatted_kernel_name": n, "demangled_kernel_name": n + ".kd"}
                               for n, i in symbols.items()],
            # Completion order, as rocprofv3 writes them: by end.
            "buffer_records": {"kernel_dispatch": sorted(dispatches,
                                                         key=lambda r: r["end_timestamp"]),
                               "hip_api": calls, "memory_copy": copies, "marker_api": markers,
                               # kinds tracefuse does not read: counted
                               "hsa_api": [{"kind": 1, "operation": 2}] * (3 + p["pid"] % 2),
                               "scratch_memory": []},
        })
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    processes = simulate(seed=51)
    single = simulate(seed=2021, processes=1, devices=1)
    write_nsys(os.path.join(outdir, "nsys_2021.sqlite"), single, modern=False)
    write_nsys(os.path.join(outdir, "nsys_2025_multi.sqlite"), processes, modern=True)
    write_nsys(os.path.join(outdir, "nsys_2025_graph.sqlite"), single, modern=True, graph=True)
    write_rocpd(os.path.join(outdir, "rocpd_multi.db"), processes)
    write_rocprofv3(os.path.join(outdir, "rocprofv3_multi.json.gz"), processes)
    large = simulate(seed=4096, processes=3, steps=4, launches_per_step=1500)
    write_nsys(os.path.join(outdir, "nsys_2025_blocks.sqlite"), large, modern=True)
    write_rocpd(os.path.join(outdir, "rocpd_blocks.db"), large)


if __name__ == "__main__":
    main(sys.argv[1])
