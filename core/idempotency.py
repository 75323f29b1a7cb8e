"""Idempotent POSTs, as Stripe and the IETF Idempotency-Key draft do them.

`@idempotent` on a view's POST handler:
- With an `Idempotency-Key` header: the first effect (a 2xx) is kept for the owner for
  IDEMPOTENCY_KEY_HOURS and replayed (with `Idempotent-Replayed: true`) to a retry with the
  same key and the same request; the same key with another request is 422
  `idempotency_key_reused`; the same key while the first is still running is 409
  `request_in_progress` (with Retry-After).
- Without the header: the same owner, route and body within DOUBLE_SUBMIT_WINDOW_SECONDS
  of the first response is a double-submit and gets that response back. One that arrives
  while the first is still running waits for it (up to DOUBLE_SUBMIT_WAIT_SECONDS) and
  gets its answer; only if the first is still running then is it 409 `request_in_progress`.
- Only an effect is kept. A refusal (any 4xx: 400, 402, 404, a 409 such as
  `project_not_startable`, ...) or a failure on our side (5xx) changed nothing and depended
  on the state of the moment, so it is not kept: a retry, with the same key or the same
  body, is answered afresh (a client that tops up after a 402, or normalizes after a 409,
  gets its job, not the old refusal). A duplicate that was waiting for a request that ends
  refused runs afresh too, one at a time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from core.errors import IDEMPOTENCY_KEY_MAX_LENGTH, IdempotencyKeyInvalid, IdempotencyKeyReused, RequestInProgress
from core.models import IdempotencyRecord

HEADER = "Idempotency-Key"
REPLAY_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = IDEMPOTENCY_KEY_MAX_LENGTH
POLL_FIRST_SECONDS, POLL_MAX_SECONDS = 0.01, 0.1  # a waiting double-submit's polling, growing

Handler = TypeVar("Handler", bound=Callable[..., Response])


def fingerprint_of(*, method: str, path: str, data: Any) -> str:
    """SHA-256 of the method, the path and the parsed body (key order does not matter)."""
    body = json.dumps(data, sort_keys=True, cls=JSONEncoder, default=str)
    return hashlib.sha256(f"{method}\n{path}\n{body}".encode()).hexdigest()


def request_fingerprint(request: Request) -> str:
    return fingerprint_of(method=request.method or "", path=request.path, data=request.data)


def client_idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key, for a service whose effect must carry it for its whole
    life (a top-up resumed after a crash, not started again); None without one."""
    return _client_key(request)


def _client_key(request: Request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        raise IdempotencyKeyInvalid()
    return key


def _record_claim(*, owner: Any, key: str, fingerprint: str) -> IdempotencyRecord | None:
    """Claim the key for this request (None); the record of whoever holds it otherwise."""
    in_progress_timeout = timedelta(seconds=settings.IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS)
    while True:
        now = timezone.now()
        records = IdempotencyRecord.objects.filter(owner=owner, key=key)
        with transaction.atomic():
            # A kept response that expired, or a claim whose worker died, no longer counts.
            records.filter(expires_at__lte=now).delete()
            records.filter(state=IdempotencyRecord.State.IN_PROGRESS, created_at__lt=now - in_progress_timeout).delete()
        try:
            with transaction.atomic():
                # Until it finishes, a claim lasts as long as a request may run.
                IdempotencyRecord.objects.create(
                    owner=owner, key=key, fingerprint=fingerprint, created_at=now, expires_at=now + in_progress_timeout
                )
        except IntegrityError:
            holder = records.first()
            if holder is not None:
                return holder
            continue  # the holder was refused and let go in the meantime: claim again
        return None


def _record_await(*, owner: Any, key: str, deadline: float) -> IdempotencyRecord | None:
    """Wait for the request holding the key: its record once completed, or None once it let
    go of the key (it was refused or failed). 409 request_in_progress at the deadline. No
    database connection is held between looks (outside a transaction), so waiting
    duplicates do not drain the pool that the first one's work needs."""
    pause = POLL_FIRST_SECONDS
    while True:
        record = IdempotencyRecord.objects.filter(owner=owner, key=key).first()
        if record is None or record.state == IdempotencyRecord.State.COMPLETED:
            return record
        if time.monotonic() + pause > deadline:
            raise RequestInProgress()
        if not connection.in_atomic_block:
            connection.close()
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_SECONDS)


def _replay(record: IdempotencyRecord) -> Response:
    return Response(record.response_body, status=record.response_status, headers={REPLAY_HEADER: "true"})


def idempotent(handler: Handler) -> Handler:
    """Make a DRF view's POST handler idempotent (see the module docstring)."""

    @functools.wraps(handler)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        explicit = _client_key(request)
        fingerprint = request_fingerprint(request)
        if explicit is not None:
            key, lifetime = explicit, timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS)
        else:  # the automatic key embeds the fingerprint, so it never meets another request
            key, lifetime = f"auto:{fingerprint}", timedelta(seconds=settings.DOUBLE_SUBMIT_WINDOW_SECONDS)
        owner = request.user
        deadline = time.monotonic() + settings.DOUBLE_SUBMIT_WAIT_SECONDS
        while (holder := _record_claim(owner=owner, key=key, fingerprint=fingerprint)) is not None:
            if holder.fingerprint != fingerprint:
                raise IdempotencyKeyReused()
            if holder.state == IdempotencyRecord.State.COMPLETED:
                return _replay(holder)
            if explicit is not None:
                raise RequestInProgress()
            finished = _record_await(owner=owner, key=key, deadline=deadline)
            if finished is not None:
                return _replay(finished)
        try:
            response = handler(view, request, *args, **kwargs)
        except Exception as exc:
            response = view.handle_exception(exc)
        _record_finish(owner=owner, key=key, response=response, lifetime=lifetime)
        return response

    wrapper.honours_idempotency_key = True  # type: ignore[attr-defined]  # read by core.schema
    return wrapper  # type: ignore[return-value]


def _record_finish(*, owner: Any, key: str, response: Response, lifetime: timedelta) -> None:
    """Keep an effect (a 2xx) for `lifetime` from now; let go of the key after anything else."""
    records = IdempotencyRecord.objects.filter(owner=owner, key=key)
    if 200 <= response.status_code < 300:
        body = json.loads(json.dumps(response.data, cls=JSONEncoder))
        records.update(
            state=IdempotencyRecord.State.COMPLETED,
            response_status=response.status_code,
            response_body=body,
            expires_at=timezone.now() + lifetime,
        )
    else:
        records.delete()


def idempotency_records_purge() -> int:
    """Delete expired records; returns how many. Run periodically."""
    deleted, _ = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
