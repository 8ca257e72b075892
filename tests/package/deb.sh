#!/usr/bin/env bash
# The Debian package: builds it from the existing build with CPack (which builds nothing new when
# the tree is built: its `preinstall` step is the `all` target), checks its control fields and
# contents (the programs, the library, the copyright file naming Apache-2.0, the README and examples,
# paratune-sim-trial's scenarios), then -- as root -- installs it with `dpkg -i`, runs `paratune
# presets` from /usr/bin, a short tune study of paratune-sim-trial from /usr/bin over the installed
# example space, builds examples/consumer against /usr (tests/package/consumer.sh --system) and
# removes the package again (always, also when a step fails).
#
# Usage: deb.sh BUILD_DIR
# Not root: the install part is skipped with a message, or fails when PARATUNE_REQUIRE_SERVERS=1
# (CI). It is skipped the same way when a package paratune is installed already (the test would
# replace it, then remove it): remove it first with `dpkg -r paratune`. The install needs the
# package's Depends on the machine already (scripts/setup.sh installs them): no apt-get here.
set -euo pipefail
build=$(cd "${1:?usage: deb.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/paratune-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "deb: $*" >&2; exit 1; }

# --- Build the package (output and CPack's staging go to $work, not the build directory).
start=$SECONDS
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack failed"; }
debs=("$work"/out/paratune_*.deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || fail "cpack wrote no single paratune_*.deb: $(ls "$work/out")"
deb=${debs[0]}
echo "deb: built ${deb##*/} ($(du -k "$deb" | cut -f1) KiB) in $((SECONDS - start)) s"

# --- Control fields.
field() { dpkg-deb --field "$deb" "$1"; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[[ $(field Package) == paratune ]] || fail "Package is '$(field Package)', not paratune"
[[ $(field Version) == "$version" ]] || fail "Version is '$(field Version)', not the project's $version"
[[ $(field Maintainer) == *@* ]] || fail "Maintainer '$(field Maintainer)' names no address"
depends=$(field Depends)
echo "deb: Depends: $depends"
# dpkg-shlibdeps computed Depends: the package that holds each shared library a program links
# (on this machine, found by dpkg -S) must be named there.
dpkg-deb -x "$deb" "$work/root"
for program in paratune paratune-slurm-job paratune-train paratune-sim-trial; do
  [[ -x $work/root/usr/bin/$program ]] || fail "no /usr/bin/$program in the package"
  readelf -d "$work/root/usr/bin/$program" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'
done | sort -u >"$work/sonames"
ldconfig -p >"$work/ldconfig"
while read -r soname; do
  path=$(awk -v s="$soname" '$1 == s && /x86-64/ { print $NF; exit }' "$work/ldconfig")
  [[ -n $path ]] || fail "$soname (linked by a program) is not a library of this machine"
  owner=
  for candidate in "$path" "/usr$path" "$(realpath "$path")"; do
    owner=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && [[ -n $owner ]] && break
  done
  [[ -n $owner ]] || fail "no Debian package holds $path ($soname)"
  [[ ", $depends," == *", $owner "* || ", $depends," == *", $owner,"* ]] ||
    fail "Depends does not name $owner, which holds $soname"
done <"$work/sonames"

# --- Contents: the programs, the headers, the library, the CMake package and paratune.pc, all under /usr.
dpkg-deb --contents "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$work/contents"
outside=$(grep -v '^/usr/' "$work/contents" | grep -vx '/' || true)
[[ -z $outside ]] || fail "files outside /usr: $outside"
# The Python module where the build has it (a sanitized build has none: PARATUNE_BUILD_PYTHON is off there).
python_module=0
compgen -G "$build/python/paratune/_core*.so" >/dev/null && python_module=1
python_files=()
((python_module)) && python_files=('/usr/lib/python3/dist-packages/paratune/__init__\.py'
  '/usr/lib/python3/dist-packages/paratune/__init__\.pyi' '/usr/lib/python3/dist-packages/paratune/_core\..*\.so')
for pattern in "${python_files[@]}" '/usr/bin/paratune' '/usr/bin/paratune-slurm-job' '/usr/bin/paratune-train' \
  '/usr/include/paratune/spec/model.h' '/usr/include/paratune/cost/estimate.h' '/usr/lib/.*libparatune\.a' \
  '/usr/lib/.*cmake/paratune/paratuneConfig\.cmake' '/usr/lib/.*cmake/paratune/paratuneTargets\.cmake' \
  '/usr/lib/.*pkgconfig/paratune\.pc' '/usr/bin/paratune-sim-trial' '/usr/share/paratune/scenarios/a5000-8\.yaml' \
  '/usr/share/doc/paratune/copyright' '/usr/share/doc/paratune/README\.md' '/usr/share/doc/paratune/CHANGELOG\.md' \
  '/usr/share/doc/paratune/examples/tune/space\.yaml'; do
  grep -qx "$pattern" "$work/contents" || fail "the package holds no $pattern"
done
# Every example and every scenario of the source tree (the README's commands name files as examples/...).
for pair in "examples:/usr/share/doc/paratune/examples" "bench/simcluster/scenarios:/usr/share/paratune/scenarios" \
  "docs:/usr/share/doc/paratune/docs" "data/published-runs:/usr/share/paratune/published-runs"; do
  source=${pair%%:*} target=${pair#*:}
  while read -r file; do
    grep -qx "$target/$file" "$work/contents" || fail "the package holds no $target/$file (from $source/)"
  done < <(cd "$here/../../$source" && find . -type f | sed 's|^\./||')
done
# The copyright file: Debian's machine-readable format (DEP-5), the whole work under Apache-2.0, as LICENSE.
copyright=$work/root/usr/share/doc/paratune/copyright
head -1 "$copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "copyright: the first line is not DEP-5's Format: field"
awk '/^Files: \*$/ { files = 1; next } files && /^License:/ { print $2; exit }' "$copyright" | grep -qx 'Apache-2.0' ||
  fail "copyright: the stanza Files: * names no License: Apache-2.0"
grep -q '^License: Apache-2.0$' "$copyright" && grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright" ||
  fail "copyright: no License: Apache-2.0 paragraph pointing at /usr/share/common-licenses/Apache-2.0"
cmp -s "$here/../../LICENSE" /usr/share/common-licenses/Apache-2.0 || fail "LICENSE is not the Apache-2.0 text Debian ships"
headers=$(grep -c '^/usr/include/paratune/.*\.h$' "$work/contents")
installed=$(cd "$here/../../include" && find paratune -name '*.h' | wc -l)
((headers == installed)) || fail "the package holds $headers headers, include/paratune/ has $installed"
echo "deb: control fields and contents checked ($(wc -l <"$work/contents") entries, $headers headers)"

# --- Install, run, build against it, remove.
skip() {
  if [[ ${PARATUNE_REQUIRE_SERVERS:-0} == 1 ]]; then fail "$* (PARATUNE_REQUIRE_SERVERS=1)"; fi
  echo "deb: install not checked: $*"
  exit 0
}
((EUID == 0)) || skip "dpkg -i needs root"
# One install at a time on this machine (a sanitized and a Release suite may run together).
exec 9>/tmp/paratune-deb-test.lock
flock 9
status=$(dpkg-query -W -f='${db:Status-Status}' paratune 2>/dev/null || true)
if [[ -n $status && $status != not-installed ]]; then
  skip "a package paratune is installed already (dpkg -r paratune removes it)"
fi
trap 'dpkg -r paratune >/dev/null 2>&1 || echo "deb: dpkg -r paratune failed" >&2; rm -rf "$work"' EXIT
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i failed"; }
presets=$(/usr/bin/paratune presets) || fail "/usr/bin/paratune presets failed"
grep -q 'llama3.1-8b' <<<"$presets" || fail "/usr/bin/paratune presets does not list llama3.1-8b: $presets"
echo "deb: installed; /usr/bin/paratune presets lists $(grep -c . <<<"$presets") lines"
/usr/bin/paratune-train --help >/dev/null || fail "/usr/bin/paratune-train --help failed"
# paratune-sim-trial from /usr/bin reads the installed scenarios; a study over the installed example
# space, as the README's first tune example, from a directory with only the installed examples in it.
mkdir "$work/study" && ln -s /usr/share/doc/paratune/examples "$work/study/examples"
(cd "$work/study" && /usr/bin/paratune tune --space examples/tune/space.yaml --study s.db --steps 3 --max-trials 2 \
  --command '/usr/bin/paratune-sim-trial --scenario qwen2-a5000' \
  >"$work/tune.log" 2>&1 && /usr/bin/paratune-sim-trial --scenario qwen2-a5000 --steps 2 --time-scale 0 \
  --params '{"dp": 2, "tp": 2, "pp": 2, "mbs": 1, "zero": 1, "ckpt": false}' >>"$work/tune.log" 2>&1) ||
  { cat "$work/tune.log" >&2; fail "paratune-sim-trial from /usr/bin failed"; }
grep -q '^trials: 2 completed' "$work/tune.log" || { cat "$work/tune.log" >&2; fail "the installed tune study did not complete its 2 trials"; }
where=$(/usr/bin/paratune-sim-trial --print-scenarios-dir) || fail "/usr/bin/paratune-sim-trial --print-scenarios-dir failed"
[[ $where == /usr/share/paratune/scenarios ]] || fail "/usr/bin/paratune-sim-trial reads its scenarios from $where"
echo "deb: /usr/bin/paratune-sim-trial ran a 2-trial study over the installed examples"
# Debian's python3 finds the module where the package put it, with no PYTHONPATH (from / so that no
# checkout's python/ directory is picked up instead).
if ((python_module)); then
  module=$(cd / && env -u PYTHONPATH /usr/bin/python3 -c 'import paratune; print(paratune.__file__, paratune.load_model("llama3-8b").name)') ||
    fail "import paratune failed with Debian's python3"
  [[ $module == "/usr/lib/python3/dist-packages/paratune/__init__.py llama3-8b" ]] || fail "import paratune found: $module"
  echo "deb: python3 imports paratune from the package"
fi
bash "$here/consumer.sh" --system
dpkg -r paratune >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -r paratune failed"; }
[[ ! -e /usr/bin/paratune && ! -e /usr/include/paratune ]] || fail "dpkg -r left /usr/bin/paratune or /usr/include/paratune"
echo "deb: removed again"
