#!/usr/bin/env bash
# `pip install --no-build-isolation .` from a Python whose environment lacks the package wheel (a
# venv of Debian's Python: pip and setuptools 66 only, as pyenv's and conda's venvs are): pip's
# metadata step used to stop with "error: invalid command 'bdist_wheel'". setup.py now takes
# Debian's python3-wheel where that Python has none: the metadata is made (pip --dry-run, which
# builds nothing). Where no wheel is found at all, setup.py stops with one line saying what to
# install, before anything is built.
#   install_without_wheel.sh SOURCE_DIR
set -euo pipefail
src=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 -m venv "$dir/venv"
venv=$dir/venv/bin/python
if "$venv" -c 'import wheel' 2>/dev/null; then
  echo "install_without_wheel: FAIL: the venv has wheel; the test needs one without" >&2
  exit 1
fi
out=$(cd "$dir" && "$venv" -m pip install --no-build-isolation --no-index --dry-run "$src" 2>&1) || {
  echo "install_without_wheel: FAIL: pip install --dry-run in a venv without wheel: $out" >&2
  exit 1
}
grep -q '^Would install tracefuse-' <<<"$out" || {
  echo "install_without_wheel: FAIL: pip did not say it would install tracefuse: $out" >&2
  exit 1
}
# No wheel anywhere (Debian's hidden): one line on stderr, exit 1, nothing built.
err=$(cd "$src" && "$venv" -c '
import os, runpy, sys
isfile = os.path.isfile
os.path.isfile = lambda p: False if "dist-packages" in p else isfile(p)
sys.argv = ["setup.py", "dist_info", "--output-dir", sys.argv[1]]
runpy.run_path("setup.py", run_name="__main__")' "$dir" 2>&1 >/dev/null) && {
  echo "install_without_wheel: FAIL: setup.py went on without any wheel" >&2
  exit 1
}
want="error: building tracefuse for $venv needs the package wheel (or setuptools 70.1 or later): install it into that Python (python -m pip install wheel), or build with /usr/bin/python3 -m pip install --no-build-isolation ."
[ "$err" = "$want" ] || {
  printf 'install_without_wheel: FAIL: without any wheel, stderr is\n%s\nnot\n%s\n' "$err" "$want" >&2
  exit 1
}
echo "install_without_wheel: ok (metadata made with Debian's wheel; without any, one line)"
