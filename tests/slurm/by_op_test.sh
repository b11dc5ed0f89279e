#!/usr/bin/env bash
# batch --by-op on a real single-node Slurm cluster (tests/slurm/cluster.sh): eager pairs
# (tests/by_op_lib.sh: generated ranks with planted fusion differences, one NVIDIA first, and the
# real eager pairs of ../shared where present) submitted with `scripts/slurm/submit --by-op` (an
# array and the merge job): the merge job's summary.json must list the fusion differences that
# `tracefuse ops` finds on each pair, with the pairs where each appears, summed as the pairs' own
# JSON sum (tests/check_merged_ops.py), and summary.md its section "By operator".
#   by_op_test.sh TRACEFUSE TRACEFUSE_GEN [SHARED]
# Exits 0/1, or 77 (skip, with the reason) where Slurm's daemons cannot start; with
# TRACEFUSE_SLURM_REQUIRED=1 that is a failure instead. Takes about 15 s.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/by_op_lib.sh
source "$here/../by_op_lib.sh"
tracefuse=$(realpath "$1")
gen=$(realpath "$2")
shared=${3:-}
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
# shellcheck source=tests/slurm/test_lib.sh
source "$here/test_lib.sh"

slurm_test_begin by_op_test

write_by_op_manifest "$gen" "$shared" "$dir"
rows=$(($(grep -c . "$dir/manifest.tsv") - 1))

SLURM_CLUSTER_CPUS=4 slurm_test_start_cluster

export TRACEFUSE=$tracefuse
slurm_test_submit --by-op "$dir/manifest.tsv" "$dir/out" --cpus-per-task=1 --mem=500M --time=5

[ "$(slurm_job_state "$merge")" = COMPLETED ] ||
  fail "the merge job ended $(slurm_job_state "$merge"), not COMPLETED"
python3 "$here/check_summary.py" "$dir/out/summary.json" "$rows" 0 || failures=$((failures + 1))
python3 "$here/../check_merged_ops.py" "$tracefuse" "$dir/manifest.tsv" "$dir/out" \
  --min-differences 3 || failures=$((failures + 1))
python3 - "$dir/out/summary.json" "$rows" <<'PY' || failures=$((failures + 1))
import json, sys
j = json.load(open(sys.argv[1]))
if j["pairs_with_ops"] != int(sys.argv[2]):
    sys.exit(f"by_op_test: FAIL: summary.json has pairs_with_ops {j['pairs_with_ops']}")
PY
grep -q '^## By operator (over' "$dir/out/summary.md" ||
  fail "summary.md has no section By operator: $(cat "$dir/out/summary.md")"

slurm_test_end
