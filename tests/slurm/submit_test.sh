#!/usr/bin/env bash
# Tests scripts/slurm/submit and compare-array.sbatch on a real single-node Slurm cluster
# (tests/slurm/cluster.sh), with tests/slurm/fake-tracefuse standing in for tracefuse:
#   - a 3-row manifest (with comments and blank lines) becomes array tasks 0-2, each
#     running `tracefuse batch` in an srun step with the job's --cpus-per-task;
#   - the slow row gets the --signal=B:TERM warning, which the batch script forwards, so
#     tracefuse itself sees SIGTERM and writes "interrupted";
#   - the merge job runs after the array and writes summary.md and summary.json;
#   - usage errors (--rows-per-task's included) exit 2 and a rejected sbatch exits 1, each
#     with one line on stderr.
# Exits 0/1, or 77 (skip) when Slurm cannot run here (TRACEFUSE_SLURM_REQUIRED=1: fail).
# Takes about 35 s: the warning comes at slurmctld's first time-limit check, 30 s after
# its start.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
submit=$here/../../scripts/slurm/submit
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
# shellcheck source=tests/slurm/test_lib.sh
source "$here/test_lib.sh"

slurm_test_begin submit_test

# expect_error STATUS PATTERN COMMAND...: COMMAND exits STATUS with one stderr line
# matching PATTERN.
expect_error() {
  local want=$1 pattern=$2 status=0 err
  shift 2
  err=$("$@" 2>&1 >/dev/null) || status=$?
  if [ "$status" -ne "$want" ] || [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -qE "$pattern" <<<"$err"; then
    fail "'$*' exited $status with '$err', not $want with one line matching '$pattern'"
  fi
}

cd "$dir/jobs" # sbatch runs jobs, and writes their logs, in the submitting directory
printf '# comparisons for the test\nlabel\ttrace1\ttrace2\n\nfast0\ta.json\tb.json\n# the slow one\nslow1\tc.json\td.json\nfast2\te.json\tf.json\n' >manifest.tsv
printf '# nothing\nlabel\ttrace1\ttrace2\n' >empty.tsv

# Usage errors need no cluster.
expect_error 2 '^submit: usage: ' "$submit" manifest.tsv
expect_error 2 '^submit: cannot read manifest: ' "$submit" missing.tsv out
expect_error 2 '^submit: manifest has no data rows: ' "$submit" empty.tsv out
expect_error 2 '^submit: manifest header must start with label' "$submit" "$here/cluster.sh" out
expect_error 2 '^submit: TRACEFUSE_ARRAY_THROTTLE must be ' env TRACEFUSE_ARRAY_THROTTLE=0 "$submit" manifest.tsv out
expect_error 2 "^submit: --rows-per-task must be a positive integer, not '0'$" \
  "$submit" --rows-per-task 0 manifest.tsv out
expect_error 2 "^submit: --rows-per-task must be a positive integer, not 'x'$" \
  "$submit" --rows-per-task=x manifest.tsv out
expect_error 2 '^submit: usage: ' "$submit" --rows-per-task 2 manifest.tsv
expect_error 2 "^compare-array.sbatch: --rows-per-task must be a positive integer, not '0'$" \
  env SLURM_ARRAY_TASK_ID=0 bash "$here/../../scripts/slurm/compare-array.sbatch" manifest.tsv out \
  --rows-per-task 0
expect_error 2 '^usage: sbatch --array=0-N%K compare-array.sbatch MANIFEST OUT \[--rows-per-task R\] \[--by-op\]$' \
  env SLURM_ARRAY_TASK_ID=0 bash "$here/../../scripts/slurm/compare-array.sbatch" manifest.tsv out \
  --rows 2
expect_error 2 '^compare-array.sbatch: not an array task' \
  env -u SLURM_ARRAY_TASK_ID bash "$here/../../scripts/slurm/compare-array.sbatch" manifest.tsv out

# 4 CPUs, whatever the machine has: two 2-CPU tasks side by side.
SLURM_CLUSTER_CPUS=4 slurm_test_start_cluster

expect_error 1 '^submit: sbatch failed for the array job: .*Invalid partition' \
  "$submit" manifest.tsv out --partition=nope

# --time=1 (the shortest limit) brings the TERM@60 warning at the first check.
export TRACEFUSE=$here/fake-tracefuse TRACEFUSE_ARRAY_THROTTLE=2
ids=$("$submit" manifest.tsv out --cpus-per-task=2 --mem=100M --time=1) || exit 1
array=$(sed -n 's/^array job: \([0-9]*\)$/\1/p' <<<"$ids")
merge=$(sed -n 's/^merge job: \([0-9]*\)$/\1/p' <<<"$ids")
if [ -z "$array" ] || [ -z "$merge" ] || [ "$(wc -l <<<"$ids")" -ne 2 ]; then
  fail "submit printed '$ids', not the two job id lines"
  exit 1
fi
throttle=$(scontrol -o show job "$array" | grep -o 'ArrayTaskThrottle=[0-9]*' | head -n 1) || true
[ "$throttle" = ArrayTaskThrottle=2 ] || fail "array job has '$throttle', not ArrayTaskThrottle=2"

slurm_wait_jobs 120 "$array" "$merge" || exit 1
echo "submit_test: all jobs finished after $((SECONDS - started)) s"

for task in 0 2; do
  state=$(slurm_job_state "${array}_$task")
  [ "$state" = COMPLETED ] || fail "array task $task ended $state, not COMPLETED"
  content=$(cat "out/$task.result" 2>/dev/null) || true
  [ "$content" = "$(printf 'fast%s\tstep=0\tcpus=2' "$task")" ] ||
    fail "out/$task.result holds '$content', not fast$task run in step 0 with 2 CPUs"
  [ -f "tracefuse-compare-${array}_$task.out" ] ||
    fail "no job log tracefuse-compare-${array}_$task.out"
done
state=$(slurm_job_state "${array}_1")
[ "$state" = FAILED ] || fail "slow array task ended $state, not FAILED (exit 143 after SIGTERM)"
content=$(cat out/1.interrupted 2>/dev/null) || true
[ "$content" = interrupted ] || fail "slow task wrote '$content', not 'interrupted' (no SIGTERM reached tracefuse?)"
grep -q 'time limit near' "tracefuse-compare-${array}_1.out" 2>/dev/null ||
  fail "the batch script of task 1 did not log forwarding SIGTERM"

state=$(slurm_job_state "$merge")
[ "$state" = COMPLETED ] || fail "merge job ended $state, not COMPLETED"
[ "$(grep -c '^| [0-9]' out/summary.md 2>/dev/null)" = 3 ] || fail "out/summary.md does not list the 3 tasks"
grep -q '"outcome": "interrupted"' out/summary.json 2>/dev/null || fail "out/summary.json lists no interrupted task"

slurm_test_end
