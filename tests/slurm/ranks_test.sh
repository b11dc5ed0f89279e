#!/usr/bin/env bash
# A distributed run's ranks on a real single-node Slurm cluster (tests/slurm/cluster.sh): the
# 8-rank AMD run with rank 5 computing 1.3x as long and the 8-rank NVIDIA run of
# tests/ranks_test.sh, paired by rank (`tracefuse pairs`), submitted with scripts/slurm/submit
# (an array of 8 tasks and the merge job): the merge job's summary.json must name rank5 as the
# straggler on the AMD side only, with the other ranks' planted waits
# (tests/check_stragglers.py), and its summary.md say so in one line.
#   ranks_test.sh TRACEFUSE TRACEFUSE_GEN
# Exits 0/1, or 77 (skip, with the reason) where Slurm's daemons cannot start; with
# TRACEFUSE_SLURM_REQUIRED=1 that is a failure instead. Takes about 15 s.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/ranks_lib.sh
source "$here/../ranks_lib.sh"
tracefuse=$(realpath "$1")
gen=$(realpath "$2")
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
# shellcheck source=tests/slurm/test_lib.sh
source "$here/test_lib.sh"

slurm_test_begin ranks_test

generate_ranks "$gen" "$dir"
"$tracefuse" pairs "$dir/amd" "$dir/nvidia" -o "$dir/manifest.tsv"

SLURM_CLUSTER_CPUS=4 slurm_test_start_cluster

export TRACEFUSE=$tracefuse
slurm_test_submit "$dir/manifest.tsv" "$dir/out" --cpus-per-task=1 --mem=500M --time=5

[ "$(slurm_job_state "$merge")" = COMPLETED ] ||
  fail "the merge job ended $(slurm_job_state "$merge"), not COMPLETED"
python3 "$here/check_summary.py" "$dir/out/summary.json" 8 0 || failures=$((failures + 1))
python3 "$here/../check_stragglers.py" "$dir/out/summary.json" AMD "$dir/amd.expected.json" \
  "$dir/nvidia.expected.json" || failures=$((failures + 1))
grep -q -F -- '- rank5 (AMD side) computes 1.30x the median rank; the other 7 ranks waited' \
  "$dir/out/summary.md" || fail "summary.md has no straggler line: $(cat "$dir/out/summary.md")"
grep -F 'rank5 (AMD side)' "$dir/out/summary.md"

slurm_test_end
