#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, as a site deploys tracefuse on a shared filesystem;
# then, from another directory, the installed programs against the build tree's:
#   - `tracefuse stats` and `compare` on real traces of ../shared (generated ones when it is
#     absent) write the same JSON as the build tree's binary, timings aside;
#   - `man -l` renders the installed page, with every subcommand of `tracefuse --help`;
#   - the installed Slurm scripts name the installed tracefuse;
#   - `--version` names the version, the commit and the libraries.
#   install_test.sh BUILD_DIR SHARED_DIR
set -euo pipefail
build=$(realpath "$1")
shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install failed"; }
installed=$prefix/bin/tracefuse
[ -x "$installed" ] || fail "no $installed"
[ -x "$prefix/bin/tracefuse-gen" ] || fail "no tracefuse-gen in $prefix/bin"

real=$shared/traces/real
if [ -f "$real/tl_mi300_bert_small.json.gz" ]; then
  a=$real/tl_mi300_bert_small.json.gz
  b=$real/tl_h100_bert_small.json.gz
else
  echo "install_test: $real is not there: generated traces instead"
  a=$work/amd.json
  b=$work/nvidia.json
  "$build/tracefuse-gen" --platform amd --steps 20 -o "$a"
  "$build/tracefuse-gen" --platform nvidia --steps 20 -o "$b"
fi
a=$(realpath "$a")
b=$(realpath "$b")

# Timings differ from run to run; everything else must not.
without_timings() {
  python3 -c '
import json, sys
TIMINGS = {"elapsed_seconds", "gb_per_second", "cpu_seconds", "timings_seconds", "read_seconds",
           "analyze_seconds"}
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMINGS}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(sys.stdin)), indent=1))'
}
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
for command in "stats $a --format json" "compare $a $b --format json"; do
  # shellcheck disable=SC2086  # the command's words
  "$installed" $command | without_timings >installed.json
  # shellcheck disable=SC2086
  "$build/tracefuse" $command | without_timings >built.json
  cmp -s installed.json built.json || { diff installed.json built.json | head -20; fail "tracefuse $command: the installed output differs"; }
done

page=$prefix/share/man/man1/tracefuse.1
[ -f "$page" ] || fail "no man page at $page"
MANWIDTH=100 man -l "$page" >man.txt 2>man.err || { cat man.err; fail "man -l $page failed"; }
grep -q '^NAME' man.txt || fail "the man page has no NAME section"
for command in $("$installed" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NF && !/:$/ {print $1}'); do
  grep -q "Usage: tracefuse $command " man.txt || fail "the man page lacks 'tracefuse $command'"
done

for script in compare-array.sbatch submit; do
  grep -qx "installed_tracefuse=\"$prefix/bin/tracefuse\"" "$prefix/share/tracefuse/slurm/$script" ||
    fail "$script does not name the installed tracefuse"
done

version=$("$installed" --version)
echo "$version" | head -1 | grep -Eq '^tracefuse [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version: $version"
echo "$version" | grep -Eq '^commit [0-9a-f]{12}(-dirty)?, [A-Za-z]+ build$|^commit unknown, ' || fail "--version: $version"
echo "$version" | grep -Eq '^built with simdjson [0-9.]+, oneTBB [0-9.]+, Hyperscan [0-9.]+, ISA-L [0-9.]+$' ||
  fail "--version: $version"
echo "installed into $prefix: stats and compare as the build tree's, man page and Slurm scripts in place"
