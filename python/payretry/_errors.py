"""Exceptions: one class per ``PAY_E*`` code of the C library (errors.h).

A declined or undetermined payment is not an exception: it is data on
:class:`payretry.Result`. An exception means the *call* could not do its job.
"""

from __future__ import annotations

from typing import Dict, Tuple, Type


class PayError(Exception):
    """A failed payretry call. ``code`` is the C library's ``PAY_E*`` number,
    ``name`` its symbol (``"PAY_ECONFIG"``) and ``message`` the library's
    explanation (never a secret)."""

    code: int = -1
    name: str = "PAY_ERROR"

    def __init__(self, code: int, message: str) -> None:
        # One argument only: OSError and friends would read two as (errno, strerror).
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"

    def __reduce__(self) -> Tuple[type, Tuple[int, str]]:
        return (type(self), (self.code, self.message))


class InternalError(PayError):
    """PAY_ERROR: an unexpected failure inside the library."""

    code, name = -1, "PAY_ERROR"


class InvalidArgumentError(PayError, ValueError):
    """PAY_EINVALID: a bad argument (``None`` where a value is required, an empty
    order id or body, a bad path or ledger state)."""

    code, name = -2, "PAY_EINVALID"


class PayMemoryError(PayError, MemoryError):
    """PAY_ENOMEM: out of memory."""

    code, name = -3, "PAY_ENOMEM"


class ConfigError(PayError, ValueError):
    """PAY_ECONFIG: the configuration is invalid; the message names the key."""

    code, name = -4, "PAY_ECONFIG"


class MismatchError(PayError):
    """PAY_EMISMATCH: the order or idempotency key was used before with other
    parameters (a caller bug); nothing was sent."""

    code, name = -5, "PAY_EMISMATCH"


class TooBigError(PayError, ValueError):
    """PAY_ETOOBIG: the body is over ``max_body_bytes``."""

    code, name = -6, "PAY_ETOOBIG"


class IdempotencyKeyError(PayError, ValueError):
    """PAY_EKEY: the caller's idempotency key is empty, too long, or holds
    CR/LF or non-printable bytes."""

    code, name = -7, "PAY_EKEY"


class VersionError(PayError):
    """PAY_EVERSION: an options struct version this library does not know."""

    code, name = -8, "PAY_EVERSION"


class HookError(PayError):
    """PAY_EHOOK: a request hook failed before anything was sent."""

    code, name = -9, "PAY_EHOOK"


class PayIOError(PayError, OSError):
    """PAY_EIO: an I/O error (e.g. the log file cannot be opened)."""

    code, name = -10, "PAY_EIO"


class LedgerError(PayError):
    """PAY_ELEDGER: the ledger is locked, read-only, full, corrupt or unreachable
    before anything was sent: nothing is sent without a committed record.

    Once a request may have left, a ledger failure is not this exception: the
    call returns a Result (the provider's outcome, or UNKNOWN) whose
    ``ledger_error`` says it is not durably recorded."""

    code, name = -11, "PAY_ELEDGER"


class NotFoundError(PayError, LookupError):
    """PAY_ENOTFOUND: no such payment in the ledger."""

    code, name = -12, "PAY_ENOTFOUND"


class NotReadyError(PayError):
    """PAY_EAGAIN: an asynchronous payment has no answer yet; wait again."""

    code, name = -13, "PAY_EAGAIN"


class ClientClosedError(InvalidArgumentError):
    """The client was closed (the C library's NULL client: PAY_EINVALID)."""


_BY_CODE: Dict[int, Type[PayError]] = {
    cls.code: cls
    for cls in (
        InternalError,
        InvalidArgumentError,
        PayMemoryError,
        ConfigError,
        MismatchError,
        TooBigError,
        IdempotencyKeyError,
        VersionError,
        HookError,
        PayIOError,
        LedgerError,
        NotFoundError,
        NotReadyError,
    )
}


def error_from_code(code: int, message: str, closed: bool = False) -> PayError:
    """The exception for a C error code (PayError itself for a code this
    package does not know yet: codes are append-only)."""
    if closed:
        return ClientClosedError(code, message)
    cls = _BY_CODE.get(code)
    if cls is None:
        err = PayError(code, message)
        return err
    return cls(code, message)
