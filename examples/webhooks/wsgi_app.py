"""A payment provider's webhooks on plain WSGI (the standard library's wsgiref;
no framework): every request is handed to payretry as received, and payretry's
reply is sent back as it is.

    python examples/webhooks/wsgi_app.py CONFIG.json [PORT]

CONFIG.json is a payretry config with a "webhook" block (docs/config.md), e.g.
{"provider": "stripe", "base_url": "https://api.stripe.com",
 "auth": {"bearer_env": "STRIPE_KEY"}, "webhook": {"secret_env": "STRIPE_WEBHOOK_SECRET"},
 "ledger": "sqlite:///var/lib/shop/payments.db"}.
Then point the provider's webhook endpoint at http://HOST:PORT/ (behind your
TLS proxy). Any WSGI server (gunicorn, uWSGI, mod_wsgi) can serve make_app(client).
"""

from __future__ import annotations

import sys
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from wsgiref.simple_server import make_server
from wsgiref.util import request_uri

import payretry

StartResponse = Callable[[str, List[Tuple[str, str]]], Any]
WsgiApp = Callable[[Dict[str, Any], StartResponse], Iterable[bytes]]


def request_headers(environ: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The request's headers from a WSGI environ (CGI names: HTTP_STRIPE_SIGNATURE
    is Stripe-Signature; header names are compared in any case)."""
    headers = [(k[5:].replace("_", "-"), str(v)) for k, v in environ.items() if k.startswith("HTTP_")]
    for cgi_name, name in (("CONTENT_TYPE", "Content-Type"), ("CONTENT_LENGTH", "Content-Length")):
        if environ.get(cgi_name):
            headers.append((name, str(environ[cgi_name])))
    return headers


def status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Status {status}"


def make_app(client: payretry.Client) -> WsgiApp:
    def app(environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body: bytes = environ["wsgi.input"].read(length) if length > 0 else b""
        reply = client.apply_webhook(
            environ["REQUEST_METHOD"],
            request_uri(environ, include_query=True),  # the full URL: Square signs it
            request_headers(environ),
            body,  # the raw bytes: every provider signs bytes
        )
        if reply.verdict != "accepted":
            print(f"webhook {reply.verdict}: {reply.outcome.get('why')}", file=sys.stderr)
        start_response(status_line(reply.status), reply.headers + [("Content-Length", str(len(reply.body)))])
        return [reply.body]

    return app


def main(argv: List[str]) -> int:
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} CONFIG.json [PORT]", file=sys.stderr)
        return 2
    port: Optional[int] = int(argv[2]) if len(argv) == 3 else 8000
    with payretry.Client(argv[1]) as client:
        with make_server("127.0.0.1", port or 0, make_app(client)) as httpd:
            print(f"listening on http://127.0.0.1:{httpd.server_port}/", flush=True)
            try:
                httpd.serve_forever()
            except KeyboardInterrupt:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
