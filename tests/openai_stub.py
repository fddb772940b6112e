"""A local OpenAI-compatible server: /v1/chat/completions and /v1/embeddings, recording requests."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAIStub:
    """Answers chat with `chat_reply(request)` and embeddings with deterministic vectors."""

    def __init__(self, dim: int = 8, chat_reply: Callable[[dict[str, Any]], str] | None = None):
        self.dim = dim
        self.chat_reply = chat_reply or (lambda req: '{"ok": true}')
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_next = 0
        # How a failed request is answered (a provider's 401 can quote part of the key sent).
        self.fail_status = 500
        self.fail_message = "stub told to fail"
        # Models this provider does not serve: a request naming one is answered 404, as OpenAI
        # answers a model that does not exist.
        self.missing_models: set[str] = set()
        # A gateway's answer to a chat request: (status, headers) to answer it with instead,
        # or None to let it through (a 429 asking to wait, a 403 refusing the caller).
        self.gateway: Callable[[dict[str, Any]], tuple[int, dict[str, str]] | None] = lambda req: (
            None
        )
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body))
                if stub.fail_next > 0:
                    stub.fail_next -= 1
                    error = {"message": stub.fail_message, "type": "invalid_request_error"}
                    self._send(stub.fail_status, {"error": error})
                elif (held := stub.gateway(body)) is not None:
                    error = {"message": "held by the gateway", "type": "rate_limit_error"}
                    self._send(held[0], {"error": error}, held[1])
                elif body.get("model") in stub.missing_models:
                    said = f"The model `{body['model']}` does not exist"
                    error = {"message": said, "type": "invalid_request_error"}
                    self._send(404, {"error": {**error, "code": "model_not_found"}})
                elif self.path.endswith("/embeddings"):
                    self._send(200, stub.embeddings(body))
                elif self.path.endswith("/chat/completions"):
                    self._send(200, stub.chat(body))
                else:
                    self._send(404, {"error": {"message": "no such path"}})

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 for b in digest[: self.dim]]

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": self.vector(t)}
            for i, t in enumerate(inputs)
        ]
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
        }

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.chat_reply(body)
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
