"""A local stand-in for vLLM's OpenAI-compatible server, for tests and the saturation bench.

It speaks the protocol the way `vllm serve` does — POST /v1/chat/completions (with `usage`),
GET /v1/models, GET /health — on 127.0.0.1 at a random port, and it is configurable:

- capacity C and latency L: at most C completions are worked on at once, each for L
  seconds; requests beyond C wait their turn (as a server of known capacity does);
- a starting phase (for `starting_seconds` after start, or while `starting` is set):
  /health answers 503, the model list is empty, completions answer 503;
- faults for the next completions, in order (`fail_next`): an HTTP status (429 with
  Retry-After, 500, 503...), a timeout (the answer comes too late), a garbage body, a
  dropped connection, or a reply of given content;
- an API key (completions and the model list then need `Authorization: Bearer <key>`);
- sustained throttling (`throttle(after=n)`): after the next n completions, every one
  answers 429 with Retry-After: 0 until `throttle(None)`, as a saturated server does;
- a failing phase (while `failing` is set): /health and every completion answer 500, as
  vLLM does once its engine core has died.

The "translation" is deterministic: every word of the page spelled backwards, Markdown
markers kept (`fake_translation`). The page's text is read from the <page> section of the
prompt; an image page's text from the PNG's `text` chunk (tests make such images with
`png_with_text`), so the transcription is known too. Every request is recorded
(`requests`, `chat_requests()`), and `max_in_flight` tells the concurrency reached.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image
from PIL.PngImagePlugin import PngInfo

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_PAGE = re.compile(r"<page>\n(.*)\n</page>", re.DOTALL)


def fake_translation(text: str) -> str:
    """The stand-in's deterministic "translation": each word spelled backwards."""
    return _WORD.sub(lambda match: match.group(0)[::-1], text)


def png_with_text(text: str, size: tuple[int, int] = (64, 64)) -> bytes:
    """A small PNG whose `text` chunk carries the page's text (what the stand-in "reads")."""
    info = PngInfo()
    info.add_itxt("text", text)
    buffer = io.BytesIO()
    Image.new("L", size, 255).save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


@dataclass(frozen=True)
class Fault:
    """What the next completion does instead of translating."""

    kind: str  # "status" | "timeout" | "garbage" | "disconnect" | "reply"
    status: int = 500
    retry_after: str | None = None
    seconds: float = 0.0
    content: str = ""
    finish_reason: str = "stop"

    @classmethod
    def http(cls, status: int, *, retry_after: str | None = None) -> Fault:
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def timeout(cls, seconds: float) -> Fault:
        return cls("timeout", seconds=seconds)

    @classmethod
    def garbage(cls) -> Fault:
        return cls("garbage")

    @classmethod
    def disconnect(cls) -> Fault:
        return cls("disconnect")

    @classmethod
    def reply(cls, content: str, *, finish_reason: str = "stop") -> Fault:
        return cls("reply", content=content, finish_reason=finish_reason)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = field(default_factory=time.monotonic)
    reply: Any = None  # the JSON body of a 200 completion

    def _messages(self, role: str) -> list[Any]:
        messages = (self.body or {}).get("messages", []) if isinstance(self.body, dict) else []
        return [message.get("content") for message in messages if message.get("role") == role]

    def _texts(self, role: str) -> str:
        texts: list[str] = []
        for content in self._messages(role):
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [part.get("text", "") for part in content if part.get("type") == "text"]
        return "\n".join(texts)

    @property
    def system_text(self) -> str:
        return self._texts("system")

    @property
    def user_text(self) -> str:
        return self._texts("user")

    @property
    def image_urls(self) -> list[str]:
        urls: list[str] = []
        for content in self._messages("user"):
            if isinstance(content, list):
                urls += [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]
        return urls


class OpenAIServer:
    def __init__(
        self,
        *,
        model: str = "test-org/test-vl-model",
        capacity: int = 8,
        latency: float = 0.0,
        starting_seconds: float = 0.0,
        api_key: str | None = None,
        source_language: str = "en",
    ) -> None:
        self.model = model
        self.capacity = capacity
        self.latency = latency
        self.starting_seconds = starting_seconds
        self.api_key = api_key
        self.source_language = source_language
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._starting_flag = False
        self.failing = False
        self._faults: deque[Fault] = deque()
        self._served_before_throttling: int | None = None
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(capacity)
        self._stopped = threading.Event()
        self._started_at = 0.0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        handler = _handler_for(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._started_at = time.monotonic()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("start() the server first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- knobs ---------------------------------------------------------------------------

    @property
    def starting(self) -> bool:
        in_phase = time.monotonic() - self._started_at < self.starting_seconds
        return self._starting_flag or in_phase

    @starting.setter
    def starting(self, value: bool) -> None:
        self._starting_flag = value
        if not value:
            self.starting_seconds = 0.0

    def fail_next(self, *faults: Fault) -> None:
        """The next completions meet these faults, one each, in order."""
        with self._lock:
            self._faults.extend(faults)

    def throttle(self, after: int | None = 0) -> None:
        """Serve `after` more completions, then answer 429 to every one; None: stop throttling."""
        with self._lock:
            self._served_before_throttling = after

    def _throttled_now(self) -> bool:
        with self._lock:
            if self._served_before_throttling is None:
                return False
            if self._served_before_throttling > 0:
                self._served_before_throttling -= 1
                return False
            return True

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self.requests if request.path == "/v1/chat/completions"]

    # --- behaviour (called from the handler's threads) -------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _next_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"chatcmpl-{self._ids}"

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def wait(self, seconds: float) -> None:
        self._stopped.wait(seconds)

    def completion(self, body: dict[str, Any], content: str, finish_reason: str = "stop") -> dict[str, Any]:
        prompt_chars = len(json.dumps(body.get("messages", []), ensure_ascii=False))
        images = len(RecordedRequest("POST", "", {}, body).image_urls)
        prompt_tokens = math.ceil(prompt_chars / 4) + 256 * images
        completion_tokens = math.ceil(len(content) / 4)
        return {
            "id": self._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "tool_calls": []},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": None,
            },
        }

    def reply_content(self, request: RecordedRequest) -> str:
        images = request.image_urls
        if images:
            transcription = _png_text(images[0])
            return (
                f"<source_language>{self.source_language}</source_language>\n"
                f"<transcription>\n{transcription}\n</transcription>\n"
                f"<translation>\n{fake_translation(transcription)}\n</translation>"
            )
        match = _PAGE.search(request.user_text)
        page = match.group(1) if match else request.user_text
        return (
            f"<source_language>{self.source_language}</source_language>\n"
            f"<translation>\n{fake_translation(page)}\n</translation>"
        )


def _png_text(data_url: str) -> str:
    try:
        encoded = data_url.split(",", 1)[1]
        with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
            return str(getattr(image, "text", {}).get("text", ""))
    except (IndexError, ValueError, OSError):
        return ""


def _error(status: int, message: str) -> dict[str, Any]:
    kinds = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 429: "RateLimitError"}
    return {
        "error": {"message": message, "type": kinds.get(status, "InternalServerError"), "param": None, "code": status}
    }


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as uvicorn (vLLM's server) sets it: without it the body, written after
        # the headers, waits for the client's delayed ACK (up to 40 ms a reply).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(
            self, status: int, payload: Any = None, *, raw: bytes | None = None, headers: dict[str, str] | None = None
        ) -> None:
            data = raw if raw is not None else (b"" if payload is None else json.dumps(payload).encode())
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return None

        def _authorised(self) -> bool:
            if server.api_key is None:
                return True
            return self.headers.get("Authorization") == f"Bearer {server.api_key}"

        def do_GET(self) -> None:
            server._record(RecordedRequest("GET", self.path, dict(self.headers), None))
            if self.path == "/health":
                self._send(500 if server.failing else 503 if server.starting else 200)
            elif self.path == "/v1/models":
                if not self._authorised():
                    self._send(401, _error(401, "Unauthorized"))
                    return
                data = [] if server.starting else [{"id": server.model, "object": "model", "owned_by": "vllm"}]
                self._send(200, {"object": "list", "data": data})
            else:
                self._send(404, _error(404, "Not Found"))

        def do_POST(self) -> None:
            body = self._read_body()
            request = RecordedRequest("POST", self.path, dict(self.headers), body)
            server._record(request)
            if self.path != "/v1/chat/completions":
                self._send(404, _error(404, "Not Found"))
                return
            if not self._authorised():
                self._send(401, _error(401, "Unauthorized"))
                return
            if server.starting:
                self._send(503, _error(503, "The server is starting."))
                return
            if server.failing:
                self._send(500, _error(500, "EngineCore encountered an issue."))
                return
            if not isinstance(body, dict) or body.get("model") != server.model:
                model = body.get("model") if isinstance(body, dict) else None
                self._send(404, _error(404, f"The model `{model}` does not exist."))
                return
            with server._slots:
                server._enter()
                try:
                    self._complete(request, body)
                finally:
                    server._leave()

        def _complete(self, request: RecordedRequest, body: dict[str, Any]) -> None:
            if server._throttled_now():
                self._send(
                    429, _error(429, "Too many requests: the server is at capacity."), headers={"Retry-After": "0"}
                )
                return
            fault = server._next_fault()
            if server.latency:
                server.wait(server.latency)
            if fault is None:
                request.reply = server.completion(body, server.reply_content(request))
                self._send(200, request.reply)
            elif fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                self._send(fault.status, _error(fault.status, f"injected {fault.status}"), headers=headers)
            elif fault.kind == "timeout":
                server.wait(fault.seconds)
                self._send(200, server.completion(body, server.reply_content(request)))
            elif fault.kind == "garbage":
                self._send(200, raw=b"<html>502 Bad Gateway</html> not json {")
            elif fault.kind == "disconnect":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                request.reply = server.completion(body, fault.content, fault.finish_reason)
                self._send(200, request.reply)

    return Handler
