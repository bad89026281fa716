"""Client.metrics() (the C library's Prometheus text), Client.reopen_log(),
and payretry.prometheus, a prometheus_client collector over them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import payretry
import payretry.prometheus
from conftest import Sim, body, config


def test_metrics_are_prometheus_text_counting_runs_attempts_and_lookups(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        sim.script("o-met", ["503", "none"])
        c.submit("o-met", body("o-met"))
        c.submit("o-met", body("o-met"))  # answered from the ledger: not a second run
        text = c.metrics()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families and all(name.startswith("payretry_") for name in families)
    assert all(f"# TYPE {n}" in text and f"# HELP {n}" in text for n in ("payretry_payments_total",))

    def value(family: str, sample: str, **labels: str) -> float:
        return sum(s.value for s in families[family].samples
                   if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))

    assert value("payretry_payments", "payretry_payments_total", outcome="SUCCEEDED", delivery="delivered") == 1
    assert value("payretry_ledger_answers", "payretry_ledger_answers_total", outcome="SUCCEEDED") == 1
    assert value("payretry_attempts", "payretry_attempts_total", reason="http_503") == 1
    assert value("payretry_attempt_duration_seconds", "payretry_attempt_duration_seconds_count") == 2


def test_the_collector_serves_one_client_or_several_labelled(sim: Sim) -> None:
    with payretry.Client(config(sim)) as eu, payretry.Client(config(sim)) as us:
        eu.submit("o-eu", body("o-eu"))
        for oid in ("o-us-1", "o-us-2"):
            us.submit(oid, body(oid))

        alone = CollectorRegistry()
        payretry.prometheus.register(eu, alone)
        assert alone.get_sample_value(
            "payretry_payments_total", {"outcome": "SUCCEEDED", "delivery": "delivered"}) == 1

        both = CollectorRegistry()
        collector = payretry.prometheus.register({"eu": eu, "us": us}, both, label="client")
        for name, runs in (("eu", 1), ("us", 2)):
            assert both.get_sample_value(
                "payretry_payments_total", {"client": name, "outcome": "SUCCEEDED", "delivery": "delivered"}) == runs
        exposition = generate_latest(both).decode()
        assert exposition.count("# TYPE payretry_payments_total counter") == 1  # one family for both
        us.close()
        after_close = generate_latest(both).decode()
        assert 'client="eu"' in after_close and 'client="us"' not in after_close
        both.unregister(collector)


def test_import_payretry_does_not_import_prometheus_client() -> None:
    code = "import sys, payretry; sys.exit('prometheus_client' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(sys.executable)).returncode == 0


def test_reopen_log_follows_a_rotated_file(sim: Sim, tmp_path: Path) -> None:
    log = tmp_path / "payretry.jsonl"
    with payretry.Client(config(sim, log={"path": str(log), "level": "debug"})) as c:
        c.submit("o-log-1", body("o-log-1"))
        rotated = tmp_path / "payretry.jsonl.1"
        log.rename(rotated)
        c.reopen_log()
        c.submit("o-log-2", body("o-log-2"))
    before = [json.loads(ln) for ln in rotated.read_text().splitlines()]
    after = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert any(ln.get("order_id") == "o-log-1" for ln in before)
    assert any(ln.get("order_id") == "o-log-2" for ln in after)
    assert not any(ln.get("order_id") == "o-log-2" for ln in before)


def test_reopen_log_that_cannot_open_the_file_raises_and_keeps_the_old_one(sim: Sim, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    log = logdir / "payretry.jsonl"
    with payretry.Client(config(sim, log={"path": str(log), "level": "debug"})) as c:
        log.rename(tmp_path / "moved.jsonl")
        logdir.rmdir()  # the path can no longer be created
        with pytest.raises(payretry.PayIOError):
            c.reopen_log()
        c.submit("o-log-kept", body("o-log-kept"))
    kept = (tmp_path / "moved.jsonl").read_text()
    assert "o-log-kept" in kept
    with payretry.Client(config(sim)) as c:
        c.reopen_log()  # no log file: nothing to do
