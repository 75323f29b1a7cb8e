"""Idempotent POSTs, as Stripe and the IETF Idempotency-Key draft do them.

`@idempotent` on a view's POST handler:
- With an `Idempotency-Key` header: the first response is kept for the owner for
  IDEMPOTENCY_KEY_HOURS and replayed (with `Idempotent-Replayed: true`) to a retry with the
  same key and the same request; the same key with another request is 422
  `idempotency_key_reused`; the same key while the first is still running is 409
  `request_in_progress`.
- Without the header: the same owner, route and body within DOUBLE_SUBMIT_WINDOW_SECONDS
  is a double-submit and gets the first response back.
- Nothing is kept when the request is refused before work starts (400, 401, 402, 403, 404,
  413, 415, 429) or fails on our side (5xx): the client may simply retry, and gets a fresh
  answer. A 402 is such a refusal: nothing was held or charged, and a client that tops up
  and retries with the same key (or the same body) must get its job, not the old 402. A
  success (2xx) and a conflict found while doing the work (409) are kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from core import problems
from core.errors import ServiceError
from core.models import IdempotencyRecord

HEADER = "Idempotency-Key"
REPLAY_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
KEPT_STATUSES = frozenset({409})  # besides every 2xx

problems.register(
    "idempotency_key_reused",
    422,
    "Idempotency key reused",
    "This Idempotency-Key was used before with a different request.",
)
problems.register(
    "request_in_progress",
    409,
    "Request in progress",
    "A request with this Idempotency-Key is still being processed; retry shortly.",
)
problems.register(
    "idempotency_key_invalid",
    400,
    "Invalid Idempotency-Key",
    f"The Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
)

Handler = TypeVar("Handler", bound=Callable[..., Response])


def fingerprint_of(*, method: str, path: str, data: Any) -> str:
    """SHA-256 of the method, the path and the parsed body (key order does not matter)."""
    body = json.dumps(data, sort_keys=True, cls=JSONEncoder, default=str)
    return hashlib.sha256(f"{method}\n{path}\n{body}".encode()).hexdigest()


def request_fingerprint(request: Request) -> str:
    return fingerprint_of(method=request.method or "", path=request.path, data=request.data)


def _client_key(request: Request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        raise ServiceError(code="idempotency_key_invalid")
    return key


def _record_claim(*, owner: Any, key: str, fingerprint: str, lifetime: timedelta) -> IdempotencyRecord | None:
    """Claim the key for this request; the existing record if someone else holds it."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS)
    with transaction.atomic():
        # A kept response that expired, or a claim whose worker died, no longer counts.
        IdempotencyRecord.objects.filter(owner=owner, key=key).filter(expires_at__lte=now).delete()
        IdempotencyRecord.objects.filter(
            owner=owner, key=key, state=IdempotencyRecord.State.IN_PROGRESS, created_at__lt=stale_before
        ).delete()
    try:
        with transaction.atomic():
            IdempotencyRecord.objects.create(
                owner=owner, key=key, fingerprint=fingerprint, created_at=now, expires_at=now + lifetime
            )
    except IntegrityError:
        return IdempotencyRecord.objects.filter(owner=owner, key=key).first()
    return None


def _replay(record: IdempotencyRecord, fingerprint: str, *, explicit_key: bool) -> Response:
    if record.fingerprint != fingerprint:
        if explicit_key:
            raise ServiceError(code="idempotency_key_reused")
        raise ServiceError(code="request_in_progress")  # unreachable: auto keys embed the fingerprint
    if record.state == IdempotencyRecord.State.IN_PROGRESS:
        raise ServiceError(code="request_in_progress")
    content_type = "application/problem+json" if (record.response_status or 200) >= 400 else None
    return Response(
        record.response_body,
        status=record.response_status,
        headers={REPLAY_HEADER: "true"},
        content_type=content_type,
    )


def idempotent(handler: Handler) -> Handler:
    """Make a DRF view's POST handler idempotent (see the module docstring)."""

    @functools.wraps(handler)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        explicit = _client_key(request)
        fingerprint = request_fingerprint(request)
        if explicit is not None:
            key, lifetime = explicit, timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS)
        else:
            key, lifetime = f"auto:{fingerprint}", timedelta(seconds=settings.DOUBLE_SUBMIT_WINDOW_SECONDS)
        owner = request.user
        existing = _record_claim(owner=owner, key=key, fingerprint=fingerprint, lifetime=lifetime)
        if existing is not None:
            return _replay(existing, fingerprint, explicit_key=explicit is not None)
        try:
            response = handler(view, request, *args, **kwargs)
        except Exception as exc:
            response = view.handle_exception(exc)
        _record_finish(owner=owner, key=key, response=response)
        return response

    wrapper.honours_idempotency_key = True  # type: ignore[attr-defined]  # read by core.schema
    return wrapper  # type: ignore[return-value]


def _record_finish(*, owner: Any, key: str, response: Response) -> None:
    records = IdempotencyRecord.objects.filter(owner=owner, key=key)
    if 200 <= response.status_code < 300 or response.status_code in KEPT_STATUSES:
        body = json.loads(json.dumps(response.data, cls=JSONEncoder))
        records.update(
            state=IdempotencyRecord.State.COMPLETED, response_status=response.status_code, response_body=body
        )
    else:
        records.delete()


def idempotency_records_purge() -> int:
    """Delete expired records; returns how many. Run periodically."""
    deleted, _ = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
