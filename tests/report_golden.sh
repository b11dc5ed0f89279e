#!/bin/sh
# Byte-exact golden test of one human or CSV report: runs `tracefuse ARGS...` in WORKDIR (so the
# trace paths in the report are the relative ones given in ARGS) and diffs its standard output
# against GOLDEN (tests/golden/reports/), printing the unified diff on a difference.
#
# Regenerate every golden file after an intended change of output with ONE command:
#     scripts/update-golden
# (it builds, then runs `TRACEFUSE_UPDATE_GOLDEN=1 ctest -R '^report_golden\.'`: with that
# variable set, this script writes GOLDEN instead of comparing, and says whether it changed).
#
# What varies from run to run is normalised before the comparison: `stats`' elapsed line and
# JSON timings ("elapsed_seconds", "gb_per_second", compare's "read_and_reduce" and "analyze",
# ops' "read_seconds" and "analyze_seconds",
# the per-stage "cpu_seconds")
# and compare JSON's "version"; in HTML, the spans of class "elapsed" and "version".
#
# usage: report_golden.sh GOLDEN WORKDIR TRACEFUSE ARGS...
# The command must exit 0, or $REPORT_GOLDEN_EXIT when set (merge's exit 1: pairs not complete).
# Exits 77 (ctest: skipped) when WORKDIR is not present on this machine (a ../shared case).
set -eu
golden=$1
workdir=$2
shift 2
if [ ! -d "$workdir" ]; then
  echo "skipped: $workdir (../shared golden outputs and real traces) is not present on this machine"
  exit 77
fi
actual=$(mktemp "${TMPDIR:-/tmp}/tracefuse-golden-XXXXXX")
trap 'rm -f "$actual" "$actual.raw"' EXIT
status=0
(cd "$workdir" && "$@") >"$actual.raw" || status=$?
if [ "$status" -ne "${REPORT_GOLDEN_EXIT:-0}" ]; then
  echo "exit code $status, expected ${REPORT_GOLDEN_EXIT:-0}: $*"
  exit 1
fi
sed -E \
  -e 's/^(elapsed +).*$/\1<normalised>/' \
  -e 's/("(elapsed_seconds|gb_per_second|read_and_reduce|analyze|read_seconds|analyze_seconds)": )[^,]*/\1"<normalised>"/' \
  -e 's/("(read|inflate|split|parse|classify|summarize|reduce|merge|serial_share)": )[0-9][^,]*/\1"<normalised>"/' \
  -e 's/^( *"version": )"[^"]*"/\1"<normalised>"/' \
  -e 's/(<span class="(elapsed|version)">)[^<]*/\1<normalised>/g' \
  "$actual.raw" >"$actual"

if [ -n "${TRACEFUSE_UPDATE_GOLDEN:-}" ]; then
  if [ -f "$golden" ] && cmp -s "$golden" "$actual"; then
    echo "unchanged: $golden"
  else
    cp "$actual" "$golden"
    echo "updated: $golden"
  fi
  exit 0
fi
if [ ! -f "$golden" ]; then
  echo "missing golden file $golden: run scripts/update-golden"
  exit 1
fi
if ! diff -u --label "expected: $golden" --label "actual: $* (in $workdir)" "$golden" "$actual"; then
  echo
  echo "the report differs from its golden file; if the change is intended, run scripts/update-golden"
  echo "and review 'git diff tests/golden/reports'"
  exit 1
fi
