"""What intake knows about a source file once it has been checked (see sniffing.py)."""

from __future__ import annotations

from dataclasses import dataclass

from projects.models import SourceKind


@dataclass(frozen=True)
class SourceInspection:
    """The verdict on a source: its kind and what an estimate needs, read without OCR.

    page_count: pages the book will have (PDF pages, images in a zip or folder, or 1).
    word_estimate: words of the PDF text layer where it has one, else page_count times
    WORDS_PER_PAGE_ESTIMATE.
    entries: for a zip or a folder, the image entries in page order (natural sort).
    """

    kind: SourceKind
    page_count: int
    word_estimate: int
    has_text_layer: bool
    entries: tuple[str, ...] = ()
