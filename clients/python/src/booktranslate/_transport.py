"""HTTP for the SDK: credentials, Idempotency-Key, the retries that are safe, and problem+json
answers turned into exceptions.

What is retried, and when: a request the service cannot have acted on twice. That is an
idempotent method (GET, HEAD, PUT, DELETE, OPTIONS) or a POST that carries an Idempotency-Key
(the same key on every try, so the service answers a repeat with the first answer), on a
connection failure, 429 or 503; a keyed POST also on 409 `request_in_progress`. Any other
POST is retried only where the service never saw it (the connection was never made) or
refused it before acting (429). Each wait is the answer's `Retry-After`, else a doubling
backoff; a wait longer than `RetryPolicy.max_wait_s`, or more than `attempts` tries, ends
the retrying and raises.
"""

from __future__ import annotations

import email.utils
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import httpx

from booktranslate._version import __version__
from booktranslate.errors import BookTranslateError, ServiceUnreachable, UnknownProblem
from booktranslate.problems import PROBLEM_CLASSES

# A file to send: (file name, its bytes or an open binary file, media type).
Upload = tuple[str, bytes | IO[bytes], str]
Expect = Literal["json", "bytes", "none"]

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: `attempts` tries in all; a connection failure waits `backoff_s`, then
    twice that, and so on; no single wait longer than `max_wait_s` (a longer `Retry-After`
    is raised to the caller instead of slept through)."""

    attempts: int = 5
    backoff_s: float = 0.5
    max_wait_s: float = 30.0


def error_from_response(response: httpx.Response) -> BookTranslateError:
    """The exception of an error answer: the class of its problem code, or UnknownProblem."""
    request_id = response.headers.get("X-Request-Id")
    try:
        problem = response.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict) or "code" not in problem:
        text = response.text[:500] if response.content else response.reason_phrase
        return UnknownProblem(
            {
                "status": response.status_code,
                "code": UnknownProblem.code,
                "title": response.reason_phrase,
                "detail": text,
            },
            request_id=request_id,
        )
    problem.setdefault("status", response.status_code)
    cls = PROBLEM_CLASSES.get(str(problem["code"]), UnknownProblem)
    return cls(problem, request_id=request_id)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """`Retry-After` as seconds: a number of seconds or an HTTP date; None when absent or
    unreadable."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class Transport:
    """One httpx client with the service's base URL and credential, and the retry rules above."""

    def __init__(
        self,
        base_url: str,
        *,
        credential: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        http_transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credential = credential
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout_s,
            follow_redirects=True,  # a download may answer 302 to a pre-signed storage URL
            headers={"User-Agent": f"booktranslate-python/{__version__}", "Accept": "application/json"},
            transport=http_transport,
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        files: Mapping[str, Upload] | None = None,
        keyed: bool = False,
        idempotency_key: str | None = None,
        expect: Expect = "json",
    ) -> Any:
        """Sends one operation (retrying as the module says) and returns its decoded answer:
        the JSON, the bytes, or None; an error answer is raised as its problem class."""
        headers = self._headers()
        if keyed or idempotency_key:
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        query = {name: value for name, value in (params or {}).items() if value is not None}
        streams = {name: upload[1] for name, upload in (files or {}).items() if not isinstance(upload[1], bytes)}
        positions = {name: stream.tell() for name, stream in streams.items()}

        def send() -> httpx.Response:
            for name, position in positions.items():
                streams[name].seek(position)  # a retry sends the file from where the first try began
            return self._http.request(
                method, path, params=query, json=json, files=dict(files) if files else None, headers=headers
            )

        response = self._with_retries(method, "Idempotency-Key" in headers, send)
        if expect == "json":
            return response.json()
        if expect == "bytes":
            return response.content
        return None

    def download(self, path: str, destination: Path) -> Path:
        """Streams a file answer into `destination` (through a `.part` file beside it, renamed
        when complete, so a file there is always whole); retried like any GET."""
        partial = destination.with_name(destination.name + ".part")

        def send() -> httpx.Response:
            with self._http.stream("GET", path, headers={**self._headers(), "Accept": "*/*"}) as response:
                if response.is_success:
                    with partial.open("wb") as output:
                        for chunk in response.iter_bytes(chunk_size=1 << 16):
                            output.write(chunk)
                else:
                    response.read()
                return response

        self._with_retries("GET", False, send)
        partial.replace(destination)
        return destination

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credential}"} if self.credential else {}

    def _with_retries(self, method: str, keyed: bool, send: Callable[[], httpx.Response]) -> httpx.Response:
        safe = method in IDEMPOTENT_METHODS or keyed
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= self.retry.attempts
            try:
                response = send()
            except httpx.TransportError as error:
                never_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
                if last or not (safe or never_sent):
                    detail = f"{self.base_url} could not be reached ({type(error).__name__}: {error})."
                    raise ServiceUnreachable(
                        {"code": ServiceUnreachable.code, "title": "Service unreachable", "detail": detail}
                    ) from error
                self._sleep(self._backoff(attempt))
                continue
            if response.is_success:
                return response
            wait = self._retry_wait(response, attempt, safe=safe, keyed=keyed)
            if last or wait is None:
                raise error_from_response(response)
            self._sleep(wait)

    def _retry_wait(self, response: httpx.Response, attempt: int, *, safe: bool, keyed: bool) -> float | None:
        """How long to wait before trying this answer's request again, or None not to."""
        status = response.status_code
        in_progress = status == 409 and keyed and _problem_code(response) == "request_in_progress"
        if not (in_progress or (status in RETRY_STATUSES and (safe or status == 429))):
            return None
        wait = retry_after_seconds(response)
        if wait is None:
            wait = self._backoff(attempt)
        return wait if wait <= self.retry.max_wait_s else None

    def _backoff(self, attempt: int) -> float:
        return float(min(self.retry.backoff_s * 2 ** (attempt - 1), self.retry.max_wait_s))


def _problem_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return str(body.get("code")) if isinstance(body, dict) else None
