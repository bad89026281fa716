"""payretry.Client: the public face over the private _payretry extension."""

from __future__ import annotations

import asyncio
import datetime
import decimal
import inspect
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar, Union

from . import _log
from . import _payretry as _native
from ._errors import (
    ClientClosedError,
    IdempotencyKeyError,
    InvalidArgumentError,
    MismatchError,
    PayError,
    error_from_code,
)
from ._headers import Headers, header_pairs
from ._hook import HookFailures, RequestHook, native_hook
from ._operation import Operation
from ._result import ReconcileReport, Result, result_from_native
from ._webhook import WebhookBody, WebhookHeaders, WebhookReply, webhook_body, webhook_header_pairs

#: A configuration: a dict (serialised with json.dumps), a JSON text (a str
#: starting with "{"), or the path of a JSON file.
Config = Union[Mapping[str, Any], str, "os.PathLike[str]"]
#: A request body: a dict (serialised compactly, see Client.submit), a str
#: (sent as UTF-8) or bytes (sent as is).
Body = Union[Mapping[str, Any], str, bytes, bytearray, memoryview]
#: What reconcile's body_for may return for an order: its body, or None.
BodyFor = Callable[[str], Optional[Body]]
#: reconcile's ``older_than``: a timedelta, or seconds.
Age = Union[datetime.timedelta, int, float]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Payment:
    """One payment of :meth:`Client.submit_many`, with :meth:`Client.submit`'s arguments."""

    order_id: str
    body: Body
    idempotency_key: Optional[str] = None
    path: Optional[str] = None
    deadline_ms: Optional[int] = None

# How often the main thread wakes while a call runs on its helper thread;
# only the latency of Ctrl-C depends on it.
_WAIT_SLICE_S = 0.1


def _config_text(config: Config) -> str:
    if config is None:
        raise InvalidArgumentError(InvalidArgumentError.code, "config must not be None")
    if isinstance(config, Mapping):
        return json.dumps(dict(config))
    if isinstance(config, str) and config.lstrip().startswith("{"):
        return config
    if isinstance(config, (str, os.PathLike)):
        with open(config, encoding="utf-8") as f:
            return f.read()
    raise TypeError(f"config must be a dict, a JSON str or a path, not {type(config).__name__}")


def _optional_text(name: str, value: Any) -> Optional[str]:
    # None is the C API's NULL: a required argument raises InvalidArgumentError
    # (PAY_EINVALID), like the library itself; a value of another type is a
    # TypeError. NUL would silently cut the C string there.
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\x00" in value:
        if name == "idempotency_key":
            raise IdempotencyKeyError(IdempotencyKeyError.code, "idempotency_key contains a NUL character")
        raise InvalidArgumentError(InvalidArgumentError.code, f"{name} contains a NUL character")
    return value


def _text(name: str, value: Any) -> str:
    text = _optional_text(name, value)
    if text is None:
        raise InvalidArgumentError(InvalidArgumentError.code, f"{name} must not be None")
    return text


def body_bytes(body: Any) -> bytes:
    """The bytes payretry hands the library for ``body`` (the ones the ledger
    fingerprints; a form-encoding profile then sends them form-encoded):
    bytes as they are, a str as UTF-8, a dict as ``json.dumps(body,
    separators=(",", ":"))`` in its own key order (not sorted: see
    docs/python.md, "Bodies")."""
    if body is None:
        raise InvalidArgumentError(InvalidArgumentError.code, "body must not be None")
    if isinstance(body, bytes):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, Mapping):
        # Deterministic for equal dicts built in the same order; a retried order
        # must produce the very same bytes, or it is a mismatch. Not sorted:
        # orders already in a ledger were fingerprinted over these bytes.
        try:
            return json.dumps(dict(body), separators=(",", ":"), sort_keys=False).encode("utf-8")
        except TypeError:
            where = _find_decimal(body, "body")
            if where is None:
                raise
            raise TypeError(
                f"{where} is a decimal.Decimal, which payretry does not turn into JSON: providers disagree on "
                "decimal amounts (most take an int of minor units, e.g. 1050 for 10.50 EUR; some a str such "
                "as \"10.50\") and a float would round it. Put the int or str your provider expects in the "
                "dict, or pass the body as bytes"
            ) from None
    raise TypeError(f"body must be a dict, str or bytes, not {type(body).__name__}")


def _find_decimal(value: Any, where: str) -> Optional[str]:
    """Where the first decimal.Decimal in a JSON-like value is, e.g.
    ``body['amount']['value']``; None when there is none."""
    if isinstance(value, decimal.Decimal):
        return where
    if isinstance(value, Mapping):
        for k, v in value.items():
            found = _find_decimal(v, f"{where}[{k!r}]")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _find_decimal(v, f"{where}[{i}]")
            if found is not None:
                return found
    return None


# Appended to a MismatchError of submit: the library cannot know that a dict
# was involved, and a reordered dict is the usual cause in Python.
_MISMATCH_HINT = (
    "; if this is the same payment, its body bytes (or path) differ from the first submission of the "
    "order: a dict body is serialized with json.dumps(separators=(',', ':')) in its own key order, not "
    "sorted, so an equal dict built in another key order, or the same JSON with other spaces, is other "
    "bytes. Submit it again with the first submission's bytes (payretry.body_bytes(body) shows what a "
    "dict becomes; pass bytes to control them exactly)"
)


def _milliseconds(name: str, age: Any) -> int:
    if isinstance(age, datetime.timedelta):
        seconds = age.total_seconds()
    elif isinstance(age, (int, float)) and not isinstance(age, bool):
        seconds = float(age)
    else:
        raise TypeError(f"{name} must be a datetime.timedelta or a number of seconds, not {type(age).__name__}")
    if not seconds >= 0 or seconds == float("inf"):  # also refuses NaN
        raise InvalidArgumentError(InvalidArgumentError.code, f"{name} must be a finite, non-negative age")
    ms = round(seconds * 1000)
    if ms > 2**63 - 1:
        raise InvalidArgumentError(InvalidArgumentError.code, f"{name} is too large")
    return ms


class Client:
    """A payretry client: one provider, one ledger, one retry policy.

    Thread-safe: share one client between threads; each call releases the GIL
    while it waits on the network, a backoff or the ledger. Use it as a context
    manager, or call :meth:`close` (idempotent). Results outlive the client.

    ``config`` (a dict, JSON text or a path to a JSON file) must name its
    ``"ledger"``: ``"sqlite:///abs/path.db"``, ``"postgresql://..."``, or
    ``"memory:"`` written out (keys then live in this process only); without
    it the client raises :class:`ConfigError`.

    ``request_hook(info)`` is called before every attempt of every payment and
    every status lookup (query, reconcile) with an :class:`AttemptInfo`, and
    returns the extra headers of that request (a mapping of str to str, or
    (name, value) pairs: e.g. a signature over ``info.method``,
    ``info.path`` and ``info.body``), or None. It runs on the thread that
    made the call, or on one of the client's engine threads for
    ``submit_async`` and ``submit_many``, with the GIL held only while it
    runs: it must be thread-safe and quick. If it
    raises (or returns headers the library refuses), that request is not
    sent: a payment with nothing sent yet raises :class:`HookError` whose
    ``__cause__`` is the hook's exception; one whose earlier attempt may have
    been processed returns an UNKNOWN result; a lookup leaves the payment as
    it was. Each such exception is also logged on the ``payretry.hook``
    logger. An ``async def`` hook is refused (nothing would await it)."""

    def __init__(self, config: Config, *, request_hook: Optional[RequestHook] = None) -> None:
        self._native: Optional[_native.NativeClient] = None
        self._lock = threading.Lock()
        self._hook_failures = HookFailures()
        hook = None
        if request_hook is not None:
            if not callable(request_hook):
                raise TypeError(f"request_hook must be callable, not {type(request_hook).__name__}")
            if inspect.iscoroutinefunction(request_hook) or inspect.iscoroutinefunction(
                getattr(request_hook, "__call__", None)
            ):
                # Nobody would await it: it runs on the library's threads, outside any event loop.
                raise TypeError("request_hook must be a plain function, not a coroutine function (async def)")
            hook = native_hook(request_hook, self._hook_failures)
        self._native = _native.NativeClient(_config_text(config), True, hook)

    # ---- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Releases the client. Calls still running (a submit interrupted by
        Ctrl-C, a cancelled submit_async) finish first, in the background, and
        record their outcome in the ledger. Idempotent."""
        with self._lock:
            native, self._native = self._native, None
        if native is not None:
            native.close()

    @property
    def closed(self) -> bool:
        return self._native is None

    def __enter__(self) -> Client:
        self._handle()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<payretry.Client {'closed' if self.closed else 'open'}>"

    def _handle(self) -> _native.NativeClient:
        native = self._native
        if native is None:
            raise ClientClosedError(InvalidArgumentError.code, "the payretry client is closed")
        return native

    # ---- payments ----------------------------------------------------------

    def submit(
        self,
        order_id: str,
        body: Body,
        *,
        idempotency_key: Optional[str] = None,
        path: Optional[str] = None,
        deadline_ms: Optional[int] = None,
        headers: Optional[Headers] = None,
        traceparent: Optional[str] = None,
    ) -> Result:
        """Submits one logical payment and returns its outcome (a decline is a
        FAILED result, not an exception). ``body`` is sent byte-identical on
        every attempt: a dict is serialised with ``json.dumps(separators=(",",
        ":"))`` in its own key order, so submitting an order again must pass an
        equal dict built in the same order (or the same str/bytes), else the
        call raises :class:`MismatchError`. ``idempotency_key``: None makes a
        fresh UUIDv4. ``path``: None for the profile's create path.
        ``deadline_ms`` may only shorten the client's deadline.

        ``headers`` (a mapping, or (name, value) pairs) go out on every
        attempt of this payment, not on lookups; at most 64, names HTTP tokens,
        values printable without CR/LF, and none that payretry sets itself
        (the idempotency key, auth, Content-Type, traceparent): else
        :class:`InvalidArgumentError` naming the header, with nothing sent.
        ``traceparent`` (W3C trace context, ``00-<32 hex>-<16 hex>-<2 hex>``)
        is sent as ``traceparent`` on every attempt and written in each log
        line of the payment; a malformed one is InvalidArgumentError.

        Ctrl-C interrupts the wait at once; the payment goes on in the
        background and its outcome is recorded in the ledger, so submitting the
        order again returns it (IN_PROGRESS while it still runs)."""
        args = self._submit_args(order_id, body, idempotency_key, path, deadline_ms)
        extra = header_pairs(headers)
        trace = _optional_text("traceparent", traceparent)
        native = self._handle()
        try:
            nres = _interruptible(lambda: native.submit(*args, extra, trace))
        except PayError as e:
            raise self._explain(e, args[0])
        self._hook_failures.take(args[0])
        return result_from_native(nres)

    async def submit_async(
        self,
        order_id: str,
        body: Body,
        *,
        idempotency_key: Optional[str] = None,
        path: Optional[str] = None,
        deadline_ms: Optional[int] = None,
        headers: Optional[Headers] = None,
        traceparent: Optional[str] = None,
    ) -> Result:
        """:meth:`submit` for asyncio, without a thread per payment: the payment
        runs on the client's engine thread (libcurl multi, group commit in the
        ledger) and its answer wakes this coroutine through the event loop.
        Cancelling the awaiting task abandons only the wait: the payment
        completes and is recorded in the ledger."""
        args = self._submit_args(order_id, body, idempotency_key, path, deadline_ms)
        extra = header_pairs(headers)
        trace = _optional_text("traceparent", traceparent)
        native = self._handle()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()

        def settle(nres: Optional[_native.NativeResult], code: int, message: Optional[str]) -> None:
            if future.done():  # the waiter was cancelled; the ledger has the outcome
                return
            if nres is None:
                future.set_exception(self._explain(error_from_code(code, message or ""), args[0]))
                return
            self._hook_failures.take(args[0])
            try:
                future.set_result(result_from_native(nres))
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                future.set_exception(e)

        def done(nres: Optional[_native.NativeResult], code: int, message: Optional[str]) -> None:
            # On the engine thread: hand the answer to the loop's own thread.
            try:
                loop.call_soon_threadsafe(settle, nres, code, message)
            except RuntimeError:
                pass  # the loop is closed: nobody waits for this answer any more

        native.submit_async(*args, extra, trace, done)
        return await future

    def submit_many(
        self,
        payments: Iterable[Union[Payment, Tuple[str, Body]]],
        *,
        max_in_flight: int = 0,
    ) -> List[Union[Result, PayError]]:
        """Submits many payments at once on the client's engine thread (libcurl
        multi: one thread however many are in flight; their ledger writes share
        commits) and returns, in order, each payment's :class:`Result`, or the
        :class:`PayError` of its failed call: returned, not raised, so that one
        bad payment never hides the others' outcomes. Each payment follows the
        rules of :meth:`submit`. ``max_in_flight`` 0: all at once. Arguments of
        the wrong type raise before anything is sent."""
        if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 0:
            raise TypeError("max_in_flight must be a non-negative int")
        items: List[Tuple[str, bytes, Optional[str], Optional[str], int]] = []
        for p in payments:
            if isinstance(p, Payment):
                items.append(self._submit_args(p.order_id, p.body, p.idempotency_key, p.path, p.deadline_ms))
            elif isinstance(p, tuple) and len(p) == 2:
                items.append(self._submit_args(p[0], p[1], None, None, None))
            else:
                raise TypeError("each payment must be a payretry.Payment or an (order_id, body) tuple")
        native = self._handle()
        answers = _interruptible(lambda: native.submit_many(items, max_in_flight))
        out: List[Union[Result, PayError]] = []
        for item, (nres, code, message) in zip(items, answers):
            if nres is None:
                out.append(self._explain(error_from_code(code, message or ""), item[0]))
            else:
                self._hook_failures.take(item[0])
                out.append(result_from_native(nres))
        return out

    # ---- captures, refunds and cancels ----------------------------------------

    def submit_operation(
        self,
        order_id: str,
        kind: Operation,
        *,
        ref: str,
        amount: int = 0,
        body: Optional[Union[Mapping[str, Any], str]] = None,
        target_id: Optional[str] = None,
        deadline_ms: Optional[int] = None,
    ) -> Result:
        """Captures, refunds or cancels the payment of ``order_id`` (one this
        client's ledger holds), sent as safely as the payment itself: the
        operation is a ledger row of its own, ``"<order_id> <kind> <ref>"``,
        its key and what was asked committed before the first byte, then
        sent, retried and settled as a payment is. Returns the operation's
        :class:`Result` (its ``order_id`` is that row id; its ``money_state``
        what the operation did: ``PAID`` for a capture, ``REFUNDED`` for a
        refund, ``FAILED`` for a cancel, or ``UNKNOWN`` where the provider
        tells it later); the payment's own money moves forward with it
        (:meth:`ledger_get` of the order).

        ``ref`` (required) is your name for the operation, unique per payment
        and kind (visible ASCII, no spaces): the same ref again is the same
        operation, answered from the ledger or resumed with its stored key and
        bytes, and :class:`MismatchError` if asked with other parameters. An
        UNKNOWN operation is settled by calling again with the same ref, never
        a new one (that would be a second refund). ``amount`` in the
        provider's units, as the payment's was (0: all that is left, as the
        ledger counts it; ignored for a cancel). ``body``: further fields the
        provider takes (a reason, metadata), a dict (serialised like a
        payment's body) or a JSON object as str; never the fields payretry
        writes. ``target_id``: the second id the provider's path names, where
        it names one (PayPal refunds a capture: its id).

        Raises, with nothing sent: :class:`InvalidArgumentError` for an
        operation the payment does not allow (not settled, its money not where
        the operation applies, an amount beyond what is left: every capture
        and refund that did not fail counts as spent, UNKNOWN ones too) or a
        provider whose profile does not send it; :class:`NotFoundError` for an
        order the ledger does not hold; :class:`MismatchError`."""
        oid = _text("order_id", order_id)
        if not isinstance(kind, Operation):
            raise TypeError(f"kind must be a payretry.Operation, not {type(kind).__name__}")
        r = _text("ref", ref)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise TypeError(f"amount must be an int, not {type(amount).__name__}")
        if not 0 <= amount <= 2**63 - 1:
            raise InvalidArgumentError(InvalidArgumentError.code, "amount must be 0 (the rest) or a positive int")
        if body is None or isinstance(body, str):
            extra = _optional_text("body", body)
        elif isinstance(body, Mapping):
            extra = body_bytes(body).decode("utf-8")
        else:
            raise TypeError(f"body must be a dict or a JSON str, not {type(body).__name__}")
        target = _optional_text("target_id", target_id)
        ms = self._deadline_ms(deadline_ms)
        native = self._handle()
        # The hook sees the operation's own row id (its attempts' order id).
        row_id = f"{oid} {str(kind)} {r}"
        try:
            nres = _interruptible(lambda: native.submit_operation(oid, int(kind), r, amount, extra, target, ms))
        except PayError as e:
            raise self._hook_failures.chain(e, row_id)
        self._hook_failures.take(row_id)
        return result_from_native(nres)

    def capture(
        self, order_id: str, *, ref: str, amount: int = 0, body: Optional[Union[Mapping[str, Any], str]] = None,
        target_id: Optional[str] = None, deadline_ms: Optional[int] = None,
    ) -> Result:
        """:meth:`submit_operation` with :attr:`Operation.CAPTURE`: takes
        ``amount`` (0: all) of an authorized hold."""
        return self.submit_operation(order_id, Operation.CAPTURE, ref=ref, amount=amount, body=body,
                                     target_id=target_id, deadline_ms=deadline_ms)

    def refund(
        self, order_id: str, *, ref: str, amount: int = 0, body: Optional[Union[Mapping[str, Any], str]] = None,
        target_id: Optional[str] = None, deadline_ms: Optional[int] = None,
    ) -> Result:
        """:meth:`submit_operation` with :attr:`Operation.REFUND`: gives
        ``amount`` (0: all that is left) of a paid payment back."""
        return self.submit_operation(order_id, Operation.REFUND, ref=ref, amount=amount, body=body,
                                     target_id=target_id, deadline_ms=deadline_ms)

    def cancel(
        self, order_id: str, *, ref: str, body: Optional[Union[Mapping[str, Any], str]] = None,
        target_id: Optional[str] = None, deadline_ms: Optional[int] = None,
    ) -> Result:
        """:meth:`submit_operation` with :attr:`Operation.CANCEL`: voids a
        payment no money has moved for yet (an uncaptured hold)."""
        return self.submit_operation(order_id, Operation.CANCEL, ref=ref, body=body, target_id=target_id,
                                     deadline_ms=deadline_ms)

    def query(self, order_id: str) -> Result:
        """Asks the provider what happened to one payment and records the answer.
        Raises :class:`NotFoundError` for an order the ledger does not hold."""
        oid = _text("order_id", order_id)
        native = self._handle()
        try:
            return result_from_native(_interruptible(lambda: native.query(oid)))
        finally:
            # A lookup the hook refused is in the result (and the log), not raised.
            self._hook_failures.take(oid)

    async def query_async(self, order_id: str) -> Result:
        """:meth:`query` for asyncio. The C library has no asynchronous lookup,
        so it runs on the event loop's default executor (a thread) and the
        loop is never blocked. Cancelling the awaiting task abandons only the
        wait: the lookup finishes and records its answer in the ledger."""
        _text("order_id", order_id)
        self._handle()
        return await asyncio.get_running_loop().run_in_executor(None, self.query, order_id)

    def reconcile(
        self,
        body_for: Optional[BodyFor] = None,
        *,
        limit: Optional[int] = None,
        older_than: Optional[Age] = None,
    ) -> ReconcileReport:
        """Settles every UNKNOWN payment (and every IN_FLIGHT one a dead worker
        left) by query or, where settling needs a same-key re-send, with the body
        ``body_for(order_id)`` returns (None: the application has none; the
        payment stays UNKNOWN). The first exception ``body_for`` raises is
        re-raised after the pass; the payments settled meanwhile stay settled.

        ``limit``: at most this many payments in this pass (None: the library's
        1000). ``older_than`` (a ``datetime.timedelta`` or seconds): only the
        payments untouched for at least that long, leaving alone those a
        worker may still be busy with (None: any age)."""
        if limit is None:
            lim = 0
        elif isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"limit must be an int, not {type(limit).__name__}")
        elif not 1 <= limit <= 0xFFFFFFFF:
            raise InvalidArgumentError(InvalidArgumentError.code, "limit must be between 1 and 4294967295")
        else:
            lim = limit
        older_ms = 0 if older_than is None else _milliseconds("older_than", older_than)
        native = self._handle()
        errors: List[BaseException] = []
        cb: Optional[Callable[[str], Optional[bytes]]] = None
        if body_for is not None:
            if not callable(body_for):
                raise TypeError("body_for must be callable")
            user = body_for

            def wrapped(order_id: str) -> Optional[bytes]:
                try:
                    b = user(order_id)
                    return None if b is None else body_bytes(b)
                except BaseException as e:  # noqa: B036 - re-raised after the pass
                    errors.append(e)
                    return None

            cb = wrapped

        text = _interruptible(lambda: native.reconcile(cb, lim, older_ms))
        report = ReconcileReport._from_json(text)
        # Lookups the hook refused are in the report (and the log), not raised.
        for p in report.payments:
            self._hook_failures.take(p.order_id)
        for f in report.failures:
            self._hook_failures.take(f.order_id)
        if errors:
            raise errors[0]
        return report

    async def reconcile_async(
        self,
        body_for: Optional[BodyFor] = None,
        *,
        limit: Optional[int] = None,
        older_than: Optional[Age] = None,
    ) -> ReconcileReport:
        """:meth:`reconcile` for asyncio, on the event loop's default executor
        (a thread): ``body_for`` is called on that thread, so it must not touch
        the loop's objects without ``call_soon_threadsafe``. Cancelling the
        awaiting task abandons only the wait: the pass runs to its end."""
        self._handle()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, lambda: self.reconcile(body_for, limit=limit, older_than=older_than)
        )

    # ---- webhooks ----------------------------------------------------------

    def apply_webhook(self, method: str, url: str, headers: WebhookHeaders, body: WebhookBody) -> WebhookReply:
        """Hands payretry a provider's notification exactly as the HTTP server
        received it, and returns what to answer (any web framework: see
        docs/python.md, "Webhooks"). ``method`` ("POST"); ``url``, the full
        URL the provider called, scheme and host included (Square signs it);
        ``headers``, every header (a dict, (name, value) pairs, or any
        mapping, multi-valued ones included; str or bytes); ``body``, the raw
        bytes before any parsing (bytes, bytearray or memoryview: every scheme
        signs bytes; a str is a TypeError).

        The notification is verified with the config's ``"webhook"`` secrets
        and each event it names is recorded once, settling an UNKNOWN payment
        it reports as succeeded or failed. A forged, stale or malformed one is
        a reply too (``verdict`` "refused", status 400), as is one that could
        not be stored ("retry", 503: the provider delivers it again). Raises
        :class:`ConfigError` when the profile reads no notifications or the
        config has no webhook secret its scheme needs. The GIL is released
        while the library works; it blocks on the ledger (and, for Mollie, on
        the provider's lookup)."""
        m = _text("method", method)
        u = _text("url", url)
        pairs = webhook_header_pairs(headers)
        data = webhook_body(body)
        native = self._handle()
        return WebhookReply._from_native(_interruptible(lambda: native.apply_webhook(m, u, pairs, data)))

    async def apply_webhook_async(
        self, method: str, url: str, headers: WebhookHeaders, body: WebhookBody
    ) -> WebhookReply:
        """:meth:`apply_webhook` for asyncio (an ASGI app), on the event loop's
        default executor, so that the ledger write does not hold the loop.
        Cancelling the awaiting task abandons only the wait: the notification
        is still recorded (and the provider, without its ack, delivers it
        again: a duplicate then)."""
        m = _text("method", method)
        u = _text("url", url)
        pairs = webhook_header_pairs(headers)
        data = webhook_body(body)
        native = self._handle()
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(None, lambda: native.apply_webhook(m, u, pairs, data))
        return WebhookReply._from_native(reply)

    # ---- ledger and counters -----------------------------------------------

    def ledger_get(self, order_id: str) -> Dict[str, Any]:
        """One payment's ledger row and attempts: ``{"payment": {...}, "attempts": [...]}``."""
        oid = _text("order_id", order_id)
        native = self._handle()
        d: Dict[str, Any] = json.loads(_interruptible(lambda: native.ledger_get(oid)))
        return d

    def ledger_list(
        self, state: Optional[str] = None, *, updated_before_ms: int = 0, limit: int = 0
    ) -> List[Dict[str, Any]]:
        """Payments in ``state`` ("PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED",
        "UNKNOWN"; None for all), oldest update first, at most ``limit`` (0: 1000)."""
        st = _optional_text("state", state)
        native = self._handle()
        rows: List[Dict[str, Any]] = json.loads(
            _interruptible(lambda: native.ledger_list(st, int(updated_before_ms), int(limit)))
        )
        return rows

    def stats(self) -> Dict[str, Any]:
        """The client's counters: attempts, retries by reason, outcomes, budget."""
        d: Dict[str, Any] = json.loads(self._handle().stats())
        return d

    def metrics(self) -> str:
        """The client's metrics as Prometheus text (exposition format 0.0.4,
        names prefixed ``payretry_``): payment runs by outcome and delivery,
        answers from the ledger, settlements, attempts by verdict and reason,
        retries, the retry budget, payments in flight, connections, latency
        histograms. Serve it as is on a /metrics endpoint, or register the
        client with :mod:`payretry.prometheus`."""
        return self._handle().metrics()

    def reopen_log(self) -> None:
        """Reopens the config's log file by its path, for log rotation (call it
        on SIGHUP, say, once the file was moved away); a no-op without a log
        file. Raises :class:`PayIOError` when the file cannot be opened (the
        old one stays in use)."""
        native = self._handle()
        _interruptible(native.reopen_log)

    # ---- helpers -----------------------------------------------------------

    def _explain(self, err: PayError, order_id: str) -> PayError:
        """A failed submit's error with what Python adds: the hook's own
        exception as ``__cause__`` of a HookError, and why a MismatchError may
        have happened to an equal dict."""
        self._hook_failures.chain(err, order_id)
        if isinstance(err, MismatchError) and "other parameters" in err.message:
            err.message += _MISMATCH_HINT
            err.args = (err.message,)
        return err

    @staticmethod
    def _deadline_ms(deadline_ms: Any) -> int:
        if deadline_ms is None:
            return 0
        if isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int):
            raise TypeError("deadline_ms must be an int")
        if deadline_ms <= 0:
            raise InvalidArgumentError(InvalidArgumentError.code, "deadline_ms must be positive")
        return deadline_ms

    @staticmethod
    def _submit_args(
        order_id: Any, body: Any, idempotency_key: Any, path: Any, deadline_ms: Any
    ) -> Tuple[str, bytes, Optional[str], Optional[str], int]:
        oid = _text("order_id", order_id)
        data = body_bytes(body)
        key = _optional_text("idempotency_key", idempotency_key)
        p = _optional_text("path", path)
        if deadline_ms is None:
            ms = 0
        elif isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int):
            raise TypeError("deadline_ms must be an int")
        elif deadline_ms <= 0:
            raise InvalidArgumentError(InvalidArgumentError.code, "deadline_ms must be positive")
        else:
            ms = deadline_ms
        return oid, data, key, p, ms


def _interruptible(call: Callable[[], _T]) -> _T:
    """Runs ``call`` (a C call that releases the GIL) so that Ctrl-C is not held
    back until it returns. Python delivers signals only to the main thread, and
    only between bytecodes: there the call moves to a helper thread and the main
    thread waits in short slices. The helper is not a daemon, so an interrupted
    call still finishes, and commits its outcome, before the interpreter exits."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    box: Dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e
        finally:
            with guard:
                done.set()
                abandoned = box.get("abandoned", False)
            if abandoned:
                _report_abandoned(box)

    guard = threading.Lock()
    helper = threading.Thread(target=run, name="payretry-call")
    helper.start()
    try:
        while not done.wait(_WAIT_SLICE_S):
            pass
    except BaseException:
        with guard:
            box["abandoned"] = True
            finished = done.is_set()
        if finished:
            _report_abandoned(box)
        raise
    if "error" in box:
        raise box["error"]
    value: _T = box["value"]
    return value


def _report_abandoned(box: Dict[str, Any]) -> None:
    # Nobody waits for this call any more: say how it ended, for the operator.
    if "error" in box:
        _log.logger.warning("an interrupted payretry call failed in the background: %r", box["error"])
    else:
        value = box.get("value")
        what = getattr(value, "outcome", None)
        _log.logger.warning(
            "an interrupted payretry call finished in the background%s",
            f" with outcome {_native_outcome_name(what)} (recorded in the ledger)" if what is not None else "",
        )


def _native_outcome_name(number: Any) -> str:
    return {1: "SUCCEEDED", 2: "FAILED", 3: "UNKNOWN", 4: "IN_PROGRESS"}.get(number, str(number))
