"""Exports: seconds per 1,000 pages and peak memory, for each format and the Archive.

The original-layout Pdf is measured on its own book: the Valgrind manual repeated to
1,000 pages, each page's layout and body as normalize stores them, translated by spelling
every word backwards (`tests.exports.original_books`).

The book: 1,000 pages of the renderers' English sample (a chapter heading, a paragraph with
emphasis, a list and a paragraph) followed by six paragraphs of varied prose, about 1,800
characters a page (`tests.exports.books.sample_book(dense=True)`); for the Archive each
page also has a 1240x1754 PNG scan (about 40 KB) in local storage.

Each format is rendered in a fresh process (`python -c`, the benchmark's settings and
database), to a temporary file:

- Time: milliseconds for the 1,000 pages, against the baseline of writing the same pages'
  Markdown text to a file (what no renderer can beat).
- Peak memory: the process's real peak (VmHWM: Python, lxml/libxml2,
  reportlab, zlib... everything), rendering 1,000 pages against rendering 100 pages in
  another fresh process. A ratio near 1 means memory does not grow with the book.
- Growth: that peak less the process's size just before the render (imports done and a
  two-page book rendered first, so fonts and libraries are loaded), 1,000 pages against
  100: what the render itself adds.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

from bench.common import Result, peak_rss_mib

PAGES = 1000
SMALL = 100
ARCHIVE = "Archive"
ORIGINAL = "Pdf original layout"
IMAGE_SIZE = (1240, 1754)  # A4 at 150 dpi


def _book(pages: int):  # type: ignore[no-untyped-def]
    from tests.exports.books import sample_book

    return sample_book("en", pages=pages, dense=True)


def _raw_write_seconds() -> float:
    book = _book(PAGES)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        for page in book.pages():
            out.write(page.translation.encode() + b"\n\n")
    return time.perf_counter() - started


def _page_images(pages: int) -> None:
    """A PNG for each page of the sample book in local storage (a page of text lines)."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from PIL import Image, ImageDraw

    image = Image.new("L", IMAGE_SIZE, 255)
    draw = ImageDraw.Draw(image)
    shade = random.Random(7)
    for line in range(60):
        top = 120 + line * 25
        left = 120
        while left < IMAGE_SIZE[0] - 160:
            width = shade.randint(20, 90)
            draw.rectangle((left, top, left + width, top + 12), fill=shade.randint(0, 90))
            left += width + 14
    encoded = BytesIO()
    image.save(encoded, format="PNG", optimize=True)
    png = encoded.getvalue()
    for page in _book(pages).pages():
        if not default_storage.exists(page.image_key):
            default_storage.save(page.image_key, ContentFile(png))


def render_child(export_format: str, pages: int) -> dict[str, float]:
    """In the child process: warm up on a two-page book, then render `pages` pages and read
    the process's peak RSS (KiB on Linux)."""
    from exports.book import ExportOptions
    from tests.exports.original_books import original_book

    def render(book, out) -> None:  # type: ignore[no-untyped-def]
        if export_format == ORIGINAL:
            from exports.renderers import renderer_for

            renderer_for("Pdf").render(book, ExportOptions(layout="original"), out)
        elif export_format == ARCHIVE:
            from exports.services import archive_write
            from projects.models import Project, ProjectStatus

            project = Project(name="Sample book (en)", status=ProjectStatus.COMPLETE)
            archive_write(project=project, book=book, options=ExportOptions(), out=out)
        else:
            from exports.renderers import renderer_for

            renderer_for(export_format).render(book, ExportOptions(), out)

    make = original_book if export_format == ORIGINAL else _book
    with tempfile.TemporaryFile() as out:
        render(make(2), out)
    before = peak_rss_mib()
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        render(make(pages), out)
        size = out.tell()
    seconds = time.perf_counter() - started
    peak = peak_rss_mib()
    return {"seconds": seconds, "before": before, "peak": peak, "bytes": size}


_CHILD = """
import django, json, sys
django.setup()
from bench.bench_exports import render_child
print(json.dumps(render_child(sys.argv[1], int(sys.argv[2]))))
"""


_FOLDER_CHILD = """
import django, sys
django.setup()
from tests.exports.original_books import original_folder
original_folder(int(sys.argv[1]))
"""


def _in_child(export_format: str, pages: int) -> dict[str, float]:
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, export_format, str(pages)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        cwd=Path(__file__).resolve().parent.parent,
    )
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


def run() -> list[Result]:
    from exports.renderers import RENDERERS

    _page_images(PAGES)
    raw = _raw_write_seconds()
    results = []
    for pages in (2, SMALL, PAGES):
        # Made once, in a process of its own: a child inherits its parent's peak RSS.
        subprocess.run(
            [sys.executable, "-c", _FOLDER_CHILD, str(pages)],
            check=True,
            capture_output=True,
            env=os.environ.copy(),
            cwd=Path(__file__).resolve().parent.parent,
        )
    for export_format in [*RENDERERS, ORIGINAL, ARCHIVE]:
        large = _in_child(export_format, PAGES)
        small = _in_child(export_format, SMALL)
        name = f"exports: {export_format},"
        results += [
            Result(f"{name} ms per 1,000 pages", large["seconds"] * 1000, raw * 1000, "ms"),
            Result(f"{name} peak RSS 1,000 vs 100 p", large["peak"], small["peak"], "MiB"),
            Result(
                f"{name} RSS growth 1,000 vs 100 p",
                large["peak"] - large["before"],
                small["peak"] - small["before"],
                "MiB",
            ),
            Result(f"{name} file 1,000 vs 100 p", large["bytes"] / (1 << 20), small["bytes"] / (1 << 20), "MiB"),
        ]
    return results
