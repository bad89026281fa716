"""Shared helpers of crash_test.py and concurrency_test.py (standard library only).

The simulator (payretry-sim) and every worker (ledger_worker) are child
processes of the test. They are tracked here and killed by PID in `finally`
blocks, so that no run leaves one behind.
"""

import glob
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

SKIP = 77  # CTest's SKIP_RETURN_CODE

_live_lock = threading.Lock()
_live = {}  # pid -> Popen
_closing = False


class TestFailure(Exception):
    pass


def exit_on_sigterm():
    """SIGTERM (and SIGHUP) unwind like Ctrl-C, so that `finally` blocks run."""
    def handler(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def log(msg):
    print(msg, flush=True)


def child_env():
    """The environment of the children: no proxy may catch loopback traffic."""
    env = dict(os.environ)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[k]
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def spawn(argv, **kw):
    with _live_lock:
        if _closing:
            raise TestFailure("shutting down: not starting " + os.path.basename(argv[0]))
        p = subprocess.Popen(argv, env=child_env(), **kw)
        _live[p.pid] = p
    return p


def reap(p):
    with _live_lock:
        _live.pop(p.pid, None)


def kill_all_children():
    """SIGKILL every child still running, each by its own PID, then reap it;
    no child is started after this."""
    global _closing
    with _live_lock:
        _closing = True
        procs = list(_live.values())
        _live.clear()
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def find_binary(build, *candidates):
    for c in candidates:
        path = os.path.join(build, c)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise TestFailure("none of %s found under %s (build first)" % (", ".join(candidates), build))


# ---- the simulator --------------------------------------------------------------------------


class Simulator:
    def __init__(self, build, seed, faults, slow_ms=300, retry_after_s=0, api_key="sk_test_crash_secret",
                 threads=2):
        self.binary = find_binary(build, "sim/payretry-sim")
        self.api_key = api_key
        argv = [self.binary, "--port", "0", "--threads", str(threads), "--seed", str(seed),
                "--slow-ms", str(slow_ms), "--retry-after-s", str(retry_after_s), "--refuse-ms", "100",
                "--api-key", api_key]
        for name, p in sorted(faults.items()):
            argv += ["--fault", "%s=%g" % (name, p)]
        self._err = tempfile.TemporaryFile(mode="w+")
        self.proc = spawn(argv, stdout=subprocess.PIPE, stderr=self._err, text=True)
        line = self._read_banner()
        if not line.startswith("listening on 127.0.0.1:"):
            raise TestFailure("payretry-sim did not start: %r %s" % (line, self._stderr()))
        self.port = int(line.rsplit(":", 1)[1])
        self.base_url = "http://127.0.0.1:%d" % self.port
        self._conn = None

    def _read_banner(self):
        result = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(60)
        return result[0].strip() if result else ""

    def _stderr(self):
        self._err.seek(0)
        return self._err.read()

    def _request(self, method, path, body=None):
        for attempt in range(5):
            try:
                if self._conn is None:
                    self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                headers = {"Content-Type": "application/json"} if body is not None else {}
                self._conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                r = self._conn.getresponse()
                data = r.read()
                if r.status != 200:
                    raise TestFailure("simulator %s %s: HTTP %d %s" % (method, path, r.status, data[:300]))
                return json.loads(data)
            except (http.client.HTTPException, ConnectionError, OSError):
                # An idle keep-alive connection closed by the server: reconnect.
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                if attempt == 4:
                    raise
                time.sleep(0.1)

    def truth(self):
        return self._request("GET", "/__admin/truth")

    def truth_of(self, order_id):
        return self._request("GET", "/__admin/truth?order_id=" + urllib.parse.quote(order_id, safe=""))

    def stats(self):
        return self._request("GET", "/__admin/stats")

    def config(self, **patch):
        return self._request("POST", "/__admin/config", patch)

    def script(self, order_id, faults):
        return self._request("POST", "/__admin/script", {"order_id": order_id, "faults": list(faults)})

    def stop(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
            except ProcessLookupError:
                pass
        reap(self.proc)
        self.proc.stdout.close()
        self._err.close()


# ---- the ledger -------------------------------------------------------------------------------


def find_psql():
    p = shutil.which("psql")
    if p:
        return p
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    return found[-1] if found else None


def with_pg_options(url, options):
    """`url` with a libpq `options` parameter (a URI or a key=value string)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        enc = options.replace(" ", "%20").replace("=", "%3D")
        return url + ("&" if "?" in url else "?") + "options=" + enc
    return url + " options='" + options + "'"


class Ledger:
    """A fresh, empty ledger for one run: a SQLite file in a new directory, or a
    new PostgreSQL schema selected through the URL's search_path."""

    def __init__(self, kind, tag, keep=False):
        self.kind = kind
        self.keep = keep
        self.dir = tempfile.mkdtemp(prefix="payretry-%s-" % tag)
        self.schema = None
        if kind == "sqlite":
            self.url = "sqlite://" + os.path.join(self.dir, "payments.db")
        elif kind == "postgres":
            base = os.environ.get("PAYRETRY_TEST_PG_URL", "")
            if not base:
                shutil.rmtree(self.dir, ignore_errors=True)
                if os.environ.get("PAYRETRY_REQUIRE_PG") == "1":
                    log("FAIL: PAYRETRY_REQUIRE_PG=1 but PAYRETRY_TEST_PG_URL is not set "
                        "(start a server with tests/ledger/pg_cluster.sh start DIR)")
                    sys.exit(1)
                log("skipped: PAYRETRY_TEST_PG_URL not set")
                sys.exit(SKIP)
            self.base = base
            self.psql = find_psql()
            if not self.psql:
                raise TestFailure("psql not found: install postgresql-client")
            self.schema = "payretry_%s_%d_%s" % (tag, os.getpid(), "%08x" % random.SystemRandom().getrandbits(32))
            self.sql("CREATE SCHEMA %s" % self.schema)
            self.url = with_pg_options(base, "-c search_path=%s" % self.schema)
        else:
            raise TestFailure("unknown ledger kind " + kind)

    def sql(self, statement):
        r = subprocess.run([self.psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.base, "-c", statement],
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            raise TestFailure("psql %r failed: %s" % (statement, r.stderr.strip()))
        return r.stdout

    def describe(self):
        return "sqlite file %s" % self.url[len("sqlite://"):] if self.kind == "sqlite" else \
            "postgresql schema %s" % self.schema

    def cleanup(self):
        if self.keep:
            log("kept: " + self.describe())
            return
        if self.schema:
            try:
                self.sql("DROP SCHEMA IF EXISTS %s CASCADE" % self.schema)
            except Exception as e:  # noqa: BLE001 - cleanup must not hide the result
                log("warning: could not drop schema %s: %s" % (self.schema, e))
        shutil.rmtree(self.dir, ignore_errors=True)


def write_config(path, sim, ledger_url, retry, lease_margin_ms=None, in_progress_wait_ms=0, extra=None):
    ledger = {"url": ledger_url}
    if lease_margin_ms is not None:
        ledger["lease_margin_ms"] = lease_margin_ms
    cfg = {
        "provider": "stripe",
        "base_url": sim.base_url,
        "create_path": "/v1/payments",
        "auth": {"bearer": sim.api_key},
        "retry": retry,
        "ledger": ledger,
        "in_progress_wait_ms": in_progress_wait_ms,
    }
    if extra:
        cfg.update(extra)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


# ---- workers ------------------------------------------------------------------------------------


class WorkerRun:
    """What one ledger_worker process did."""

    def __init__(self, argv, pid, rc, stdout, stderr, elapsed):
        self.argv = argv
        self.pid = pid
        self.rc = rc
        self.stderr = stderr
        self.elapsed = elapsed
        self.results = []  # (order, outcome, delivery, from_ledger, attempts, key)
        self.errors = []   # (order, code, message)
        for line in stdout.splitlines():
            f = line.split()
            if len(f) >= 3 and f[1] == "ERROR":
                self.errors.append((f[0], int(f[2]), " ".join(f[3:])))
            elif len(f) == 6:
                self.results.append((f[0], f[1], f[2], int(f[3]), int(f[4]), f[5]))
            elif line.strip():
                raise TestFailure("unexpected worker line %r from %s" % (line, " ".join(argv)))

    @property
    def killed(self):
        return self.rc == -signal.SIGKILL


def run_worker(worker, config, prefix, lo, hi, threads=4, kill_at="none", kill_prob=0.0, seed=1,
               kill_after_s=None, kill_min_attempt=1, start_at_ms=0, send_log=None, timeout_s=180):
    """Runs one worker to its end; with kill_after_s, SIGKILLs it from outside
    after that many seconds if it is still running."""
    argv = [worker, "--threads", str(threads), "--kill-at", kill_at, "--kill-prob", repr(kill_prob),
            "--seed", str(seed), "--kill-min-attempt", str(kill_min_attempt)]
    if start_at_ms:
        argv += ["--start-at-ms", str(start_at_ms)]
    if send_log:
        argv += ["--send-log", send_log]
    argv += [config, prefix, str(lo), str(hi)]
    return finish_worker(start_worker(argv), kill_after_s, timeout_s)


def start_worker(argv):
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p._argv = argv
    p._started = time.monotonic()
    return p


def finish_worker(p, kill_after_s=None, timeout_s=180):
    try:
        out = err = ""
        if kill_after_s is not None:
            try:
                out, err = p.communicate(timeout=max(0.0, kill_after_s - (time.monotonic() - p._started)))
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                out, err = p.communicate(timeout=timeout_s)
        else:
            try:
                out, err = p.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.communicate(timeout=60)
                raise TestFailure("worker still running after %d s: %s" % (timeout_s, " ".join(p._argv)))
        return WorkerRun(p._argv, p.pid, p.returncode, out, err, time.monotonic() - p._started)
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=60)
        reap(p)


def read_send_log(path):
    """The request hook's record of every attempt about to be sent, by every
    process: {order: [(key, attempt, unix_ms, pid)]}, and the number of torn
    lines (a line is one small O_APPEND write, so there should be none). A
    hook kill writes its line and dies before the send."""
    sends = {}
    torn = 0
    if not os.path.exists(path):
        return sends, torn
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 5 or not line.endswith("\n") or not all(p.isdigit() for p in parts[2:]):
                torn += 1
                continue
            sends.setdefault(parts[0], []).append((parts[1], int(parts[2]), int(parts[3]), int(parts[4])))
    return sends, torn


def dump_ledger(worker, config):
    """Every payment of the ledger, through pay_ledger_list, by order id."""
    r = subprocess.run([worker, "--dump", config], env=child_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        raise TestFailure("ledger dump failed (%d): %s" % (r.returncode, r.stderr.strip()))
    lines = r.stdout.splitlines()
    states = ["PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"]
    if len(lines) != len(states):
        raise TestFailure("ledger dump: expected %d lines, got %d" % (len(states), len(lines)))
    rows = {}
    for state, line in zip(states, lines):
        for p in json.loads(line):
            if p["state"] != state:
                raise TestFailure("pay_ledger_list(%s) returned a %s payment: %s" % (state, p["state"], p))
            if p["order_id"] in rows:
                raise TestFailure("order %s listed twice by pay_ledger_list" % p["order_id"])
            rows[p["order_id"]] = p
    return rows


def ledger_get(worker, config, orders):
    """pay_ledger_get of each order: {order: {"payment":..., "attempts":[...]} or None}."""
    r = subprocess.run([worker, "--get", config], input="".join(o + "\n" for o in orders), env=child_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        raise TestFailure("ledger get failed (%d): %s" % (r.returncode, r.stderr.strip()))
    lines = r.stdout.splitlines()
    if len(lines) != len(orders):
        raise TestFailure("ledger get: %d answers for %d orders" % (len(lines), len(orders)))
    return {o: json.loads(l) for o, l in zip(orders, lines)}


class Checker:
    """Collects every violated invariant, so that one run reports them all."""

    def __init__(self):
        self.failures = []

    def check(self, ok, msg):
        if not ok:
            self.failures.append(msg)
        return ok

    def report(self, limit=40):
        for m in self.failures[:limit]:
            log("  VIOLATION: " + m)
        if len(self.failures) > limit:
            log("  ... and %d more" % (len(self.failures) - limit))
        return not self.failures
