#!/usr/bin/env bash
# SIGTERM / SIGINT to a command mid-read of a 1 GB trace (streamed from the generator through a
# pipe, so that no gigabyte lands on disk): the command exits 143 / 130 within a second, prints
# one line naming the signal, the bytes read and the file, and leaves neither the output file nor
# its temporary behind.
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
echo "$((3 - failures)) passed, $failures failed"
[ "$failures" = 0 ]
