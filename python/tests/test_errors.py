"""Each exception on bad input; a closed client; results that outlive it."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import payretry
from payretry import _payretry
from conftest import Sim, body, config


def test_every_c_error_code_has_its_own_exception_class() -> None:
    codes = {name: getattr(_payretry, name) for name in dir(_payretry) if name.startswith("PAY_E")}
    codes["PAY_ERROR"] = _payretry.PAY_ERROR
    seen = set()
    for name, code in codes.items():
        e = payretry.error_from_code(code, "m")
        assert isinstance(e, payretry.PayError)
        assert e.code == code and e.name == name and e.message == "m"
        assert type(e) is not payretry.PayError
        seen.add(type(e))
    assert len(seen) == len(codes)
    assert type(payretry.error_from_code(-999, "future code")) is payretry.PayError


def test_exception_classes_are_also_the_matching_builtin_errors() -> None:
    assert issubclass(payretry.ConfigError, ValueError)
    assert issubclass(payretry.InvalidArgumentError, ValueError)
    assert issubclass(payretry.TooBigError, ValueError)
    assert issubclass(payretry.IdempotencyKeyError, ValueError)
    assert issubclass(payretry.NotFoundError, LookupError)
    assert issubclass(payretry.PayIOError, OSError)
    assert issubclass(payretry.PayMemoryError, MemoryError)
    assert issubclass(payretry.ClientClosedError, payretry.InvalidArgumentError)
    e = payretry.PayIOError(-10, "cannot open log")
    assert str(e) == "cannot open log" and e.code == -10
    back = pickle.loads(pickle.dumps(payretry.MismatchError(-5, "key k")))
    assert type(back) is payretry.MismatchError and back.code == -5 and back.message == "key k"


def test_an_unknown_config_key_is_a_config_error_naming_it(sim: Sim) -> None:
    cfg = config(sim)
    cfg["retry"]["max_atempts"] = 3
    with pytest.raises(payretry.ConfigError, match="max_atempts") as info:
        payretry.Client(cfg)
    assert info.value.code == _payretry.PAY_ECONFIG
    assert isinstance(info.value, ValueError)


def test_a_config_without_a_ledger_is_a_config_error_saying_memory_must_be_written(sim: Sim) -> None:
    cfg = config(sim)
    del cfg["ledger"]
    with pytest.raises(payretry.ConfigError, match=r"^ledger: is required") as info:
        payretry.Client(cfg)
    assert info.value.code == _payretry.PAY_ECONFIG
    assert '"memory:"' in str(info.value)
    cfg["ledger"] = "memory:"
    with payretry.Client(cfg) as c:
        assert c.submit("o-mem-ledger", body("o-mem-ledger")).outcome is payretry.Outcome.SUCCEEDED


def test_a_config_error_never_echoes_the_secret(sim: Sim) -> None:
    cfg = config(sim)
    cfg["auth"] = {"bearer": "sk_live_do_not_print", "header": "X"}
    with pytest.raises(payretry.ConfigError) as info:
        payretry.Client(cfg)
    assert "sk_live_do_not_print" not in str(info.value)


def test_config_may_be_a_dict_a_json_text_or_a_path(sim: Sim, tmp_path: Path) -> None:
    cfg = config(sim)
    p = tmp_path / "payretry.json"
    p.write_text(json.dumps(cfg))
    for form in (cfg, json.dumps(cfg), "  " + json.dumps(cfg), p, str(p)):
        with payretry.Client(form) as c:
            assert c.submit("o-cfg", body("o-cfg")).outcome is payretry.Outcome.SUCCEEDED
    with pytest.raises(FileNotFoundError):
        payretry.Client(tmp_path / "missing.json")
    with pytest.raises(payretry.ConfigError):
        payretry.Client("{not json")
    with pytest.raises(TypeError):
        payretry.Client(42)  # type: ignore[arg-type]


def test_none_where_a_value_is_required_is_an_invalid_argument_error(sim: Sim) -> None:
    with pytest.raises(payretry.InvalidArgumentError, match="config"):
        payretry.Client(None)  # type: ignore[arg-type]
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.InvalidArgumentError, match="order_id"):
            c.submit(None, body("x"))  # type: ignore[arg-type]
        with pytest.raises(payretry.InvalidArgumentError, match="body"):
            c.submit("o-none", None)  # type: ignore[arg-type]
        with pytest.raises(payretry.InvalidArgumentError, match="order_id"):
            c.query(None)  # type: ignore[arg-type]
        with pytest.raises(payretry.InvalidArgumentError, match="order_id"):
            c.ledger_get(None)  # type: ignore[arg-type]
        # None for an optional argument is its default, not an error.
        assert c.submit("o-none", body("o-none"), idempotency_key=None).succeeded


def test_wrong_types_are_type_errors(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(TypeError):
            c.submit(42, body("x"))  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.submit("o-t", 42)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.submit("o-t", body("o-t"), idempotency_key=b"k")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.submit("o-t", body("o-t"), deadline_ms="5")  # type: ignore[arg-type]


def test_empty_order_and_body_are_rejected_by_the_library(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.InvalidArgumentError) as info:
            c.submit("", body("x"))
        assert info.value.code == _payretry.PAY_EINVALID
        with pytest.raises(payretry.InvalidArgumentError):
            c.submit("o-empty", b"")
        with pytest.raises(payretry.InvalidArgumentError, match="NUL"):
            c.submit("o-\x00cut", body("x"))
    assert sim.requests() == 0


def test_the_same_order_with_another_body_is_a_mismatch_and_sends_nothing(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        c.submit("o-mm", body("o-mm", 1000))
        before = sim.requests()
        with pytest.raises(payretry.MismatchError) as info:
            c.submit("o-mm", body("o-mm", 2000))
        assert info.value.code == _payretry.PAY_EMISMATCH
        # The same dict keys in another order are other bytes: also a mismatch.
        reordered = {"currency": "eur", "amount": 1000, "order_id": "o-mm"}
        with pytest.raises(payretry.MismatchError):
            c.submit("o-mm", reordered)
    assert sim.requests() == before
    assert sim.charges("o-mm") == 1


def test_a_body_over_max_body_bytes_is_too_big(sim: Sim) -> None:
    with payretry.Client(config(sim, max_body_bytes=64)) as c:
        big = body("o-big") | {"description": "x" * 100}
        with pytest.raises(payretry.TooBigError) as info:
            c.submit("o-big", big)
        assert isinstance(info.value, ValueError)
        assert c.submit("o-small", body("o-small")).succeeded
    assert sim.charges("o-big") == 0


def test_a_header_injection_in_the_idempotency_key_is_refused(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.IdempotencyKeyError) as info:
            c.submit("o-inj", body("o-inj"), idempotency_key="a\r\nX: y")
        assert info.value.code == _payretry.PAY_EKEY
        with pytest.raises(payretry.IdempotencyKeyError):
            c.submit("o-inj", body("o-inj"), idempotency_key="")
        with pytest.raises(payretry.IdempotencyKeyError):
            c.submit("o-inj", body("o-inj"), idempotency_key="ab\x00cd")
    assert sim.requests() == 0


def test_an_order_the_ledger_never_saw_is_not_found(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.NotFoundError):
            c.query("o-never")
        with pytest.raises(LookupError):
            c.ledger_get("o-never")


def test_a_closed_client_raises_client_closed_and_close_is_idempotent(sim: Sim) -> None:
    c = payretry.Client(config(sim))
    c.close()
    c.close()
    assert c.closed and "closed" in repr(c)
    calls: list[Any] = [
        lambda: c.submit("o-closed", body("o-closed")),
        lambda: c.query("o-closed"),
        lambda: c.reconcile(),
        lambda: c.ledger_get("o-closed"),
        lambda: c.ledger_list(),
        lambda: c.stats(),
    ]
    for call in calls:
        with pytest.raises(payretry.ClientClosedError, match="closed"):
            call()
    with pytest.raises(ValueError):
        c.submit("o-closed", body("o-closed"))
    with pytest.raises(payretry.ClientClosedError):
        with c:
            pass
    assert sim.requests() == 0


def test_a_result_outlives_its_client(sim: Sim) -> None:
    c = payretry.Client(config(sim))
    r = c.submit("o-outlive", body("o-outlive"))
    c.close()
    del c
    gc.collect()
    assert r.outcome is payretry.Outcome.SUCCEEDED
    assert r.json()["id"] == r.provider_payment_id
    assert r.to_dict()["order_id"] == "o-outlive"


def test_a_native_result_outlives_its_native_client(sim: Sim) -> None:
    # The C contract itself, under the Python layer: pay_result after pay_client_free.
    native = _payretry.NativeClient(json.dumps(config(sim)), False, None)
    nr = native.submit("o-native", payretry.body_bytes(body("o-native")), None, None, 0, [], None)
    native.close()
    del native
    gc.collect()
    assert nr.outcome == 1 and nr.order_id == "o-native" and nr.http_status == 200
    assert json.loads(nr.json)["outcome"] == "SUCCEEDED"
    assert json.loads(nr.body)["id"] == nr.provider_payment_id
