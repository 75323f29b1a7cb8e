"""The Client: every operation of the API (`Operations`, generated from the schema), the
credential it signs with, and the one-call book journey (`translate_book`, `resume`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from booktranslate import models
from booktranslate._operations import Operations
from booktranslate._transport import RetryPolicy, Transport
from booktranslate.book import BookJourney, BookProgress, BookResult

DEFAULT_URL = "http://127.0.0.1:8000"


class Client(Operations):
    """A client of one service at `base_url`, signed in with an API key (`api_key`) or a JWT
    (`token`, or what `log_in`, `register`, `sign_in_with_provider` and `change_password`
    answer, which the client adopts); both are sent as `Authorization: Bearer`.

    `retry` bounds the retries the transport makes (see `booktranslate._transport`); `sleep`
    is what waits between them (a test passes its own to see the waits);
    `http_transport` is handed to httpx (a proxy, a mounted test app)."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        token: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        http_transport: httpx.BaseTransport | None = None,
    ) -> None:
        if api_key and token:
            raise ValueError("Give an API key or a token, not both.")
        self._sleep = sleep
        self._transport = Transport(
            base_url,
            credential=api_key or token,
            timeout_s=timeout_s,
            retry=retry,
            sleep=sleep,
            http_transport=http_transport,
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def credential(self) -> str | None:
        """The API key or JWT the client sends."""
        return self._transport.credential

    @credential.setter
    def credential(self, value: str | None) -> None:
        self._transport.credential = value

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def log_in(self, body: models.LoginInputRequest) -> models.Session:
        """POST /v1/auth/login; the client signs with the session's JWT from then on."""
        return self._adopt(super().log_in(body))

    def register(self, body: models.RegisterInputRequest) -> models.Session:
        """POST /v1/auth/register; the client signs with the new account's JWT from then on."""
        return self._adopt(super().register(body))

    def sign_in_with_provider(self, provider: str, body: models.OAuthSignInInputRequest) -> models.Session:
        """POST /v1/auth/oauth/{provider}; the client signs with the session's JWT from then on."""
        return self._adopt(super().sign_in_with_provider(provider, body))

    def change_password(self, body: models.PasswordChangeInputRequest) -> models.Session:
        """POST /v1/me/password; every older JWT stops working, so the client takes the fresh one."""
        return self._adopt(super().change_password(body))

    def download_export_to(self, project_id: str, name: str, destination: str | Path) -> Path:
        """Streams an export file (GET /v1/projects/{id}/exports/{name}) into a file, whole or
        not at all."""
        return self._transport.download(f"/v1/projects/{project_id}/exports/{name}", Path(destination))

    def translate_book(
        self,
        path: str | Path,
        target: str = "es",
        formats: Sequence[str] = ("Epub", "Pdf"),
        out_dir: str | Path = ".",
        *,
        name: str | None = None,
        progress: Callable[[BookProgress], None] | None = None,
        poll_interval_s: float = 1.0,
        hub: bool = True,
        timeout_s: float | None = None,
    ) -> BookResult:
        """Translates a book file in one call: upload, create, normalize, process, wait, export
        each of `formats`, and download them into `out_dir`. `hub=False` waits by polling
        alone; `timeout_s` bounds the waiting (WaitTimedOut), by default none. See
        `booktranslate.book`."""
        journey = self._journey(formats, out_dir, progress, poll_interval_s, hub, timeout_s)
        return journey.start(Path(path), target=target, name=name)

    def resume(
        self,
        project_id: str,
        formats: Sequence[str] = ("Epub", "Pdf"),
        out_dir: str | Path = ".",
        *,
        progress: Callable[[BookProgress], None] | None = None,
        poll_interval_s: float = 1.0,
        hub: bool = True,
        timeout_s: float | None = None,
    ) -> BookResult:
        """Picks up a book's journey wherever it stands (after a client died at any step):
        what the service already did is read, not done again, and nothing is charged twice."""
        journey = self._journey(formats, out_dir, progress, poll_interval_s, hub, timeout_s)
        return journey.resume(project_id)

    def _journey(
        self,
        formats: Sequence[str],
        out_dir: str | Path,
        progress: Callable[[BookProgress], None] | None,
        poll_interval_s: float,
        hub: bool,
        timeout_s: float | None,
    ) -> BookJourney:
        return BookJourney(
            self,
            self._transport,
            formats=list(formats),
            out_dir=Path(out_dir),
            progress=progress,
            poll_interval_s=poll_interval_s,
            sleep=self._sleep,
            hub=hub,
            timeout_s=timeout_s,
        )

    def _adopt(self, session: models.Session) -> models.Session:
        self.credential = session["token"]
        return session
