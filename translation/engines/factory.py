"""Choosing the engine: TRANSLATION_ENGINE names it, the settings configure it (and
TRANSLATION_ENGINE_OPTIONS, keyword arguments of the engine's class, over them), and one
instance is kept per process (it holds the vLLM connection pool). Django's setting_changed
signal (sent when settings are overridden at run time, as tests do) drops it, so the next
call builds one from the new settings; a call does no work beyond returning it."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from translation.engines.base import Engine
from translation.engines.echo import EchoEngine
from translation.engines.local import LocalEngine
from translation.engines.tesseract_reader import TesseractReader
from translation.engines.vllm import VllmEngine

ENGINE_NAMES = ("echo", "local", "vllm")

# Every setting an engine is built from: a change to any of them builds a new engine.
ENGINE_SETTINGS = (
    "TRANSLATION_ENGINE",
    "ENGINE_CONCURRENCY",
    "VLLM_BASE_URL",
    "VLLM_MODEL",
    "VLLM_API_KEY",
    "VLLM_CONNECT_TIMEOUT_SECONDS",
    "VLLM_TIMEOUT_SECONDS",
    "VLLM_STATUS_TIMEOUT_SECONDS",
    "VLLM_MAX_RETRIES",
    "VLLM_RETRY_BASE_SECONDS",
    "VLLM_RETRY_MAX_SECONDS",
    "VLLM_MAX_TOKENS",
    "VLLM_TEMPERATURE",
    "VLLM_THROTTLED_SECONDS",
    "VLLM_OCR_LANGUAGES",
    "VLLM_INTAKE_OCR",
    "TARGET_LANGUAGES",
    "TESSERACT_COMMAND",
    "APERTIUM_COMMAND",
    "LOCAL_ENGINE_TIMEOUT_SECONDS",
    "TRANSLATION_ENGINE_OPTIONS",
)

_lock = threading.Lock()
_current: tuple[str, Engine] | None = None  # (the settings' fingerprint, the engine)


def _fingerprint() -> str:
    key = tuple(repr(getattr(settings, name)) for name in ENGINE_SETTINGS)
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def engine_get() -> Engine:
    """The configured engine, built once per process."""
    return _engine_current()[1]


def engine_fingerprint() -> str:
    """A short digest of the current engine's settings (a cache key part; no secret leaves it)."""
    return _engine_current()[0]


def _engine_current() -> tuple[str, Engine]:
    global _current
    current = _current
    if current is None:
        with _lock:
            if _current is None:
                _current = (_fingerprint(), engine_build())
            current = _current
    return current


def engine_forget(*, setting: str, **kwargs: object) -> None:
    """Django's setting_changed receiver (connected in TranslationConfig.ready): a change
    to a setting the engine is built from drops the engine, and the next call builds one."""
    global _current
    if setting in ENGINE_SETTINGS:
        with _lock:
            _current = None


def engine_build() -> Engine:
    """A new engine from the current settings, TRANSLATION_ENGINE_OPTIONS over them."""
    name = settings.TRANSLATION_ENGINE
    if name not in ENGINE_NAMES:
        raise ImproperlyConfigured(f"TRANSLATION_ENGINE must be one of {', '.join(ENGINE_NAMES)}, not {name!r}.")
    options = dict(settings.TRANSLATION_ENGINE_OPTIONS)
    if name == "echo":
        return EchoEngine(**options)
    if name == "local":
        return LocalEngine(**{**_local_settings(), **options})
    return VllmEngine(**{**_vllm_settings(), **options})


def _local_settings() -> dict[str, Any]:
    return {
        "tesseract_command": settings.TESSERACT_COMMAND,
        "apertium_command": settings.APERTIUM_COMMAND,
        "timeout_seconds": settings.LOCAL_ENGINE_TIMEOUT_SECONDS,
    }


def _vllm_settings() -> dict[str, Any]:
    reader = TesseractReader(command=settings.TESSERACT_COMMAND, timeout_seconds=settings.LOCAL_ENGINE_TIMEOUT_SECONDS)
    return {
        "base_url": settings.VLLM_BASE_URL,
        "model": settings.VLLM_MODEL,
        "api_key": settings.VLLM_API_KEY,
        "concurrency": settings.ENGINE_CONCURRENCY,
        "connect_timeout": settings.VLLM_CONNECT_TIMEOUT_SECONDS,
        "timeout": settings.VLLM_TIMEOUT_SECONDS,
        "status_timeout": settings.VLLM_STATUS_TIMEOUT_SECONDS,
        "max_retries": settings.VLLM_MAX_RETRIES,
        "retry_base_seconds": settings.VLLM_RETRY_BASE_SECONDS,
        "retry_max_seconds": settings.VLLM_RETRY_MAX_SECONDS,
        "max_tokens": settings.VLLM_MAX_TOKENS,
        "temperature": settings.VLLM_TEMPERATURE,
        "throttled_seconds": settings.VLLM_THROTTLED_SECONDS,
        "ocr_languages": tuple(settings.VLLM_OCR_LANGUAGES),
        "intake_reader": reader if settings.VLLM_INTAKE_OCR else None,
    }
