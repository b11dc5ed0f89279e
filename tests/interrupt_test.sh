#!/usr/bin/env bash
# SIGTERM / SIGINT to a command mid-read of a 1 GB trace (streamed from the generator through a
# pipe, so that no gigabyte lands on disk), and mid-read of a large Nsight Systems export: the
# command exits 143 / 130 within a second, prints one line naming the signal, how far it read and
# the file, and leaves neither the output file nor its temporary behind.
#   interrupt_test.sh TRACEFUSE TRACEFUSE_GEN
set -euo pipefail
tracefuse=$1
gen=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$gen" --platform nvidia --steps 50 --seed 2 -o "$dir/small.json"
failures=0

# check SIGNAL EXIT_CODE COMMAND...: runs COMMAND reading the 1 GB stream from stdin, signals it
# after 0.5 s, and checks what it left.
check() {
  local signal=$1 expected=$2
  shift 2
  "$gen" --platform amd --size 1G --seed 1 -o - 2>/dev/null | "$@" 2>"$dir/err" &
  local pid=$!
  sleep 0.5
  local start
  start=$(date +%s%N)
  kill "-$signal" "$pid"
  local rc=0
  wait "$pid" || rc=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  local line
  line=$(cat "$dir/err")
  local ok=1
  [ "$rc" = "$expected" ] || { echo "FAIL $signal: exit $rc, expected $expected"; ok=0; }
  [ "$ms" -lt 1000 ] || { echo "FAIL $signal: exited after $ms ms"; ok=0; }
  [[ "$line" =~ ^tracefuse:\ error:\ interrupted\ by\ SIG$signal\ after\ [0-9]+\ bytes\ of\ -$ ]] ||
    { echo "FAIL $signal: stderr was '$line'"; ok=0; }
  if compgen -G "$dir/out.*" >/dev/null; then
    echo "FAIL $signal: left $(ls "$dir" | grep out)"
    ok=0
  fi
  [ "$ok" = 1 ] && echo "ok: SIG$signal -> exit $rc after $ms ms: $line"
  [ "$ok" = 1 ] || failures=$((failures + 1))
}

check TERM 143 "$tracefuse" compare - "$dir/small.json" -o "$dir/out.json" --threads 2
check INT 130 "$tracefuse" compare - "$dir/small.json" -o "$dir/out.json" --threads 2
check TERM 143 "$tracefuse" stats - -o "$dir/out.txt" --threads 2

# An Nsight Systems export of 4 million kernels in no start order (SQLite sorts them, seconds of
# one statement): SIGTERM mid-statement stops it as promptly (docs/formats.md).
python3 - "$dir/big.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
    INSERT INTO StringIds VALUES (1, 'gemm');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
        streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4000000)
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
        SELECT (i * 7919) % 4000001 * 1000, (i * 7919) % 4000001 * 1000 + 500, 0, 7, i, 0, 1
        FROM n;
""")
PY
"$tracefuse" stats "$dir/big.sqlite" -o "$dir/out.txt" --threads 2 2>"$dir/err" &
pid=$!
sleep 0.5
start=$(date +%s%N)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
line=$(cat "$dir/err")
if [ "$rc" = 143 ] && [ "$ms" -lt 1000 ] && ! compgen -G "$dir/out.*" >/dev/null &&
  [[ "$line" =~ ^tracefuse:\ error:\ interrupted\ by\ SIGTERM\ (while\ reading|after\ [0-9]+\ records\ of)\ $dir/big.sqlite$ ]]; then
  echo "ok: SIGTERM, nsys export -> exit $rc after $ms ms: $line"
else
  echo "FAIL SIGTERM, nsys export: exit $rc after $ms ms: '$line'"
  failures=$((failures + 1))
fi
echo "$((4 - failures)) passed, $failures failed"
[ "$failures" = 0 ]
