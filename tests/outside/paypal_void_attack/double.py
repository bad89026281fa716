"""Our own PayPal double for the void attack (not sim/, not payretry-sim).

What it implements, as PayPal documents it (developer.paypal.com, Orders v2
and Payments v2; what is not documented is marked n.d. and chosen here):
  POST /v1/oauth2/token            client credentials (Basic auth), a Bearer
                                   token; every /v2 request without a valid
                                   one is a 401 INVALID_TOKEN.
  POST /v2/checkout/orders         intent AUTHORIZE with a payment source:
                                   201, status COMPLETED, the authorization in
                                   purchase_units[0].payments.authorizations[0]
                                   (id, status CREATED, amount).
  GET  /v2/checkout/orders/{id}    the order as it stands now.
  GET  /v2/payments/authorizations/{id}
  POST /v2/payments/authorizations/{id}/capture
                                   201 with the capture (COMPLETED); 422
                                   AUTHORIZATION_VOIDED on a voided one, 422
                                   AUTHORIZATION_ALREADY_CAPTURED on a captured one.
  POST /v2/payments/authorizations/{id}/void
                                   204 no body (Prefer return=minimal, the
                                   default) or 200 with the authorization
                                   (return=representation); 422
                                   PREVIOUSLY_VOIDED / PREVIOUSLY_CAPTURED.
                                   The void takes no request body: one that
                                   comes with a body or a Content-Type is noted.

PayPal-Request-Id (Payments v2: kept 45 days; Orders v2: 6 h): a request
under a key whose first request succeeded answers that request's LATEST
status (the authorization's or the capture's as it is now), never acts
again; a key whose first request is still running answers 409
PREVIOUS_REQUEST_IN_PROGRESS. An error answer is not kept (n.d. at PayPal:
chosen so that a failed first request is processed anew). A void or capture
WITHOUT a key is processed by state alone. `key_window_s` lets a scenario
make the provider forget keys sooner.

Truth (the provider's own counts): `voids` and `captures`, executed per key
and per authorization; `posts`, every POST with its key, path, answer
status, whether it acted, and whether it carried a body / Content-Type.

Faults, queued per path regex (`fault(regex, name, ...)`), one per request:
  act_reset     act, then reset the connection (RST, no answer)
  act_500       act, keep the key's result, answer 500 INTERNAL_SERVER_ERROR
  act_hang      act, keep the result, hold the answer `hang_s`, then answer
  hang_act      hold `hang_s` first (key in progress), then act and answer,
                whether or not the client is still there
  reset_before  reset without acting
  503_before    503 without acting
  proxy_204     a 204 with no body, and nothing reaches PayPal (a proxy,
                a load balancer, a stub)
  proxy_200_html a 200 text/html page, nothing reaches PayPal
  proxy_200_json a 200 {"ok": true}, nothing reaches PayPal
  garbled_200   act, answer 200 with a truncated JSON body (right length)
  short_200     act, answer 200 whose Content-Length promises more than is
                sent, then close
"""
import base64
import itertools
import json
import os
import re
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLIENT_ID, CLIENT_SECRET = "AZ1client", "s3cr3t-pp"
PAYMENTS_WINDOW_S = 45 * 86400
ORDERS_WINDOW_S = 6 * 3600


class Reset(Exception):
    pass


def err(status, name, issue, msg=""):
    return status, {"name": name, "message": msg or name, "details": [{"issue": issue, "description": msg or issue}]}


class Double:
    def __init__(self, hang_s=1.5, void_prefer_default="minimal"):
        self.hang_s = hang_s
        self.void_prefer_default = void_prefer_default  # what a void without Prefer answers
        self.lock = threading.Lock()
        self.ids = itertools.count(1000)
        self.tokens = set()
        self.orders = {}      # order id -> {"custom_id", "amount", "auth"}
        self.auths = {}       # auth id -> {"status", "order", "amount", "captures": [cap id]}
        self.caps = {}        # capture id -> capture object
        self.keys = {}        # (op, key) -> {"state": running|done, "at", "target", "form", "result_id"}
        self.key_window_s = None  # None: PayPal's (45 d payments, 6 h orders)
        self.faults = []      # [(regex, fault)]
        self.voids_by_key, self.voids_by_auth = {}, {}
        self.caps_by_key, self.caps_by_auth = {}, {}
        self.posts = []       # dicts, in arrival order
        self.token_posts = 0
        self.void_ignores_key = False  # the 2.5 spec's void: no PayPal-Request-Id honoured
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _reset(self):
                # RST, not FIN: SO_LINGER 0 then close.
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
                self.close_connection = True
                raise Reset()

            def _send(self, status, body, ctype="application/json", extra=None):
                if status == 204:
                    raw = b""
                elif isinstance(body, (bytes, bytearray)):
                    raw = bytes(body)
                else:
                    raw = json.dumps(body).encode()
                self.send_response(status)
                if status != 204:
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(raw)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("Paypal-Debug-Id", "dbg%d" % next(srv.ids))
                self.end_headers()
                if raw:
                    self.wfile.write(raw)

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _authorized(self):
                a = self.headers.get("Authorization", "")
                return a.startswith("Bearer ") and a[7:] in srv.tokens

            def do_GET(self):
                try:
                    if not self._authorized():
                        return self._send(*err(401, "AUTHENTICATION_FAILURE", "INVALID_TOKEN"))
                    st, body = srv.get(self.path)
                    self._send(st, body)
                except Reset:
                    pass

            def do_POST(self):
                try:
                    raw = self._body()
                    path = urllib.parse.urlsplit(self.path).path
                    if path == "/v1/oauth2/token":
                        return self._token(raw)
                    if not self._authorized():
                        return self._send(*err(401, "AUTHENTICATION_FAILURE", "INVALID_TOKEN"))
                    srv.post(self, path, raw)
                except Reset:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _token(self, raw):
                want = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
                form = urllib.parse.parse_qs(raw.decode())
                if self.headers.get("Authorization") != want or form.get("grant_type") != ["client_credentials"]:
                    return self._send(401, {"error": "invalid_client", "error_description": "Client Authentication failed"})
                tok = "A21AA%d" % next(srv.ids)
                with srv.lock:
                    srv.tokens.add(tok)
                    srv.token_posts += 1
                self._send(200, {"scope": "https://uri.paypal.com/services/payments/payment/authcapture",
                                 "access_token": tok, "token_type": "Bearer", "app_id": "APP-1", "expires_in": 32400,
                                 "nonce": "n%d" % next(srv.ids)})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- scenario controls --------------------------------------------------

    def fault(self, regex, *names):
        with self.lock:
            for n in names:
                self.faults.append((re.compile(regex), n))

    def _take_fault(self, path):
        with self.lock:
            for i, (rx, n) in enumerate(self.faults):
                if rx.search(path):
                    del self.faults[i]
                    return n
        return None

    def void_outside(self, auth_id):
        """The merchant voids in PayPal's dashboard: no key, no payretry."""
        with self.lock:
            a = self.auths[auth_id]
            assert a["status"] == "CREATED"
            a["status"] = "VOIDED"

    def capture_outside(self, auth_id):
        with self.lock:
            self._do_capture(auth_id, None)

    # ---- truth --------------------------------------------------------------

    def posts_of(self, auth_id, op=None):
        return [p for p in self.posts if p.get("auth") == auth_id and (op is None or p["op"] == op)]

    def truth(self, auth_id):
        return {"status": self.auths[auth_id]["status"], "voids": self.voids_by_auth.get(auth_id, 0),
                "captures": self.caps_by_auth.get(auth_id, 0),
                "void_posts": len(self.posts_of(auth_id, "void")), "capture_posts": len(self.posts_of(auth_id, "capture"))}

    # ---- the API ------------------------------------------------------------

    def _order_repr(self, oid):
        o = self.orders[oid]
        a = self.auths[o["auth"]]
        pays = {"authorizations": [self._auth_repr(o["auth"])]}
        if a["captures"]:
            pays["captures"] = [self.caps[c] for c in a["captures"]]
        return {"id": oid, "intent": "AUTHORIZE", "status": "COMPLETED",
                "purchase_units": [{"reference_id": "default", "custom_id": o["custom_id"],
                                    "amount": {"currency_code": "USD", "value": o["amount"]}, "payments": pays}]}

    def _auth_repr(self, aid):
        a = self.auths[aid]
        return {"id": aid, "status": a["status"], "amount": {"currency_code": "USD", "value": a["amount"]},
                "supplementary_data": {"related_ids": {"order_id": a["order"]}},
                "links": [{"href": "/v2/payments/authorizations/" + aid, "rel": "self", "method": "GET"}]}

    def get(self, raw_path):
        path = urllib.parse.urlsplit(raw_path).path
        with self.lock:
            m = re.fullmatch(r"/v2/checkout/orders/([^/]+)", path)
            if m and m.group(1) in self.orders:
                return 200, self._order_repr(m.group(1))
            m = re.fullmatch(r"/v2/payments/authorizations/([^/]+)", path)
            if m and m.group(1) in self.auths:
                return 200, self._auth_repr(m.group(1))
            m = re.fullmatch(r"/v2/payments/captures/([^/]+)", path)
            if m and m.group(1) in self.caps:
                return 200, self.caps[m.group(1)]
        return err(404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")

    def _window(self, op):
        if self.key_window_s is not None:
            return self.key_window_s
        return ORDERS_WINDOW_S if op == "order" else PAYMENTS_WINDOW_S

    def _do_capture(self, aid, key):
        a = self.auths[aid]
        cid = "CAP%d" % next(self.ids)
        self.caps[cid] = {"id": cid, "status": "COMPLETED", "amount": {"currency_code": "USD", "value": a["amount"]},
                          "final_capture": True,
                          "supplementary_data": {"related_ids": {"order_id": a["order"], "authorization_id": aid}}}
        a["captures"].append(cid)
        a["status"] = "CAPTURED"
        self.caps_by_auth[aid] = self.caps_by_auth.get(aid, 0) + 1
        if key:
            self.caps_by_key[key] = self.caps_by_key.get(key, 0) + 1
        return cid

    def _act(self, op, target, key, form):
        """Executes (or refuses by state) under the lock: (status, body,
        acted, result id)."""
        if op == "order":
            req = json.loads(form)
            pu = req["purchase_units"][0]
            oid, aid = "ORD%d" % next(self.ids), "AUTH%d" % next(self.ids)
            self.orders[oid] = {"custom_id": pu.get("custom_id", ""), "amount": pu["amount"]["value"], "auth": aid}
            self.auths[aid] = {"status": "CREATED", "order": oid, "amount": pu["amount"]["value"], "captures": []}
            return 201, self._order_repr(oid), True, oid
        a = self.auths.get(target)
        if a is None:
            return (*err(404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID"), False, None)
        if op == "capture":
            if a["status"] == "VOIDED":
                return (*err(422, "UNPROCESSABLE_ENTITY", "AUTHORIZATION_VOIDED"), False, None)
            if a["status"] == "CAPTURED":
                return (*err(422, "UNPROCESSABLE_ENTITY", "AUTHORIZATION_ALREADY_CAPTURED"), False, None)
            cid = self._do_capture(target, key)
            return 201, self.caps[cid], True, cid
        # void
        if a["status"] == "VOIDED":
            return (*err(422, "UNPROCESSABLE_ENTITY", "PREVIOUSLY_VOIDED"), False, None)
        if a["status"] == "CAPTURED":
            return (*err(422, "UNPROCESSABLE_ENTITY", "PREVIOUSLY_CAPTURED"), False, None)
        a["status"] = "VOIDED"
        self.voids_by_auth[target] = self.voids_by_auth.get(target, 0) + 1
        if key:
            self.voids_by_key[key] = self.voids_by_key.get(key, 0) + 1
        return 200, self._auth_repr(target), True, target

    def _replay(self, op, entry):
        """The first request's LATEST status (PayPal's replay, Pp1).
        PP_SABOTAGE=replay_acts makes a replayed void count as executed
        again: only to show that the judge's "executed twice under one key"
        check can fail (README, "Checks that can fail")."""
        if op == "void" and os.environ.get("PP_SABOTAGE") == "replay_acts":
            self.voids_by_key[entry["key"]] = self.voids_by_key.get(entry["key"], 0) + 1
            self.voids_by_auth[entry["result_id"]] = self.voids_by_auth.get(entry["result_id"], 0) + 1
        if op == "order":
            return 200, self._order_repr(entry["result_id"])
        if op == "capture":
            return 200, self.caps[entry["result_id"]]
        return 200, self._auth_repr(entry["result_id"])

    def post(self, h, path, raw):
        m = re.fullmatch(r"/v2/payments/authorizations/([^/]+)/(capture|void)", path)
        if m:
            op, target = m.group(2), m.group(1)
        elif path == "/v2/checkout/orders":
            op, target = "order", None
        else:
            return h._send(*err(404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID"))
        key = h.headers.get("PayPal-Request-Id")
        if op == "void" and self.void_ignores_key:
            key = None
        prefer = h.headers.get("Prefer") or ("return=" + self.void_prefer_default)
        rec = {"op": op, "auth": target, "key": h.headers.get("PayPal-Request-Id"), "at": time.time(),
               "body_len": len(raw), "content_type": h.headers.get("Content-Type"), "acted": False, "status": None}
        with self.lock:
            self.posts.append(rec)
        fault = self._take_fault(path)
        if fault == "reset_before":
            rec["status"] = "reset"
            h._reset()
        if fault == "503_before":
            rec["status"] = 503
            return h._send(*err(503, "SERVICE_UNAVAILABLE", "SERVICE_UNAVAILABLE"))
        if fault == "proxy_204":
            rec["status"] = "proxy 204"
            return h._send(204, b"")
        if fault == "proxy_200_html":
            rec["status"] = "proxy 200 html"
            return h._send(200, b"<html><body>OK</body></html>", "text/html")
        if fault == "proxy_200_json":
            rec["status"] = "proxy 200 json"
            return h._send(200, {"ok": True})
        # The key, under the lock: replay, in progress, or ours to run.
        with self.lock:
            entry = self.keys.get((op, key)) if key else None
            if entry and time.time() - entry["at"] > self._window(op):
                del self.keys[(op, key)]
                entry = None
            if entry and entry["state"] == "running":
                rec["status"] = 409
                st, body = err(409, "RESOURCE_CONFLICT", "PREVIOUS_REQUEST_IN_PROGRESS",
                               "A previous request with this PayPal-Request-Id is still being processed.")
                replay = ("409", st, body)
            elif entry:
                rec["status"] = "replay"
                replay = ("replay",) + self._replay(op, entry)
            else:
                replay = None
                if key:
                    self.keys[(op, key)] = {"state": "running", "at": time.time(), "target": target, "key": key}
        if replay:
            kind, st, body = replay
            if kind == "replay" and op == "void" and entry.get("form") == 204 and "representation" not in prefer:
                return h._send(204, b"")
            return h._send(st, body)
        if fault == "hang_act":
            time.sleep(self.hang_s)
        with self.lock:
            st, body, acted, rid = self._act(op, target, key, raw)
            rec["acted"] = acted
            form = st
            if op == "void" and acted and "representation" not in prefer:
                form = 204
            rec["status"] = form
            if key:
                if acted:
                    self.keys[(op, key)].update(state="done", result_id=rid, form=form)
                else:
                    del self.keys[(op, key)]  # an error is not kept (n.d.): the next one is processed anew
        if fault == "act_reset":
            rec["status"] = "acted, reset"
            h._reset()
        if fault == "act_500":
            rec["status"] = "acted, 500"
            return h._send(*err(500, "INTERNAL_SERVER_ERROR", "INTERNAL_SERVICE_ERROR"))
        if fault == "act_hang":
            time.sleep(self.hang_s)
        if fault == "garbled_200":
            rec["status"] = "acted, garbled 200"
            whole = json.dumps(self._auth_repr(target) if op == "void" else body).encode()
            return h._send(200, whole[: len(whole) // 2])
        if fault == "short_200":
            rec["status"] = "acted, short 200"
            whole = json.dumps(self._auth_repr(target) if op == "void" else body).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(whole)))
            h.end_headers()
            h.wfile.write(whole[: len(whole) // 2])
            h.wfile.flush()
            h.close_connection = True
            h._reset()
        if form == 204:
            return h._send(204, b"")
        h._send(st, body)
