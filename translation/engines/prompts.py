"""The chat prompts sent to a vision-language model, and the parsing of its replies.

The model answers in tagged sections (<source_language>, <transcription> for image pages,
<translation>) rather than JSON: a page of Markdown survives tags unharmed, while models
often break JSON string escaping on long text. The phrases of the prompt are also what the
completeness check looks for in a translation (`PROMPT_PHRASES`): an instruction echoed
back into the book is a leak.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from translation.engines.base import EngineError, PageInput
from translation.languages import language_name

SYSTEM_TEXT = """You are a professional literary translator. Translate the book page the user sends into \
{target_name} (ISO 639-1 code: {target}).

Rules:
- Translate faithfully and completely: every sentence, heading, list item, footnote and caption, in \
order. Leave nothing out, summarise nothing, add nothing.
- Keep the structure as Markdown: paragraphs separated by a blank line, headings with #, lists with - \
or 1., emphasis with * and **, block quotes with >, tables as Markdown tables.
- Code is never translated: copy code blocks (between ``` fences) and inline code (between backticks) \
exactly, character for character, and keep URLs, file paths, command-line options and identifiers as \
they are.
- Keep footnotes as Markdown footnotes: each reference such as [^4] stays in its place in the text, \
and each note stays a definition at the end of the page starting with its label ([^4]: ...), its text \
translated. Never translate, renumber, remove or add a label.
- Use the glossary's translations exactly, every time the term appears.
- The end of the previous page is given for continuity only: do not translate it or repeat it.
- Do not add notes, explanations, greetings or commentary.

Answer in exactly this form and nothing else:
<source_language>the ISO 639-1 code of the page's language</source_language>
{transcription_form}<translation>
the translated page, in Markdown
</translation>"""

TRANSCRIPTION_FORM = """<transcription>
all the text of the page image, in reading order, as Markdown
</transcription>
"""

IMAGE_TEXT = (
    "The page comes as an image. First transcribe all of its text in reading order (leave out only "
    "running headers and page numbers), then translate the transcription. For a page with no text, "
    "answer with empty sections."
)

GLOSSARY_HEADING = "Glossary (use these translations exactly):"
PREVIOUS_HEADING = (
    "End of the previous page (its translation, or its source text when it is translated at the same time), "
    "for continuity only:"
)
PAGE_HEADING = "The page to translate:"

# Phrases of the prompts that never belong in a translation (the completeness check).
PROMPT_PHRASES = (
    "You are a professional literary translator",
    "Translate faithfully and completely",
    "Leave nothing out, summarise nothing",
    "for continuity only",
    "Answer in exactly this form",
    "Use the glossary's translations exactly",
    GLOSSARY_HEADING,
    PAGE_HEADING,
    "the translated page, in Markdown",
    "all the text of the page image",
    "<translation>",
    "</translation>",
    "<transcription>",
    "</transcription>",
    "<source_language>",
    "<previous>",
    "</previous>",
    "<page>",
    "</page>",
)


def chat_messages(page: PageInput, *, image_png: bytes | None) -> list[dict[str, Any]]:
    """The system and user messages for one page; the image (PNG) when the page has no text."""
    system = SYSTEM_TEXT.format(
        target_name=language_name(page.target_language),
        target=page.target_language,
        transcription_form=TRANSCRIPTION_FORM if image_png is not None else "",
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": _user_content(page, image_png)},
    ]


def _user_content(page: PageInput, image_png: bytes | None) -> str | list[dict[str, Any]]:
    parts: list[str] = []
    if page.source_language:
        parts.append(f"The page is in {language_name(page.source_language)} ({page.source_language}).")
    if page.glossary:
        parts.append(GLOSSARY_HEADING + "\n" + _glossary_lines(page.glossary))
    if page.previous_context.strip():
        parts.append(f"{PREVIOUS_HEADING}\n<previous>\n{page.previous_context.strip()}\n</previous>")
    if image_png is None:
        parts.append(f"{PAGE_HEADING}\n<page>\n{page.text.strip()}\n</page>")
        return "\n\n".join(parts)
    parts.append(IMAGE_TEXT)
    data_url = "data:image/png;base64," + base64.b64encode(image_png).decode("ascii")
    return [
        {"type": "text", "text": "\n\n".join(parts)},
        {"type": "image_url", "image_url": {"url": data_url}},
    ]


def _glossary_lines(glossary: Mapping[str, str]) -> str:
    return "\n".join(f"- {term} -> {translation}" for term, translation in sorted(glossary.items()))


@dataclass(frozen=True)
class Reply:
    translation: str
    transcription: str | None
    source_language: str | None


_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"\A```[a-zA-Z]*\n(.*)\n```\Z", re.DOTALL)
_LANGUAGE_CODE = re.compile(r"\A[a-z]{2}\Z")


def _section(content: str, tag: str) -> str | None:
    """The text of <tag>...</tag>; an unclosed last section runs to the end of the reply."""
    match = re.search(rf"<{tag}>(.*?)(?:</{tag}>|\Z)", content, re.DOTALL | re.IGNORECASE)
    return None if match is None else _unfenced(match.group(1).strip())


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text


def reply_parse(content: str, *, image_page: bool) -> Reply:
    """The model's reply as its sections. A text page's reply without any tags is taken as
    the translation (the completeness check still applies); an image page's must have them."""
    content = _THINKING.sub("", content).strip()
    language = _section(content, "source_language")
    language = language.lower() if language else None
    if language is not None and not _LANGUAGE_CODE.match(language):
        language = None
    translation = _section(content, "translation")
    transcription = _section(content, "transcription") if image_page else None
    if translation is None:
        if image_page or re.search(r"</?(?:transcription|source_language)>", content):
            raise EngineError("The model's reply was not in the form asked for (no <translation> section).")
        translation = _unfenced(content)
    if image_page and transcription is None:
        raise EngineError("The model's reply to an image page had no <transcription> section.")
    return Reply(translation=translation, transcription=transcription, source_language=language)
