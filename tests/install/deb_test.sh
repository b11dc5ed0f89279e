#!/usr/bin/env bash
# The Debian package, as `cpack -G DEB` builds it in the build directory: its contents (both
# programs, the man page, the Slurm scripts, the rule files), the dependencies dpkg-shlibdeps
# found for the libraries it links, and an install with `dpkg -i` into a fresh root (an empty
# dpkg database under a temporary directory), whose `tracefuse --version` runs and whose Slurm
# scripts name /usr/bin/tracefuse.
#   deb_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb_test: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB --config CPackConfig.cmake -B "$work/out") >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
deb=$(ls "$work"/out/tracefuse_*.deb)
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for path in ./usr/bin/tracefuse ./usr/bin/tracefuse-gen ./usr/share/man/man1/tracefuse.1 \
  ./usr/share/tracefuse/slurm/compare-array.sbatch ./usr/share/tracefuse/slurm/submit \
  ./usr/share/tracefuse/rules/tracefuse.yaml; do
  grep -qx "$path" "$work/contents" || fail "$deb lacks $path"
done
depends=$(dpkg-deb --field "$deb" Depends)
# Not libzstd: tracefuse links it statically (CMakeLists.txt), and tracefuse-gen does not use it.
for library in libtbb libhyperscan5\|libvectorscan libisal libsimdjson libabsl libc6; do
  echo "$depends" | grep -Eq "(^|, )($library)" || fail "Depends lacks $library: $depends"
done

root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
# The fresh root has none of the libraries: --force-depends, and the programs run with the
# host's.
dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
dpkg --root="$root" -s tracefuse | grep -qx 'Status: install ok installed' || fail "not installed"
"$root/usr/bin/tracefuse" --version | head -1 | grep -Eq '^tracefuse [0-9.]+$' ||
  fail "the installed tracefuse --version does not run"
grep -qx 'installed_tracefuse="/usr/bin/tracefuse"' "$root/usr/share/tracefuse/slurm/compare-array.sbatch" ||
  fail "the packaged compare-array.sbatch does not name /usr/bin/tracefuse"
echo "$(basename "$deb"): contents, Depends ($depends) and dpkg -i into a fresh root as expected"
