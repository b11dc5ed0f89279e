#!/usr/bin/env bash
# tracefuse on a real single-node Slurm cluster (tests/slurm/cluster.sh): a manifest of 6 pairs
# submitted with the scripts/slurm/submit of an install prefix (`cmake --install`), as a user
# of a site's installation would, TRACEFUSE unset and no tracefuse on PATH. The pairs: two
# generated ones (one gzip), two real pairs from ../shared (generated ones when it is absent), a
# malformed trace, and one whose first trace is a FIFO that never ends, so that the job's time
# limit stops it. Checks:
#   - the 4 good pairs' reports equal what `tracefuse compare` writes for them, and what
#     `tracefuse batch --all` writes (byte for byte, apart from the timing lines);
#   - the malformed pair's status has its error line and exit code 1;
#   - the stopped pair's status is `interrupted` (exit 143), with no report nor temporary file;
#   - the merge job's summary counts 4 complete pairs and 2 problems, and exits 1 for them.
# Beside it, `submit --rows-per-task 2` of 7 rows (the same pairs, and one after a second endless
# pair): an array of 4 tasks, each running its rows one after another in one process (one pid in
# the statuses of a task's rows, another in each task's); the reports equal the first array's;
# the time limit stops the endless pair of task 2, and the row after it is left without a status
# (the merge counts it missing).
#   compare_array_test.sh TRACEFUSE TRACEFUSE_GEN SHARED_DIR
# Exits 0/1, or 77 (skip, with the reason) where Slurm's daemons cannot start; with
# TRACEFUSE_SLURM_REQUIRED=1 that is a failure instead. Takes about 40 to 70 s: the time-limit
# warning comes at one of slurmctld's checks, every 30 s from its start.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
submit=$here/../../scripts/slurm/submit
tracefuse=$(realpath "$1")
gen=$(realpath "$2")
shared=$3
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
# shellcheck source=tests/slurm/test_lib.sh
source "$here/test_lib.sh"

slurm_test_begin compare_array_test
fifo_writers=()
SLURM_TEST_ON_EXIT='[ ${#fifo_writers[@]} -eq 0 ] || kill "${fifo_writers[@]}" 2>/dev/null'

# The pairs. Paths are absolute, so `tracefuse compare` sees the same ones as `batch`.
t=$dir/traces
mkdir -p "$t"
"$gen" --platform amd --steps 30 --seed 1 -o "$t/amd1.json"
"$gen" --platform nvidia --steps 30 --seed 2 -o "$t/nv1.json"
"$gen" --platform amd --steps 50 --seed 3 -o - | gzip >"$t/amd2.json.gz"
"$gen" --platform nvidia --steps 50 --seed 4 -o - | gzip >"$t/nv2.json.gz"
real=$shared/traces/real
if [ -d "$real" ]; then
  bert=("$real/tl_mi300_bert_small.json.gz" "$real/tl_h100_bert_small.json.gz")
  falcon=("$real/tl_mi300_falconsai_nsfw.json.gz" "$real/tl_h100_falconsai_nsfw.json.gz")
else
  echo "compare_array_test: $shared absent: generated traces stand in for the real pairs"
  for s in 5 6 7 8; do "$gen" --platform amd --steps 20 --seed $s -o "$t/g$s.json"; done
  bert=("$t/g5.json" "$t/g6.json")
  falcon=("$t/g7.json" "$t/g8.json")
fi
head -c 30000 "$t/amd1.json" >"$t/truncated.json"
mkfifo "$t/endless.json" "$t/endless2.json"
{
  printf 'label\ttrace1\ttrace2\n'
  printf 'gen_plain\t%s\t%s\n' "$t/amd1.json" "$t/nv1.json"
  printf 'gen_gzip\t%s\t%s\n' "$t/amd2.json.gz" "$t/nv2.json.gz"
  printf 'real_bert\t%s\t%s\n' "${bert[@]}"
  printf 'real_falconsai\t%s\t%s\n' "${falcon[@]}"
  printf 'malformed\t%s\t%s\n' "$t/truncated.json" "$t/nv1.json"
} >"$dir/finite.tsv"
{
  cat "$dir/finite.tsv"
  printf 'endless\t%s\t%s\n' "$t/endless.json" "$t/nv1.json"
} >"$dir/manifest.tsv"
good=(gen_plain gen_gzip real_bert real_falconsai)
# Two rows per array task: tasks 0 and 1 the good pairs, task 2 the endless pair and the row
# after it, task 3 the malformed one alone.
{
  grep -v -P '^malformed\t' "$dir/finite.tsv"
  printf 'endless2\t%s\t%s\n' "$t/endless2.json" "$t/nv1.json"
  printf 'after_endless\t%s\t%s\n' "$t/amd1.json" "$t/nv1.json"
  grep -P '^malformed\t' "$dir/finite.tsv"
} >"$dir/rows.tsv"

# The same manifest without the endless pair, run without Slurm.
rc=0
"$tracefuse" batch "$dir/finite.tsv" --out "$dir/local" --all --threads 1 2>"$dir/local.err" || rc=$?
[ "$rc" -eq 1 ] || fail "batch --all exited $rc, not 1 (the malformed pair): $(cat "$dir/local.err")"

SLURM_CLUSTER_CPUS=6 slurm_test_start_cluster

# The FIFO's writer sends the trace's first 20 kB, then waits: the reader blocks in read(). The
# wait is exec'd, so that $! is the sleep itself: killed at the end, it leaves no process holding
# ctest's output open.
for fifo in endless endless2; do
  {
    head -c 20000 "$t/amd1.json"
    exec sleep 600
  } >"$t/$fifo.json" &
  fifo_writers+=($!)
done

# As a site deploys it: installed into a prefix, whose scripts find the tracefuse installed with
# them (no TRACEFUSE, no PATH).
prefix=$dir/prefix
cmake --install "$(dirname "$tracefuse")" --prefix "$prefix" >"$dir/install.log" ||
  { fail "cmake --install failed: $(cat "$dir/install.log")"; exit 1; }
submit=$prefix/share/tracefuse/slurm/submit
unset TRACEFUSE
cd "$dir/jobs" # job logs land in the submitting directory
# --time=1, the shortest limit: the batch script's TERM@60 warning comes at slurmctld's first
# time-limit check; the other pairs take a second or two.
ids=$("$submit" "$dir/manifest.tsv" "$dir/out" --cpus-per-task=1 --mem=1G --time=1) || exit 1
array=$(sed -n 's/^array job: \([0-9]*\)$/\1/p' <<<"$ids")
merge=$(sed -n 's/^merge job: \([0-9]*\)$/\1/p' <<<"$ids")
[ -n "$array" ] && [ -n "$merge" ] || { fail "submit printed '$ids'"; exit 1; }
ids=$("$submit" --rows-per-task 2 "$dir/rows.tsv" "$dir/out_rows" --cpus-per-task=1 --mem=1G \
  --time=1) || exit 1
rows_array=$(sed -n 's/^array job: \([0-9]*\)$/\1/p' <<<"$ids")
rows_merge=$(sed -n 's/^merge job: \([0-9]*\)$/\1/p' <<<"$ids")
[ -n "$rows_array" ] && [ -n "$rows_merge" ] || { fail "submit --rows-per-task printed '$ids'"; exit 1; }
slurm_wait_jobs 150 "$array" "$merge" "$rows_array" "$rows_merge" || exit 1
echo "compare_array_test: jobs finished after $((SECONDS - started)) s"

out=$dir/out
# Timings and per-stage CPU seconds differ from run to run.
without_timings() {
  local cpu='read|inflate|split|parse|classify|summarize|reduce|merge|serial_share'
  grep -v -E "\"(read_and_reduce|analyze|$cpu)\": [0-9]" "$1"
}
for label in "${good[@]}"; do
  row=$(grep -P "^$label\t" "$dir/manifest.tsv")
  IFS=$'\t' read -r _ trace1 trace2 <<<"$row"
  "$tracefuse" compare "$trace1" "$trace2" --format json -o "$dir/expected_$label.json"
  status=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["state"], s["exit_code"])' "$out/$label.status.json" 2>&1) || true
  [ "$status" = "complete 0" ] || fail "$label: status '$status', not 'complete 0'"
  cmp -s <(without_timings "$out/$label.json") <(without_timings "$dir/expected_$label.json") ||
    fail "$label: the Slurm report differs from tracefuse compare's"
  cmp -s <(without_timings "$out/$label.json") <(without_timings "$dir/local/$label.json") ||
    fail "$label: the Slurm report differs from batch --all's"
done

python3 - "$out" "$dir/local" "$t" <<'PY' || failures=$((failures + 1))
import json, os, sys
out, local, traces = sys.argv[1:]
def status(d, label):
    return json.load(open(os.path.join(d, label + ".status.json")))
problems = []
bad = status(out, "malformed")
want = traces + "/truncated.json: truncated JSON"
if bad["state"] != "failed" or bad["exit_code"] != 1 or not bad["error"].startswith(want):
    problems.append(f"malformed: {bad['state']} {bad['exit_code']} {bad['error']!r}")
if status(local, "malformed")["error"] != bad["error"]:
    problems.append("malformed: batch --all and Slurm disagree on the error line")
stopped = status(out, "endless")
if stopped["state"] != "interrupted" or stopped["exit_code"] != 143 or \
        not stopped["error"].startswith("interrupted by SIGTERM after "):
    problems.append(f"endless: {stopped['state']} {stopped['exit_code']} {stopped['error']!r}")
if stopped["slurm"]["array_task_id"] != "5" or not stopped["slurm"]["array_job_id"]:
    problems.append(f"endless: slurm ids {stopped['slurm']}")
left = [f for f in os.listdir(out) if f.startswith("endless") and f != "endless.status.json"]
if left:
    problems.append(f"endless left {left}")
for p in problems:
    print("compare_array_test: FAIL:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# The array of two rows per task: ceil(7 / 2) = 4 tasks, their exit codes tracefuse's (task 2:
# 143, the endless pair; task 3: 1, the malformed one).
states=$(slurm_job_state "$rows_array" | tr '\n' ' ')
want="${rows_array}_0 COMPLETED ${rows_array}_1 COMPLETED ${rows_array}_2 FAILED ${rows_array}_3 FAILED "
[ "$states" = "$want" ] || fail "the --rows-per-task 2 array's tasks: '$states', not '$want'"
echo "compare_array_test: --rows-per-task 2: array tasks: $states"
for label in "${good[@]}"; do
  cmp -s <(without_timings "$dir/out_rows/$label.json") <(without_timings "$out/$label.json") ||
    fail "$label: the report of the --rows-per-task array differs from the one-row array's"
done
grep -q 'time limit near' "$dir/jobs/tracefuse-compare-${rows_array}_2.out" 2>/dev/null ||
  fail "the batch script of task 2 of the --rows-per-task array did not log forwarding SIGTERM"
python3 - "$dir/out_rows" <<'PY' || failures=$((failures + 1))
import json, os, sys
out = sys.argv[1]
tasks = {"gen_plain": "0", "gen_gzip": "0", "real_bert": "1", "real_falconsai": "1",
         "endless2": "2", "malformed": "3"}
statuses = {label: json.load(open(os.path.join(out, label + ".status.json"))) for label in tasks}
problems = []
for label, task in tasks.items():
    s = statuses[label]
    if s["slurm"]["array_task_id"] != task:
        problems.append(f"{label}: array task {s['slurm']['array_task_id']}, not {task}")
pids = {}
for label, task in tasks.items():
    pids.setdefault(task, set()).add(statuses[label]["pid"])
for task, p in sorted(pids.items()):
    if len(p) != 1:
        problems.append(f"array task {task}: its rows ran in processes {sorted(p)}, not in one")
if len(set.union(*pids.values())) != len(pids):
    problems.append(f"array tasks share a process: {pids}")
stopped = statuses["endless2"]
if stopped["state"] != "interrupted" or stopped["exit_code"] != 143:
    problems.append(f"endless2: {stopped['state']} {stopped['exit_code']} {stopped['error']!r}")
if statuses["malformed"]["state"] != "failed" or statuses["malformed"]["task"] != 6:
    problems.append(f"malformed: {statuses['malformed']['state']} row {statuses['malformed']['task']}")
left = sorted(f for f in os.listdir(out) if f.startswith("after_endless"))
if left:
    problems.append(f"after_endless, the row after the interrupted one, left {left}")
for p in problems:
    print("compare_array_test: FAIL: --rows-per-task 2:", p, file=sys.stderr)
print("compare_array_test: --rows-per-task 2: the pids of array tasks 0-3:",
      "; ".join(f"{task}: {sorted(p)}" for task, p in sorted(pids.items())))
sys.exit(1 if problems else 0)
PY
[ "$(slurm_job_state "$rows_merge")" = FAILED ] ||
  fail "the --rows-per-task merge job ended $(slurm_job_state "$rows_merge"), not FAILED"
python3 "$here/check_summary.py" "$dir/out_rows/summary.json" 4 3 || failures=$((failures + 1))
grep -q '"missing"' "$dir/out_rows/summary.json" ||
  fail "the --rows-per-task summary does not count after_endless missing"

[ "$(slurm_job_state "$merge")" = FAILED ] ||
  fail "the merge job ended $(slurm_job_state "$merge"), not FAILED (merge exits 1 when pairs failed)"
python3 "$here/check_summary.py" "$out/summary.json" 4 2 || failures=$((failures + 1))
[ -s "$out/summary.md" ] || fail "no $out/summary.md"
# What a user sees: each pair's status line, then the merged summary.
for status in "$out"/*.status.json; do
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("compare_array_test:", s["label"], s["state"], s["exit_code"], s["error"] or "")' "$status"
done
cat "$out/summary.md"

slurm_test_end
