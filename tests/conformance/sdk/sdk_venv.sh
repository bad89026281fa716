# Sourced by run_sdk_conformance.sh and run_webhooks_sdk.sh: finds or makes
# the venv of the providers' SDKs under $build (requirements.txt and
# constraints.txt, keyed by their hash and the Python version) and sets
# $venv. One install at a time when tests run in parallel; a venv is used
# only once it is complete (.complete is written last). Without Python's
# venv module or the package index it calls `missing` (skip, or fail in CI).
# Needs: $build, $here (this folder), and a `missing` function.
python=${PYTHON:-$(command -v python3 || true)}
[ -n "$python" ] || missing "python3 is not installed"
"$python" -c 'import venv, ensurepip' 2>/dev/null || missing "$python has no venv/ensurepip module (Debian: python3-venv)"

pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
hash=$(cat "$here/requirements.txt" "$here/constraints.txt" | { cat; echo "python $pyver"; } | sha256sum | cut -c1-16)
venv="$build/sdk-conformance-venv-$hash"

# One install at a time when the cases run in parallel; a venv is used only
# once it is complete (.complete is written last).
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$build"
  (
    flock 9
    if [ ! -f "$venv/.complete" ]; then
      rm -rf "$venv"
      echo "installing the providers' SDKs into $venv (once)"
      "$python" -m venv "$venv" || exit 3
      log="$venv/pip-install.log"
      if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q \
             -r "$here/requirements.txt" -c "$here/constraints.txt" >"$log" 2>&1; then
        index=${PIP_INDEX_URL:-https://pypi.org/simple}
        if ! "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
               "${index%/}/pip/" >/dev/null 2>&1; then
          rm -rf "$venv"
          exit 2  # no package index: skip
        fi
        tail -20 "$log" >&2
        rm -rf "$venv"
        exit 4  # the index answers, the install failed: a real failure
      fi
      touch "$venv/.complete"
    fi
  ) 9>"$build/sdk-conformance-venv.lock"
  case $? in
    0) ;;
    2) missing "the package index (${PIP_INDEX_URL:-https://pypi.org/simple}) is unreachable: cannot install the SDKs" ;;
    3) missing "$python -m venv failed" ;;
    *) echo "FAIL: installing the SDKs from requirements.txt failed (the index is reachable)" >&2; exit 1 ;;
  esac
fi
