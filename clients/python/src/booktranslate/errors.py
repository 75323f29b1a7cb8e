"""The SDK's exceptions. Every problem+json answer of the API is raised as the class of its
code (`booktranslate.problems`: `InsufficientCredit`, `LanguagePairUnsupported`, ...), and
every one of them, like the client's own failures below, is a `BookTranslateError`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The members RFC 9457 and the API give every problem; anything else is the problem's own.
STANDARD_MEMBERS = frozenset({"type", "title", "status", "detail", "instance", "code"})


class BookTranslateError(Exception):
    """An API problem (or a failure of the client itself, below): its HTTP `status`, its
    stable `code`, `title`, `detail`, the `request_id` the service logged it under, and the
    problem's extra members in `extra` (`shortfall`, `supportedPairs`, `errors`, ...).
    `project_id` is the book a `translate_book` or `resume` was on when it was raised
    (`resume(project_id)` goes on once the cause is settled)."""

    code: str = "unknown_problem"
    status: int = 0

    def __init__(self, problem: Mapping[str, Any], *, request_id: str | None = None) -> None:
        self.problem = dict(problem)
        self.status = int(problem.get("status") or self.status)
        self.code = str(problem.get("code") or self.code)
        self.title = str(problem.get("title") or "")
        self.detail = str(problem.get("detail") or "")
        self.instance = problem.get("instance")
        self.type = problem.get("type")
        self.request_id = request_id
        self.project_id: str | None = None
        self.extra = {name: value for name, value in problem.items() if name not in STANDARD_MEMBERS}
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.code}: {self.detail or self.title}"
        if self.status:
            text = f"{self.status} {text}"
        return f"{text} (request {self.request_id})" if self.request_id else text


class UnknownProblem(BookTranslateError):
    """An error answer whose code this version of the SDK does not know (a newer service), or
    one that is not problem+json at all (a proxy's page): `status` is the HTTP status."""


class ServiceUnreachable(BookTranslateError):
    """The service could not be reached (connection refused, reset, timed out), still after
    the retries that were safe."""

    code = "service_unreachable"


class TranslationStopped(BookTranslateError):
    """The book ended without a translation to download (Failed, Cancelled) or an export of
    it failed; `extra["statusView"]` holds the last status read when there is one."""

    code = "translation_stopped"


class WaitTimedOut(BookTranslateError):
    """`translate_book` or `resume` waited longer than its `timeout_s` for the book or its
    files; the book goes on on the service, and `resume(project_id)` picks it up."""

    code = "wait_timed_out"
