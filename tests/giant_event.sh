#!/bin/bash
# One event with a 300 MiB kernel name (tracefuse-gen --giant-name): at the default
# --max-event-bytes (256 MiB) `stats` fails with one line naming the event's byte offset and the
# limit; with the limit raised it counts every kernel in at most 1 GB of peak RSS (3x the event
# plus the usual buffers), whether the trace is read from the file, a pipe or gzip.
# Labelled "memory": RSS under a sanitizer says nothing, so scripts/test runs it in the plain
# builds only.
# usage: giant_event.sh TRACEFUSE-GEN TRACEFUSE
set -euo pipefail
gen=$1
bin=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracefuse-giant-XXXXXX")
trap 'rm -rf "$dir"' EXIT
limit_kb=1048576

"$gen" --size 2M --giant-name 300M --summary -o "$dir/giant.json" 2>"$dir/summary"
expected=$(sed -n 's/.*kernels=\([0-9]*\).*/\1/p' "$dir/summary")
at=$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(d.rfind(b"{", 0, d.find(b"giant_kernel<")))' "$dir/giant.json")

set +e
"$bin" stats "$dir/giant.json" 2>"$dir/err" >/dev/null
code=$?
set -e
want="tracefuse: error: $dir/giant.json: the event at byte $at is larger than the limit of 268435456 bytes on one event (--max-event-bytes)"
if [ "$code" != 1 ] || [ "$(cat "$dir/err")" != "$want" ]; then
  echo "default limit: exit $code, stderr:"; cat "$dir/err"; echo "expected exit 1 and: $want"
  exit 1
fi
echo "default limit: exit 1, $(cat "$dir/err")"

check() {  # check LABEL COMMAND...: peak RSS and kernel count of a run with the limit raised
  local label=$1
  shift
  /usr/bin/time -f %M -o "$dir/rss" "$@" >"$dir/stats.json"
  local rss kernels
  rss=$(tail -1 "$dir/rss")
  kernels=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"])' "$dir/stats.json")
  echo "$label: peak RSS $rss KB (limit $limit_kb), kernels $kernels (generated $expected)"
  [ "$kernels" = "$expected" ] && [ "$rss" -le "$limit_kb" ]
}
raised=(--max-event-bytes 512M --format json)
check file "$bin" stats "$dir/giant.json" "${raised[@]}"
check pipe bash -c '"$0" stats - "${@:2}" <"$1"' "$bin" "$dir/giant.json" "${raised[@]}"
gzip -1 "$dir/giant.json"
check gzip "$bin" stats "$dir/giant.json.gz" "${raised[@]}"
