"""The model status (GET /v1/model-status and the status view's GPU overlay): the
engine's own status, kept in the shared cache for MODEL_STATUS_CACHE_SECONDS so that a
status read never waits on a probe of the GPU server more than once in that window."""

from __future__ import annotations

import logging
from dataclasses import asdict

from django.conf import settings
from django.core.cache import cache

from translation.engines.base import EngineStatus, ModelState
from translation.engines.factory import engine_fingerprint, engine_get

logger = logging.getLogger(__name__)


def _cache_key() -> str:
    return f"translation:model-status:{engine_fingerprint()}"


def model_status_forget() -> None:
    """Drops the cached status (the runner saw the engine go down or saturate), so the next
    read probes the engine again."""
    cache.delete(_cache_key())


def model_status() -> EngineStatus:
    """The configured engine's status, at most MODEL_STATUS_CACHE_SECONDS old."""
    key = _cache_key()
    cached = cache.get(key)
    if isinstance(cached, dict):
        return EngineStatus(**cached)
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
        cache.set(key, asdict(status), timeout=settings.MODEL_STATUS_CACHE_SECONDS)
    return status
