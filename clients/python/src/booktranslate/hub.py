"""The status hub (`/v1/hub`, a websocket) as a journey's alarm clock: it wakes a waiting
`translate_book` when its book changes state or a batch ends, so the journey can read the
status less often. Optional: it needs the `websockets` package (`pip install
"booktranslate[hub]"`); without it, or when the hub cannot be reached or closes, the
journey polls GET /v1/projects/{id}/status alone."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

try:
    from websockets.sync.client import ClientConnection, connect
except ImportError:  # the `hub` extra is not installed: journeys poll
    connect = None  # type: ignore[assignment]

# The messages that concern a book: its status (on subscribe, on each change) and its batches.
WAKING_TYPES = frozenset({"project.status", "project.status_changed", "job.succeeded", "job.failed"})


class HubUnavailable(Exception):
    """The hub cannot be used (not installed, not reachable, refused, or closed)."""


class HubAlarm:
    """One hub connection following one book."""

    def __init__(self, base_url: str, credential: str | None, project_id: str, *, timeout_s: float = 10.0) -> None:
        if connect is None:
            raise HubUnavailable("the websockets package is not installed")
        address = "ws" + base_url.removeprefix("http") + "/v1/hub"
        headers = {"Authorization": f"Bearer {credential}"} if credential else None
        self.project_id = project_id
        self._stack = contextlib.ExitStack()
        try:
            self.socket: ClientConnection = self._stack.enter_context(
                connect(address, additional_headers=headers, open_timeout=timeout_s, proxy=None)
            )
            self.socket.send(json.dumps({"type": "subscribe", "projectId": project_id}))
        except Exception as error:  # any failure to connect: the journey polls instead
            self._stack.close()
            raise HubUnavailable(repr(error)) from error

    def wait(self, timeout_s: float) -> bool:
        """Waits up to `timeout_s` for a message about the book; True when one came. Raises
        HubUnavailable when the connection ends or the hub answers with an error."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                raw = self.socket.recv(timeout=left)
            except TimeoutError:
                return False
            except Exception as error:  # closed (credential revoked, server gone): poll instead
                raise HubUnavailable(repr(error)) from error
            message: Any = json.loads(raw)
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "error":
                raise HubUnavailable(str(message.get("data")))
            data = message.get("data") if isinstance(message, dict) else None
            if kind in WAKING_TYPES and isinstance(data, dict) and data.get("projectId") == self.project_id:
                return True
        return False

    def close(self) -> None:
        self._stack.close()
