"""A big book stays light at every stage: a real 4,000-page PDF through upload, normalize,
processing (the echo engine) and every export, against the same for a 400-page PDF.

Both books are generated PDFs of small pages (3 x 4 inches, a paragraph each, a chapter
heading every 20 pages: `tests.support.pdfs.pdf_bytes`), so that the 4,000 pages go
through the whole stack in a few minutes on two cores. Each stage of each book runs in a
fresh process (`python -c`, the benchmark's settings and database; Celery's broker, the
cache and the hub's channel layer in memory, as in bench_overhead) as the service runs it:

- **upload**: `upload_receive` (the source check: pdfinfo, the text layer's words, the
  word estimate; the file stored) and `project_create` adopting it, as POST /v1/uploads
  and POST /v1/projects do.
- **normalize**: `project_normalize` (the API's call), then the worker's task
  `projects.tasks.normalize_project` (NORMALIZE_TASK_PAGES pages a run, the rest queued)
  until every page is prepared. A thread of the process samples the peak RSS (VmHWM of
  /proc/<pid>/status) of each pdftoppm it runs, and notes when page 1 is stored (its
  image and row) and when it is translatable (prepared: its body read with its
  neighbours'), from normalize's start.
- **processing**: POST /v1/projects/{id}/process, then the worker's task
  `projects.tasks.job_run_next` until the book is Complete (the echo engine).
- **exports**: each format (and the original-layout Pdf) requested and rendered as the
  export worker renders it (`export_request`, `export_render`), to local storage.

Each row is the 4,000-page figure over the 400-page one: the process's real peak
(VmHWM: Python and every library in it), and for the stages that run poppler, the largest
poppler tool's peak (sampled as above). A ratio near 1 means the stage's memory does not
grow with the book.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path

from django.core.files.uploadedfile import TemporaryUploadedFile
from django.db import connection
from django.test import Client

from accounts.models import User
from accounts.services.users import token_issue
from bench.bench_overhead import pipeline_settings
from bench.common import Result, memory_mib, peak_rss_mib
from exports.book import ExportOptions
from exports.models import ExportStatus
from exports.renderers import RENDERERS
from exports.services import export_render, export_request
from projects.models import NormalizeState, Page, Project, ProjectStatus
from projects.services.normalize import project_normalize
from projects.services.projects import project_create
from projects.services.uploads import upload_receive
from projects.tasks import job_run_next, normalize_project
from tests.support.pdfs import pdf_bytes
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

BIG_PAGES = 4_000
SMALL_PAGES = 400
PAGE_SIZE = (216, 288)  # points: 3 x 4 inches, 450 x 600 pixels at 150 dpi
CHAPTER_PAGES = 20
ORIGINAL = "Pdf original"
ARCHIVE = "Archive"
EXPORTS = (*RENDERERS, ORIGINAL, ARCHIVE)
SAMPLE_SECONDS = 0.02
_PAGE_TEXT = (
    "The river ran past the garden in the morning, and the letter waited on the window sill "
    "until the evening came over the mountain and the lantern was lit in the harbour."
)


def book_pdf(pages: int) -> bytes:
    """A book of `pages` small pages, a paragraph each, a chapter heading every CHAPTER_PAGES."""

    def text(number: int) -> str:
        heading = f"Chapter {number // CHAPTER_PAGES + 1}\n\n" if number % CHAPTER_PAGES == 1 else ""
        return f"{heading}Page {number}. {_PAGE_TEXT}"

    return pdf_bytes(pages, text=text, size=PAGE_SIZE)


def _stage_settings() -> AbstractContextManager[None]:
    """The echo engine, and Celery's broker, the cache and the channel layer in memory."""
    return pipeline_settings(TRANSLATION_ENGINE="echo", TRANSLATION_ENGINE_OPTIONS={})


# --- The stages, each in its own process ----------------------------------------------------


def upload_child(pdf: str, email: str) -> dict[str, object]:
    """Check and store the PDF as an upload, and create the project on it."""
    with _stage_settings():
        return _upload(pdf, email)


def _upload(pdf: str, email: str) -> dict[str, object]:
    owner = User.objects.create_user(email, "bench-password-123", display_name="Bench")
    wallet_credit(user=owner, amount=Decimal(1000), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=email)
    source = Path(pdf)
    started = time.perf_counter()
    with _Watch(started=started) as watch:
        upload = TemporaryUploadedFile(source.name, "application/pdf", source.stat().st_size, None)
        spool = upload.file
        assert spool is not None
        with source.open("rb") as file:
            shutil.copyfileobj(file, spool, 1 << 20)
        spool.flush()
        try:
            _, raw_key = upload_receive(owner=owner, upload=upload)
        finally:
            upload.close()
        project = project_create(owner=owner, upload_key=raw_key, target_language_code="fr")
    seconds = time.perf_counter() - started
    assert project.source_page_count > 0, project.source_page_count
    return {"project": str(project.pk), "seconds": seconds, "tools": watch.tools, "self": peak_rss_mib()}


class _Watch(threading.Thread):
    """Samples, while a stage runs in this process, the peak RSS (VmHWM) of each tool it
    runs (pdftoppm, pdftotext...: by name); with a `project_id`, also when page 1 is stored
    and when it is prepared, in seconds from `started`.

    getrusage's RUSAGE_CHILDREN cannot tell a tool's peak: a child forked from this process
    counts this process's size until it executes the tool."""

    def __init__(self, *, started: float, project_id: str | None = None) -> None:
        super().__init__(daemon=True)
        self.project_id = project_id
        self.started = started
        self.stop = threading.Event()
        self.tools: dict[str, float] = {}
        self.first_stored: float | None = None
        self.first_prepared: float | None = None

    def __enter__(self) -> _Watch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._tools_sample()
                if self.project_id is not None and self.first_prepared is None:
                    self._first_page_sample()
                time.sleep(SAMPLE_SECONDS)
        finally:
            connection.close()

    def _tools_sample(self) -> None:
        for children in Path("/proc/self/task").glob("*/children"):
            try:
                pids = children.read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                name = status.split("\n", 1)[0].removeprefix("Name:").strip()
                found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
                if found and not name.startswith("python"):
                    self.tools[name] = max(self.tools.get(name, 0.0), int(found.group(1)) / 1024)

    def _first_page_sample(self) -> None:
        assert self.project_id is not None
        row = Page.objects.filter(project_id=self.project_id, index=1).values_list("image_key", "prepared").first()
        now = time.perf_counter() - self.started
        if row is not None and row[0] and self.first_stored is None:
            self.first_stored = now
        if row is not None and row[1]:
            self.first_prepared = now
            if self.first_stored is None:
                self.first_stored = now


def normalize_child(project_id: str) -> dict[str, object]:
    """Normalize as the service does: the API's call, then the worker's task run after run."""
    with _stage_settings():
        project = Project.objects.get(pk=project_id)
        started = time.perf_counter()
        with _Watch(started=started, project_id=project_id) as watch:
            project = project_normalize(project=project)
            runs = 0
            while Project.objects.filter(pk=project_id, normalize_state=NormalizeState.QUEUED).exists():
                normalize_project(project_id)
                runs += 1
            seconds = time.perf_counter() - started
        project.refresh_from_db()
        assert project.normalize_state == NormalizeState.DONE, (project.normalize_state, project.failure_reason)
        assert not project.pages.filter(prepared=False).exists()
    return {
        "seconds": seconds,
        "runs": runs,
        "first_stored": watch.first_stored,
        "first_prepared": watch.first_prepared,
        "tools": watch.tools,
        "self": peak_rss_mib(),
    }


def processing_child(project_id: str) -> dict[str, object]:
    """POST process, then the worker's job_run_next until the book is Complete (echo engine)."""
    with _stage_settings():
        project = Project.objects.select_related("owner").get(pk=project_id)
        assert project.owner is not None
        token = token_issue(user=project.owner).token
        before = memory_mib()
        started = time.perf_counter()
        response = Client().post(
            f"/v1/projects/{project_id}/process", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 202, response.content
        batches = 0
        while job_run_next() is not None:
            batches += 1
        seconds = time.perf_counter() - started
        project.refresh_from_db()
        assert project.status == ProjectStatus.COMPLETE, project.status
    return {"seconds": seconds, "batches": batches, "growth": memory_mib() - before, "self": peak_rss_mib()}


def export_child(project_id: str, export_format: str) -> dict[str, object]:
    """Request one format and render it as the export worker does."""
    with _stage_settings():
        project = Project.objects.get(pk=project_id)
        name, options = export_format, ExportOptions()
        if export_format == ORIGINAL:
            name, options = "Pdf", ExportOptions(layout="original")
        started = time.perf_counter()
        (export,) = export_request(project=project, export_format=name, options=options)
        rendered = export_render(export_id=export.pk)
        seconds = time.perf_counter() - started
        assert rendered is not None, export.pk
        assert rendered.status == ExportStatus.READY, rendered.error_text
    return {"seconds": seconds, "bytes": rendered.size_bytes, "self": peak_rss_mib()}


_CHILD = """
import django, json, sys
django.setup()
from bench import bench_stages
print(json.dumps(getattr(bench_stages, sys.argv[1])(*sys.argv[2:])))
"""


def _in_child(stage: str, *args: str) -> dict[str, object]:
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, stage, *args],
        capture_output=True,
        text=True,
        check=False,
        env=os.environ.copy(),
        cwd=Path(__file__).resolve().parent.parent,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"bench_stages: {stage} {args} failed:\n{completed.stderr[-4000:]}")
    figures: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


def book_stages(pdf: Path, pages: int) -> dict[str, dict[str, object]]:
    """Every stage of one book, each in a fresh process; their figures by stage."""
    figures = {"upload": _in_child("upload_child", str(pdf), f"stages-{pages}@example.com")}
    project_id = str(figures["upload"]["project"])
    figures["normalize"] = _in_child("normalize_child", project_id)
    figures["processing"] = _in_child("processing_child", project_id)
    for export_format in EXPORTS:
        figures[export_format] = _in_child("export_child", project_id, export_format)
    for stage, each in figures.items():
        print(f"  stages: {pages} pages, {stage}: {json.dumps(each)}", file=sys.stderr, flush=True)
    return figures


def run() -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-stages-"))
    try:
        small_pdf, big_pdf = workdir / "book-400.pdf", workdir / "book-4000.pdf"
        small_pdf.write_bytes(book_pdf(SMALL_PAGES))
        big_pdf.write_bytes(book_pdf(BIG_PAGES))
        small = book_stages(small_pdf, SMALL_PAGES)
        big = book_stages(big_pdf, BIG_PAGES)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    def figure(book: dict[str, dict[str, object]], stage: str, key: str) -> float:
        value = book[stage][key]
        assert isinstance(value, (int, float)), (stage, key, value)
        return float(value)

    def tool(book: dict[str, dict[str, object]], stage: str, name: str | None = None) -> float:
        """The peak of the tool `name` the stage ran, or of the largest tool it ran."""
        tools = book[stage]["tools"]
        assert isinstance(tools, dict), tools
        return float(tools.get(name, 0.0) if name else max(tools.values(), default=0.0))

    versus = "4,000 vs 400 pages"
    results = []
    for stage in ("upload", "normalize", "processing", *(f"export {each}" for each in EXPORTS)):
        key = stage.removeprefix("export ")
        results.append(
            Result(f"stages: {stage} peak RSS, {versus}", figure(big, key, "self"), figure(small, key, "self"), "MiB")
        )
    results += [
        Result(f"stages: upload poppler peak RSS, {versus}", tool(big, "upload"), tool(small, "upload"), "MiB"),
        Result(
            f"stages: normalize pdftoppm peak RSS, {versus}",
            tool(big, "normalize", "pdftoppm"),
            tool(small, "normalize", "pdftoppm"),
            "MiB",
        ),
        Result(
            f"stages: normalize poppler peak RSS, {versus}", tool(big, "normalize"), tool(small, "normalize"), "MiB"
        ),
        Result(
            f"stages: processing RSS growth, {versus}",
            figure(big, "processing", "growth"),
            figure(small, "processing", "growth"),
            "MiB",
        ),
        Result(
            f"stages: normalize to page 1 stored, {versus}",
            figure(big, "normalize", "first_stored"),
            figure(small, "normalize", "first_stored"),
            "s",
        ),
        Result(
            f"stages: normalize to page 1 translatable, {versus}",
            figure(big, "normalize", "first_prepared"),
            figure(small, "normalize", "first_prepared"),
            "s",
        ),
        Result(
            f"stages: normalize, p/s, {versus}",
            BIG_PAGES / figure(big, "normalize", "seconds"),
            SMALL_PAGES / figure(small, "normalize", "seconds"),
            "p/s",
        ),
        Result(
            f"stages: processing, p/s, {versus}",
            BIG_PAGES / figure(big, "processing", "seconds"),
            SMALL_PAGES / figure(small, "processing", "seconds"),
            "p/s",
        ),
    ]
    return results
