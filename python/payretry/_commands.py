"""The console scripts ``payretry`` and ``payretry-sim``.

The wheel carries the command line and the simulator as programs of their own
(``payretry/_bin/``, built from the same core as the extension), so that a
Python user has the simulator the examples run against without installing
anything else. pip's console scripts can only call a Python function: these
replace the Python process with the program, so that its exit code, its
signals (the simulator runs until SIGINT or SIGTERM, and whoever started it
holds its pid) and its standard streams are the program's own.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def _exec(name: str) -> NoReturn:
    program = os.path.join(_BIN, name)
    if not os.access(program, os.X_OK):
        sys.exit(f"{name}: {program} is missing from this installation of payretry")
    # argv[0] is the command's own name, as the user typed it on a system install.
    os.execv(program, [name, *sys.argv[1:]])


def cli() -> NoReturn:
    """``payretry``: submit, query and reconcile payments from the shell."""
    _exec("payretry")


def sim() -> NoReturn:
    """``payretry-sim``: the local payment provider with injectable faults."""
    _exec("payretry-sim")
