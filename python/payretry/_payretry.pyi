# Stub of the private pybind11 extension (python/src/_payretry.cpp).
from typing import Callable, List, Optional, Tuple

PAY_OK: int
PAY_ERROR: int
PAY_EINVALID: int
PAY_ENOMEM: int
PAY_ECONFIG: int
PAY_EMISMATCH: int
PAY_ETOOBIG: int
PAY_EKEY: int
PAY_EVERSION: int
PAY_EHOOK: int
PAY_EIO: int
PAY_ELEDGER: int
PAY_ENOTFOUND: int
PAY_EAGAIN: int
HEADER_VERSION_NUMBER: int

def _set_hooks(error_factory: Callable[[int, str, bool], BaseException], log_sink: Callable[[int, str], None]) -> None: ...
def version() -> str: ...
def version_number() -> int: ...
def strerror(code: int) -> str: ...
def money_state_name(state: int) -> str: ...

class NativeResult:
    @property
    def outcome(self) -> int: ...
    @property
    def delivery(self) -> int: ...
    @property
    def money_state(self) -> int: ...
    @property
    def http_status(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def order_id(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def provider_payment_id(self) -> Optional[str]: ...
    @property
    def provider_status(self) -> Optional[str]: ...
    @property
    def error(self) -> Optional[str]: ...
    @property
    def attempts(self) -> int: ...
    @property
    def from_ledger(self) -> bool: ...
    @property
    def json(self) -> str: ...

class NativeHeaders:
    def add(self, name: str, value: str) -> None: ...

class NativeClient:
    def __init__(
        self,
        config_json: str,
        with_log: bool,
        request_hook: Optional[Callable[[NativeHeaders, str, str, str, str, str, bytes, int, int], bool]],
    ) -> None: ...
    def submit(
        self,
        order_id: str,
        body: bytes,
        idempotency_key: Optional[str],
        path: Optional[str],
        deadline_ms: int,
        headers: List[Tuple[str, str]],
        traceparent: Optional[str],
    ) -> NativeResult: ...
    def submit_async(
        self,
        order_id: str,
        body: bytes,
        idempotency_key: Optional[str],
        path: Optional[str],
        deadline_ms: int,
        headers: List[Tuple[str, str]],
        traceparent: Optional[str],
        done: Callable[[Optional[NativeResult], int, Optional[str]], None],
    ) -> None: ...
    def submit_many(
        self,
        payments: List[Tuple[str, bytes, Optional[str], Optional[str], int]],
        max_in_flight: int,
    ) -> List[Tuple[Optional[NativeResult], int, Optional[str]]]: ...
    def submit_operation(
        self,
        order_id: str,
        kind: int,
        ref: str,
        amount: int,
        body: Optional[str],
        target_id: Optional[str],
        deadline_ms: int,
    ) -> NativeResult: ...
    def query(self, order_id: str) -> NativeResult: ...
    def reconcile(
        self, body_for: Optional[Callable[[str], Optional[bytes]]], limit: int, older_than_ms: int
    ) -> str: ...
    def apply_webhook(
        self, method: str, url: str, headers: List[Tuple[str, str]], body: bytes
    ) -> Tuple[int, str, bytes, str]: ...
    def ledger_get(self, order_id: str) -> str: ...
    def ledger_list(self, state: Optional[str], updated_before_ms: int, limit: int) -> str: ...
    def stats(self) -> str: ...
    def metrics(self) -> str: ...
    def reopen_log(self) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
