#!/usr/bin/env bash
# Smoke test of a real single-node Slurm cluster (tests/slurm/cluster.sh), as root:
#   - a job array of 3 tasks, each writing a file through an srun step;
#   - a job that depends on the array (afterany) and sees all 3 files;
#   - a job that reaches its 1-minute time limit, traps SIGTERM, writes "interrupted",
#     and ends in state TIMEOUT.
# Exits 0 when all hold, 1 when one does not, 77 (skip) when Slurm cannot run here;
# TRACEFUSE_SLURM_REQUIRED=1 turns that skip into a failure (for CI, where
# scripts/setup installs Slurm). Takes about 95 s, nearly all of it waiting for the
# time limit: slurmctld enforces limits every 30 s from its start, so a job started
# just after it is killed 90 s after that start. The daemons are stopped on every exit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
# shellcheck source=tests/slurm/test_lib.sh
source "$here/test_lib.sh"

slurm_test_begin smoke_test

slurm_test_start_cluster

cd "$dir/jobs" # sbatch runs jobs in the submitting directory

# First, so that it starts at once: its limit ends the test.
cat >timed.sh <<'EOF'
#!/bin/bash
trap 'echo interrupted >timed.result; exit 143' TERM
# Short sleeps: bash runs the trap only between commands.
for _ in $(seq 1500); do sleep 0.2; done
echo "not interrupted" >timed.result
EOF
# --time=1 is the shortest limit: Slurm rounds seconds up to whole minutes.
timed=$(sbatch --parsable --job-name=timed --time=1 --output=timed.out timed.sh)

# shellcheck disable=SC2016  # expanded in the job
array=$(sbatch --parsable --job-name=array --array=0-2 --output=array-%a.out \
  --wrap 'srun --ntasks=1 sh -c "echo task \$SLURM_ARRAY_TASK_ID step \$SLURM_STEP_ID" >array-$SLURM_ARRAY_TASK_ID.txt')
after=$(sbatch --parsable --job-name=after --dependency="afterany:$array" --output=after.out \
  --wrap 'ls array-*.txt | wc -l >after.txt')

slurm_wait_jobs 130 "$array" "$after" "$timed" || exit 1
echo "smoke_test: all jobs finished after $((SECONDS - started)) s"

for task in 0 1 2; do
  state=$(slurm_job_state "${array}_$task")
  [ "$state" = COMPLETED ] || fail "array task $task ended $state, not COMPLETED"
  content=$(cat "array-$task.txt" 2>/dev/null) || true
  [ "$content" = "task $task step 0" ] || fail "array-$task.txt holds '$content', not 'task $task step 0'"
done

state=$(slurm_job_state "$after")
[ "$state" = COMPLETED ] || fail "dependent job ended $state, not COMPLETED"
content=$(tr -d ' ' <after.txt 2>/dev/null) || true
[ "$content" = 3 ] || fail "dependent job saw '$content' array files, not 3 (it ran too early?)"

state=$(slurm_job_state "$timed")
[ "$state" = TIMEOUT ] || fail "time-limited job ended $state, not TIMEOUT"
content=$(cat timed.result 2>/dev/null) || true
[ "$content" = interrupted ] || fail "time-limited job wrote '$content', not 'interrupted' (no SIGTERM?)"

slurm_test_end
