#!/usr/bin/env python3
"""A loopback recording proxy: every request it receives (method, raw target,
path, query, headers in order and case, raw body) is appended to a JSONL file,
forwarded unchanged to the upstream (a payretry-sim playing the provider), and
the upstream's answer is returned unchanged and recorded with it.

Standard library only (http.server, threaded). Used in-process by runner.py;
also runs on its own for debugging:

    recorder.py --upstream http://127.0.0.1:8080 --out requests.jsonl [--port 0]
    # prints "listening on 127.0.0.1:<port>"
"""
import argparse
import base64
import http.client
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, so they
# are not forwarded in either direction (they are still recorded).
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
              "te", "trailer", "transfer-encoding", "upgrade"}


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def _text(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' pools expect
    server_version = "payretry-sdk-recorder"

    def log_message(self, fmt, *args):  # quiet: the JSONL is the log
        pass

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _handle(self):
        rec = self.server.recorder
        started = time.time()
        body = self._read_body()
        parts = urllib.parse.urlsplit(self.path)
        # An absolute-form target (RFC 9112 3.2.2, "POST http://host/path?q", what
        # alipay-sdk-python sends) goes upstream in origin form.
        origin = parts.path + ("?" + parts.query if parts.query else "") if parts.scheme else self.path
        entry = {
            "seq": rec.next_seq(),
            "time": started,
            "method": self.command,
            "target": self.path,
            "absolute_form": bool(parts.scheme),
            "path": parts.path,
            "query": parts.query,
            "http_version": self.request_version,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_b64": _b64(body),
            "body_text": _text(body),
        }
        # Expect: 100-continue was answered here already; the body goes upstream at once.
        fwd_headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP
                       and k.lower() not in ("content-length", "expect")]
        try:
            conn = http.client.HTTPConnection(rec.upstream_host, rec.upstream_port, timeout=rec.timeout)
            conn.putrequest(self.command, origin, skip_host=True, skip_accept_encoding=True)
            for k, v in fwd_headers:
                conn.putheader(k, v)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            resp = conn.getresponse()
            rbody = resp.read()
            status, reason, rheaders = resp.status, resp.reason, resp.getheaders()
            conn.close()
        except Exception as e:  # the upstream failed: say so, in the recording too
            status, reason = 502, "Bad Gateway"
            rbody = json.dumps({"recorder_error": f"upstream {rec.upstream}: {e!r}"}).encode()
            rheaders = [("Content-Type", "application/json")]
        entry["response"] = {
            "status": status,
            "headers": [[k, v] for k, v in rheaders],
            "body_b64": _b64(rbody),
            "body_text": _text(rbody),
        }
        rec.write(entry)
        self.send_response_only(status, reason)
        for k, v in rheaders:
            if k.lower() in HOP_BY_HOP or k.lower() == "content-length":
                continue
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rbody)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(rbody)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class Recorder:
    """Listens on 127.0.0.1:port (0: a free one); start() returns the base URL."""

    def __init__(self, upstream, out_path, port=0, timeout=30.0):
        u = urllib.parse.urlsplit(upstream)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"upstream must be http://host:port, not {upstream!r}")
        self.upstream = upstream
        self.upstream_host = u.hostname
        self.upstream_port = u.port or 80
        self.out_path = out_path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._seq = 0
        self._out = open(out_path, "a", encoding="utf-8")
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.recorder = self
        self._thread = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def next_seq(self):
        with self._lock:
            self._seq += 1
            return self._seq

    def write(self, entry):
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()

    def start(self):
        self._thread = threading.Thread(target=self._server.serve_forever, name="recorder", daemon=True)
        self._thread.start()
        return self.url

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            self._out.close()


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return sorted(out, key=lambda e: e["seq"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", required=True, help="http://127.0.0.1:PORT of the payretry-sim")
    ap.add_argument("--out", required=True, help="JSONL file to append to")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    rec = Recorder(a.upstream, a.out, a.port)
    print(f"listening on {rec.url[len('http://'):]}", flush=True)
    try:
        rec._server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
