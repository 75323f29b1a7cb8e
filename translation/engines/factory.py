"""Choosing the engine: TRANSLATION_ENGINE names it, the settings configure it, and one
instance is kept per process (it holds the vLLM connection pool). A change of the settings
(tests do that) builds a new one."""

from __future__ import annotations

import hashlib
import threading

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
    "ECHO_ENGINE_DELAY_SECONDS",
    "ECHO_ENGINE_FAIL_PAGES",
    "ECHO_ENGINE_FAIL_ATTEMPTS",
    "ECHO_ENGINE_BLANK_PAGES",
    "ECHO_ENGINE_UNAVAILABLE",
    "ECHO_ENGINE_PAIRS",
)

_lock = threading.Lock()
_current: tuple[tuple[object, ...], Engine] | None = None


def _settings_key() -> tuple[object, ...]:
    return tuple(repr(getattr(settings, name)) for name in ENGINE_SETTINGS)


def engine_fingerprint() -> str:
    """A short digest of the engine's settings (a cache key part; no secret leaves it)."""
    return hashlib.sha256(repr(_settings_key()).encode()).hexdigest()[:16]


def engine_build() -> Engine:
    """A new engine from the current settings."""
    name = settings.TRANSLATION_ENGINE
    if name == "echo":
        return EchoEngine(
            delay_seconds=settings.ECHO_ENGINE_DELAY_SECONDS,
            fail_pages=settings.ECHO_ENGINE_FAIL_PAGES,
            fail_attempts=settings.ECHO_ENGINE_FAIL_ATTEMPTS,
            blank_pages=settings.ECHO_ENGINE_BLANK_PAGES,
            unavailable=settings.ECHO_ENGINE_UNAVAILABLE,
            pairs=settings.ECHO_ENGINE_PAIRS,
        )
    if name == "local":
        return LocalEngine(
            tesseract_command=settings.TESSERACT_COMMAND,
            apertium_command=settings.APERTIUM_COMMAND,
            timeout_seconds=settings.LOCAL_ENGINE_TIMEOUT_SECONDS,
        )
    if name == "vllm":
        return VllmEngine(
            base_url=settings.VLLM_BASE_URL,
            model=settings.VLLM_MODEL,
            api_key=settings.VLLM_API_KEY,
            concurrency=settings.ENGINE_CONCURRENCY,
            connect_timeout=settings.VLLM_CONNECT_TIMEOUT_SECONDS,
            timeout=settings.VLLM_TIMEOUT_SECONDS,
            status_timeout=settings.VLLM_STATUS_TIMEOUT_SECONDS,
            max_retries=settings.VLLM_MAX_RETRIES,
            retry_base_seconds=settings.VLLM_RETRY_BASE_SECONDS,
            retry_max_seconds=settings.VLLM_RETRY_MAX_SECONDS,
            max_tokens=settings.VLLM_MAX_TOKENS,
            temperature=settings.VLLM_TEMPERATURE,
            throttled_seconds=settings.VLLM_THROTTLED_SECONDS,
            ocr_languages=tuple(settings.VLLM_OCR_LANGUAGES),
            intake_reader=(
                TesseractReader(
                    command=settings.TESSERACT_COMMAND, timeout_seconds=settings.LOCAL_ENGINE_TIMEOUT_SECONDS
                )
                if settings.VLLM_INTAKE_OCR
                else None
            ),
        )
    raise ImproperlyConfigured(f"TRANSLATION_ENGINE must be one of {', '.join(ENGINE_NAMES)}, not {name!r}.")


def engine_get() -> Engine:
    """The configured engine, built once per process (and again when its settings change)."""
    global _current
    key = _settings_key()
    with _lock:
        if _current is None or _current[0] != key:
            _current = (key, engine_build())
        return _current[1]
