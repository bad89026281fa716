"""A payment provider's webhooks as a plain ASGI application (no framework):
every request is handed to payretry as received, and payretry's reply is sent
back as it is. The ledger write runs on the event loop's executor
(Client.apply_webhook_async), never on the loop.

With uvicorn installed (`pip install uvicorn`):

    PAYRETRY_CONFIG=CONFIG.json uvicorn --factory asgi_app:app_from_env --app-dir examples/webhooks
    # or: PAYRETRY_CONFIG=CONFIG.json python examples/webhooks/asgi_app.py [PORT]

CONFIG.json is a payretry config with a "webhook" block (docs/config.md).
Any ASGI server (uvicorn, hypercorn, daphne) can serve make_app(client).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Awaitable, Callable, List, MutableMapping

import payretry

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def request_url(scope: Scope) -> str:
    """The full URL the provider called (Square signs it): scheme, Host, the
    path as sent (raw_path, not the decoded path) and the query."""
    host = ""
    for name, value in scope.get("headers", []):
        if name.lower() == b"host":
            host = value.decode("latin-1")
            break
    if not host and scope.get("server"):
        server_host, server_port = scope["server"]
        host = f"{server_host}:{server_port}"
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope.get("root_path", "") + scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host}{path}" + (f"?{query}" if query else "")


def make_app(client: payretry.Client) -> AsgiApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    client.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks: List[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        reply = await client.apply_webhook_async(
            scope["method"],
            request_url(scope),
            scope["headers"],  # [(bytes, bytes)], as received
            b"".join(chunks),  # the raw bytes: every provider signs bytes
        )
        if reply.verdict != "accepted":
            print(f"webhook {reply.verdict}: {reply.outcome.get('why')}", file=sys.stderr)
        headers = [(n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in reply.headers]
        headers.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})

    return app


def app_from_env() -> AsgiApp:
    """For `uvicorn --factory`: the client from the config file PAYRETRY_CONFIG names."""
    return make_app(payretry.Client(os.environ["PAYRETRY_CONFIG"]))


def main(argv: List[str]) -> int:
    try:
        import uvicorn  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        print("uvicorn is not installed: pip install uvicorn (or serve make_app(client) with any ASGI server)",
              file=sys.stderr)
        return 2
    uvicorn.run(app_from_env(), host="127.0.0.1", port=int(argv[1]) if len(argv) > 1 else 8000)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
