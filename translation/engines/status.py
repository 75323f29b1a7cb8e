"""The model status (GET /v1/model-status and the status view's GPU overlay): the
engine's own status, kept in the shared cache for MODEL_STATUS_CACHE_SECONDS so that a
status read never waits on a probe of the GPU server more than once in that window.

Each process also keeps the last status it read for up to LOCAL_SECONDS, within the same
window (the shared copy records when it was probed), so that the status read agents poll
does not make a Redis round trip each time (docs/performance.md, "The API under load").
The price: `model_status_forget` in another process (a worker that saw the engine go down
or saturate) reaches this one's reads up to LOCAL_SECONDS late; in this process it is
immediate.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.core.cache import cache

from translation.engines.base import EngineStatus, ModelState
from translation.engines.factory import engine_fingerprint, engine_get

logger = logging.getLogger(__name__)

# How long a process answers from its own copy at most.
LOCAL_SECONDS = 1.0

# (the shared cache's key, the status, until when on time.monotonic()): one tuple, so a
# thread reads a consistent copy without a lock.
_local: tuple[str, EngineStatus, float] | None = None


def _cache_key() -> str:
    return f"translation:model-status:{engine_fingerprint()}"


def model_status_local_drop() -> None:
    """Drops this process's own copy, so its next read asks the shared cache (whoever
    clears that cache, as the tests do between tests, drops this too)."""
    global _local
    _local = None


def model_status_forget() -> None:
    """Drops the cached status (the runner saw the engine go down or saturate), so the next
    read in this process probes the engine again, and the next read in any other process
    within LOCAL_SECONDS of its last."""
    model_status_local_drop()
    cache.delete(_cache_key())


def _keep_locally(key: str, status: EngineStatus, *, probed_at: float) -> None:
    global _local
    window = min(LOCAL_SECONDS, settings.MODEL_STATUS_CACHE_SECONDS - (time.time() - probed_at))
    if window > 0:
        _local = (key, status, time.monotonic() + window)


def model_status() -> EngineStatus:
    """The configured engine's status, at most MODEL_STATUS_CACHE_SECONDS old."""
    key = _cache_key()
    local = _local
    if local is not None and local[0] == key and time.monotonic() < local[2]:
        return local[1]
    cached: Any = cache.get(key)
    if isinstance(cached, dict):
        probed_at = cached.pop("probed_at", time.time())
        status = EngineStatus(**cached)
        _keep_locally(key, status, probed_at=probed_at)
        return status
    engine = engine_get()
    try:
        status = engine.status()
    except Exception:
        logger.exception("the %s engine's status probe failed", engine.name)
        status = EngineStatus(
            state=ModelState.STARTING, engine=engine.name, model="", detail="The engine's status could not be read."
        )
    status = EngineStatus(state=str(status.state), engine=status.engine, model=status.model, detail=status.detail)
    if settings.MODEL_STATUS_CACHE_SECONDS > 0:
        probed_at = time.time()
        cache.set(key, {**asdict(status), "probed_at": probed_at}, timeout=settings.MODEL_STATUS_CACHE_SECONDS)
        _keep_locally(key, status, probed_at=probed_at)
    return status
