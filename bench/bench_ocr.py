"""OCR of scanned pages: CPU seconds per page on one core and word recall, the local
engine's reading (translation/engines/tesseract.py: turned upright and level, contrast,
Tesseract's TSV) against the old way (`tesseract stdin stdout -l eng` on the page PNG),
measured on the same pages in the same run (docs/book-structure.md, "OCR").

The pages are the degraded scan of bench_fidelity (the Debian FAQ's pages 10-17, turned
1.9 degrees, blurred, noisy, JPEG quality 60: tests/support/corpus.py `scan_pages`), made
into an image-only PDF and rendered at RENDER_DPI as normalize renders them, then the same
pages turned 90 and 180 degrees (and 2.5 more). Both ways run Tesseract with
OMP_THREAD_LIMIT=1, and each page is read by the two in turn, so a busy machine slows both
alike; the time is CPU time (this process and its children), the recall the words pdftotext
reads on the clean page found in the text read (bench/fidelity.py `word_recall`).
BENCH_QUICK=1: three pages, upright only.
"""

from __future__ import annotations

import io
import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from PIL import Image

from bench import fidelity
from bench.common import Result, quick
from tests.support.corpus import Degradation, debian_pdf, pages_render, scan_pages, scanned, scans_pdf
from translation.engines.tesseract import page_read

BOOK, FIRST, LAST = "debian-faq", 10, 17
COMMAND = ["tesseract", "stdin", "stdout", "-l", "eng"]
ONE_CORE = {**os.environ, "OMP_THREAD_LIMIT": "1"}


def _run(command: list[str], stdin: bytes) -> str:
    return subprocess.run(command, input=stdin, capture_output=True, check=True, env=ONE_CORE).stdout.decode()


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def old_way(png: bytes) -> str:
    return _run(COMMAND, png)


def new_way(png: bytes) -> str:
    return page_read(png, command=COMMAND, language="en", run=_run).markdown


@dataclass
class Tally:
    seconds: float = 0.0
    found: int = 0
    words: int = 0
    pages: int = 0
    slowest: float = 0.0

    def add(self, seconds: float, text: str, reference: str) -> None:
        found, words = fidelity.word_recall(reference, text)
        self.slowest = max(self.slowest, seconds)
        self.seconds += seconds
        self.found += found
        self.words += words
        self.pages += 1


def _timed(read: Callable[[bytes], str], png: bytes) -> tuple[float, str]:
    started = _cpu()
    text = read(png)
    return _cpu() - started, text


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def scanned_pages(folder: Path, first: int, last: int) -> list[Image.Image]:
    """The degraded scans as normalize sees them: an image-only PDF rendered at RENDER_DPI."""
    scan = folder / "scan.pdf"
    scan.write_bytes(scans_pdf(scan_pages(debian_pdf(BOOK), first, last)))
    return pages_render(scan, 1, last - first + 1, dpi=settings.RENDER_DPI)


def run() -> list[Result]:
    if shutil.which("tesseract") is None or shutil.which("pdftoppm") is None:
        return []
    last = FIRST + 2 if quick() else LAST
    references = fidelity.pdftotext_pages(debian_pdf(BOOK), FIRST, last)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as temporary:
        cases = {"degraded scan": scanned_pages(Path(temporary), FIRST, last)}
        if not quick():
            clean = pages_render(debian_pdf(BOOK), FIRST, last, dpi=settings.RENDER_DPI)
            for turn in (90, 180):
                cases[f"scan turned {turn}+2.5 degrees"] = [
                    scanned(page, Degradation(angle=turn + 2.5), page_seed=number) for number, page in enumerate(clean)
                ]
        for case, images in cases.items():
            old, new = Tally(), Tally()
            started = time.perf_counter()
            for reference, image in zip(references, images, strict=True):
                png = _png(image)
                new.add(*_timed(new_way, png), reference)
                old.add(*_timed(old_way, png), reference)
            print(
                f"{BOOK} pages {FIRST}-{last}, {case}: new {new.seconds / new.pages:.2f} s/page (slowest "
                f"{new.slowest:.2f}), recall {new.found}/{new.words}; old {old.seconds / old.pages:.2f} s/page "
                f"(slowest {old.slowest:.2f}), recall {old.found}/{old.words} "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
            results += [
                Result(
                    f"ocr: {case}, CPU s/page on 1 core, new vs old",
                    new.seconds / new.pages,
                    old.seconds / old.pages,
                    "s",
                ),
                Result(
                    f"ocr: {case}, word recall %, new vs old",
                    100 * new.found / new.words,
                    100 * old.found / old.words,
                    "%",
                ),
            ]
    return results
