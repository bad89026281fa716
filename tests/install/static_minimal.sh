#!/usr/bin/env bash
# The smallest build a user can ask for: libpayretry as a static archive with
# only the memory ledger (BUILD_SHARED_LIBS=OFF, PAYRETRY_WITH_SQLITE=OFF,
# PAYRETRY_WITH_POSTGRESQL=OFF, warnings as errors), installed, then the C
# example built against the archive twice (plain `pkg-config --libs`, which a
# static build's .pc file fills with its dependencies, and find_package) and
# run against the simulator. An SQLite ledger URL must be refused with a
# message that names the missing option.
# usage: static_minimal.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DPAYRETRY_WITH_SQLITE=OFF -DPAYRETRY_WITH_POSTGRESQL=OFF -DPAYRETRY_ENABLE_WERROR=ON \
  -DPAYRETRY_BUILD_TESTS=OFF -DPAYRETRY_BUILD_CLI=OFF -DPAYRETRY_BUILD_SIM=OFF -DPAYRETRY_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
lib=$(find "$work/prefix" -name libpayretry.a)
[ -n "$lib" ] || { echo "no libpayretry.a installed"; exit 1; }
if find "$work/prefix" -name 'libpayretry.so*' | grep -q .; then echo "a shared library was installed too"; exit 1; fi
if nm -C "$lib" | grep -qi 'sqlite3_\|PQconnect'; then echo "the archive still uses SQLite or libpq"; exit 1; fi

export PKG_CONFIG_PATH=$(dirname "$(find "$work/prefix" -name payretry.pc)")
cc -std=c99 -Wall -Wextra -pedantic -Werror -o "$work/example_pc" "$src/examples/submit_example.c" \
   $(pkg-config --cflags --libs payretry)
if ldd "$work/example_pc" | grep -q libpayretry; then echo "the example links a shared libpayretry"; exit 1; fi

mkdir -p "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(consumer C)
find_package(payretry 0 REQUIRED)
find_package(Threads REQUIRED)
add_executable(example "$src/examples/submit_example.c")
target_link_libraries(example PRIVATE payretry::payretry Threads::Threads)
CMK
cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null

"$build/sim/payretry-sim" --port 0 --seed 11 --fault lost_response=0.1 --fault 503=0.1 > "$work/sim.out" &
sim_pid=$!
for _ in $(seq 400); do grep -q listening "$work/sim.out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/sim.out" | head -n1)
[ -n "$port" ] || { echo "simulator did not start"; exit 1; }

"$work/example_pc" "http://127.0.0.1:$port" 30 3 "$work/outcomes.txt"
"$work/consumer/build/example" "http://127.0.0.1:$port" 10 2 >/dev/null
[ "$(wc -l < "$work/outcomes.txt")" -eq 30 ] || { echo "expected 30 outcomes"; exit 1; }
dups=$(curl -s "http://127.0.0.1:$port/__admin/truth" | python3 -c 'import json,sys; print(json.load(sys.stdin)["duplicates"])')
[ "$dups" = 0 ] || { echo "duplicate charges: $dups"; exit 1; }

# A backend left out is a clear error when a config names it.
cat > "$work/sqlite_refused.c" <<'C'
#include <payretry/payretry.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  pay_client *c = NULL;
  int rc = pay_client_new(&c, "{\"provider\":\"stripe\",\"base_url\":\"http://127.0.0.1:1\","
                              "\"ledger\":\"sqlite:///tmp/payretry-static-minimal.db\"}", NULL);
  const char *msg = pay_error_last()->message;
  printf("rc=%d %s\n", rc, msg);
  if (c) pay_client_free(c);
  return rc != PAY_OK && strstr(msg, "PAYRETRY_WITH_SQLITE=OFF") ? 0 : 1;
}
C
cc -std=c99 -o "$work/sqlite_refused" "$work/sqlite_refused.c" $(pkg-config --cflags --libs payretry)
"$work/sqlite_refused"
echo "static, memory-only libpayretry: pkg-config and find_package consumers ran, 0 duplicate charges"
