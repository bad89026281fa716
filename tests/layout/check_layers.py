#!/usr/bin/env python3
"""Fails when a file in src/ includes a header from a layer above its own.

The layers, from the bottom, are the folders of src/ (docs/design.md
"Layers"). A file may include its own layer's headers and those of any layer
below. The few includes that still climb are listed in CLIMBS with the reason
they are there; a new one fails this test, and so does a listed one that is
gone (so the list only shrinks)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

LAYERS = ["util", "model", "transport", "log", "profiles", "auth", "ledger", "engine", "core", "api"]

# (file, included header): why it still climbs. Each is a type or helper in
# the wrong folder, to be moved down.
CLIMBS = {
    ("util/json_util.cpp", "result.hpp"): "result JSON writing lives in util; belongs in model",
    ("model/config.hpp", "transport.hpp"): "the HTTP types (Headers) belong in model",
    ("model/config.cpp", "rsa_signature.hpp"): "base64 belongs in util",
}


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
