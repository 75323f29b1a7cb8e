"""The `echo` engine: deterministic, for tests and benchmarks. It hands the source back
behind a visible marker (`[echo → fr]`), so its output can never pass for a translation,
counts tokens from words and prices them at the configured rates.

Its options (TRANSLATION_ENGINE_OPTIONS, the keyword arguments below): `delay_seconds`
per page; `fail_pages` fail (a retryable EngineError) on their first `fail_attempts`
attempts in this process (0: always); `blank_pages` come back empty (the completeness
check fails them); `unavailable` reads as starting and refuses every page with
EngineUnavailable; `pairs` (`["en-es", "es-en"]`; empty: any source into any target)
restricts the pairs it translates, as the local engine's installed pairs do: a page detected in a language
without a pair fails with PageLanguageUnsupported. It reads no page images (no OCR).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Iterable

from translation.engines.base import (
    EngineCapabilities,
    EngineError,
    EngineStatus,
    EngineUnavailable,
    ModelState,
    PageInput,
    PageLanguageUnsupported,
    PageReading,
    PageResult,
    any_source_capabilities,
    pairs_capabilities,
    tokens_estimate,
)
from translation.engines.markup import page_language

NAME = "echo"
MODEL = "echo-1"


def echo_marker(target_language: str) -> str:
    return f"[echo → {target_language}]"


def _marked(marker: str, text: str) -> str:
    """The page's text with the marker in its first block (after a heading's `#`s or a
    list item's dash), or before it when it starts with code or a table."""
    syntax = re.match(r"(#{1,6} |- )", text)
    if syntax:
        return text[: syntax.end()] + marker + " " + text[syntax.end() :]
    if text.startswith(("```", "~~~", "|")):
        return f"{marker}\n\n{text}"
    return f"{marker} {text}".rstrip()


def echo_pairs_parse(pairs: Iterable[str]) -> list[tuple[str, str]]:
    """The `pairs` option (`en-es`, `es-en`, ...) as (source, target) pairs."""
    parsed = [pair.strip().partition("-") for pair in pairs]
    return [(source, target) for source, _, target in parsed if source and target]


class EchoEngine:
    name = NAME

    def __init__(
        self,
        *,
        delay_seconds: float = 0.0,
        fail_pages: Iterable[int] = (),
        fail_attempts: int = 1,
        blank_pages: Iterable[int] = (),
        unavailable: bool = False,
        pairs: Iterable[str] = (),
    ) -> None:
        self.delay_seconds = delay_seconds
        self.fail_pages = frozenset(fail_pages)
        self.fail_attempts = fail_attempts
        self.blank_pages = frozenset(blank_pages)
        self.unavailable = unavailable
        restricted = echo_pairs_parse(pairs)
        self._capabilities = (
            pairs_capabilities(engine=NAME, pairs=restricted, ocr_languages=())
            if restricted
            else any_source_capabilities(engine=NAME, ocr_languages=())
        )
        self._failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    def reads_at_intake(self) -> bool:
        return False

    def page_read(self, image: bytes, *, language: str | None) -> PageReading | None:
        """Nothing to read at intake: the echo engine reads no image."""
        return None

    def status(self) -> EngineStatus:
        if self.unavailable:
            return EngineStatus(
                state=ModelState.STARTING,
                engine=self.name,
                model=MODEL,
                detail="The echo engine is set to be unavailable.",
            )
        return EngineStatus(
            state=ModelState.READY, engine=self.name, model=MODEL, detail="The echo engine (no real translation)."
        )

    def capabilities(self) -> EngineCapabilities:
        return self._capabilities

    def check_supported(self, *, source_language: str | None, target_language: str) -> None:
        self._capabilities.check(source_language=source_language, target_language=target_language)

    def translate(self, page: PageInput) -> PageResult:
        if self.unavailable:
            raise EngineUnavailable("The echo engine is set to be unavailable (its `unavailable` option).")
        if self.delay_seconds > 0:
            time.sleep(self.delay_seconds)
        self._failure_raise(page)
        source_text = page.text if page.has_text or page.image is None else ""
        source_language = page_language(page, source_text)
        if source_language is not None and not self._capabilities.translates(
            source_language=source_language, target_language=page.target_language
        ):
            raise PageLanguageUnsupported(
                engine=self.name, source_language=source_language, target_language=page.target_language
            )
        if page.index in self.blank_pages:
            translation = ""
        elif page.has_text or page.image is None:
            marker = echo_marker(page.target_language)
            translation = _marked(marker, page.text.strip()) if page.structured else f"{marker} {page.text.strip()}"
        else:
            size = len(page.image())
            translation = f"{echo_marker(page.target_language)} (page {page.index}: an image of {size} bytes)"
        return PageResult.estimated(
            translation=translation,
            source_text=source_text,
            detected_source_language=source_language,
            engine=self.name,
            model=MODEL,
            prompt_tokens=tokens_estimate(page.text) + tokens_estimate(page.previous_context),
        )

    def _failure_raise(self, page: PageInput) -> None:
        if page.index not in self.fail_pages:
            return
        with self._lock:
            failed = self._failures[page.page_id]
            if self.fail_attempts and failed >= self.fail_attempts:
                return
            self._failures[page.page_id] += 1
        raise EngineError(f"The echo engine fails page {page.index} on purpose (its `fail_pages` option).")
