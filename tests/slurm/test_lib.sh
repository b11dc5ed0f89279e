# shellcheck shell=bash
# What every Slurm test script shares; source it after cluster.sh:
#
#   slurm_test_begin NAME      # $dir, $started, fail(), and traps that clean up on any exit
#   slurm_test_start_cluster   # starts the cluster in $dir/cluster, or exits 77 (skip) / 1
#   slurm_test_submit ARGS...  # scripts/slurm/submit ARGS from $dir/jobs: $array and $merge set
#                              # to the job ids it prints, both waited for (120 s at most)
#   ...
#   slurm_test_end             # exits 1 when fail() was called, else prints PASS
#
# On exit the cluster is stopped (its failure fails the test), $SLURM_TEST_ON_EXIT runs first if
# set, and $dir is deleted, or kept with the daemons' and jobs' logs shown when the test failed.
# TRACEFUSE_SLURM_REQUIRED=1 turns a skip into a failure.

slurm_test_begin() {
  slurm_test_name=$1
  started=$SECONDS
  dir=$(mktemp -d "${TMPDIR:-/tmp}/tracefuse-slurm.XXXXXX")
  failures=0
  mkdir -p "$dir/jobs"
  trap _slurm_test_finish EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

fail() {
  echo "$slurm_test_name: FAIL: $*" >&2
  failures=$((failures + 1))
}

_slurm_test_finish() {
  local rc=$?
  trap - EXIT
  if [ -n "${SLURM_TEST_ON_EXIT:-}" ]; then eval "$SLURM_TEST_ON_EXIT" || true; fi
  slurm_cluster_stop || rc=1
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    slurm_cluster_show_logs "$dir/cluster" "$dir"/jobs/*.out
    echo "$slurm_test_name: files kept in $dir" >&2
  else
    rm -rf "$dir"
  fi
  exit "$rc"
}

slurm_test_start_cluster() {
  local rc=0
  slurm_cluster_start "$dir/cluster" || rc=$?
  if [ "$rc" -eq 77 ] && [ "${TRACEFUSE_SLURM_REQUIRED:-0}" != 1 ]; then exit 77; fi
  [ "$rc" -eq 0 ] || exit 1
  echo "$slurm_test_name: cluster idle after $((SECONDS - started)) s"
}

slurm_test_submit() {
  local ids
  ids=$(cd "$dir/jobs" && "$here/../../scripts/slurm/submit" "$@") || exit 1
  array=$(sed -n 's/^array job: \([0-9]*\)$/\1/p' <<<"$ids")
  merge=$(sed -n 's/^merge job: \([0-9]*\)$/\1/p' <<<"$ids")
  [ -n "$array" ] && [ -n "$merge" ] || { fail "submit printed '$ids'"; exit 1; }
  slurm_wait_jobs 120 "$array" "$merge" || exit 1
  echo "$slurm_test_name: jobs finished after $((SECONDS - started)) s"
}

slurm_test_end() {
  [ "$failures" -eq 0 ] || exit 1
  echo "$slurm_test_name: PASS in $((SECONDS - started)) s"
}
