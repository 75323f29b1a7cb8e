"""Fidelity on real books, papers and scans: what of the source survives, and what leaks,
through the whole pipeline (issues 14 and 29; docs/book-structure.md "Measured fidelity").

The corpus (tests/support/corpus.py):
- books: a window of 17-30 pages of each of six PDF manuals of Debian's documentation
  packages;
- papers: multi-column sample papers of 18 publishers' LaTeX templates
  (texlive-publishers-doc), each whole;
- scans: pages of four of the books scanned at 150-300 dpi, turned up to 2 degrees either
  way, blurred, speckled and saved as JPEG (SCANS), two uploaded as a user's folder of
  images (a zip of JPEG files), two as image-only PDFs; each window holds a code listing.

Each goes through the real pipeline in-process: a project made from the file, normalize,
process (the worker's code run inline through Celery's eager mode), and the Markdown (with
page markers) and PlainText exports. A text-layer document is processed with the `echo`
engine (the page's own text back, so structure alone is measured) and once more with the
`local` engine (Apertium, en->es) for the code lines. A scan is read by Tesseract, which
the echo engine does not run: it is processed with the `local` engine once with the book's
own language as the target (read, structured, nothing translated: its structure) and once
into Spanish (its code lines). Everything is compared with what poppler reads from the
source's pages (for a scan, the clean pages it was made from) in the same run
(bench/fidelity.py):

- header/footer lines leaked: running header and footer lines found in their page's export;
- page-number paragraphs: export paragraphs that are only a number;
- unjoined hyphenations: words split by a hyphen at a source line end still split;
- sentences cut at page breaks: a page ends mid-sentence and the next starts lowercase;
- code lines altered: source lines wholly in a monospace font not found verbatim;
- words missing: source words (furniture aside) the export lacks;
- headings found: the PDF outline's entries in the window (else a book's large lines, a
  paper's bold or large lines outside its title block) that are Markdown headings of the
  export;
- reading order: the source's invariant tokens (numbers, identifiers, names) that the
  export holds in the source's order (a longest common subsequence);
- section numbers kept: numbered source headings whose number and title are one heading;
- words kept: the export's words per source word;
- OCR word recall (scans): words pdftotext reads on the clean pages found in what the
  pipeline read from the scans.

Goals (GOALS): 0 leaks, 0 page-number paragraphs, 0 unjoined hyphenations, 0 cut sentences,
code lines altered at most 2%, words missing under 1%, headings found at least 0.8 of the
source's, reading order at least 0.98, every section number kept, words kept 0.9-1.1, OCR
recall at least 99%. Each Result's name says what its figure counts and of what (its
baseline), with the goal, so a row reads "headings found (of the source's headings) | 81
hd | 82 hd": its ratio is the share. Takes about 30 minutes on 2 shared cores (BENCH_QUICK=1: two
books, one paper, echo only, and three scanned pages, about a minute).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
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
from projects.services.projects import project_create
from projects.services.uploads import upload_receive
from tests.support.corpus import (
    DEBIAN_BOOKS,
    PAPERS,
    SCANNERS,
    debian_pdf,
    paper_pdf,
    pdf_page_count,
    pdf_window,
    scan_jpegs,
    scan_pages,
    scans_pdf,
    scans_zip,
)
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
# book -> (first page, last page, scanner of SCANNERS, uploaded as "zip" (a folder of JPEG
# images) or "pdf" (image-only)); every window has a code listing (the FAQ's on page 14).
SCANS = {
    "debian-faq": (10, 17, "flatbed-200", "pdf"),  # issue 14's scan: its OCR recall is measured since
    "bzip2": (13, 19, "office-150", "pdf"),
    "valgrind": (41, 47, "phone-300", "zip"),
    "nettle": (28, 33, "copier-250", "zip"),
}
QUICK_PAPER = "asmejour"
QUICK_SCAN = ("bzip2", 14, 16, "office-150", "zip")
DICTIONARY = Path("/usr/share/dict/words")
GOALS = {
    "header/footer lines leaked": "0",
    "page-number paragraphs": "0",
    "unjoined hyphenations": "0",
    "sentences cut at page breaks": "0",
    "code lines altered": "<= 2%",
    "words missing": "< 1%",
    "headings found": ">= 0.8",
    "reading order": ">= 0.98",
    "section numbers kept": "all",
    "words kept": "0.9-1.1",
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


def _uploaded_project(owner: User, source: Path) -> Project:
    """A project made as a user makes one: the file uploaded (checked and sniffed: a zip of
    images is a folder of scans), then a project on its upload key."""
    _, raw_key = upload_receive(owner=owner, upload=SimpleUploadedFile(source.name, source.read_bytes()))
    return project_create(owner=owner, name=source.stem, upload_key=raw_key, target_language_code="es")


def pipeline_export(
    owner: User, source: Path, *, engine: str, pages: int, storage: Path, target: str = "es", uploaded: bool = False
) -> Exported:
    """The document through the real pipeline: normalize, process to the end, then the
    Markdown (page markers on) and PlainText exports. `uploaded`: the file goes through the
    upload's checks as a user's would (a scan); otherwise it is a text PDF made a project
    directly. `target`: the language translated into (the book's own: read, not translated)."""
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
        project = _uploaded_project(owner, source) if uploaded else _project_make(owner, source, SourceKind.PDF, pages)
        Project.objects.filter(pk=project.pk).update(target_language_code=target, name=source.stem)
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


@dataclass(frozen=True)
class Source:
    """What poppler reads from the source's pages first..last, numbered 1.. as the export's
    pages are."""

    pages: int
    furniture: dict[int, list[str]]
    running_lines: int  # the furniture lines that are more than a page number: running headers and footers
    split: list[tuple[str, str]]  # words hyphenated at a line end
    text: str  # pdftotext's text of the pages (reading order, columns read one after the other)
    page_texts: dict[int, str]
    furniture_words: str
    code: list[str]
    headings: list[str]
    numbered: list[tuple[str, str]]


def source_read(pdf: Path, first: int, last: int, dictionary: set[str], *, paper: bool = False) -> Source:
    """The source's pages first..last as poppler reads them. Its headings are the outline's
    entries on those pages; without an outline, a book's large lines (`large_lines`), a
    paper's bold or large lines outside its title block (`heading_lines`)."""
    pages = last - first + 1
    lines, outline = fidelity.pdftohtml_read(pdf, first, last)
    # Export pages are numbered 1.. within the window: renumber the source to match.
    lines = [dataclasses.replace(line, page=line.page - first + 1) for line in lines]
    entries = [(page - first + 1, title) for page, title in outline if first <= page <= last]
    furniture = fidelity.furniture_lines(lines, page_count=pages)
    known, compounds = fidelity.vocabulary(_layout_text(pdf))
    split = fidelity.hyphenations(
        fidelity.source_lines_text(line for line in lines if not line.mono), known | dictionary, compounds
    )
    page_texts = dict(enumerate(fidelity.pdftotext_pages(pdf, first, last), start=1))
    numbers = sum(1 for texts in furniture.values() for text in texts if fidelity.PAGE_NUMBER.match(text))
    return Source(
        pages=pages,
        furniture=furniture,
        running_lines=sum(len(texts) for texts in furniture.values()) - numbers,
        split=split,
        text="".join(page_texts.values()),
        page_texts=page_texts,
        furniture_words=" ".join(text for texts in furniture.values() for text in texts),
        code=fidelity.code_lines(lines),
        headings=[title for _, title in entries]
        or (fidelity.heading_lines if paper else fidelity.large_lines)(lines, furniture=furniture),
        numbered=fidelity.numbered_headings(lines, entries, furniture=furniture),
    )


@dataclass
class Measures:
    pages: int = 0
    leaks: tuple[int, int] = (0, 0)
    page_numbers: tuple[int, int] = (0, 0)
    hyphenations: tuple[int, int] = (0, 0)
    cuts: tuple[int, int] = (0, 0)
    code_echo: tuple[int, int] = (0, 0)
    code_local: tuple[int, int] = (0, 0)
    missing: tuple[int, int] = (0, 0)
    headings: tuple[int, int] = (0, 0)
    order: tuple[int, int] = (0, 0)
    numbers: tuple[int, int] = (0, 0)
    kept: tuple[int, int] = (0, 0)
    recall: tuple[int, int] | None = None
    failed: int = 0
    failures: tuple[str, ...] = ()
    local_run: bool = False


def structure_measure(source: Source, exported: Exported) -> Measures:
    """Every measure of an export that keeps the source's words (echo, or a scan read into
    its own language) against its source."""
    pages = fidelity.export_pages(exported.markdown)
    plain = fidelity.without_echo_marker(exported.plaintext)
    return Measures(
        pages=source.pages,
        leaks=(fidelity.furniture_leaks(source.furniture, pages), source.running_lines),
        page_numbers=(fidelity.page_number_paragraphs(pages), source.pages),
        hyphenations=(fidelity.unjoined_hyphenations(source.split, plain), len(source.split)),
        cuts=(fidelity.cut_sentences(pages, source.furniture), source.pages - 1),
        code_echo=(fidelity.not_verbatim(source.code, plain), len(source.code)),
        # Furniture is not text of the book: its words are taken out of the source's.
        missing=fidelity.missing_words(source.text, plain, excluded_text=source.furniture_words),
        headings=fidelity.headings_found(source.headings, fidelity.markdown_headings(exported.markdown)),
        order=fidelity.reading_order(
            fidelity.source_invariant_tokens(source.page_texts, source.furniture, export_text=plain), plain
        ),
        numbers=fidelity.section_numbers_kept(source.numbered, fidelity.markdown_headings(exported.markdown)),
        kept=fidelity.words_kept(source.text, plain, excluded_text=source.furniture_words),
        failed=exported.failed,
        failures=tuple(exported.failures),
    )


def document_measure(
    owner: User, pdf: Path, first: int, last: int, folder: Path, dictionary: set[str], *, paper: bool = False
) -> Measures:
    """A text-layer document's pages first..last: echo for structure, local for code lines."""
    source = source_read(pdf, first, last, dictionary, paper=paper)
    whole = first == 1 and last == pdf_page_count(pdf)
    window = pdf if whole else pdf_window(pdf, first, last, folder / f"{pdf.stem}-{first}-{last}.pdf")
    echo = pipeline_export(owner, window, engine="echo", pages=source.pages, storage=folder / "storage")
    measures = structure_measure(source, echo)
    if not quick():
        local = pipeline_export(owner, window, engine="local", pages=source.pages, storage=folder / "storage")
        measures.code_local = (fidelity.not_verbatim(source.code, local.plaintext), len(source.code))
        measures.failed, measures.failures, measures.local_run = local.failed, tuple(local.failures), True
    return measures


def scan_measure(
    owner: User, name: str, first: int, last: int, scanner: str, upload: str, folder: Path, dictionary: set[str]
) -> Measures:
    """The book's pages first..last scanned (SCANNERS[scanner]) and uploaded as a zip of
    JPEG images or an image-only PDF: read into English for structure and the OCR recall,
    into Spanish for code lines."""
    pdf = debian_pdf(name)
    source = source_read(pdf, first, last, dictionary)
    dpi, degradation = SCANNERS[scanner]
    if upload == "zip":
        scan = folder / f"{name}-scan-{first}-{last}.zip"
        scan.write_bytes(scans_zip(scan_jpegs(pdf, first, last, degradation, dpi=dpi), folder=name, first=first))
    else:
        scan = folder / f"{name}-scan-{first}-{last}.pdf"
        scan.write_bytes(scans_pdf(scan_pages(pdf, first, last, degradation, dpi=dpi), dpi=dpi))
    storage = folder / "storage"
    read = pipeline_export(owner, scan, engine="local", pages=source.pages, storage=storage, target="en", uploaded=True)
    measures = structure_measure(source, read)
    # What intake read on each scanned page, its body and its furniture, over the window (a
    # paragraph carried over a page break is read on the page it starts on).
    reading = "\n".join(
        f"{read.source_texts.get(page, '')}\n{read.furniture_texts.get(page, '')}"
        for page in range(1, source.pages + 1)
    )
    measures.recall = fidelity.word_recall(source.text, reading)
    if not quick():
        local = pipeline_export(owner, scan, engine="local", pages=source.pages, storage=storage, uploaded=True)
        measures.code_local = (fidelity.not_verbatim(source.code, local.plaintext), len(source.code))
        measures.failed, measures.failures, measures.local_run = local.failed, tuple(local.failures), True
    return measures


def _layout_text(pdf: Path) -> str:
    """The whole book as pdftotext -layout reads it (words split at line ends stay split)."""
    return subprocess.run(
        ["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True
    ).stdout.decode("utf-8", errors="replace")


def _share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]}"


def report(label: str, measures: Measures, *, engine: str) -> list[Result]:
    """Print the document's measures on one line and return them as Results whose names say
    what the figure counts, of what (the baseline) and the goal."""
    print(
        f"{label}: leaks {_share(measures.leaks)}, page numbers {_share(measures.page_numbers)}, "
        f"unjoined hyphenations {_share(measures.hyphenations)}, cut sentences {_share(measures.cuts)}, "
        f"code lines altered {_share(measures.code_echo)} ({engine}) {_share(measures.code_local)} (local), "
        f"words missing {_share(measures.missing)}, headings {_share(measures.headings)}, "
        f"reading order {_share(measures.order)}, section numbers {_share(measures.numbers)}, "
        f"words kept {_share(measures.kept)}"
        + (f", OCR word recall {_share(measures.recall)}" if measures.recall else "")
        + f", pages failed {measures.failed}",
        *(f"\n  {failure}" for failure in measures.failures),
        sep="",
        flush=True,
    )
    results = [
        Result(f"{label}: header/footer lines leaked (of the source's running lines; goal 0)", *measures.leaks, "ln"),
        Result(f"{label}: page-number paragraphs (baseline: the pages; goal 0)", *measures.page_numbers, "par"),
        Result(f"{label}: unjoined hyphenations (of the source's line-end ones; goal 0)", *measures.hyphenations, "wd"),
        Result(f"{label}: sentences cut at page breaks (of the breaks; goal 0)", *measures.cuts, "brk"),
        Result(f"{label}: code lines altered, {engine} (of the source's; goal <= 2%)", *measures.code_echo, "ln"),
        Result(f"{label}: words missing (of the source's words; goal < 1%)", *measures.missing, "wd"),
        Result(f"{label}: headings found (of the source's headings; goal >= 0.8)", *measures.headings, "hd"),
        Result(f"{label}: reading order, tokens in order (of the source's; goal >= 0.98)", *measures.order, "tok"),
        Result(f"{label}: section numbers kept in their heading (of the source's)", *measures.numbers, "hd"),
        Result(f"{label}: words kept, the export's (per source word; goal 0.9-1.1)", *measures.kept, "wd"),
    ]
    if measures.recall is not None:
        results.append(
            Result(f"{label}: OCR word recall, words read (of the source's; goal >= 99%)", *measures.recall, "wd")
        )
    if measures.local_run:
        results.append(
            Result(f"{label}: code lines altered, local (of the source's; goal <= 2%)", *measures.code_local, "ln")
        )
    return results


def run() -> list[Result]:
    if shutil.which("pdftohtml") is None or shutil.which("tesseract") is None:
        return []
    books = [name for name in WINDOWS if Path(DEBIAN_BOOKS[name][0]).exists()]
    if not books:
        return []
    papers = [name for name in PAPERS if Path(PAPERS[name][0]).exists()]
    scans = [(name, *SCANS[name]) for name in SCANS if name in books]
    if quick():
        books, papers = books[:2], [name for name in papers if name == QUICK_PAPER]
        scans = [QUICK_SCAN] if QUICK_SCAN[0] in DEBIAN_BOOKS and Path(DEBIAN_BOOKS[QUICK_SCAN[0]][0]).exists() else []
    dictionary = set(DICTIONARY.read_text().lower().split()) if DICTIONARY.exists() else set()
    owner = User.objects.create_user("fidelity-bench@example.com", "bench-password-123", display_name="Bench")
    wallet_credit(user=owner, amount=Decimal("1000"), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="b")
    results: list[Result] = []
    folder = Path(tempfile.mkdtemp(prefix="bench-fidelity-"))
    try:
        print(f"goals: {', '.join(f'{measure} {goal}' for measure, goal in GOALS.items())}")
        for name in books:
            first, last = WINDOWS[name]
            measures = document_measure(owner, debian_pdf(name), first, last, folder, dictionary)
            results += report(f"fidelity, {name} {first}-{last}", measures, engine="echo")
        for name in papers:
            pdf = paper_pdf(name)
            measures = document_measure(owner, pdf, 1, pdf_page_count(pdf), folder, dictionary, paper=True)
            results += report(f"fidelity, paper {name} ({measures.pages} pages)", measures, engine="echo")
        for name, first, last, scanner, upload in scans:
            measures = scan_measure(owner, name, first, last, scanner, upload, folder, dictionary)
            label = f"fidelity, {name} scan {first}-{last} ({SCANNERS[scanner][0]} dpi, {upload})"
            results += report(label, measures, engine="read, untranslated")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results
