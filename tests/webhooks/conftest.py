"""Fixtures of the webhook tests: a local receiver, Celery run in-process, and a webhook
registered over the API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.webhooks.receiver import Receiver, running_receiver


def assert_created(response: Any) -> dict[str, Any]:
    """The webhook was registered (201); returns the answer's body."""
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as started:
        yield started


@pytest.fixture
def allow_private(settings: Any) -> None:
    """The receiver listens on 127.0.0.1, which only this setting lets webhooks reach."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True


@pytest.fixture
def subscribe(auth_client: APIClient, receiver: Receiver, allow_private: None) -> Callable[..., dict[str, Any]]:
    """Registers a webhook to the receiver (or another url) over the API; the receiver
    verifies with its secret. Returns the create response's body."""

    def make(url: str | None = None, client: APIClient | None = None, **fields: Any) -> dict[str, Any]:
        response = (client or auth_client).post("/v1/webhooks", {"url": url or receiver.url(), **fields}, format="json")
        body = assert_created(response)
        receiver.secret = body["secret"]
        return body

    return make
