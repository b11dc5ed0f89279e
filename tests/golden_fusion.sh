#!/bin/sh
# Golden parity of one fusion case: `tracefuse compare --ruleset wafer-kernel --format json` must
# equal the reference's expected.json under ../shared/tools/compare_fusion.py.
# usage: golden_fusion.sh TRACEFUSE CASE_DIR OUTPUT
# Exits 77 (ctest: skipped) when the case directory is not present on this machine.
set -eu
bin=$1
case_dir=$2
out=$3
if [ ! -d "$case_dir" ]; then
  echo "skipped: $case_dir (../shared golden outputs) is not present on this machine"
  exit 77
fi
"$bin" compare "$case_dir/trace1.json.gz" "$case_dir/trace2.json.gz" --ruleset wafer-kernel \
  --format json --threads 2 --progress never -o "$out"
python3 "$case_dir/../../../tools/compare_fusion.py" "$case_dir/expected.json" "$out"
