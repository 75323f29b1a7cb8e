"""The SDK's transport against a local HTTP server that answers as the service does
(problem+json, Retry-After, Idempotency-Key): which requests are retried, with which key,
after which waits, and how each error answer is raised. The client's `sleep` is a list's
append, so the waits are read, not slept."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from booktranslate import (
    BookTranslateError,
    Client,
    InsufficientCredit,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
    ServiceUnreachable,
    UnknownProblem,
)
from tests.support.local_http import QuietHandler, serving

PROJECT = "5b0c1f2e-7d1a-4c55-9b8e-0a6f3c2d1e4f"


@dataclass
class Script:
    """What the server answers, in order (the last one again once the list is used up), and
    what it was asked."""

    answers: list[tuple[int, dict[str, str], Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, request: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        with self.lock:
            self.requests.append(request)
            return self.answers[min(len(self.requests), len(self.answers)) - 1]


def problem(status: int, code: str, **extra: Any) -> dict[str, Any]:
    return {"type": f"http://x/v1/problems/{code}", "title": code, "status": status, "detail": f"{code}.",
            "instance": "/v1/x", "code": code, **extra}  # fmt: skip


@pytest.fixture
def service() -> Iterator[tuple[str, Script]]:
    script = Script(answers=[])

    class Handler(QuietHandler):
        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, headers, payload = script.next(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
            )
            if status == 0:  # a connection dropped without an answer
                self.close_connection = True
                self.connection.close()
                return
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            media = "application/problem+json" if status >= 400 else "application/json"
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Request-Id", f"req-{len(script.requests)}")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.answer()

        def do_POST(self) -> None:
            self.answer()

    with serving(Handler) as base_url:
        yield base_url, script


def client(base_url: str, waits: list[float], **kwargs: Any) -> Client:
    return Client(base_url, api_key="svc_sk_live_test", sleep=waits.append, **kwargs)


def test_a_keyed_post_is_retried_with_its_one_key_after_the_waits_retry_after_asks(service):
    base_url, script = service
    handle = {"jobId": "9d3c8a0e-1111-4222-8333-444455556666", "status": "Queued"}
    script.answers = [
        (503, {"Retry-After": "2"}, problem(503, "service_unavailable")),
        (429, {"Retry-After": "1"}, problem(429, "rate_limited")),
        (409, {"Retry-After": "1"}, problem(409, "request_in_progress")),
        (202, {}, handle),
    ]
    waits: list[float] = []

    with client(base_url, waits) as api:
        answer = api.process_project(PROJECT)

    assert answer == handle
    assert waits == [2.0, 1.0, 1.0]
    keys = [request["headers"].get("Idempotency-Key") for request in script.requests]
    assert len(keys) == 4
    assert keys[0]
    assert set(keys) == {keys[0]}
    assert {request["headers"]["Authorization"] for request in script.requests} == {"Bearer svc_sk_live_test"}


def test_a_key_the_caller_gives_is_the_one_sent(service):
    base_url, script = service
    script.answers = [(202, {}, {"jobId": PROJECT, "status": "Queued"})]

    with client(base_url, []) as api:
        api.process_project(PROJECT, idempotency_key="book-1:process")

    assert script.requests[0]["headers"]["Idempotency-Key"] == "book-1:process"


def test_a_post_without_a_key_is_not_retried_after_503_and_carries_no_key(service):
    base_url, script = service
    script.answers = [(503, {"Retry-After": "1"}, problem(503, "service_unavailable")), (200, {}, {})]
    waits: list[float] = []

    with client(base_url, waits) as api, pytest.raises(ServiceUnavailable) as raised:
        api.normalize_project(PROJECT)

    assert len(script.requests) == 1
    assert "Idempotency-Key" not in script.requests[0]["headers"]
    assert waits == []
    assert (raised.value.status, raised.value.code, raised.value.request_id) == (503, "service_unavailable", "req-1")


def test_a_post_without_a_key_is_retried_after_429_which_refuses_before_acting(service):
    base_url, script = service
    script.answers = [(429, {"Retry-After": "3"}, problem(429, "rate_limited")), (200, {}, {"id": PROJECT})]
    waits: list[float] = []

    with client(base_url, waits) as api:
        api.normalize_project(PROJECT)

    assert len(script.requests) == 2
    assert waits == [3.0]


def test_a_get_is_retried_after_a_dropped_connection_with_a_doubling_backoff(service):
    base_url, script = service
    wallet = {"balanceUsd": 5.0}
    script.answers = [(0, {}, None), (0, {}, None), (200, {}, wallet)]
    waits: list[float] = []

    with client(base_url, waits, retry=RetryPolicy(attempts=5, backoff_s=0.25)) as api:
        assert api.get_wallet() == wallet

    assert waits == [0.25, 0.5]


def test_retries_are_bounded_and_the_last_answer_is_raised(service):
    base_url, script = service
    script.answers = [(503, {"Retry-After": "1"}, problem(503, "service_unavailable"))]
    waits: list[float] = []

    with client(base_url, waits, retry=RetryPolicy(attempts=3)) as api, pytest.raises(ServiceUnavailable) as raised:
        api.get_wallet()

    assert len(script.requests) == 3
    assert waits == [1.0, 1.0]
    assert raised.value.request_id == "req-3"


def test_a_retry_after_longer_than_the_longest_wait_is_raised_at_once(service):
    base_url, script = service
    script.answers = [(429, {"Retry-After": "3600"}, problem(429, "rate_limited"))]
    waits: list[float] = []

    with client(base_url, waits) as api, pytest.raises(RateLimited):
        api.get_wallet()

    assert (len(script.requests), waits) == (1, [])


def test_a_problem_is_raised_as_its_class_with_its_members(service):
    base_url, script = service
    script.answers = [(402, {}, problem(402, "insufficient_credit", shortfall="1.50"))]

    with client(base_url, []) as api, pytest.raises(InsufficientCredit) as raised:
        api.process_project(PROJECT)

    error = raised.value
    assert isinstance(error, BookTranslateError)
    assert (error.status, error.code, error.title, error.detail) == (402, "insufficient_credit", "insufficient_credit",
                                                                     "insufficient_credit.")  # fmt: skip
    assert (error.request_id, error.instance, error.extra) == ("req-1", "/v1/x", {"shortfall": "1.50"})
    assert "402 insufficient_credit" in str(error)


def test_an_answer_that_is_not_a_problem_is_an_unknown_problem_with_its_status(service):
    base_url, script = service
    script.answers = [(502, {}, "bad gateway"), (418, {}, problem(418, "a_code_of_a_newer_service"))]

    with client(base_url, []) as api:
        with pytest.raises(UnknownProblem) as proxy:
            api.get_wallet()
        with pytest.raises(UnknownProblem) as newer:
            api.get_wallet()

    assert (proxy.value.status, proxy.value.code) == (502, "unknown_problem")
    assert (newer.value.status, newer.value.code) == (418, "a_code_of_a_newer_service")


def test_a_service_that_is_not_there_is_service_unreachable_after_the_retries():
    waits: list[float] = []
    with serving(QuietHandler) as base_url:
        pass  # the port is free again: nothing listens on it
    with client(base_url, waits, retry=RetryPolicy(attempts=3)) as api, pytest.raises(ServiceUnreachable) as raised:
        api.get_wallet()

    assert raised.value.code == "service_unreachable"
    assert len(waits) == 2
