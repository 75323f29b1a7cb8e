"""A big book normalizes in the footprint of a small one: poppler reads each chunk's pages
from a file of those pages alone (it loads every page up to the last one it is asked for,
so reading page 4,000 of the book itself cost the 3,999 before it), the pages come out the
same as when read from the whole file, and the book's page rows are never all in memory.

Poppler's tools are real; a stand-in on PATH (a shell script named like each tool) writes
down the arguments of every call and runs the real tool with them.
"""

from __future__ import annotations

import os
import shutil
import stat
import tracemalloc
from pathlib import Path

import pikepdf
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects.intake import rendering
from projects.intake.rendering import pages_render
from projects.models import NormalizeState, ProjectStatus, SourceKind
from projects.services.normalize import PAGE_ROWS_BATCH, normalize_run, project_normalize
from tests.projects.test_normalize import project_with_source, text_pdf

pytestmark = pytest.mark.django_db

TOOLS = ("pdfinfo", "pdftoppm", "pdftotext", "pdftohtml")


@pytest.fixture
def poppler_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every poppler call's arguments, a line each, in the returned file."""
    folder = tmp_path / "tools"
    folder.mkdir()
    calls = tmp_path / "calls.txt"
    for tool in TOOLS:
        real = shutil.which(tool)
        assert real is not None, f"{tool} is not installed"
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{calls}"\nexec "{real}" "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return calls


def page_ranges(calls: Path) -> list[tuple[str, int, int]]:
    """(tool, first, last) of every call that names a page range."""
    ranges = []
    for line in calls.read_text().splitlines():
        words = line.split()
        if "-f" in words and "-l" in words:
            ranges.append((words[0], int(words[words.index("-f") + 1]), int(words[words.index("-l") + 1])))
    return ranges


def test_every_tool_reads_a_chunks_pages_from_a_file_of_that_chunk(settings, local_storage, poppler_calls):
    settings.NORMALIZE_INLINE_MAX_PAGES = 30
    settings.NORMALIZE_CHUNK_PAGES = 8
    project = project_with_source(text_pdf(30), file_name="book.pdf", kind=SourceKind.PDF, pages=30)

    result = project_normalize(project=project)

    assert (result.status, result.normalize_pages_done) == (ProjectStatus.CALIBRATING, 30)
    assert [page.text_layer.split()[:2] for page in result.pages.order_by("index")] == [
        ["Page", str(n)] for n in range(1, 31)
    ]
    ranges = page_ranges(poppler_calls)
    assert {tool for tool, _, _ in ranges} == set(TOOLS)
    # Page 30 of the book is page 6 of its chunk's file (25-30): no call reaches past page 8.
    assert max(last for _, _, last in ranges) <= 8, ranges


def test_a_chunk_read_from_its_own_file_gives_the_pages_the_whole_file_gives(settings, monkeypatch, tmp_path):
    settings.NORMALIZE_CHUNK_PAGES = 3
    path = tmp_path / "book.pdf"
    path.write_bytes(text_pdf(7, size=(300, 400)))

    def pages() -> list[tuple[int, int, int, str, dict, bytes]]:
        rendered = pages_render(path=path, kind=SourceKind.PDF, start_index=2)
        return [
            (page.index, page.width, page.height, page.text, page.layout, page.png_path.read_bytes())
            for page in rendered
        ]

    chunked = pages()
    monkeypatch.setattr(rendering, "_pdf_pages_extract", lambda *args, **kwargs: False)
    whole = pages()

    assert [page[0] for page in chunked] == [2, 3, 4, 5, 6, 7]
    assert chunked == whole


def test_a_pdf_with_form_fields_is_read_from_its_whole_file(settings, local_storage, poppler_calls, tmp_path):
    settings.NORMALIZE_INLINE_MAX_PAGES = 12
    settings.NORMALIZE_CHUNK_PAGES = 4
    plain = tmp_path / "plain.pdf"
    plain.write_bytes(text_pdf(12))
    with pikepdf.open(plain) as book:
        book.Root.AcroForm = pikepdf.Dictionary(Fields=pikepdf.Array())
        book.save(tmp_path / "form.pdf")
    project = project_with_source(
        (tmp_path / "form.pdf").read_bytes(), file_name="form.pdf", kind=SourceKind.PDF, pages=12
    )

    result = project_normalize(project=project)

    assert (result.status, result.normalize_pages_done) == (ProjectStatus.CALIBRATING, 12)
    assert ("pdftoppm", 12) in [(tool, last) for tool, _, last in page_ranges(poppler_calls)]


def test_a_big_books_page_rows_are_made_a_batch_at_a_time(settings, django_capture_on_commit_callbacks):
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    pages = 3 * PAGE_ROWS_BATCH
    project = project_with_source(text_pdf(1), file_name="long.pdf", kind=SourceKind.PDF, pages=pages)

    tracemalloc.start()
    try:
        with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks():
            queued = project_normalize(project=project)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert queued.normalize_state == NormalizeState.QUEUED
    assert queued.pages.count() == pages
    inserts = [query for query in queries.captured_queries if query["sql"].startswith('INSERT INTO "projects_page"')]
    assert len(inserts) == 3
    # A batch of unsaved rows is about 1 MiB; the book's 1,500 at once were over 3.
    assert peak < 2.5 * 2**20, peak


def test_a_run_after_the_first_chunk_starts_at_its_page(settings, local_storage, poppler_calls):
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    settings.NORMALIZE_CHUNK_PAGES = 4
    project = project_with_source(text_pdf(10), file_name="long.pdf", kind=SourceKind.PDF, pages=10)
    project_normalize(project=project)

    normalize_run(project_id=project.pk, page_limit=5)
    normalize_run(project_id=project.pk, page_limit=5)

    project.refresh_from_db()
    assert (project.normalize_state, project.normalize_pages_done) == (NormalizeState.DONE, 10)
    assert [page.text_layer.split()[1] for page in project.pages.order_by("index")] == [str(n) for n in range(1, 11)]
    assert max(last for _, _, last in page_ranges(poppler_calls)) <= 4
