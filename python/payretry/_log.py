"""Where the library's attempt log goes: ``logging.getLogger("payretry")``.

Each record's message is one JSON line (docs/design.md "Attempt log"), already redacted by the
library. The C levels (10, 20, 30, 40) are the logging module's.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("payretry")


def sink(level: int, line: str) -> None:
    # Called from the thread that runs the payment, with the GIL re-acquired.
    lvl = level if level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR) else logging.WARNING
    if logger.isEnabledFor(lvl):
        logger.log(lvl, line)
