"""A real websocket client of the hub (the `websockets` package) for the tests that run
the hub in a uvicorn process: connect, read messages, and publish a marker event that
says "everything sent before me has arrived"."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from accounts.models import User
from accounts.services.users import token_issue
from webhooks.events import WALLET_LOW_BALANCE
from webhooks.services.fanout import publish

DEADLINE = 60.0  # seconds a receive may wait before the test fails (a hang guard, not a timing check)


def hub_connect(address: str, *, query: str = "", headers: dict[str, str] | None = None) -> ClientConnection:
    """A connection to the hub of the server at `address` (host:port)."""
    return connect(f"ws://{address}/v1/hub{query}", additional_headers=headers, proxy=None, open_timeout=DEADLINE)


def jwt(user: User) -> str:
    return token_issue(user=user).token


def receive(hub: ClientConnection, timeout: float = DEADLINE) -> Any:
    return json.loads(hub.recv(timeout=timeout))


def receive_until(hub: ClientConnection, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Every message up to and including the first for which `done` is true."""
    received: list[dict[str, Any]] = []
    while not received or not done(received[-1]):
        received.append(receive(hub))
    return received


def receive_until_closed(hub: ClientConnection, timeout: float = DEADLINE) -> tuple[list[dict[str, Any]], int, str]:
    """Every message the server sends before it closes the connection, and the close
    frame's code and reason. Fails when the connection is still open after `timeout`."""
    received: list[dict[str, Any]] = []
    with pytest.raises(ConnectionClosed) as closed:  # noqa: PT012  (read until the close)
        while True:
            received.append(receive(hub, timeout))
    assert closed.value.rcvd is not None, "the connection ended without a close frame"
    return received, closed.value.rcvd.code, closed.value.rcvd.reason


def marker_publish(user: User, marker: str) -> None:
    publish(WALLET_LOW_BALANCE, owner_id=user.pk, data={"marker": marker})


def is_marker(marker: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: message["type"] == WALLET_LOW_BALANCE and message["data"] == {"marker": marker}


def assert_answers_pings(hub: ClientConnection) -> None:
    hub.send(json.dumps({"type": "ping"}))
    assert receive(hub) == {"type": "pong", "data": {}}
