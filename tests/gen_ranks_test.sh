#!/bin/bash
# A multi-rank run of tracefuse-gen: 4 ranks, rank 2 slow (--slow-factor 1.3 by default), one
# invocation per rank. Every rank's GPU timeline has communication (the all-reduces), rank 2
# computes 1.3x as long as the others' median, and the generator's --expect-ranks file (which
# `stats` must agree with) says that rank 2 never waits while every other rank does.
# usage: gen_ranks_test.sh TRACEFUSE-GEN TRACEFUSE
set -euo pipefail
gen=$1
bin=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracefuse-ranks-XXXXXX")
trap 'rm -rf "$dir"' EXIT

for rank in 0 1 2 3; do
  "$gen" --platform amd --steps 6 --seed 5 --world-size 4 --rank "$rank" --slow-rank 2 \
    --expect-ranks "$dir/expected$rank.json" -o "$dir/rank$rank.json"
  "$bin" stats "$dir/rank$rank.json" --format json >"$dir/stats$rank.json"
done

python3 - "$dir" <<'PY'
import json, statistics, sys

d = sys.argv[1]
expected = json.load(open(f"{d}/expected0.json"))
for rank in range(1, 4):
    other = json.load(open(f"{d}/expected{rank}.json"))
    assert other == expected, f"rank {rank}'s invocation expects something else: {other}"
assert expected["world_size"] == 4 and expected["slow_rank"] == 2, expected
assert expected["collectives_per_rank"] > 0, expected

devices = [json.load(open(f"{d}/stats{r}.json"))["gpu_timeline"]["devices"][0] for r in range(4)]
for rank, device in enumerate(devices):
    assert device["communication_us"] > 0, f"rank {rank}: no communication: {device}"
    want = expected["ranks"][rank]
    for key in ("computation_us", "communication_us"):
        got = device[key]
        exp = want["collective_us" if key == "communication_us" else key]
        assert abs(got - exp) < 0.01, f"rank {rank}: {key} {got}, expected {exp}"

others = statistics.median(devices[r]["computation_us"] for r in (0, 1, 3))
ratio = devices[2]["computation_us"] / others
assert abs(ratio - 1.3) <= 1.3 * 0.02, f"rank 2 computes {ratio:.4f}x the others' median"

waits = [r["wait_us"] for r in expected["ranks"]]
assert waits[2] == min(waits) and waits[2] < 0.002, f"rank 2 waits: {waits}"
assert all(waits[r] > 0 for r in (0, 1, 3)), f"a fast rank never waits: {waits}"
print(f"rank 2 computes {ratio:.4f}x the others' median; waits (us): {waits}")
PY
