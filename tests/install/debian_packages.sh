#!/usr/bin/env bash
# The Debian packages as a user gets them: `cpack -G DEB` from the build tree
# (cmake/Packaging.cmake), `dpkg -i` of all of them into this very system,
# then the C example built with nothing but `pkg-config --cflags --libs
# payretry` against the installed -dev package, run against the installed
# payretry-sim, and held to the simulator's truth; the man pages payretry(1)
# and payretry-sim(1) found and read by man. The packages are purged at
# the end whatever happens. Needs root (or password-less sudo): it changes
# /usr; without either it is skipped (exit 77), never half-run.
# usage: debian_packages.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sim_lib.sh"

sudo=
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then sudo=sudo; else
    echo "skipped: installing packages needs root or password-less sudo"
    exit 77
  fi
fi

packages=(libpayretry0 libpayretry-dev payretry-cli payretry-sim)
# Installed by someone else: this test would replace and then purge them.
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [ -n "$status" ] && [ "${status% not-installed}" = "$status" ]; then
    echo "$p is already on this system ($status); remove it first: dpkg --purge ${packages[*]}" >&2
    exit 1
  fi
done

work=$(mktemp -d)
sim_pid=
installed=
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null
  if [ -n "$installed" ]; then
    $sudo dpkg --purge "${packages[@]}" >/dev/null || echo "dpkg --purge ${packages[*]} failed" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Packages into the work dir: the build tree is left as it was. cpack reads
# CPackConfig.cmake as CMake: a warning there (a badly escaped value) is a bug.
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1 \
  || { cat "$work/cpack.log"; exit 1; }
if grep -qi 'warning' "$work/cpack.log"; then echo "cpack warned:"; cat "$work/cpack.log"; exit 1; fi
debs=("$work"/packages/*.deb)
echo "built ${#debs[@]} packages:"
for deb in "${debs[@]}"; do
  echo "== $(basename "$deb")"
  dpkg-deb -I "$deb"
  dpkg-deb -c "$deb" | awk '{print "   " $6 ($7 ? " " $7 " " $8 : "")}'
done
[ ${#debs[@]} -eq ${#packages[@]} ] || { echo "expected ${#packages[@]} packages"; exit 1; }

field() { dpkg-deb -f "$work/packages/$1"_*.deb "$2"; }
# Depends as a user's apt would resolve them: the library's from its ELF
# NEEDED entries, the others naming the library of this same build exactly.
version=$(field libpayretry0 Version)
case "$(field libpayretry0 Depends)" in *libcurl*) ;; *) echo "libpayretry0 does not depend on libcurl"; exit 1 ;; esac
for p in libpayretry-dev payretry-cli; do
  case "$(field "$p" Depends)" in *"libpayretry0 (= $version)"*) ;;
    *) echo "$p does not depend on libpayretry0 (= $version)"; exit 1 ;; esac
done
case "$(field payretry-sim Depends)" in *libpayretry*) echo "payretry-sim needs no libpayretry"; exit 1 ;; esac
# Each program's package carries its man page, compressed as Debian's are.
for p in payretry-cli:payretry payretry-sim:payretry-sim; do
  grep -q " \./usr/share/man/man1/${p#*:}\.1\.gz\$" <<<"$(dpkg-deb -c "$work/packages/${p%%:*}"_*.deb)" \
    || { echo "${p%%:*} has no /usr/share/man/man1/${p#*:}.1.gz"; exit 1; }
done

installed=yes
$sudo dpkg -i "${debs[@]}"
for p in "${packages[@]}"; do
  grep -q "Apache License" "/usr/share/doc/$p/copyright" || { echo "$p has no /usr/share/doc/$p/copyright"; exit 1; }
done
grep -q '/payretryConfig.cmake$' <<<"$(dpkg -L libpayretry-dev)" || { echo "libpayretry-dev has no CMake config"; exit 1; }

# Only the system's pkg-config search path, headers and library.
unset PKG_CONFIG_PATH LD_LIBRARY_PATH
echo "pkg-config --cflags --libs payretry: $(pkg-config --cflags --libs payretry)"
cc -std=c99 -Wall -Wextra -pedantic -Werror -o "$work/example" "$src/examples/submit_example.c" \
   $(pkg-config --cflags --libs payretry) -lpthread
# (Compared by real path: with a merged /usr the loader may say /lib/...)
packaged=$(dpkg -L libpayretry0 | grep '/libpayretry\.so\.[0-9]*$')
loaded=$(ldd "$work/example" | awk '$1 ~ /^libpayretry\.so/ {print $3}')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$packaged")" ] \
  || { echo "example loads libpayretry from '$loaded', not the package's $packaged"; exit 1; }

sim=$(command -v payretry-sim)
[ "$sim" = /usr/bin/payretry-sim ] || { echo "payretry-sim on PATH is $sim, not the package's"; exit 1; }
payretry version

# man finds the packages' pages by name, and they hold the programs' --help:
# the usage line, and (payretry) every command's own help.
for page in payretry payretry-sim; do
  path=$(man -w "$page")
  [ "$path" = "/usr/share/man/man1/$page.1.gz" ] || { echo "man -w $page: $path, not the package's page"; exit 1; }
done
text=$(LC_ALL=C MANWIDTH=200 man -l /usr/share/man/man1/payretry.1.gz 2>&1)
for needed in 'submit, query and reconcile payments' 'payretry COMMAND \[options\]' \
    'payretry ledger prune --older-than DURATION' 'payretry webhook apply --request FILE' 'EXIT CODES'; do
  grep -q -- "$needed" <<<"$text" || { echo "man payretry lacks \"$needed\":"; echo "$text"; exit 1; }
done
text=$(LC_ALL=C MANWIDTH=200 man -l /usr/share/man/man1/payretry-sim.1.gz 2>&1)
for needed in 'a local payment provider with injectable faults' '--profile NAME' '--webhook-faults dup=P'; do
  grep -q -- "$needed" <<<"$text" || { echo "man payretry-sim lacks \"$needed\":"; echo "$text"; exit 1; }
done
echo "man pages: payretry(1), payretry-sim(1)"

start_sim "$work" "$sim" --seed 7 --fault lost_response=0.1 --fault 503=0.1
"$work/example" "$sim_url" 50 4 "$work/outcomes.txt"
python3 "$here/check_charges.py" "$sim_url" "$work/outcomes.txt" 50

# The installed command line, through the installed library: one payment,
# its first attempt scripted to meet no fault, charged exactly once.
curl -sf -X POST "$sim_url/__admin/script" -d '{"order_id":"cli-order-1","faults":["none"]}' >/dev/null
PAYRETRY_CONFIG="{\"provider\":\"stripe\",\"base_url\":\"$sim_url\",\"create_path\":\"/v1/payments\",
  \"auth\":{\"bearer\":\"sk_test_cli\"},\"ledger\":\"sqlite://$work/cli-ledger.db\"}" \
  payretry submit cli-order-1 --body '{"order_id":"cli-order-1","amount":700,"currency":"eur"}'
charges=$(curl -sf "$sim_url/__admin/truth?order_id=cli-order-1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["charges"])')
[ "$charges" = 1 ] || { echo "payretry submit: cli-order-1 charged $charges times"; exit 1; }
echo "Debian packages: built, installed, used by a pkg-config consumer, purged"
