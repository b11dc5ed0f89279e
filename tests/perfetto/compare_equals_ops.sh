#!/bin/bash
# compare --by-op --format perfetto writes the bytes ops --format perfetto writes, for both
# alignments; compare --format perfetto without --by-op exits 2 with one line and no file.
# usage: compare_equals_ops.sh TRACEFUSE TRACE1 TRACE2 WORKDIR
set -euo pipefail
tracefuse=$1 trace1=$2 trace2=$3 work=$4/compare_equals_ops
mkdir -p "$work"
for align in steps none; do
  "$tracefuse" ops "$trace1" "$trace2" --format perfetto --align "$align" -o "$work/ops.pftrace"
  "$tracefuse" compare --by-op "$trace1" "$trace2" --format perfetto --align "$align" \
    -o "$work/compare.pftrace"
  cmp "$work/ops.pftrace" "$work/compare.pftrace"
done
rm -f "$work/refused.pftrace"
set +e
message=$("$tracefuse" compare "$trace1" "$trace2" --format perfetto -o "$work/refused.pftrace" 2>&1)
code=$?
set -e
expected="tracefuse: error: --format perfetto needs --by-op"
if [[ $code != 2 || $message != "$expected" || -e $work/refused.pftrace ]]; then
  echo "without --by-op: exit $code, '$message' (expected exit 2, '$expected', no file)"
  exit 1
fi
echo "compare --by-op = ops for --align steps and none; refused without --by-op"
