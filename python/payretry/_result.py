"""What a submission ended as: frozen data built from the C library's
``pay_result_json`` (the stable view for bindings) and the response body."""

from __future__ import annotations

import enum
import json as jsonlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple


class Outcome(str, enum.Enum):
    """What the caller may conclude about the payment (README, "Outcomes")."""

    SUCCEEDED = "SUCCEEDED"  #: took effect at the provider; fulfil on ``money_state``, never on this alone
    FAILED = "FAILED"  #: definitive: the provider will not charge for it
    UNKNOWN = "UNKNOWN"  #: may have been processed: never re-create; query or reconcile later
    IN_PROGRESS = "IN_PROGRESS"  #: another worker holds this order right now

    def __str__(self) -> str:
        return self.value


class Delivery(str, enum.Enum):
    """How far the request got, over every attempt."""

    NOT_SENT = "not_sent"  #: no attempt can have been processed by the provider
    MAYBE_PROCESSED = "maybe_processed"  #: some attempt may have been processed
    DELIVERED = "delivered"  #: the provider answered definitively

    def __str__(self) -> str:
        return self.value


class MoneyState(str, enum.Enum):
    """Where the money is, beside whether the request took effect
    (docs/providers.md, "Where the money is"). A SUCCEEDED create of a PayPal
    order or of a Stripe PaymentIntent that needs 3-D Secure has moved no
    money: fulfil on ``PAID`` (or ``AUTHORIZED`` where you capture later),
    never on ``Outcome.SUCCEEDED`` alone. It only moves forward."""

    UNKNOWN = "unknown"  #: no word read yet, or one the profile does not map: wait, query
    AWAITING_CUSTOMER = "awaiting_customer"  #: nothing moved; the customer (or your confirm) is next: do not ship
    PENDING = "pending"  #: the provider, a bank or the method is deciding: do not ship
    AUTHORIZED = "authorized"  #: held, not captured: capture, then fulfil
    PAID = "paid"  #: captured: fulfil
    PARTLY_REFUNDED = "partly_refunded"  #: paid, and part of it went back
    REFUNDED = "refunded"  #: paid, and all of it went back
    FAILED = "failed"  #: final: no money moved or will; a new try is a new order

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _parse(cls, name: Any) -> MoneyState:
        # The C enum is only appended to: a state this package does not know
        # yet (or a library too old to write one) reads as UNKNOWN, which
        # never fulfils.
        try:
            return cls(name)
        except ValueError:
            return cls.UNKNOWN


# The C enums (result.h), for cross-checking the JSON against the accessors.
_OUTCOME_BY_NUMBER = {1: Outcome.SUCCEEDED, 2: Outcome.FAILED, 3: Outcome.UNKNOWN, 4: Outcome.IN_PROGRESS}
_MONEY_STATE_BY_NUMBER = dict(enumerate(MoneyState))  # PAY_MONEY_UNKNOWN = 0 ... PAY_MONEY_FAILED = 7


def _opt_str(d: Mapping[str, Any], key: str) -> Optional[str]:
    v = d.get(key)
    return None if v is None else str(v)


def _opt_int(d: Mapping[str, Any], key: str) -> Optional[int]:
    v = d.get(key)
    return None if v is None else int(v)


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt of a submission, as the attempt log recorded it."""

    number: int
    started_unix_ms: int
    elapsed_ms: int
    http_status: Optional[int]
    transport_error: Optional[str]
    verdict: str
    reason: str
    may_have_processed: bool
    delay_ms: Optional[int]
    delay_source: Optional[str]
    provider_request_id: Optional[str]
    replayed: bool
    reused_connection: bool

    @classmethod
    def _from_dict(cls, d: Mapping[str, Any]) -> Attempt:
        # Fields the library appends later are ignored, not an error.
        return cls(
            number=int(d.get("attempt", 0)),
            started_unix_ms=int(d.get("started_unix_ms", 0)),
            elapsed_ms=int(d.get("elapsed_ms", 0)),
            http_status=_opt_int(d, "http_status"),
            transport_error=_opt_str(d, "transport_error"),
            verdict=str(d.get("verdict", "")),
            reason=str(d.get("reason", "")),
            may_have_processed=bool(d.get("may_have_processed", False)),
            delay_ms=_opt_int(d, "delay_ms"),
            delay_source=_opt_str(d, "delay_source"),
            provider_request_id=_opt_str(d, "provider_request_id"),
            replayed=bool(d.get("replayed", False)),
            reused_connection=bool(d.get("reused_connection", False)),
        )


@dataclass(frozen=True, repr=False)
class Result:
    """The outcome of one payment. Immutable, safe to share between threads,
    and independent of the client that made it (it outlives ``close()``).

    ``body`` is the deciding response's bytes (``b""`` when none, and for
    payments in a reconcile report); ``repr()`` never shows it.
    """

    outcome: Outcome
    delivery: Delivery
    order_id: str
    idempotency_key: str
    http_status: int
    provider_payment_id: Optional[str]
    provider_status: Optional[str]
    error: Optional[str]
    attempts: Tuple[Attempt, ...]
    elapsed_ms: int
    from_ledger: bool
    queried: bool
    # None when the ledger holds this result; else why it could not record
    # it (a request was sent: treat the outcome as given, never re-create
    # the order; the ledger resumes or reconciles it once its lease ends).
    ledger_error: Optional[str] = None
    # Fulfil on PAID (or AUTHORIZED where you capture later), never on
    # outcome SUCCEEDED alone.
    money_state: MoneyState = MoneyState.UNKNOWN
    body: bytes = field(default=b"", compare=False)
    _text: str = field(default="", compare=False)

    @property
    def succeeded(self) -> bool:
        """The request took effect; whether money moved is :attr:`money_state`."""
        return self.outcome is Outcome.SUCCEEDED

    def json(self) -> Any:
        """The response body parsed as JSON (like ``requests.Response.json()``);
        raises ``ValueError`` when the body is empty or not JSON."""
        return jsonlib.loads(self.body)

    def to_json(self) -> str:
        """The whole result as the C library's JSON (``pay_result_json``): every
        field and attempt, never the body."""
        return self._text

    def to_dict(self) -> Dict[str, Any]:
        """``to_json()`` parsed."""
        d: Dict[str, Any] = jsonlib.loads(self._text)
        return d

    def __repr__(self) -> str:
        return (
            f"Result(outcome={self.outcome.value}, delivery={self.delivery.value}, "
            f"order_id={self.order_id!r}, http_status={self.http_status}, "
            f"provider_payment_id={self.provider_payment_id!r}, "
            f"provider_status={self.provider_status!r}, money_state={self.money_state.value}, "
            f"error={self.error!r}, "
            f"attempts={len(self.attempts)}, from_ledger={self.from_ledger}, "
            f"idempotency_key={self.idempotency_key!r})"
        )

    @classmethod
    def _from_json(cls, text: str, body: bytes = b"") -> Result:
        return cls._from_dict(jsonlib.loads(text), body, text)

    @classmethod
    def _from_dict(cls, d: Mapping[str, Any], body: bytes, text: Optional[str] = None) -> Result:
        return cls(
            outcome=Outcome(d["outcome"]),
            delivery=Delivery(d["delivery"]),
            order_id=str(d.get("order_id", "")),
            idempotency_key=str(d.get("idempotency_key", "")),
            http_status=int(d.get("http_status", 0)),
            provider_payment_id=_opt_str(d, "provider_payment_id"),
            provider_status=_opt_str(d, "provider_status"),
            error=_opt_str(d, "error"),
            attempts=tuple(Attempt._from_dict(a) for a in d.get("attempts", ())),
            elapsed_ms=int(d.get("elapsed_ms", 0)),
            from_ledger=bool(d.get("from_ledger", False)),
            queried=bool(d.get("queried", False)),
            ledger_error=_opt_str(d, "ledger_error"),
            money_state=MoneyState._parse(d.get("money_state")),
            body=body,
            _text=text if text is not None else jsonlib.dumps(d, separators=(",", ":")),
        )


def result_from_native(native: Any) -> Result:
    """Copies a native result into a :class:`Result`; the native one (and its C
    memory) is dropped by the caller right after."""
    r = Result._from_json(native.json, native.body)
    expected = _OUTCOME_BY_NUMBER.get(native.outcome)
    if expected is not r.outcome:  # the JSON view and the accessor must agree
        raise RuntimeError(f"payretry: outcome {native.outcome} disagrees with the result JSON ({r.outcome})")
    money = _MONEY_STATE_BY_NUMBER.get(native.money_state, MoneyState.UNKNOWN)
    if money is not r.money_state:
        raise RuntimeError(
            f"payretry: money state {native.money_state} disagrees with the result JSON ({r.money_state})"
        )
    return r


@dataclass(frozen=True)
class ReconcileFailure:
    """A payment reconcile could not examine (the error is redacted)."""

    order_id: str
    error: str


@dataclass(frozen=True)
class ReconcileReport:
    """What one ``Client.reconcile()`` pass did. Iterating it (and ``len()``)
    goes over ``payments``, the settled or still-open results, so it reads like
    a ``list[Result]``; the counts and failures come with it."""

    examined: int
    succeeded: int
    failed: int
    unknown: int
    in_progress: int
    payments: Tuple[Result, ...]
    failures: Tuple[ReconcileFailure, ...]

    def __iter__(self) -> Iterator[Result]:
        return iter(self.payments)

    def __len__(self) -> int:
        return len(self.payments)

    @classmethod
    def _from_json(cls, text: str) -> ReconcileReport:
        d = jsonlib.loads(text)
        return cls(
            examined=int(d.get("examined", 0)),
            succeeded=int(d.get("SUCCEEDED", 0)),
            failed=int(d.get("FAILED", 0)),
            unknown=int(d.get("UNKNOWN", 0)),
            in_progress=int(d.get("IN_PROGRESS", 0)),
            payments=tuple(Result._from_dict(p, b"") for p in d.get("payments", ())),
            failures=tuple(
                ReconcileFailure(order_id=str(f.get("order_id", "")), error=str(f.get("error", "")))
                for f in d.get("failures", ())
            ),
        )
