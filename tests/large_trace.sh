#!/bin/sh
# One trace larger than 4 GiB (simdjson refuses documents over 4 GiB, so the splitter must never
# hand it the file whole), generated into a temporary directory: `tracefuse stats` must count
# every kernel the generator wrote. Labelled "large": run by scripts/bench, not by scripts/test.
# usage: large_trace.sh TRACEFUSE-GEN TRACEFUSE [SIZE]
set -eu
gen=$1
bin=$2
size=${3:-5GiB}
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracefuse-large-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$gen" --platform amd --size "$size" --summary -o "$dir/big.json" 2>"$dir/summary"
expected=$(sed -n 's/.*kernels=\([0-9]*\).*/\1/p' "$dir/summary")
bytes=$(stat -c %s "$dir/big.json")
if [ "$bytes" -le 4294967296 ]; then
  echo "the generated trace has only $bytes bytes"
  exit 1
fi
"$bin" stats "$dir/big.json" --format json -o "$dir/stats.json"
actual=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"])' "$dir/stats.json")
echo "bytes=$bytes kernels: generated $expected, counted $actual"
[ "$actual" = "$expected" ]
