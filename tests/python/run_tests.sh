#!/bin/sh
# run_tests.sh WORK_DIR SIM: the Python package as a user gets it. A fresh venv
# in WORK_DIR, scikit-build-core/pybind11/pytest/mypy/prometheus_client from PyPI, a real
# (non-editable) `pip install python/` that compiles the C++ core of this
# checkout into the extension, then mypy --strict on the package, its stubs and
# the examples (python/examples/, examples/webhooks/), stubtest of the extension's stub against the built module,
# pytest against the simulator SIM (payretry-sim from the same CMake build),
# and a consumer program copied out of the repository (consumer/) that signs
# every request through its own request hook against `SIM --hmac-secret`.
# PYTHON picks the interpreter (default: python3 on PATH).
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 WORK_DIR PAYRETRY_SIM" >&2
  exit 2
fi
mkdir -p "$1"
work=$(cd "$1" && pwd)
sim=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")  # absolute: the steps below change directory
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
venv="$work/venv"

rm -rf "$venv"
"$python" -m venv "$venv"
py="$venv/bin/python"
# prometheus_client: payretry.prometheus is type-checked and tested (the package itself never needs it).
"$py" -m pip install --quiet --disable-pip-version-check scikit-build-core pybind11 pytest mypy prometheus_client
# Build isolation on purpose: this is the clean-clone path (build deps from PyPI).
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$py" -m pip install --disable-pip-version-check "$repo/python"

# Run from the work dir, so `import payretry` is the installed wheel, never the source tree.
cd "$work"
"$py" -c 'import payretry, sys; print("payretry", payretry.__version__, "from", payretry.__file__); sys.exit(0)'
"$py" -m mypy --strict --cache-dir "$work/mypy-cache" -p payretry
"$py" -m mypy --strict --cache-dir "$work/mypy-cache" "$repo/python/examples/example.py"
# The webhook examples (plain WSGI and ASGI; python/tests/test_webhooks.py runs them).
"$py" -m mypy --strict --cache-dir "$work/mypy-cache" "$repo/examples/webhooks/wsgi_app.py"
"$py" -m mypy --strict --cache-dir "$work/mypy-cache" "$repo/examples/webhooks/asgi_app.py"
"$py" -m mypy.stubtest --allowlist "$repo/python/stubtest-allowlist.txt" payretry._payretry
PAYRETRY_SIM="$sim" "$py" -m pytest -p no:cacheprovider -v -s "$repo/python/tests"

# An application outside the repository: only the installed package to import.
consumer="$work/consumer"
rm -rf "$consumer"
mkdir -p "$consumer"
cp "$repo/tests/python/consumer/signed_payments.py" "$consumer/"
cd "$consumer"
"$py" -m mypy --strict --cache-dir "$work/mypy-cache" signed_payments.py
"$py" -I signed_payments.py "$sim"
