"""Fidelity on real books: what of the source survives, and what leaks, through the whole
pipeline (issue 14's measure; docs/book-structure.md "Measured fidelity").

The books are PDFs of Debian's documentation packages (tests/support/corpus.py): a window
of 20-30 pages of each, and one degraded scan (turned 1.9 degrees, blurred, noisy, JPEG
quality 60) of 8 pages of the FAQ. Each runs through the real pipeline in-process: a
project made from the file, normalize, process (the worker's code run inline through
Celery's eager mode), and the Markdown (with page markers) and PlainText exports. The
text books are processed with the `echo` engine (the page's own text back, so structure
alone is measured), and once more with the `local` engine (Apertium, en->es) for the code
lines; the scan with `local` (Tesseract reads it). Everything is compared with what poppler
reads from the same pages in the same run (bench/fidelity.py):

- header/footer leaks: running header and footer lines found in their page's export;
- page-number paragraphs: export paragraphs that are only a number;
- unjoined hyphenations: words split by a hyphen at a source line end still split;
- sentences cut at page breaks: a page ends mid-sentence and the next starts lowercase;
- code lines altered: source lines wholly in a monospace font not found verbatim;
- words missing: source words (furniture aside) the export lacks, echo engine;
- headings found: the PDF outline's entries in the window (else its large lines) that
  are Markdown headings of the export;
- OCR word recall: words pdftotext reads on the clean page found in the scan's OCR text.

Goals: 0, 0, 0, 0, 0, < 1% of words, >= 80% of headings, >= 99% OCR recall. Each Result's
figure is the measure and its baseline the goal's reference (the source's count), so the
ratio reads as a share. Takes about 5 minutes on 2 cores (BENCH_QUICK=1: two books, echo
only, 20 s).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.test import override_settings

from accounts.models import User
from bench import fidelity
from bench.bench_normalize import _local_storage, _project_make
from bench.common import Result, quick
from config.celery_app import app
from exports.book import ExportOptions
from exports.renderers import renderer_for
from exports.services import book_for
from projects.models import PageStatus, Project, SourceKind
from projects.services.jobs import process_start
from projects.services.normalize import project_normalize
from tests.support.corpus import DEBIAN_BOOKS, debian_pdf, pdf_window, scan_pages, scans_pdf
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

# book -> (first page, last page) of its window: past the front matter, into the body.
WINDOWS = {
    "debian-faq": (9, 38),
    "bzip2": (8, 30),
    "valgrind": (40, 64),
    "libtasn1": (5, 30),
    "nettle": (10, 34),
    "shared-mime-info": (1, 17),
}
SCAN_BOOK, SCAN_PAGES = "debian-faq", (10, 17)
DICTIONARY = Path("/usr/share/dict/words")
GOALS = {
    "header/footer leaks": "0",
    "page-number paragraphs": "0",
    "unjoined hyphenations": "0",
    "sentences cut at page breaks": "0",
    "code lines altered (echo)": "0",
    "code lines altered (local)": "0",
    "words missing": "< 1%",
    "headings found": ">= 80%",
    "OCR word recall": ">= 99%",
}


@dataclass(frozen=True)
class Exported:
    markdown: str
    plaintext: str
    source_texts: dict[int, str]  # page number in the window's file -> the page's source text
    furniture_texts: dict[int, str]  # the running headers, footers and page numbers read on it
    failed: int
    failures: list[str]  # "page N: the reason" of each failed page


@contextmanager
def _eager_workers() -> Iterator[None]:
    """Celery tasks run in the caller, as a worker would run them (the bench has no broker)."""
    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = was


def pipeline_export(owner: User, pdf: Path, *, engine: str, pages: int, storage: Path) -> Exported:
    """The book through the real pipeline: normalize, process to the end, then the Markdown
    (page markers on) and PlainText exports."""
    with (
        _local_storage(storage),
        _eager_workers(),
        override_settings(
            TRANSLATION_ENGINE=engine,
            NORMALIZE_INLINE_MAX_PAGES=max(pages, 10),
            ENGINE_CONCURRENCY=2,
            TRANSLATION_ENGINE_OPTIONS={},
        ),
    ):
        project = _project_make(owner, pdf, SourceKind.PDF, pages)
        Project.objects.filter(pk=project.pk).update(target_language_code="es", name=pdf.stem)
        project = project_normalize(project=Project.objects.get(pk=project.pk))
        process_start(owner=owner, project_id=project.pk)
        project.refresh_from_db()
        book = book_for(project=project)
        texts = {}
        for export_format, options in (
            ("Markdown", ExportOptions(page_markers=True, partial=True)),
            ("PlainText", ExportOptions(partial=True)),
        ):
            with tempfile.TemporaryFile() as out:
                renderer_for(export_format).render(book, options, out)
                out.seek(0)
                texts[export_format] = out.read().decode("utf-8")
        rows = project.pages.order_by("index").values_list(
            "index", "source_text", "text_layer", "furniture", "status", "failure_reason"
        )
        source_texts = {index: source or layer for index, source, layer, *_ in rows}
        furniture_texts = {index: "\n".join(item["text"] for item in furniture) for index, _, _, furniture, *_ in rows}
        failures = [f"page {index}: {reason}" for index, *_, status, reason in rows if status == PageStatus.FAILED]
        project.delete()
    return Exported(texts["Markdown"], texts["PlainText"], source_texts, furniture_texts, len(failures), failures)


@dataclass
class Measures:
    leaks: int = 0
    page_numbers: int = 0
    hyphenations: tuple[int, int] = (0, 0)
    cuts: int = 0
    code_echo: tuple[int, int] = (0, 0)
    code_local: tuple[int, int] = (0, 0)
    missing: tuple[int, int] = (0, 0)
    headings: tuple[int, int] = (0, 0)
    failed_local: int = 0
    failures_local: tuple[str, ...] = ()


def book_measure(owner: User, name: str, folder: Path, dictionary: set[str]) -> Measures:
    pdf = debian_pdf(name)
    first, last = WINDOWS[name]
    window = pdf_window(pdf, first, last, folder / f"{name}-{first}-{last}.pdf")
    pages = last - first + 1
    lines, outline = fidelity.pdftohtml_read(pdf, first, last)
    # Export pages are numbered 1.. within the window: renumber the source to match.
    lines = [fidelity.SourceLine(line.page - first + 1, line.top, line.text, line.size, line.mono) for line in lines]
    furniture = fidelity.furniture_lines(lines, page_count=pages)
    known, compounds = fidelity.vocabulary(_layout_text(pdf))
    split = fidelity.hyphenations(
        fidelity.source_lines_text(line for line in lines if not line.mono), known | dictionary, compounds
    )
    source_text = "".join(fidelity.pdftotext_pages(pdf, first, last))
    furniture_words = " ".join(text for texts in furniture.values() for text in texts)
    code = fidelity.code_lines(lines)
    headings = [title for page, title in outline if first <= page <= last] or fidelity.large_lines(
        lines, furniture=furniture
    )

    echo = pipeline_export(owner, window, engine="echo", pages=pages, storage=folder / "storage")
    echo_pages = fidelity.export_pages(echo.markdown)
    plain = fidelity.without_echo_marker(echo.plaintext)
    missing, total = fidelity.missing_words(source_text, plain, excluded_text=furniture_words)
    measures = Measures(
        leaks=fidelity.furniture_leaks(furniture, echo_pages),
        page_numbers=fidelity.page_number_paragraphs(echo_pages),
        hyphenations=(fidelity.unjoined_hyphenations(split, plain), len(split)),
        cuts=fidelity.cut_sentences(echo_pages, furniture),
        code_echo=(fidelity.not_verbatim(code, plain), len(code)),
        # Furniture is not text of the book: its words are taken out of the source's.
        missing=(missing, total),
        headings=(*fidelity.headings_found(headings, fidelity.markdown_headings(echo.markdown)),),
    )
    if not quick():
        local = pipeline_export(owner, window, engine="local", pages=pages, storage=folder / "storage")
        measures.code_local = (fidelity.not_verbatim(code, local.plaintext), len(code))
        measures.failed_local = local.failed
        measures.failures_local = tuple(local.failures)
    return measures


def _layout_text(pdf: Path) -> str:
    """The whole book as pdftotext -layout reads it (words split at line ends stay split)."""
    return subprocess.run(
        ["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True
    ).stdout.decode("utf-8", errors="replace")


def scan_recall(owner: User, folder: Path) -> tuple[int, int]:
    """OCR word recall on the degraded scan: words of the clean pages (pdftotext) found in
    the text the pipeline read from the scanned pages — their bodies and the furniture left
    out of them, over the whole window (a paragraph carried over a page break is read on
    the page it starts on)."""
    pdf = debian_pdf(SCAN_BOOK)
    first, last = SCAN_PAGES
    scan = folder / f"{SCAN_BOOK}-scan.pdf"
    scan.write_bytes(scans_pdf(scan_pages(pdf, first, last)))
    exported = pipeline_export(owner, scan, engine="local", pages=last - first + 1, storage=folder / "storage")
    read = "\n".join(
        f"{exported.source_texts.get(page, '')}\n{exported.furniture_texts.get(page, '')}"
        for page in range(1, last - first + 2)
    )
    return fidelity.word_recall("\n".join(fidelity.pdftotext_pages(pdf, first, last)), read)


def run() -> list[Result]:
    if shutil.which("pdftohtml") is None or shutil.which("tesseract") is None:
        return []
    books = [name for name in WINDOWS if Path(DEBIAN_BOOKS[name][0]).exists()]
    if not books:
        return []
    dictionary = set(DICTIONARY.read_text().lower().split()) if DICTIONARY.exists() else set()
    owner = User.objects.create_user("fidelity-bench@example.com", "bench-password-123", display_name="Bench")
    wallet_credit(user=owner, amount=Decimal("1000"), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="b")
    results: list[Result] = []
    folder = Path(tempfile.mkdtemp(prefix="bench-fidelity-"))
    try:
        print(f"goals: {', '.join(f'{measure} {goal}' for measure, goal in GOALS.items())}")
        for name in books[:2] if quick() else books:
            measures = book_measure(owner, name, folder, dictionary)
            first, last = WINDOWS[name]
            print(
                f"{name} pages {first}-{last}: leaks {measures.leaks}, page numbers {measures.page_numbers}, "
                f"unjoined hyphenations {measures.hyphenations[0]}/{measures.hyphenations[1]}, "
                f"cut sentences {measures.cuts}, code lines altered {measures.code_echo[0]}/{measures.code_echo[1]} "
                f"(echo) {measures.code_local[0]}/{measures.code_local[1]} (local), "
                f"words missing {measures.missing[0]}/{measures.missing[1]}, "
                f"headings {measures.headings[0]}/{measures.headings[1]}, "
                f"pages failed (local) {measures.failed_local}",
                *(f"\n  {failure}" for failure in measures.failures_local),
                sep="",
                flush=True,
            )
            label = f"fidelity, {name} {first}-{last}"
            results += [
                Result(f"{label}: header/footer leaks", measures.leaks, last - first + 1, "ln"),
                Result(f"{label}: page-number paragraphs", measures.page_numbers, last - first + 1, "par"),
                Result(f"{label}: unjoined hyphenations", *measures.hyphenations, "wd"),
                Result(f"{label}: sentences cut at page breaks", measures.cuts, last - first, "brk"),
                Result(f"{label}: code lines altered (echo)", *measures.code_echo, "ln"),
                Result(f"{label}: words missing", *measures.missing, "wd"),
                Result(f"{label}: headings found", *measures.headings, "hd"),
            ]
            if not quick():
                results.append(Result(f"{label}: code lines altered (local)", *measures.code_local, "ln"))
        if not quick():
            found, total = scan_recall(owner, folder)
            first, last = SCAN_PAGES
            print(f"{SCAN_BOOK} scan pages {first}-{last}: OCR word recall {found}/{total}", flush=True)
            results.append(Result(f"fidelity, {SCAN_BOOK} scan {first}-{last}: OCR word recall", found, total, "wd"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results
