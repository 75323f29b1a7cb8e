"""Structured logs: one JSON object per line, a request id on every line, no secrets.

- The log context (a context variable) holds the request id of the HTTP request being
  served, or of the API call that queued the Celery task being run, plus the task's id and
  name; `LogContextFilter` copies it onto every record.
- `RedactSecretsFilter` rewrites every record before any formatter sees it: API keys,
  JWTs, webhook and Stripe secrets, bearer credentials, Authorization headers and the
  values of password/secret/token keys (in dicts and in `key=value` text) become
  `[REDACTED]`, in the message, its arguments, the extras and the traceback. The
  formatters redact the finished line once more, so a secret hidden in an object's repr
  does not get through either.
- The request id travels with a task: `task_request_id_publish` (Celery's
  before_task_publish) puts it in the message headers and `task_log_context_bind`
  (task_prerun) restores it in the worker.

Wired in config/settings.py (LOGGING) and config/celery_app.py (signals); see
docs/observability.md.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any

REQUEST_ID_HEADER = "X-Request-ID"
# The Celery message header that carries the request id into a task.
TASK_REQUEST_ID_HEADER = "request_id"
# An incoming X-Request-ID is kept only when it is a plain token: no spaces, quotes or
# control characters that could forge a log line, and not absurdly long.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+=/-]{0,127}")

REDACTED = "[REDACTED]"

_log_context: ContextVar[Mapping[str, str] | None] = ContextVar("log_context", default=None)
# A prefork Celery child runs one task at a time, so the task's context also applies to
# threads the task starts (the batch runner's engine threads), which do not inherit
# context variables. Set only in such processes (`worker_process_log_context_enable`).
_process_context: Mapping[str, str] | None = None
_process_runs_one_task = False
_task_tokens: dict[str, Token[Mapping[str, str] | None]] = {}


# --- The log context ------------------------------------------------------------------


def request_id_sanitize(value: str | None) -> str | None:
    """The value when it is a sane request id, else None."""
    if value and _SANE_REQUEST_ID.fullmatch(value):
        return value
    return None


def request_id_generate() -> str:
    return uuid.uuid4().hex


def log_context_get() -> Mapping[str, str]:
    """The fields every log line of the current request or task carries."""
    return _log_context.get() or _process_context or {}


def request_id_get() -> str | None:
    return log_context_get().get("request_id")


def log_context_bind(**fields: str) -> Token[Mapping[str, str] | None]:
    """Adds fields to the current log context; `log_context_reset(token)` undoes it."""
    return _log_context.set({**(_log_context.get() or {}), **fields})


def log_context_reset(token: Token[Mapping[str, str] | None]) -> None:
    _log_context.reset(token)


def log_context_clear() -> None:
    """Empties the log context (a request's lines must not carry the previous one's id)."""
    _log_context.set(None)


# --- Celery: the request id into the message, and back out in the worker --------------


def task_request_id_publish(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """before_task_publish: the current request id goes into the task message's headers."""
    request_id = request_id_get()
    if request_id and headers is not None:
        headers.setdefault(TASK_REQUEST_ID_HEADER, request_id)


def _task_request_id(task: Any) -> str | None:
    request = getattr(task, "request", None)
    # A worker exposes custom message headers as request attributes; `apply()` (eager)
    # keeps them in request.headers.
    value = getattr(request, TASK_REQUEST_ID_HEADER, None) or (getattr(request, "headers", None) or {}).get(
        TASK_REQUEST_ID_HEADER
    )
    return request_id_sanitize(value if isinstance(value, str) else None)


def task_log_context_bind(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    """task_prerun: the task's lines carry its id, its name and the request id it came with
    (an eager task run inside a request keeps the request's)."""
    global _process_context
    fields = {"task_id": str(task_id or ""), "task_name": str(getattr(task, "name", "") or "")}
    request_id = _task_request_id(task)
    if request_id:
        fields["request_id"] = request_id
    _task_tokens[str(task_id)] = log_context_bind(**fields)
    if _process_runs_one_task:
        _process_context = _log_context.get()


def task_log_context_unbind(task_id: str | None = None, **_: Any) -> None:
    """task_postrun: back to the context from before the task."""
    global _process_context
    token = _task_tokens.pop(str(task_id), None)
    if token is not None:
        try:
            log_context_reset(token)
        except ValueError:  # bound in another context; nothing of ours to undo here
            log_context_clear()
    if _process_runs_one_task:
        _process_context = None


def worker_process_log_context_enable(**_: Any) -> None:
    """worker_process_init (sent in prefork children and by a solo pool: processes that run
    one task at a time): threads started by a task log with the task's context too."""
    global _process_runs_one_task
    _process_runs_one_task = True


# --- Redaction ------------------------------------------------------------------------

# Credentials recognisable by their shape, wherever they appear, each with a substring of
# the lowered text it needs (a cheap test that spares most lines the regular expression).
_TOKEN_PATTERNS: list[tuple[tuple[str, ...], re.Pattern[str], str]] = [
    (("svc_sk_",), re.compile(r"svc_sk_(live|test)_[A-Za-z0-9]+"), rf"svc_sk_\1_{REDACTED}"),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), REDACTED),
    (("whsec_",), re.compile(r"whsec_[A-Za-z0-9+/=_-]+"), f"whsec_{REDACTED}"),
    (("k_live_", "k_test_"), re.compile(r"\b(sk|rk)_(live|test)_[A-Za-z0-9]+"), rf"\1_\2_{REDACTED}"),
    (("bearer",), re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"), f"Bearer {REDACTED}"),
]
# Words one of which a line must hold for the key=value rules below to apply.
_CREDENTIAL_WORDS = ("authorization", "pass", "pwd", "secret", "key", "token", "cookie", "credential", "signature")
_CREDENTIAL_FIELD = (
    r"(?:authorization|password|passwd|pwd|secret|api[_-]?key|apikey|token|cookie|credentials?|signature|"
    r"access[_-]?token|refresh[_-]?token|id[_-]?token)"
)
# `Authorization: Basic dXNlcjpwYXNz`: the whole value, to the end of the line or field.
_AUTHORIZATION_VALUE = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)([^\"'\r\n,;}]+)")
# `password='a b c'`, `"token": "..."`, `{'secret': '...'}`
# From the credential word on (`new_password`, `X-Api-Key` match from `password`, `Api-Key`),
# its suffix in bounded segments: no nested quantifier over one character class, so a long
# word (a hex dump, unspaced Chinese) costs linear time, not quadratic.
_FIELD_AND_SEPARATOR = rf"({_CREDENTIAL_FIELD}(?:[_-][A-Za-z0-9]+){{0,3}}[\"']?\s*[:=]\s*)"
_QUOTED_VALUE = re.compile(rf"(?i){_FIELD_AND_SEPARATOR}([\"'])(.*?)(?<!\\)\2")
# `password=hunter2`, `api_key: abc`
_BARE_VALUE = re.compile(rf"(?i){_FIELD_AND_SEPARATOR}(?![\"'\[])([^\s\"',;&}}\])]+)")
_CREDENTIAL_FIELD_NAME = re.compile(rf"(?i){_CREDENTIAL_FIELD}")


def redact_tokens(text: str) -> str:
    """Removes credentials recognisable by their shape (keeps JSON text valid JSON)."""
    lowered = text.lower()
    for hints, pattern, replacement in _TOKEN_PATTERNS:
        if any(hint in lowered for hint in hints):
            text = pattern.sub(replacement, text)
    return text


def redact_text(text: str) -> str:
    """Removes credentials by shape and the values of secret-named keys in `k=v` text."""
    text = redact_tokens(text)
    lowered = text.lower()
    if not any(word in lowered for word in _CREDENTIAL_WORDS):
        return text
    if "authorization" in lowered:
        text = _AUTHORIZATION_VALUE.sub(rf"\1{REDACTED}", text)
    text = _QUOTED_VALUE.sub(rf"\1\2{REDACTED}\2", text)
    return _BARE_VALUE.sub(rf"\1{REDACTED}", text)


def is_secret_key(name: str) -> bool:
    """Whether a dict key names a secret (`password`, `X-Api-Key`, `stripe_secret_key`),
    not a count of one (`prompt_tokens`)."""
    lowered = name.lower()
    return bool(_CREDENTIAL_FIELD_NAME.search(lowered)) and not lowered.endswith(("tokens", "_count"))


def redact_value(value: Any, depth: int = 0) -> Any:
    """A copy of a log argument or extra with secrets removed (dicts by key, text by shape)."""
    if depth > 6:
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            key: REDACTED if isinstance(key, str) and is_secret_key(key) and value_ else redact_value(value_, depth + 1)
            for key, value_ in value.items()
        }
    if isinstance(value, list):
        return [redact_value(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_value(item, depth + 1) for item in value)
    return value


_RECORD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime", "taskName"}
)
_exception_formatter = logging.Formatter()


def record_extras(record: logging.LogRecord) -> dict[str, Any]:
    """The attributes a caller added to a record (`extra=`) and the log context's."""
    return {key: value for key, value in record.__dict__.items() if key not in _RECORD_ATTRIBUTES}


class RedactSecretsFilter(logging.Filter):
    """Rewrites the record in place so that no handler or formatter sees a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, Mapping):
            record.args = redact_value(record.args)
        elif record.args:
            record.args = tuple(redact_value(arg) for arg in record.args)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not lose the line
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = redact_text(message), None
        for key, value in record_extras(record).items():
            if is_secret_key(key):
                setattr(record, key, REDACTED)
            elif isinstance(value, str | Mapping | list | tuple):
                setattr(record, key, redact_value(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = _exception_formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


class LogContextFilter(logging.Filter):
    """Puts the log context (request_id, task_id, task_name) on the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in log_context_get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


# --- Formatters -----------------------------------------------------------------------


def _json_default(value: Any) -> str:
    """Objects in extras (a Django request, a UUID) as their text, redacted in full."""
    return redact_text(str(value))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp (UTC, ms), level, logger, message, request_id,
    the context and the extras, and `exception` with the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        for key, value in record_extras(record).items():
            line.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return redact_tokens(json.dumps(line, default=_json_default, ensure_ascii=False))


class PlainFormatter(logging.Formatter):
    """The human format (development): `time level logger [request id] message`."""

    def __init__(self, fmt: str | None = None, datefmt: str | None = None, style: Any = "%", **kwargs: Any) -> None:
        super().__init__(
            fmt or "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
            datefmt,
            style,
            defaults={"request_id": "-"},
            **kwargs,
        )

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))
