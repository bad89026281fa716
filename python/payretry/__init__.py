"""payretry: safe retries for payment-provider REST POSTs.

One idempotency key per payment, byte-identical attempts, a total deadline,
retries only for what can recover, UNKNOWN (never FAILED) when the provider may
have charged, and a durable ledger. The engine is the C++ core of this
checkout, compiled into the private ``_payretry`` extension over the C ABI.
"""

from __future__ import annotations

from . import _log
from . import _payretry
from ._client import Age, Body, BodyFor, Client, Config, Payment, body_bytes
from ._config import ClientConfig
from ._errors import (
    ClientClosedError,
    ConfigError,
    HookError,
    IdempotencyKeyError,
    InternalError,
    InvalidArgumentError,
    LedgerError,
    MismatchError,
    NotFoundError,
    NotReadyError,
    PayError,
    PayIOError,
    PayMemoryError,
    TooBigError,
    VersionError,
    error_from_code,
)
from ._headers import Headers
from ._hook import AttemptInfo, RequestHook
from ._operation import Operation
from ._result import Attempt, Delivery, MoneyState, Outcome, ReconcileFailure, ReconcileReport, Result
from ._webhook import WebhookBody, WebhookHeaders, WebhookReply

_payretry._set_hooks(error_from_code, _log.sink)

__version__: str = _payretry.version()

__all__ = [
    "Age",
    "Attempt",
    "AttemptInfo",
    "Body",
    "BodyFor",
    "Client",
    "ClientClosedError",
    "ClientConfig",
    "Config",
    "ConfigError",
    "Delivery",
    "Headers",
    "HookError",
    "IdempotencyKeyError",
    "InternalError",
    "InvalidArgumentError",
    "LedgerError",
    "MismatchError",
    "MoneyState",
    "NotFoundError",
    "NotReadyError",
    "Operation",
    "Outcome",
    "PayError",
    "PayIOError",
    "PayMemoryError",
    "Payment",
    "ReconcileFailure",
    "ReconcileReport",
    "RequestHook",
    "Result",
    "TooBigError",
    "VersionError",
    "WebhookBody",
    "WebhookHeaders",
    "WebhookReply",
    "__version__",
    "body_bytes",
    "error_from_code",
]
