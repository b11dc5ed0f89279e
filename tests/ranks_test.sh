#!/usr/bin/env bash
# A distributed run's ranks through the whole batch path: tracefuse-gen writes an 8-rank AMD run
# with rank 5 computing 1.3x as long and an 8-rank NVIDIA run with no slow rank (synchronised
# all-reduces), `tracefuse pairs` pairs them by rank, `tracefuse batch --all` compares each pair,
# and `tracefuse merge` must name rank5 as the straggler on the AMD side only, with the other
# ranks' planted waits (tests/check_stragglers.py), whichever run is trace 1; its text says so in
# one line.
# usage: ranks_test.sh TRACEFUSE-GEN TRACEFUSE
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/ranks_lib.sh
source "$here/ranks_lib.sh"
gen=$1
bin=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracefuse-ranks-XXXXXX")
trap 'rm -rf "$dir"' EXIT

generate_ranks "$gen" "$dir"

for order in "amd nvidia" "nvidia amd"; do
  read -r first second <<<"$order"
  out=$dir/out-$first
  "$bin" pairs "$dir/$first" "$dir/$second" -o "$dir/$first.tsv"
  "$bin" batch "$dir/$first.tsv" --all --out "$out" --threads 2 2>"$dir/batch.err" ||
    { cat "$dir/batch.err"; exit 1; }
  "$bin" merge "$out" --format json -o "$out/summary.json"
  python3 "$here/check_stragglers.py" "$out/summary.json" AMD "$dir/amd.expected.json" \
    "$dir/nvidia.expected.json"
  text=$("$bin" merge "$out")
  line=$(grep -F 'rank5 (AMD side) computes 1.30x the median rank; the other 7 ranks waited' \
    <<<"$text") || { echo "FAIL: $first first: no straggler line in:"; echo "$text"; exit 1; }
  grep -q '^  NVIDIA side: no straggler among 8 ranks' <<<"$text" ||
    { echo "FAIL: $first first: the NVIDIA side is not without a straggler:"; echo "$text"; exit 1; }
  echo "$first first: $line"
done
