#!/bin/sh
# Makes the batch directory of the `merge` golden tests (report_golden.merge_*.batch): in WORKDIR,
# where report_golden.setup.* generated amd.json and nvidia.json, `batch/` as `tracefuse batch`
# would leave it for a manifest of six rows: two complete pairs (compare's JSON reports, one of
# them reversed under another rule set, and the GPU timelines `batch` records for them), one
# failed, one interrupted, one still "running", and one with no status file.
#
# usage: merge_golden_setup.sh TRACEFUSE WORKDIR
set -eu
tracefuse=$1
cd "$2"
rm -rf batch
mkdir batch
compare="$tracefuse compare --threads 2 --progress never --format json"
$compare amd.json nvidia.json -o batch/gen.json
$compare nvidia.json amd.json --ruleset wafer-op -o batch/reversed.json
# The complete pairs' GPU timelines, from a batch of their own (whose status files also hold
# what changes from run to run: times, memory, host).
printf 'label\ttrace1\ttrace2\toptions\ngen\tamd.json\tnvidia.json\nreversed\tnvidia.json\tamd.json\t--ruleset wafer-op\n' \
  >timelines.tsv
rm -rf timelines
$tracefuse batch timelines.tsv --all --out timelines --threads 2 >/dev/null
timeline() {
  if [ -f "timelines/$1.status.json" ]; then
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["gpu_timeline"]))' \
      "timelines/$1.status.json"
  else
    echo null
  fi
}
printf 'label\ttrace1\ttrace2\n' >batch/manifest.tsv
task=0
# status LABEL STATE EXIT_CODE ERROR TRACE1 TRACE2 (EXIT_CODE and ERROR as JSON)
status() {
  printf '%s\t%s\t%s\n' "$1" "$5" "$6" >>batch/manifest.tsv
  cat >"batch/$1.status.json" <<JSON
{"label": "$1", "state": "$2", "exit_code": $3, "error": $4, "trace1": "$5", "trace2": "$6",
 "manifest": "batch/manifest.tsv", "task": $task, "reports": [], "elapsed_seconds": 2.5,
 "peak_rss_bytes": 104857600, "bytes_read": 3000000, "gpu_timeline": $(timeline "$1"),
 "host": "node07",
 "slurm": {"job_id": "1234", "array_job_id": "1230", "array_task_id": "$task"},
 "started_at": "2025-06-01T12:00:0${task}Z", "tracefuse_version": "0.1.0"}
JSON
  task=$((task + 1))
}
status gen complete 0 null amd.json nvidia.json
status reversed complete 0 null nvidia.json amd.json
status bad-trace failed 1 '"tracefuse: error: bad.json: truncated JSON: the input ends at byte 90 inside a string"' bad.json nvidia.json
status slow interrupted 143 '"interrupted by SIGTERM after 1048576 bytes of huge.json"' huge.json nvidia.json
status killed running null null amd.json huge.json
printf 'never-ran\tamd.json\tnvidia.json\n' >>batch/manifest.tsv
