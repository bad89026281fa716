"""The request hook: a Python callable that sees every attempt and every
status lookup before it leaves, and returns the extra headers to send with it
(a signature, say). Wraps the C library's ``pay_request_hook``."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import _payretry as _native
from ._errors import HookError, PayError
from ._headers import Headers, header_pairs


@dataclass(frozen=True)
class AttemptInfo:
    """What is about to be sent: one attempt of a payment, or one status lookup.

    ``path`` is the request target exactly as sent, query included (e.g.
    ``/v1/payments`` or ``/v1/payments?order_id=o1``), and ``body`` the exact
    bytes sent (``b""`` for a GET lookup): sign these. ``repr()`` never shows
    the body."""

    method: str  #: "POST" for a payment; "GET" or "POST" for a lookup
    url: str  #: the full URL
    path: str  #: path and query, as sent
    order_id: str
    idempotency_key: str
    body: bytes = field(repr=False)
    attempt: int  #: 1-based
    unix_time_ms: int  #: wall clock at this attempt, for signatures


#: ``hook(info)`` returns the extra headers of this attempt (a mapping of
#: str to str, or (name, value) pairs), or None for none. Raising stops the
#: payment or the lookup: nothing more of it is sent (see :class:`Client`).
RequestHook = Callable[[AttemptInfo], Optional[Headers]]

# Not "payretry" itself, whose records are the library's JSON lines: a child,
# so that handlers on "payretry" still see these, and can tell them apart.
_logger = logging.getLogger("payretry.hook")

# How many hook exceptions wait for the call that made them; older ones are
# dropped (their call ended some other way, e.g. a lookup in a reconcile pass).
_KEPT_FAILURES = 256


class HookFailures:
    """The exceptions a client's request hook raised, by order id, until the
    call of that order picks its own up to chain it to the error it raises.

    A hook may run on an engine thread while the call that waits for it runs
    on another thread, so the only thing the two share is the order id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_order: OrderedDict[str, BaseException] = OrderedDict()

    def record(self, order_id: str, exc: BaseException) -> None:
        with self._lock:
            self._by_order[order_id] = exc
            self._by_order.move_to_end(order_id)
            while len(self._by_order) > _KEPT_FAILURES:
                self._by_order.popitem(last=False)

    def take(self, order_id: str) -> Optional[BaseException]:
        with self._lock:
            return self._by_order.pop(order_id, None)

    def chain(self, err: PayError, order_id: str) -> PayError:
        """``err``, with the exception the hook raised for ``order_id`` as its
        ``__cause__`` when it is a :class:`HookError` (PAY_EHOOK)."""
        cause = self.take(order_id)
        if cause is not None and isinstance(err, HookError):
            err.__cause__ = cause
            # The type only: the exception's text is the application's and
            # may hold anything; it stays on __cause__ for whoever wants it.
            err.message = f"{err.message} (the request hook raised {type(cause).__name__}; see __cause__)"
            err.args = (err.message,)
        return err


def native_hook(
    user: RequestHook, failures: HookFailures
) -> Callable[[_native.NativeHeaders, str, str, str, str, str, bytes, int, int], bool]:
    """The callable the extension calls before each attempt and lookup, with
    the GIL taken: True to send. It holds ``user`` and ``failures`` but never
    the Client, so that a dropped client is not kept alive by a cycle through
    the C library."""

    def call(
        headers: _native.NativeHeaders,
        method: str,
        url: str,
        path: str,
        order_id: str,
        idempotency_key: str,
        body: bytes,
        attempt: int,
        unix_time_ms: int,
    ) -> bool:
        info = AttemptInfo(method, url, path, order_id, idempotency_key, body, attempt, unix_time_ms)
        try:
            for name, value in header_pairs(user(info), "request hook header"):
                headers.add(name, value)
            return True
        except BaseException as e:  # noqa: B036 - the attempt is refused and the caller gets it
            failures.record(order_id, e)
            # The only trace when the call cannot raise it (a lookup, or an
            # attempt after one that may have been processed: UNKNOWN).
            _logger.warning(
                "payretry request hook raised %s on %s %s (order %s, attempt %d): not sent",
                type(e).__name__,
                method,
                path.split("?", 1)[0],
                order_id,
                attempt,
                exc_info=e,
            )
            return False

    return call
