"""A provider's notification (webhook): what the HTTP server received goes in
as it was received, what to answer comes back (pay_webhook_apply,
include/payretry/webhook.h). Marshalling only: the library verifies, reads
and records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Tuple, Union

from ._errors import InvalidArgumentError
from ._result import MoneyState

#: A request's headers as a web framework hands them over: a mapping (a dict,
#: ``email.message.Message``/``http.client.HTTPMessage``, Werkzeug's or
#: Starlette's ``Headers``; a value that is a list or tuple stands for the
#: header repeated), or (name, value) pairs. Names and values may be str or
#: bytes (an ASGI scope's raw headers; bytes are read as Latin-1, as HTTP
#: does).
WebhookHeaders = Union[
    Mapping[Any, Any],
    Iterable[Tuple[Union[str, bytes], Union[str, bytes]]],
]

#: A notification's raw body, as received.
WebhookBody = Union[bytes, bytearray, memoryview]


def _header_text(what: str, v: Any) -> str:
    if isinstance(v, str):
        s = v
    elif isinstance(v, (bytes, bytearray, memoryview)):
        s = bytes(v).decode("latin-1")
    else:
        raise TypeError(f"webhook header {what}s must be str or bytes, not {type(v).__name__}")
    if "\x00" in s:
        raise InvalidArgumentError(InvalidArgumentError.code, f"a webhook header {what} contains a NUL character")
    return s


def _all_items(headers: Any) -> List[Any]:
    # Every value of a multi-valued mapping: Werkzeug's MultiDict hands them
    # over with items(multi=True); email.message.Message, Werkzeug's and
    # Starlette's Headers and multidict's CIMultiDict with plain items(). In
    # a plain dict, a list value stands for the header repeated.
    try:
        return list(headers.items(multi=True))
    except TypeError:
        return list(headers.items())


def webhook_header_pairs(headers: Any) -> List[Tuple[str, str]]:
    """``headers`` (see :data:`WebhookHeaders`) as (name, value) str pairs,
    every value of a repeated header kept, in order."""
    if headers is None:
        return []
    if isinstance(headers, (str, bytes, bytearray)):
        raise TypeError(f"webhook headers must be a mapping or (name, value) pairs, not {type(headers).__name__}")
    try:
        items = _all_items(headers) if isinstance(headers, Mapping) or hasattr(headers, "items") else list(headers)
    except TypeError:
        raise TypeError(
            f"webhook headers must be a mapping or (name, value) pairs, not {type(headers).__name__}"
        ) from None
    out: List[Tuple[str, str]] = []
    for pair in items:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError("webhook headers must be a mapping or (name, value) pairs")
        name, value = pair
        n = _header_text("name", name)
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            out.append((n, _header_text("value", v)))
    return out


def webhook_body(body: Any) -> bytes:
    """The raw body bytes. A str is refused: the provider signed bytes, and
    which bytes a str stands for is the server's guess, not the provider's."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if body is None:
        return b""
    raise TypeError(
        f"a webhook body must be the raw bytes received (bytes, bytearray or memoryview), not {type(body).__name__}"
    )


@dataclass(frozen=True)
class WebhookReply:
    """What to answer the provider, and what the notification did.

    Send ``status``, a ``Content-Type: content_type`` header when it is not
    empty, and ``body`` back as they are (``headers`` has them as pairs).
    ``outcome`` is the library's account (include/payretry/webhook.h):
    ``{"verdict": "accepted" | "refused" | "retry", "why", "scheme",
    "status", "events": [{"event_id", "type", "order_id",
    "provider_payment_id", "provider_status", "money_state", "finding",
    "effect", "state_before", "state_after", "why"}]}``; ``money_state``
    names a :class:`MoneyState` (see :attr:`WebhookReply.money_states`)."""

    status: int
    content_type: str
    body: bytes = field(repr=False)
    outcome: Dict[str, Any]

    @property
    def verdict(self) -> str:
        """``accepted`` (the provider's ack: 2xx), ``refused`` (400: not
        verified, malformed or stale; nothing changed) or ``retry`` (503:
        verified but not stored; the provider delivers it again)."""
        return str(self.outcome.get("verdict", ""))

    @property
    def events(self) -> List[Dict[str, Any]]:
        """What each event of the notification did (``effect``: settled,
        recorded, conflict, duplicate, kept, ignored or error)."""
        events: List[Dict[str, Any]] = list(self.outcome.get("events") or [])
        return events

    @property
    def money_states(self) -> List[MoneyState]:
        """Each event's money state, in the order of :attr:`events`; UNKNOWN
        where the event names none or one this package does not know. Fulfil
        on PAID (or AUTHORIZED where you capture later), never on a
        SUCCEEDED ``state_after`` alone."""
        return [MoneyState._parse(e.get("money_state")) for e in self.events]

    @property
    def headers(self) -> List[Tuple[str, str]]:
        """The reply's headers: ``[("Content-Type", content_type)]``, or none."""
        return [("Content-Type", self.content_type)] if self.content_type else []

    @classmethod
    def _from_native(cls, native: Tuple[int, str, bytes, str]) -> WebhookReply:
        status, content_type, body, outcome = native
        return cls(status=int(status), content_type=content_type, body=bytes(body), outcome=json.loads(outcome))
