"""The engine interface: what the batch runner hands an engine, what it gets back, what
languages it can translate and read, and how an engine says that it failed, that it is
down, or that it cannot do a language pair."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings
from django.db import models

from core.money import round_amount
from translation.errors import UnsupportedLanguagePair
from translation.languages import language_name

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
    # `text` is the page's body as Markdown from its layout (docs/book-structure.md): code
    # blocks, inline code and literals in it are kept verbatim (translation.engines.markup).
    structured: bool = False
    book_language: str | None = None  # the language of the book's text, when it could be told

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
    # Why the page's reading may not be trusted (an OCR reading with low confidence, text cut
    # at the image's edge, ink left unread): the page's reviewFlags; () when nothing says so.
    warnings: tuple[str, ...] = ()
    # The layout the engine read the page with (an OCR reading's words, `source: "ocr"`, in the
    # Page.layout format of docs/book-structure.md); None when it read none.
    layout: Mapping[str, Any] | None = None

    @classmethod
    def estimated(
        cls,
        *,
        translation: str,
        source_text: str,
        detected_source_language: str | None,
        engine: str,
        model: str,
        prompt_tokens: int,
        warnings: tuple[str, ...] = (),
        layout: Mapping[str, Any] | None = None,
    ) -> PageResult:
        """The result of an engine without a tokenizer: the translation's tokens estimated
        from its words, the page's cost from the configured rates."""
        completion_tokens = tokens_estimate(translation)
        cost = cost_usd(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        # The fields in the order they are declared above.
        return cls(
            translation,
            source_text,
            detected_source_language,
            engine,
            model,
            prompt_tokens,
            completion_tokens,
            cost,
            warnings,
            layout,
        )


@dataclass(frozen=True)
class EngineStatus:
    state: str  # a ModelState value
    engine: str
    model: str
    detail: str


@dataclass(frozen=True)
class EngineCapabilities:
    """What an engine can do with languages (GET /v1/languages, and every language check).

    `pairs` maps a source language to the targets the engine translates it into; the
    source None means any source language (an engine that reads whatever it is given). A
    page already in the target language passes through on every engine, so a pair
    (x, x) is never listed and always accepted. `ocr_languages` are the ISO 639-1 codes
    the engine reads from page images (none: it does not read images)."""

    engine: str
    pairs: Mapping[str | None, tuple[str, ...]]
    ocr_languages: tuple[str, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        """Every target some source reaches, in settings.TARGET_LANGUAGES order."""
        reached = {target for targets in self.pairs.values() for target in targets}
        return tuple(code for code in settings.TARGET_LANGUAGES if code in reached)

    def translates(self, *, source_language: str | None, target_language: str) -> bool:
        """Whether a book (or page) in `source_language` can become `target_language`; with
        no source (auto-detection), whether some source reaches the target."""
        if source_language is not None and source_language == target_language:
            return True
        if target_language in self.pairs.get(None, ()):
            return True
        if source_language is None:
            return target_language in self.targets
        return target_language in self.pairs.get(source_language, ())

    def check(self, *, source_language: str | None, target_language: str) -> None:
        """Refuses (UnsupportedLanguagePair, 400) what `translates` says no to."""
        source_language = source_language or None  # "" (no override) means: detect
        if not self.translates(source_language=source_language, target_language=target_language):
            raise UnsupportedLanguagePair(
                engine=self.engine,
                source_language=source_language,
                target_language=target_language,
                supported_pairs=[(source, target) for source, targets in self.pairs.items() for target in targets],
            )


def pairs_capabilities(
    *, engine: str, pairs: Iterable[tuple[str, str]], ocr_languages: tuple[str, ...]
) -> EngineCapabilities:
    """An engine that translates the given (source, target) pairs; pairs into a language
    that is not a target language are left out (no project can ask for them)."""
    by_source: dict[str | None, tuple[str, ...]] = {}
    for source, target in sorted(set(pairs)):
        if target in settings.TARGET_LANGUAGES and source != target:
            by_source[source] = (*by_source.get(source, ()), target)
    return EngineCapabilities(engine=engine, pairs=by_source, ocr_languages=ocr_languages)


def any_source_capabilities(*, engine: str, ocr_languages: tuple[str, ...]) -> EngineCapabilities:
    """An engine that translates any source into each of settings.TARGET_LANGUAGES."""
    return EngineCapabilities(
        engine=engine, pairs={None: tuple(settings.TARGET_LANGUAGES)}, ocr_languages=ocr_languages
    )


class EngineError(Exception):
    """A page that failed. `retryable` is True for transient causes (timeouts, 5xx, a reply
    that could not be parsed): the ladder retries the page by itself while it has attempts
    left. False when another attempt would fail the same way (the server refused the page
    with a 4xx, the reply reached max tokens, a language the engine cannot translate): the
    page stays Failed with its reason, and only its owner's retry sends it again."""

    code = "engine_error"  # the page's failureCode

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class PageLanguageUnsupported(EngineError):
    """A page turned out (by detection) to be in a language the engine cannot translate into
    the target. Not retryable: another attempt would fail the same way, until the page's
    source language is set to one the engine translates, or the engine learns the pair.
    The page keeps its code and the detected language (failure_code,
    detected_source_language)."""

    code = "language_unsupported"

    def __init__(self, *, engine: str, source_language: str, target_language: str) -> None:
        super().__init__(
            f"The {engine} engine cannot translate {source_language} -> {target_language} "
            f"({language_name(source_language)} into {language_name(target_language)}): this page is in "
            f"{language_name(source_language)}. If it is not, set its source language.",
            retryable=False,
        )
        self.source_language = source_language
        self.target_language = target_language


class EngineUnavailable(EngineError):
    """The backend is down, starting or not configured: the book waits
    (PausedNeedsCapacity) and no page attempt is used up."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class EngineSaturated(EngineUnavailable):
    """The backend answers but is at capacity: 429 (or 503) still, after the engine's own
    retries with backoff. The book waits (PausedNeedsCapacity, gpu_capacity) like an outage,
    with no page attempt used."""


@dataclass(frozen=True)
class PageReading:
    """A page image read at intake (`Engine.page_read`): its layout (the Page.layout format,
    source "ocr") and why the reading may not be trusted (the page's reviewFlags)."""

    layout: dict[str, Any]
    warnings: tuple[str, ...]


class Engine(Protocol):
    name: str

    def status(self) -> EngineStatus: ...

    def reads_at_intake(self) -> bool:
        """Whether `page_read` may read a page (an OCR is installed for it): a book of page
        images is then read on a worker, not inside the normalize call."""
        ...

    def page_read(self, image: bytes, *, language: str | None) -> PageReading | None:
        """The page image's text with its layout, read at intake by an engine that reads
        images with OCR; None from an engine that reads the image itself when translating
        (always, or for this page: the vLLM engine keeps only a reading it can trust)."""
        ...

    def capabilities(self) -> EngineCapabilities: ...

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
    return round_amount(total)
