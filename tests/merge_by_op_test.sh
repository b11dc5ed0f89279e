#!/usr/bin/env bash
# `batch --by-op` over eager pairs (tests/by_op_lib.sh), merged: the merge's fusion differences,
# ops and shares of linked kernel time against `tracefuse ops` on each pair, summed
# (check_merged_ops.py); every format of the summary carries them.
#   merge_by_op_test.sh TRACEFUSE TRACEFUSE_GEN SHARED
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/by_op_lib.sh
source "$here/by_op_lib.sh"
tracefuse=$1
gen=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() {
  echo "merge_by_op_test: FAIL: $*" >&2
  failures=$((failures + 1))
}

write_by_op_manifest "$gen" "${3:-}" "$dir"
"$tracefuse" batch "$dir/manifest.tsv" --out "$dir/out" --all --by-op --threads 2
python3 "$here/check_merged_ops.py" "$tracefuse" "$dir/manifest.tsv" "$dir/out" \
  --min-differences 3 || failures=$((failures + 1))
# A pair not compared --by-op beside them: counted out of the section, not an error.
pairs=$(($(grep -c . "$dir/manifest.tsv") - 1))
printf 'plain\trank0.1.json\trank0.2.json\n' >>"$dir/manifest.tsv"
"$tracefuse" batch "$dir/manifest.tsv" --out "$dir/out" --task "$pairs"
[ ! -e "$dir/out/plain.ops.json" ] || fail "a pair without --by-op has an ops report"
"$tracefuse" merge "$dir/out" --format json | python3 -c "
import json, sys
j = json.load(sys.stdin)
plain = [p for p in j['pairs'] if p['label'] == 'plain'][0]
assert plain['ops'] is None, plain['ops']
assert j['pairs_with_ops'] == $pairs, (j['pairs_with_ops'], $pairs)
" || fail "merge counts the pair without --by-op among those with"
text=$("$tracefuse" merge "$dir/out")
lines=$(wc -l <<<"$text")
[ "$lines" -le 60 ] || fail "the text summary has $lines lines, more than a screen's 60"
awk 'length > 100 { exit 1 }' <<<"$text" || fail "a line of the text summary is over 100 columns"
grep -q '^By operator (over' <<<"$text" || fail "no section By operator in the text summary"
# The differences the text lists (the first two) name the kernel that does the extra kernels' work
# (a long name is cut in its middle: its first 24 characters).
"$tracefuse" merge "$dir/out" --format json | python3 -c "
import json, sys
for d in json.load(sys.stdin)['fusion_differences'][:2]:
    if d['fused_kernel']:
        print(d['fused_by'] + \"'s \" + d['fused_kernel'][:24])
" >"$dir/fused.txt"
[ -s "$dir/fused.txt" ] || fail "no listed difference has a fused kernel (the test checks nothing)"
while IFS= read -r fused; do
  grep -qF "$fused" <<<"$text" || fail "the text summary does not say: $fused"
done <"$dir/fused.txt"
grep -q '^## By operator (over' <(  "$tracefuse" merge "$dir/out" --format markdown) ||
  fail "no section By operator in the markdown summary"
grep -q '<section id="by-op">' <("$tracefuse" merge "$dir/out" --format html) ||
  fail "no section by-op in the HTML summary"
header=$("$tracefuse" merge "$dir/out" --format csv --csv-table fusion_differences | head -n 1)
[ "$header" = "kind,scope,op,relation,fused_by,fused_kernel,extra_kernels,instances,extra_time_us,saving_us,side1_time_us,side2_time_us,pairs,pair_labels" ] ||
  fail "csv fusion_differences header: $header"
rows=$("$tracefuse" merge "$dir/out" --format csv --csv-table fusion_differences | tail -n +2 | wc -l)
want=$("$tracefuse" merge "$dir/out" --format json | python3 -c "import json,sys; print(len(json.load(sys.stdin)['fusion_differences']))")
[ "$rows" -eq "$want" ] || fail "csv fusion_differences has $rows rows, the JSON $want"
"$tracefuse" merge "$dir/out" --format csv | head -n 1 | grep -q ',trace1_linked_kernel_share,trace2_linked_kernel_share,fusion_differences,' ||
  fail "the pairs table has no linked share columns"
[ "$failures" -eq 0 ] && echo "merge_by_op_test: ok"
exit $((failures > 0))
