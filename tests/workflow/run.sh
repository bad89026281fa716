#!/usr/bin/env bash
# run.sh BUILD_DIR [DRIVER_ARGS...]: readies a Python that imports dbos,
# stripe (examples/dbos/requirements.txt) and the payretry package of this
# checkout, then runs dbos_crash_test.py with it.
#
#  - dbos and stripe: a venv under BUILD_DIR keyed by the requirements' hash
#    and the Python version, made once. Without venv/ensurepip or the package
#    index: skipped (77), or a failure with PAYRETRY_REQUIRE_MOCKS=1 (CI).
#  - payretry: the package the Python package's own test installed
#    (tests/python/run_tests.sh, BUILD_DIR/tests/python/work/venv) while
#    nothing in python/, src/ or include/ is newer than its extension; CI runs
#    that test first (DEPENDS), so nothing is compiled twice there. Else it
#    is installed into this venv from ./python (no build isolation, a build
#    folder kept under BUILD_DIR, so a later change recompiles only what
#    changed), again whenever the checkout is newer than that install.
#  - PostgreSQL: PAYRETRY_TEST_PG_URL (tests/ledger/pg_cluster.sh); the driver
#    skips without it unless PAYRETRY_REQUIRE_PG=1.
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [dbos_crash_test.py args]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_MOCKS "$@"; }

if [ -z "${PAYRETRY_TEST_PG_URL:-}" ]; then
  # Before any install: without PostgreSQL there is nothing to run.
  [ "${PAYRETRY_REQUIRE_PG:-}" = 1 ] && { echo "FAIL: PAYRETRY_REQUIRE_PG=1 but PAYRETRY_TEST_PG_URL is not set" >&2; exit 1; }
  echo "skipped: PAYRETRY_TEST_PG_URL not set (tests/ledger/pg_cluster.sh start DIR)"
  exit 77
fi

python=${PYTHON:-$(command -v python3 || true)}
[ -n "$python" ] || missing "python3 is not installed"
"$python" -c 'import venv, ensurepip' 2>/dev/null || missing "$python has no venv/ensurepip module (Debian: python3-venv)"
req=$repo/examples/dbos/requirements.txt
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
hash=$({ cat "$req"; echo "python $pyver"; } | sha256sum | cut -c1-16)
work=$build/tests/workflow
venv=$work/venv-$hash
mkdir -p "$work"

# One install at a time; a venv is used only once complete (.complete last).
(
  flock 9
  [ -f "$venv/.complete" ] && exit 0
  rm -rf "$venv"
  echo "installing dbos and stripe into $venv (once)"
  "$python" -m venv "$venv" || exit 3
  log=$venv/pip-install.log
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >"$log" 2>&1; then
    index=${PIP_INDEX_URL:-https://pypi.org/simple}
    if ! "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
           "${index%/}/pip/" >/dev/null 2>&1; then
      rm -rf "$venv"
      exit 2
    fi
    tail -20 "$log" >&2
    rm -rf "$venv"
    exit 4
  fi
  touch "$venv/.complete"
) 9>"$work/venv.lock"
case $? in
  0) ;;
  2) missing "the package index (${PIP_INDEX_URL:-https://pypi.org/simple}) is unreachable: cannot install dbos" ;;
  3) missing "$python -m venv failed" ;;
  *) echo "FAIL: installing $req failed (the index is reachable)" >&2; exit 1 ;;
esac

newer_than() { [ -n "$(find "$repo/python" "$repo/src" "$repo/include" -newer "$1" -type f -print -quit)" ]; }

# The package test's install, when current: its payretry folder alone is put
# on PYTHONPATH (a link), so nothing else of that venv leaks in.
pkg_py=$build/tests/python/work/venv/bin/python
ext=$("$pkg_py" -c 'import payretry._payretry as m; print(m.__file__)' 2>/dev/null)
link=$work/payretry-path
if [ -n "$ext" ] && ! newer_than "$ext"; then
  mkdir -p "$link"
  ln -sfn "$(dirname "$ext")" "$link/payretry"
fi
# Its extension must load in this venv's interpreter too (the same Python).
if [ -n "$ext" ] && ! newer_than "$ext" && PYTHONPATH=$link "$venv/bin/python" -c 'import payretry' 2>/dev/null; then
  export PYTHONPATH=$link
  echo "payretry: the Python package test's install ($(dirname "$ext"))"
else
  stamp=$venv/payretry-installed
  if [ ! -f "$stamp" ] || newer_than "$stamp" || ! "$venv/bin/python" -c 'import payretry' 2>/dev/null; then
    echo "installing ./python into $venv (the first time: minutes)"
    rm -f "$stamp"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check scikit-build-core pybind11 ||
      missing "pip could not install scikit-build-core and pybind11"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
        -Cbuild-dir="$work/python-build" "$repo/python" || { echo "FAIL: pip install ./python failed" >&2; exit 1; }
    touch "$stamp"
  fi
  echo "payretry: installed into $venv from ./python"
fi

exec "$venv/bin/python" "$here/dbos_crash_test.py" --build "$build" "$@"
