"""The engine interface: what the batch runner hands an engine, what it gets back, and how
an engine says that it failed, that it is down, or that it cannot do a language pair."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from django.conf import settings
from django.db import models

from core.errors import ServiceError
from translation import problems  # noqa: F401  (registers the app's problem codes)

USD_PLACES = Decimal("0.000001")
TOKENS_PER_WORD = 4 / 3  # the usual estimate for subword tokenizers on European text


class ModelState(models.TextChoices):
    READY = "ready", "Ready"
    STARTING = "starting", "Starting (warming up, or not reachable yet)"
    THROTTLED = "throttled", "Throttled (the server recently answered 429)"
    UNCONFIGURED = "unconfigured", "Unconfigured"


@dataclass(frozen=True)
class PageInput:
    page_id: str
    index: int  # 1-based page number in the book
    text: str  # the PDF text layer ('' when none)
    image: Callable[[], bytes] | None  # lazily loads the page PNG (used when text is empty)
    source_language: str | None  # ISO 639-1, or None = detect
    target_language: str  # ISO 639-1 (one of settings.TARGET_LANGUAGES)
    previous_context: str = ""  # the end of the previous page's translation (continuity)
    glossary: Mapping[str, str] = field(default_factory=dict)  # names/terms -> their translation

    @property
    def has_text(self) -> bool:
        return bool(self.text.strip())


@dataclass(frozen=True)
class PageResult:
    translation: str  # Markdown: paragraphs, headings, lists, emphasis preserved
    source_text: str  # the text layer, or what the engine transcribed from the image
    detected_source_language: str | None
    engine: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: Decimal  # measured cost of this page (6 places)


@dataclass(frozen=True)
class EngineStatus:
    state: str  # a ModelState value
    engine: str
    model: str
    detail: str


class EngineError(Exception):
    """A page that failed. `retryable` is True for transient causes (timeouts, 5xx, a reply
    that could not be parsed): the ladder retries the page by itself while it has attempts
    left. False when another attempt would fail the same way (the server refused the page
    with a 4xx, the reply reached max tokens, a language the engine cannot translate): the
    page stays Failed with its reason, and only its owner's retry sends it again."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class EngineUnavailable(EngineError):
    """The backend is down, starting or not configured: the book waits
    (PausedNeedsCapacity) and no page attempt is used up."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class EngineSaturated(EngineUnavailable):
    """The backend answers but is at capacity: 429 (or 503) still, after the engine's own
    retries with backoff. The book waits (PausedNeedsCapacity, gpu_capacity) like an outage,
    with no page attempt used."""


class UnsupportedLanguagePair(ServiceError):
    """The engine cannot translate this pair; raised by `check_supported` before any hold."""

    code = "language_pair_unsupported"

    def __init__(
        self,
        *,
        engine: str,
        source_language: str | None,
        target_language: str,
        supported_pairs: list[tuple[str | None, str]],
    ) -> None:
        listed = ", ".join(f"{source or 'any'}->{target}" for source, target in supported_pairs) or "none"
        detail = (
            f"The {engine} engine cannot translate {source_language or 'this book'} into {target_language}. "
            f"It translates: {listed}."
        )
        pairs: list[dict[str, Any]] = [{"source": source, "target": target} for source, target in supported_pairs]
        super().__init__(detail, supported_pairs=pairs)
        self.source_language = source_language
        self.target_language = target_language


class Engine(Protocol):
    name: str

    def status(self) -> EngineStatus: ...

    def check_supported(self, *, source_language: str | None, target_language: str) -> None: ...

    def translate(self, page: PageInput) -> PageResult: ...


def tokens_estimate(text: str) -> int:
    """Tokens of a text for engines that have no tokenizer: words x 4/3, rounded up."""
    return math.ceil(len(text.split()) * TOKENS_PER_WORD)


def cost_usd(*, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """The measured cost of one page at the configured USD rates per million tokens."""
    input_rate = Decimal(str(settings.ENGINE_USD_PER_M_INPUT_TOKENS))
    output_rate = Decimal(str(settings.ENGINE_USD_PER_M_OUTPUT_TOKENS))
    total = (Decimal(prompt_tokens) * input_rate + Decimal(completion_tokens) * output_rate) / Decimal(1_000_000)
    return total.quantize(USD_PLACES, rounding=ROUND_HALF_UP)


def target_check(*, engine: str, source_language: str | None, target_language: str) -> None:
    """Refuses a target outside settings.TARGET_LANGUAGES (engines that translate any pair)."""
    if target_language not in settings.TARGET_LANGUAGES:
        raise UnsupportedLanguagePair(
            engine=engine,
            source_language=source_language,
            target_language=target_language,
            supported_pairs=[(None, target) for target in settings.TARGET_LANGUAGES],
        )
