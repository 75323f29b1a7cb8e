"""A 1,000-page book exports in every format without memory growing with the book (Pdf:
only by what reportlab keeps of each finished sheet, a few KB).

Each format renders 1,000 pages of about 1,800 characters in a fresh process, after a
two-page book (so fonts and libraries are loaded), and the process's real peak (VmHWM:
Python, libxml2, reportlab, zlib) may grow by at most a few MiB over its size before the
render. Not getrusage's ru_maxrss: Linux carries that over exec, so the child of a test
process bigger than it reported the test process's size before and after, and no render
could break the bound. Keeping the whole book (its text alone is 1.7 MiB; python-docx's tree of it was 23
MiB, the Archive that held it 31 MiB) breaks the bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.exports.original_books import original_folder
from tests.support.corpus import debian_pdf

PAGES = 1000
# MiB a render may add to the process (docs/performance.md, "Exports"; measured by VmHWM on
# 2026-11-26): Markdown, PlainText and Html add nothing measurable, Epub about 3 MiB, Docx
# about 8 (python-docx's package and libxml2), Pdf about 6 for these 1,000 pages (what
# reportlab keeps of every finished sheet, about 3-5 KB); the Archive (about 13) renders the
# six formats one after another and zips them. Keeping the whole book breaks each bound.
BOUND_MIB = {"Markdown": 8, "PlainText": 8, "Html": 8, "Epub": 8, "Docx": 12, "Pdf": 8, "Archive": 20}
# The original-layout Pdf (tests.exports.original_books: the Valgrind manual repeated to 1,000
# pages), after a 30-page book (its fonts loaded: the manual's bold and monospace faces come
# by page 9), adds about 17 MiB, what qpdf keeps of the whole file it writes (docs/exports.md,
# "Memory and speed"); the pages' changes are saved and dropped every 100 pages. Holding
# them all added 40 MiB.
ORIGINAL_BOUND_MIB = 24
ORIGINAL_WARM_PAGES = 30
ORIGINAL = "original"

_CHILD = """
import json, sys, tempfile
import django
django.setup()
from exports.book import ExportOptions
from exports.renderers import renderer_for
from exports.services import archive_write
from projects.models import Project, ProjectStatus
from tests.exports.books import sample_book
from tests.exports.original_books import original_book

export_format, pages, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

def render(pages):
    book = sample_book("en", pages=pages, dense=True, failed=frozenset({2}))
    options = ExportOptions(page_markers=True)
    with tempfile.TemporaryFile() as out:
        if export_format == "original":
            renderer_for("Pdf").render(original_book(pages), ExportOptions(layout="original"), out)
        elif export_format == "Archive":
            project = Project(name=book.title, status=ProjectStatus.COMPLETED_WITH_ERRORS)
            archive_write(project=project, book=book, options=options, out=out)
        else:
            renderer_for(export_format).render(book, options, out)
        return out.tell()

render(warm)
before = peak_kib()
size = render(pages)
peak = peak_kib()
print(json.dumps({"growth_mib": (peak - before) / 1024, "bytes": size}))
"""


def growth_rendering(export_format: str, pages: int) -> dict[str, float]:
    """In a fresh process: MiB the render of `pages` pages adds to the process's peak, and
    the file's size."""
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            export_format,
            str(pages),
            str(ORIGINAL_WARM_PAGES if export_format == ORIGINAL else 2),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=os.environ.copy(),
        cwd=Path(__file__).resolve().parents[2],
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.parametrize("export_format", list(BOUND_MIB))
def test_a_thousand_page_book_renders_without_memory_growing_with_it(export_format: str) -> None:
    figures = growth_rendering(export_format, PAGES)
    assert figures["bytes"] > 100_000  # the whole book was written
    assert figures["growth_mib"] <= BOUND_MIB[export_format], figures


def test_a_thousand_page_original_layout_pdf_renders_in_a_bounded_footprint() -> None:
    try:
        debian_pdf("valgrind")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    # The books are made (the manual's layouts read, their structure decided) before the
    # render is measured: making them is the test's setup, not the renderer's footprint.
    original_folder(ORIGINAL_WARM_PAGES)
    original_folder(PAGES)
    figures = growth_rendering(ORIGINAL, PAGES)
    assert figures["bytes"] > 1_000_000  # the whole book was written
    assert figures["growth_mib"] <= ORIGINAL_BOUND_MIB, figures
