"""Exports: seconds per 1,000 pages and peak memory, for each format.

A 1,000-page book (the renderers' sample pages: a chapter heading, a paragraph with
emphasis, a list and a second paragraph per page, in English) is rendered by each format's
renderer to a temporary file.

- Time: seconds for the 1,000 pages, against the baseline of writing the same pages'
  Markdown text to a file (what no renderer can beat).
- Memory: the Python heap's peak (tracemalloc) rendering 1,000 pages, against the peak
  rendering 100 pages: a ratio near 1 means memory does not grow with the book.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc

from bench.common import Result
from exports.book import ExportOptions
from exports.renderers import RENDERERS, renderer_for
from tests.exports.books import sample_book

PAGES = 1000
SMALL = 100


def _raw_write_seconds() -> float:
    book = sample_book("en", pages=PAGES)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        for page in book.pages():
            out.write(page.translation.encode() + b"\n\n")
    return time.perf_counter() - started


def _render_seconds(export_format: str, pages: int) -> float:
    renderer = renderer_for(export_format)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        renderer.render(sample_book("en", pages=pages), ExportOptions(), out)
    return time.perf_counter() - started


def _render_peak_mib(export_format: str, pages: int) -> float:
    renderer = renderer_for(export_format)
    tracemalloc.start()
    try:
        with tempfile.TemporaryFile() as out:
            renderer.render(sample_book("en", pages=pages), ExportOptions(), out)
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


def run() -> list[Result]:
    raw = _raw_write_seconds()
    results = []
    for export_format in RENDERERS:
        seconds = _render_seconds(export_format, PAGES)
        results.append(Result(f"exports: {export_format}, s per 1,000 pages", seconds, raw, "s"))
        results.append(
            Result(
                f"exports: {export_format}, peak MiB 1,000 vs 100 p",
                _render_peak_mib(export_format, PAGES),
                _render_peak_mib(export_format, SMALL),
                "MiB",
            )
        )
    return results
