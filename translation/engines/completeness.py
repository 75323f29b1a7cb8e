"""The completeness check every engine result passes before its page is Approved, so that
no page is silently left untranslated. A result fails, with the reason, when:

1. the translation is empty while the source has text;
2. the source came back (nearly) unchanged although the languages differ (the echo
   engine, whose output is the marked source by design, is exempt from this rule only);
3. it carries text of the prompt (an instruction, a section tag, the end of the previous
   page given for continuity) or the model's own commentary ("Here is the translation"),
   each only when the source does not have it itself;
4. its length, scaled for how dense each language's writing is, is implausible next to the
   source's: under COMPLETENESS_MIN_LENGTH_RATIO (a page cut short) or over
   COMPLETENESS_MAX_LENGTH_RATIO (commentary, repetition), for sources of at least
   COMPLETENESS_MIN_SOURCE_CHARS characters.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from django.conf import settings

from translation.engines.base import PageInput, PageResult
from translation.engines.echo import NAME as ECHO_ENGINE
from translation.engines.markup import prose_of
from translation.engines.prompts import PROMPT_PHRASES
from translation.languages import DENSITY, language_detect

SAME_TEXT_SIMILARITY = 0.95  # word-sequence similarity above which a "translation" is the source
SAME_TEXT_MIN_WORDS = 8  # shorter sources (a title, a number) may well read the same translated
CONTEXT_ECHO_CHARS = 80  # this much of the previous page's end, repeated, is a leak
# What models say around a translation instead of the translation (checked in English only).
COMMENTARY_PHRASES = (
    "here is the translation",
    "here's the translation",
    "here is the translated",
    "here's the translated",
    "as an ai language model",
    "i cannot translate",
    "i can't translate",
    "i'm unable to translate",
    "translator's note",
    "translation notes:",
)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")


def completeness_problem(page: PageInput, result: PageResult) -> str | None:
    """None when the result is a complete translation of the page, else why it is not."""
    source = result.source_text if result.source_text.strip() else page.text
    translation = result.translation
    if not translation.strip():
        if source.strip():
            return "The translation is empty although the page has text."
        return None
    if not source.strip():
        return _leak(page, source, translation)
    source_language = page.source_language or result.detected_source_language or language_detect(source)
    if page.structured:
        # Code and literals are kept verbatim by design: the prose is what must be translated.
        source, translation = prose_of(source), prose_of(translation)
        if not source.strip():
            return _leak(page, source, translation)
    # A page already in the target language (a quotation, an appendix) may come back as it is.
    if (
        result.engine != ECHO_ENGINE
        and source_language != page.target_language
        and _same_text(source, translation)
        and language_detect(source) != page.target_language
    ):
        return (
            f"The source text came back untranslated ({source_language or 'unknown language'} -> "
            f"{page.target_language})."
        )
    return _leak(page, source, translation) or _length_problem(page, source, source_language, translation)


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _same_text(source: str, translation: str) -> bool:
    source_words, translated_words = _words(source), _words(translation)
    if len(source_words) < SAME_TEXT_MIN_WORDS:
        return False
    matcher = SequenceMatcher(None, source_words, translated_words, autojunk=False)
    return matcher.ratio() >= SAME_TEXT_SIMILARITY


def _normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower().replace("\u2019", "'")


def _leak(page: PageInput, source: str, translation: str) -> str | None:
    source_flat, translation_flat = _normalised(source), _normalised(translation)
    for phrase in PROMPT_PHRASES:
        flat = _normalised(phrase)
        if flat in translation_flat and flat not in source_flat:
            return f"The translation contains text of the prompt ({phrase!r})."
    for phrase in COMMENTARY_PHRASES:
        if phrase in translation_flat and phrase not in source_flat:
            return f"The translation carries the model's own commentary ({phrase!r})."
    context = _normalised(page.previous_context)[-CONTEXT_ECHO_CHARS:]
    if len(context) >= CONTEXT_ECHO_CHARS and context in translation_flat and context not in source_flat:
        return "The translation repeats the end of the previous page, given only for continuity."
    return None


def _length_problem(page: PageInput, source: str, source_language: str | None, translation: str) -> str | None:
    source_chars = len(_SPACE.sub("", source))
    if source_chars < settings.COMPLETENESS_MIN_SOURCE_CHARS:
        return None
    source_units = source_chars / DENSITY.get(source_language or "", 1.0)
    translated_units = len(_SPACE.sub("", translation)) / DENSITY.get(page.target_language, 1.0)
    ratio = translated_units / source_units
    if ratio < settings.COMPLETENESS_MIN_LENGTH_RATIO:
        return f"The translation is too short for its source (length ratio {ratio:.2f}): part of the page is missing."
    if ratio > settings.COMPLETENESS_MAX_LENGTH_RATIO:
        return f"The translation is too long for its source (length ratio {ratio:.2f}): it adds text of its own."
    return None
