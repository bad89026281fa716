#!/usr/bin/env python3
"""Fails when a file in src/ includes a header from a layer above its own.

The layers, from the bottom, are the folders of src/ (docs/design.md
"Layers"). A file may include its own layer's headers and those of any layer
below. The build refuses such an include too (each layer's include path stops at
its own folder); this test says which file and which layer in words, and
also catches a folder that is in no layer."""

from __future__ import annotations

import re
import sys
from pathlib import Path

LAYERS = ["util", "model", "transport", "log", "profiles", "auth", "ledger", "engine", "core", "api"]

# (file, included header): why it still climbs. Empty since each layer is a
# CMake OBJECT library whose include path stops at its own folder (src/CMakeLists.txt),
# so a climb no longer compiles; an entry here would need that build rule broken too.
CLIMBS: dict[tuple[str, str], str] = {}


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "src")
    home = {}
    for layer in LAYERS:
        for f in (src / layer).glob("*.?pp"):
            home[f.name] = layer
    unknown = [d.name for d in src.iterdir() if d.is_dir() and d.name not in LAYERS]
    problems = [f"src/{d}/ is no known layer (add it to LAYERS in its place)" for d in unknown]
    seen = set()
    for name, layer in sorted(home.items()):
        for line in (src / layer / name).read_text().splitlines():
            m = re.match(r'#include "([^"/]+)"', line)
            if not m or m.group(1) not in home:
                continue
            target = home[m.group(1)]
            if LAYERS.index(target) <= LAYERS.index(layer):
                continue
            key = (f"{layer}/{name}", m.group(1))
            seen.add(key)
            if key not in CLIMBS:
                problems.append(f"src/{layer}/{name} includes {m.group(1)} from {target}/, a layer above {layer}/")
    for key in sorted(set(CLIMBS) - seen):
        problems.append(f"{key[0]} no longer includes {key[1]}: remove it from CLIMBS")
    for p in problems:
        print(p)
    print(f"{len(home)} files in {len(LAYERS)} layers, {len(seen & set(CLIMBS))} listed climbs, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
