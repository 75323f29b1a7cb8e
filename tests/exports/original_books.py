"""A long book for the original-layout Pdf's memory test and benchmark: the Valgrind manual
(a Debian package's PDF, 397 pages) repeated to any number of pages, each page's layout
and body as normalize stores them, translated by spelling every word backwards (as the
OpenAI stand-in translates). Read page by page from files, as `book_for` reads the
database, so that the book itself takes no memory."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import pikepdf

from bookstructure.book import pages_structure
from bookstructure.words import word_list
from exports.book import BookSource, ExportBook, ExportPage, PageLayout
from projects.intake.layout import pdf_layouts
from tests.exports.books import sample_book
from tests.support.corpus import debian_pdf, paper_pdf, pdf_window
from tests.support.openai_server import fake_translation

LAYOUT_CHUNK = 50  # pages poppler reads at a time


def original_folder(pages: int) -> Path:
    """The book of `pages` pages, made once into a temporary folder: `book.pdf`, the manual
    repeated, and `pages.jsonl`, a row per page (its layout, furniture, carried lines and
    translation). The manual's layouts are read once and repeated with it."""
    folder = Path(tempfile.gettempdir()) / f"bt-original-book-{pages}"
    if (folder / "pages.jsonl").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    manual_path = debian_pdf("valgrind")
    with pikepdf.open(manual_path) as manual, pikepdf.new() as book:
        manual_pages = len(manual.pages)
        while len(book.pages) < pages:
            for page in manual.pages[: pages - len(book.pages)]:
                book.pages.append(page)
        book.save(folder / "book.pdf")
    read = min(pages, manual_pages)
    manual_layouts: list[dict[str, Any]] = []
    for first in range(1, read + 1, LAYOUT_CHUNK):
        manual_layouts += pdf_layouts(manual_path, first=first, last=min(read, first + LAYOUT_CHUNK - 1))
    layouts = [manual_layouts[index % manual_pages] for index in range(pages)]
    bodies = pages_structure(layouts, first_index=1, start=1, ready_through=pages, carried_in={}, words=word_list("en"))
    carried = {each.page: each for body in bodies for each in body.carries_into}
    with (folder / "pages.part").open("w") as out:
        for body, layout in zip(bodies, layouts, strict=False):
            taken = carried.get(body.index)
            row = {
                "index": body.index,
                "layout": layout,
                "furniture": list(body.furniture),
                "carried_from": taken.origin if taken else None,
                "carried_lines": list(taken.lines) if taken else [],
                "translation": fake_translation(body.markdown),
            }
            out.write(json.dumps(row) + "\n")
    (folder / "pages.part").replace(folder / "pages.jsonl")
    return folder


def original_book(pages: int) -> ExportBook:
    """The book of `original_folder(pages)`, its pages and layouts read from the file line
    by line as the renderer asks."""
    folder = original_folder(pages)
    rows = folder / "pages.jsonl"
    offsets = []
    with rows.open("rb") as lines:
        while True:
            offsets.append(lines.tell())
            if not lines.readline():
                offsets.pop()
                break

    def read(first: int, last: int) -> Iterator[dict[str, Any]]:
        with rows.open("rb") as lines:
            for index in range(max(first, 1), min(last, len(offsets)) + 1):
                lines.seek(offsets[index - 1])
                yield json.loads(lines.readline())

    def page_iter() -> Iterator[ExportPage]:
        for row in read(1, len(offsets)):
            translation = row["translation"]
            yield ExportPage(
                index=row["index"],
                translated=bool(translation.strip()),
                translation=translation,
                source_text="",
                failed=False,
                failure_reason="",
                image_key="",
                blank=not translation.strip(),
            )

    def layouts(first: int, last: int) -> list[PageLayout]:
        return [
            PageLayout(
                index=row["index"],
                layout=row["layout"],
                carried_from=row["carried_from"],
                carried_lines=tuple((block, line) for block, line in row["carried_lines"]),
                furniture=tuple(row["furniture"]),
            )
            for row in read(first, last)
        ]

    return replace(
        sample_book("en", pages=2),
        page_count=len(offsets),
        pages=page_iter,
        source=BookSource(pdf=lambda: nullcontext(folder / "book.pdf"), layouts=layouts),
    )


def paper_book(name: str, *, pages: int, folder: Path) -> ExportBook:
    """The first `pages` pages of a sample paper (tests/support/corpus.py PAPERS) as a book
    normalize would store, translated by the stand-in (every word backwards), its source
    PDF `folder / "paper.pdf"`."""
    source = pdf_window(paper_pdf(name), 1, pages, folder / "paper.pdf")
    layouts = pdf_layouts(source, first=1, last=pages)
    bodies = pages_structure(layouts, first_index=1, start=1, ready_through=pages, carried_in={}, words=word_list("en"))
    carried = {each.page: each for body in bodies for each in body.carries_into}
    stored = [
        (
            ExportPage(
                index=body.index,
                translated=True,
                translation=fake_translation(body.markdown),
                source_text="",
                failed=False,
                failure_reason="",
                image_key="",
                blank=not body.markdown.strip(),
            ),
            PageLayout(
                index=body.index,
                layout=layout,
                carried_from=carried[body.index].origin if body.index in carried else None,
                carried_lines=carried[body.index].lines if body.index in carried else (),
                furniture=body.furniture,
            ),
        )
        for body, layout in zip(bodies, layouts, strict=True)
    ]
    return replace(
        sample_book("en", pages=2),
        page_count=pages,
        pages=lambda: iter([page for page, _ in stored]),
        source=BookSource(
            pdf=lambda: nullcontext(source),
            layouts=lambda first, last: [layout for _, layout in stored if first <= layout.index <= last],
        ),
    )
