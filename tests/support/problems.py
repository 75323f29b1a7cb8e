"""Assertions on problem+json answers, shared by every API test."""

from __future__ import annotations

from typing import Any


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status and code; returns its body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith(f"/{code}")
    assert body["title"]
    assert body["detail"]
    assert body["instance"] == response.wsgi_request.path
    return body
