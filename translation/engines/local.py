"""The `local` engine, the embedded default: everything on the CPU with Debian packages.

- Pages without a text layer are read with Tesseract (translation/engines/tesseract.py:
  turned upright and level, read from its TSV into Markdown and a layout, flagged when the
  reading cannot be trusted), in the page's language when its traineddata is installed,
  else in every installed one.
- Text is translated with Apertium (`apertium -u -f txt <mode>`) for the pairs whose modes
  are installed (`apertium -l`; Debian packages apertium-eng-spa, apertium-fr-es, ...).
  Modes are named with ISO 639-1 or 639-3 codes (`es-pt`, `eng-spa`); variants such as
  `spa-eng_US` and three-part modes are ignored. `-u` drops Apertium's `*` marks on unknown
  words, which would otherwise read as Markdown emphasis.
- Glossary terms are swapped for placeholders Apertium passes through untouched, then for
  their translations, so names come out as the book's glossary says.
- `capabilities()` lists the installed pairs (into the target languages) and the OCR
  languages Tesseract has traineddata for, both looked up again every DISCOVERY_SECONDS.
- A pair not installed is refused by `check_supported` (400 language_pair_unsupported,
  listing the pairs); a page detected in a language without a pair fails with
  PageLanguageUnsupported. A book in the target language is passed through as it is.
- Missing programs make the engine `unconfigured`; a page that needs them waits
  (EngineUnavailable) until they are installed.
- Cost: tokens estimated from words (x 4/3) at the configured token rates, like echo.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Mapping

from bookstructure.words import word_list
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
    pairs_capabilities,
    tokens_estimate,
)
from translation.engines.markup import page_language, segments_join, segments_split
from translation.engines.programs import program_run
from translation.engines.tesseract import OcrReading
from translation.engines.tesseract_reader import DISCOVERY_SECONDS, TesseractReader
from translation.languages import ISO_639_1

NAME = "local"
_MODE = re.compile(r"\A([a-z]{2,3})-([a-z]{2,3})\Z")


def _iso_639_1(code: str) -> str | None:
    if len(code) == 2:
        return code
    return ISO_639_1.get(code)


def apertium_pairs(mode_names: list[str]) -> dict[tuple[str, str], str]:
    """(source, target) ISO 639-1 -> the Apertium mode for it; 639-3 modes win over 639-1 ones."""
    pairs: dict[tuple[str, str], str] = {}
    for mode in sorted(mode_names, key=len):
        match = _MODE.match(mode)
        if match is None:
            continue
        source, target = _iso_639_1(match.group(1)), _iso_639_1(match.group(2))
        if source and target:
            pairs[(source, target)] = mode
    return pairs


class LocalEngine:
    name = NAME

    def __init__(self, *, tesseract_command: str, apertium_command: str, timeout_seconds: int) -> None:
        self.tesseract_command = tesseract_command
        self.apertium_command = apertium_command
        self.timeout_seconds = timeout_seconds
        self.reader = TesseractReader(command=tesseract_command, timeout_seconds=timeout_seconds)
        self._lock = threading.Lock()
        self._discovered_at = float("-inf")
        self._pairs: dict[tuple[str, str], str] = {}

    # --- what is installed ---------------------------------------------------------------

    def _tool(self, command: str) -> str | None:
        return shutil.which(command)

    def _discover(self) -> tuple[dict[tuple[str, str], str], list[str]]:
        with self._lock:
            if time.monotonic() - self._discovered_at > DISCOVERY_SECONDS:
                self._pairs = self._apertium_modes()
                self._discovered_at = time.monotonic()
            pairs = self._pairs
        return pairs, self.reader.languages()

    def _apertium_modes(self) -> dict[tuple[str, str], str]:
        apertium = self._tool(self.apertium_command)
        if apertium is None:
            return {}
        listing = self._run([apertium, "-l"], stdin=b"", check=False)
        return apertium_pairs(listing.split())

    def supported_pairs(self) -> list[tuple[str, str]]:
        pairs, _ = self._discover()
        return sorted(pairs)

    def capabilities(self) -> EngineCapabilities:
        """The installed Apertium pairs into the target languages, and the languages of the
        installed Tesseract traineddata (ISO 639-1; scripts and unknown codes left out)."""
        pairs, ocr = self._discover()
        readable = dict.fromkeys(code for name in ocr if (code := ISO_639_1.get(name)) is not None)
        return pairs_capabilities(engine=self.name, pairs=pairs, ocr_languages=tuple(readable))

    def _model(self) -> str:
        return "tesseract+apertium"

    # --- the interface ---------------------------------------------------------------------

    def status(self) -> EngineStatus:
        missing = [
            f"{command} ({package})"
            for command, package in (
                (self.tesseract_command, "tesseract-ocr"),
                (self.apertium_command, "apertium"),
            )
            if self._tool(command) is None
        ]
        if missing:
            return self._status(ModelState.UNCONFIGURED, "Not installed: " + ", ".join(missing) + ".")
        pairs, ocr = self._discover()
        if not pairs:
            return self._status(
                ModelState.UNCONFIGURED, "No Apertium language pair is installed (apt-get install apertium-eng-spa)."
            )
        listed = ", ".join(f"{source}->{target}" for source, target in sorted(pairs))
        return self._status(ModelState.READY, f"Apertium pairs: {listed}; OCR languages: {', '.join(ocr) or 'none'}.")

    def _status(self, state: str, detail: str) -> EngineStatus:
        return EngineStatus(state=state, engine=self.name, model=self._model(), detail=detail)

    def check_supported(self, *, source_language: str | None, target_language: str) -> None:
        self.capabilities().check(source_language=source_language, target_language=target_language)

    def translate(self, page: PageInput) -> PageResult:
        pairs, _ = self._discover()
        model = "apertium"
        markdown = page.structured  # a text layer read with its layout, or an OCR transcription
        reading = None
        if page.has_text or page.image is None:
            source_text = page.text
        else:
            markdown = True
            reading = self._ocr(page.image(), page.source_language or page.book_language)
            source_text = reading.markdown
            model = "tesseract+apertium"
        source = page_language(page, source_text)
        if not source_text.strip() or source == page.target_language:
            translation = source_text.strip()
        else:
            if source is None:
                raise EngineError(
                    "The page's language could not be told; set the book's source language.", retryable=False
                )
            mode = pairs.get((source, page.target_language))
            if mode is None:
                raise PageLanguageUnsupported(
                    engine=self.name, source_language=source, target_language=page.target_language
                )
            translation = (
                self._apertium_markdown(mode, source_text, page.glossary, language=source)
                if markdown
                else self._apertium(mode, source_text, page.glossary)
            )
            model = f"{model} {mode}"
        return PageResult.estimated(
            translation=translation,
            source_text=source_text,
            detected_source_language=source,
            engine=self.name,
            model=model,
            prompt_tokens=tokens_estimate(source_text),
            warnings=reading.warnings if reading else (),
            layout=reading.layout if reading else None,
        )

    # --- the programs ------------------------------------------------------------------------

    def reads_at_intake(self) -> bool:
        """Whether Tesseract and a traineddata are installed to read pages at intake."""
        return bool(self.reader.languages()) and self.reader.program() is not None

    def page_read(self, image: bytes, *, language: str | None) -> PageReading | None:
        """The page image read with Tesseract at intake (its layout and warnings)."""
        reading = self._ocr(image, language)
        return PageReading(layout=reading.layout, warnings=reading.warnings)

    def _ocr(self, image: bytes, language: str | None) -> OcrReading:
        return self.reader.read(image, language=language)

    def _apertium(self, mode: str, text: str, glossary: Mapping[str, str]) -> str:
        apertium = self._tool(self.apertium_command)
        if apertium is None:
            raise EngineUnavailable("Apertium is not installed (apt-get install apertium): pages wait.")
        protected, placeholders = _glossary_protect(text, glossary)
        translated = self._run([apertium, "-u", "-f", "txt", mode], stdin=protected.encode())
        for placeholder, replacement in placeholders.items():
            translated = translated.replace(placeholder, replacement)
        return translated.strip()

    def _apertium_markdown(self, mode: str, markdown: str, glossary: Mapping[str, str], *, language: str) -> str:
        """A page's Markdown with only its prose translated (`markup.segments_split`, the
        names its code uses kept in its prose too, told from the words of its `language`):
        the texts go to Apertium in one call, a blank line apart (Apertium keeps line
        breaks), or one by one if the call's answer does not split back into as many."""
        segments = segments_split(markdown, words=word_list(language))
        if not segments.texts:
            return markdown
        translated = re.split(r"\n[ \t]*\n", self._apertium(mode, "\n\n".join(segments.texts), glossary))
        if len(translated) != len(segments.texts):
            translated = [self._apertium(mode, text, glossary) for text in segments.texts]
        return segments_join(segments, translated)

    def _run(self, command: list[str], *, stdin: bytes, check: bool = True) -> str:
        return program_run(command, stdin=stdin, timeout_seconds=self.timeout_seconds, check=check)


def _glossary_protect(text: str, glossary: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The text with each glossary term (whole words, longest first) replaced by a
    placeholder, and placeholder -> the term's translation."""
    placeholders: dict[str, str] = {}
    for number, term in enumerate(sorted(glossary, key=len, reverse=True)):
        if not term.strip():
            continue
        placeholder = f"⟦{number}⟧"
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)")
        text, count = pattern.subn(placeholder, text)
        if count:
            placeholders[placeholder] = glossary[term]
    return text, placeholders
