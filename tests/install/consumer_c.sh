#!/usr/bin/env bash
# Builds the C example against an *installed* payretry, using nothing but
# `pkg-config --cflags --libs payretry`, and runs it against the simulator.
# usage: consumer_c.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sim_lib.sh"
work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name payretry.pc | head -n1)")
export PKG_CONFIG_PATH=$pc
libdir=$(pkg-config --variable=libdir payretry)

# The build tree's headers and library must not be visible: only the prefix.
cc -std=c99 -Wall -Wextra -pedantic -Werror -o "$work/example" "$src/examples/submit_example.c" \
   $(pkg-config --cflags --libs payretry) -lpthread
# (ldd's output is captured first: grep -q closing the pipe early would make
# ldd die of SIGPIPE and pipefail report a failure.)
links=$(LD_LIBRARY_PATH=$libdir ldd "$work/example")
case "$links" in *"$work/prefix"*) ;; *) echo "example does not link the installed libpayretry"; exit 1 ;; esac

# The same C program, and a C++ program through payretry.hpp, both built
# with the CMake package: find_package(payretry).
mkdir -p "$work/cmake-consumer"
cat > "$work/cmake-consumer/consumer.cpp" <<'CPP'
#include <payretry/payretry.hpp>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  try {
    pay::client c(std::string(R"({"provider":"stripe","create_path":"/v1/payments","ledger":"memory:","base_url":")") +
                  argv[1] + "\"}");
    const std::string body = R"({"order_id":"cxx-consumer-1","amount":100})";
    pay::submit_options o;
    o.idempotency_key = "cxx-consumer-key-1";  // fixed: the simulator's seeded faults are then repeatable
    pay::result r = c.submit("cxx-consumer-1", body, o);
    std::cout << "C++ consumer: " << pay::to_string(r.outcome()) << "\n";
    return r.outcome() == pay::outcome::succeeded ? 0 : 1;
  } catch (const pay::error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
CPP
cat > "$work/cmake-consumer/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(consumer C CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(payretry 0 REQUIRED)
find_package(Threads REQUIRED)
add_executable(example "$src/examples/submit_example.c")
target_link_libraries(example PRIVATE payretry::payretry Threads::Threads)
add_executable(cxx_consumer consumer.cpp)
target_link_libraries(cxx_consumer PRIVATE payretry::payretry)
CMK
cmake -S "$work/cmake-consumer" -B "$work/cmake-consumer/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-consumer/build" >/dev/null
links=$(LD_LIBRARY_PATH=$libdir ldd "$work/cmake-consumer/build/example")
case "$links" in *"$work/prefix"*) ;; *) echo "find_package consumer does not link the installed libpayretry"; exit 1 ;; esac

start_sim "$work" "$build/sim/payretry-sim" --seed 7 --fault lost_response=0.1 --fault 503=0.1

LD_LIBRARY_PATH=$libdir "$work/example" "$sim_url" 50 4 "$work/outcomes.txt"
python3 "$here/check_charges.py" "$sim_url" "$work/outcomes.txt" 50
LD_LIBRARY_PATH=$libdir "$work/cmake-consumer/build/example" "$sim_url" 10 2 >/dev/null
LD_LIBRARY_PATH=$libdir "$work/cmake-consumer/build/cxx_consumer" "$sim_url"
echo "installed-library consumers (C with pkg-config, C and C++ with find_package): 0 duplicate charges"
