"""The book as every renderer sees it: metadata, options, and its pages streamed in order.

Renderers never touch the ORM: `book_for(project, options)` builds an `ExportBook` whose
`pages()` yields `ExportPage`s from the database in chunks, so a 1,000-page book is never
held in memory at once. A page's translation is Markdown (paragraphs, headings, lists,
emphasis); `exports.blocks.blocks_of` turns it into blocks a renderer can lay out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from exports.labels import Labels, labels_for

RTL_LANGUAGES = frozenset({"ar", "he", "fa", "ur", "yi"})
PAGE_CHUNK = 200
REFLOW = "reflow"
ORIGINAL = "original"
LAYOUTS = (REFLOW, ORIGINAL)


@dataclass(frozen=True)
class ExportOptions:
    """What the caller asked for. `bilingual`: source and translation together (Html,
    Epub, Docx, Pdf; side by side in Html and Pdf, interleaved paragraph by paragraph in
    Epub and Docx); `page_markers`: a visible marker at each page start ("— 12 —");
    `partial`: a book still in progress is exported with the pages translated so far;
    `pages_per_chapter`: when the book has no headings to cut chapters at."""

    bilingual: bool = False
    page_markers: bool = False
    partial: bool = False
    pages_per_chapter: int = 20
    # Pdf only: "reflow" (the book typeset anew) or "original" (each page of the source PDF
    # with its text replaced by the translation; `bilingual`: each source page, then its
    # translated page). See docs/exports.md, "The original layout".
    layout: str = REFLOW

    @property
    def original(self) -> bool:
        return self.layout == ORIGINAL

    @classmethod
    def from_key(cls, key: str) -> ExportOptions:
        """The options a `key()` text stands for."""
        values = dict(part.split("=", 1) for part in key.split(";") if "=" in part)
        return cls(
            bilingual=values.get("bilingual") == "1",
            page_markers=values.get("markers") == "1",
            partial=values.get("partial") == "1",
            pages_per_chapter=int(values.get("chapter", "20")),
            layout=values.get("layout", REFLOW),
        )

    def key(self) -> str:
        """A stable text form (part of an export's identity)."""
        return (
            f"bilingual={int(self.bilingual)};markers={int(self.page_markers)};"
            f"partial={int(self.partial)};chapter={self.pages_per_chapter}"
        ) + (f";layout={self.layout}" if self.layout != REFLOW else "")  # the reflowed keys as they were


@dataclass(frozen=True)
class ExportPage:
    index: int  # 1-based page number in the book
    translated: bool  # Approved with a translation
    translation: str  # Markdown; "" when not translated
    source_text: str  # the text layer or the engine's transcription; may be ""
    failed: bool  # the page failed every attempt (or is still failed): marked visibly, never dropped
    failure_reason: str  # the engine's own words (English, for operators: the manifest shows them)
    image_key: str  # storage key of the page image (PNG)
    blank: bool = False  # translated, with nothing on it to translate: an empty page, shown as one
    failure_code: str = ""  # why it failed (Page.failure_code): the notice says it in the book's language
    review_flags: tuple[str, ...] = ()  # why its translation needs a look though Approved (an OCR reading)

    @property
    def kept_source(self) -> str:
        """The original text a failed page keeps in the book, after its notice ("" for any
        other page): nothing the book had is silently lost."""
        return self.source_text if self.failed and self.source_text.strip() else ""


@dataclass(frozen=True)
class PageLayout:
    """A page's stored layout (docs/book-structure.md) and the lines at its top that an
    earlier page's paragraph took (`[block, line]`), for the original-layout Pdf."""

    index: int
    layout: Mapping[str, Any]
    carried_from: int | None
    carried_lines: tuple[tuple[int, int], ...]
    furniture: tuple[Mapping[str, str], ...] = ()  # as normalize decided it: [{kind, text}]


@dataclass(frozen=True)
class BookSource:
    """What the original-layout Pdf reads besides the pages: `pdf()` gives the source PDF's
    path for as long as its block runs (None: the book is not a PDF: images, a zip);
    `layouts(first, last)` the stored layouts of the included pages first..last;
    `page_image(image_key)` a page image's bytes (a scanned page's background), None where
    the book has none to give."""

    pdf: Callable[[], AbstractContextManager[Path | None]]
    layouts: Callable[[int, int], list[PageLayout]]
    page_image: Callable[[str], bytes] | None = None


@dataclass(frozen=True)
class ExportBook:
    identifier: str  # the project id (EPUB identifier, PDF metadata)
    title: str
    language: str  # target language code (ISO 639-1)
    source_language: str | None  # the project's override, or the most common detected language
    created_at: datetime
    page_count: int  # included pages
    status: str  # the project's status (Complete, CompletedWithErrors, or in progress when partial)
    pages: Callable[[], Iterator[ExportPage]] = field(repr=False)  # a fresh iterator each call
    # The heading level that starts a chapter at a page's top: 1 in a book with chapters set
    # as level-1 headings (two pages or more start with one), where a level-2 heading at a
    # page's top is a section; else 2 (a book titled `#` once, its chapters `##`).
    chapter_level: int = 2
    source: BookSource | None = field(default=None, repr=False)  # None: only the pages (books built in memory)

    @property
    def rtl(self) -> bool:
        return self.language in RTL_LANGUAGES

    @property
    def source_rtl(self) -> bool:
        return (self.source_language or "") in RTL_LANGUAGES

    @property
    def labels(self) -> Labels:
        """The words the exports write themselves, in the book's language (exports.labels)."""
        return labels_for(self.language)


def page_notice(page: ExportPage, labels: Labels, *, source_follows: bool = True) -> str:
    """The visible marker of a page without a translation (never silently dropped), in the
    book's language: a failed page says why (from its failure code) and that its original
    text follows when it has one (`kept_source`) and it does follow (`source_follows`; in a
    bilingual file the original stands beside the notice, in its own column or paragraph)."""
    if not page.failed:
        return f"[{labels.pending.format(index=page.index)}]"
    text = labels.failed.format(index=page.index, reason=labels.reason(page.failure_code))
    if page.kept_source and source_follows:
        text += labels.sentence_gap + labels.kept
    return f"[{text}]"


def page_shows_notice(page: ExportPage) -> bool:
    """A page without a translation that is not simply blank: it carries a notice."""
    return not page.translated and not page.blank
