"""Code on scanned pages: how many listing lines the OCR reading marks monospace, and how
many prose lines it wrongly does (translation/engines/tesseract.py `_mono_pitches`;
docs/book-structure.md, "Code on a scan").

Pages of six Debian manuals with listings and prose are rendered at RENDER_DPI, clean, as
bench_fidelity's degraded scan and as a worse one, and read by `page_read`. Each line of
the reading's layout is labelled by the line of the page's text layer it matches best
(difflib, letters and digits only, a ratio of 0.6 at least): code when that line is set
wholly in a monospace font (bookstructure.lines). A line no text-layer line matches (a
lone `}`) is left out of the counts. TUNED are the pages the thresholds were chosen on,
KEPT_ASIDE pages of the same books that were not looked at then. Before, no line of a scan
was marked. BENCH_QUICK=1: three pages, the degraded scan only.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from django.conf import settings

from bench.common import Result, quick
from bookstructure.lines import page_lines
from projects.intake.layout import pdf_layouts
from tests.support.corpus import Degradation, debian_pdf, pages_render, scanned
from translation.engines.base import EngineError
from translation.engines.tesseract import page_read

COMMAND = ["tesseract", "stdin", "stdout", "-l", "eng"]
ONE_CORE = {**os.environ, "OMP_THREAD_LIMIT": "1"}
MATCH_MIN = 0.6

TUNED: dict[str, list[int]] = {
    "bzip2": [5, 9, 18, 24, 26, 28, 29, 31, 37],
    "nettle": [9, 20, 32, 41, 45],
    "libtasn1": [8, 9, 12],
    "shared-mime-info": [4, 11, 12, 13],
    "debian-faq": [11, 14, 36, 44, 50],
    "valgrind": [20, 40, 60],
}
KEPT_ASIDE: dict[str, list[int]] = {
    "bzip2": [10, 19, 25, 27, 30],
    "nettle": [10, 33, 47, 65],
    "libtasn1": [6, 10, 20],
    "shared-mime-info": [6, 7, 10],
    "debian-faq": [18, 20, 27, 40, 41, 60],
    "valgrind": [30, 80, 100],
}
READINGS: dict[str, Degradation | None] = {
    "clean": None,
    "degraded scan": Degradation(),
    "worse scan": Degradation(angle=-0.8, blur=1.0, noise=0.15, jpeg_quality=45, seed=3),
}


def _run(command: list[str], stdin: bytes) -> str:
    """Tesseract, its failure the engine's error (as LocalEngine runs it: a page its
    orientation detection cannot read is read as it stands)."""
    done = subprocess.run(command, input=stdin, capture_output=True, env=ONE_CORE)
    if done.returncode:
        raise EngineError(done.stderr.decode(errors="replace")[-200:], retryable=False)
    return done.stdout.decode()


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass
class Confusion:
    found: int = 0  # code lines marked monospace
    missed: int = 0
    marked: int = 0  # prose lines marked monospace
    prose: int = 0


def _label(text: str, truth: list[tuple[str, bool]]) -> bool | None:
    """Whether the text layer's line that `text` matches best is code; None when none does."""
    letters = _letters(text)
    best, code = 0.0, None
    for line, mono in truth:
        if not line or not letters or abs(len(line) - len(letters)) > max(len(line), len(letters)) / 2:
            continue
        ratio = difflib.SequenceMatcher(None, letters, line, autojunk=False).ratio()
        if ratio > best:
            best, code = ratio, mono
    return code if best >= MATCH_MIN else None


def _count(pages: dict[str, list[int]], degradation: Degradation | None, tally: Confusion) -> None:
    for book, numbers in pages.items():
        pdf = debian_pdf(book)
        for number in numbers:
            (layout,) = pdf_layouts(pdf, first=number, last=number)
            truth = [(_letters(line.text), line.mono) for line in page_lines(layout, page=number)]
            (page,) = pages_render(pdf, number, number, dpi=settings.RENDER_DPI)
            image = page if degradation is None else scanned(page, degradation, page_seed=number)
            png = io.BytesIO()
            image.save(png, format="PNG")
            reading = page_read(png.getvalue(), command=COMMAND, language="en", run=_run)
            for block in reading.layout["blocks"]:
                for line in block["lines"]:
                    code = _label(" ".join(span["text"] for span in line["spans"]), truth)
                    mono = all(span["mono"] for span in line["spans"])
                    if code is True:
                        tally.found += mono
                        tally.missed += not mono
                    elif code is False:
                        tally.marked += mono
                        tally.prose += 1


def run() -> list[Result]:
    if shutil.which("tesseract") is None or shutil.which("pdftoppm") is None:
        return []
    try:
        for book in TUNED:
            debian_pdf(book)
    except FileNotFoundError:
        return []
    cases = (
        [("tuned", {"bzip2": [24, 28], "debian-faq": [11]}, "degraded scan")]
        if quick()
        else [
            (pages, chosen, reading)
            for pages, chosen in (("tuned", TUNED), ("kept aside", KEPT_ASIDE))
            for reading in READINGS
        ]
    )
    results: list[Result] = []
    for pages, chosen, reading in cases:
        if pages == "kept aside" and reading == "clean":
            continue
        tally = Confusion()
        _count(chosen, READINGS[reading], tally)
        print(
            f"ocr code, {pages} pages, {reading}: code lines found {tally.found}, missed {tally.missed}; "
            f"prose lines marked {tally.marked} of {tally.prose}",
            flush=True,
        )
        results += [
            Result(
                f"ocr code: {pages}, {reading}, code lines found %, new vs before",
                100 * tally.found / max(1, tally.found + tally.missed),
                0.0,
                "%",
            ),
            Result(f"ocr code: {pages}, {reading}, prose lines marked code", tally.marked, 0.0, ""),
        ]
    return results
