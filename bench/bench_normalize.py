"""Normalize: pages/s against poppler alone, and memory that does not grow with the book.

- A generated 300-page text PDF: pages/s of the whole inline normalize (render, text layer,
  thumbnail, storage on local disk, Page rows) over pages/s of `pdftoppm -png -r RENDER_DPI`
  alone on the same file, both measured in this run. Goal: at least 0.9.
- A generated zip of 300 page images: pages/s of normalize over pages/s of decoding and
  re-encoding the same images with Pillow alone (one core).
- Peak memory of a process normalizing a generated 1,000-page PDF over the same for the
  300-page one (each in a fresh child process): about 1 means memory does not grow with
  the page count. The poppler tools' own peaks are bench_stages' (sampled while they run).
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.test import override_settings
from PIL import Image, ImageDraw

from accounts.models import User
from bench.common import Result, peak_rss_mib
from projects.intake.rendering import PNG_COMPRESS_LEVEL
from projects.models import Project, ProjectStatus, SourceKind
from projects.services.normalize import project_normalize
from tests.support.pdfs import pdf_bytes

BOOK_PAGES = 300
BIG_BOOK_PAGES = 1000
ZIP_IMAGES = 300
# Words a page of a novel is made of (for glyph variety, not meaning).
_PROSE = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will more out up into do any "
    "river morning letter garden window evening mountain silence harbour journey promise kingdom lantern"
)
_WORDS = tuple(_PROSE.split())


def run() -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-normalize-"))
    try:
        book = workdir / "book-300.pdf"
        book.write_bytes(book_pdf(BOOK_PAGES))
        big_book = workdir / "book-1000.pdf"
        big_book.write_bytes(book_pdf(BIG_BOOK_PAGES))
        shots = workdir / "shots-300.zip"
        shots.write_bytes(images_zip(ZIP_IMAGES))
        owner = User.objects.create_user("normalize-bench@example.com", "bench-password-123", display_name="Bench")

        pdftoppm_rate = _pdftoppm_rate(book, workdir)
        # Each PDF normalizes in a fresh process, so that its peak memory is its own.
        book_run = _normalize_in_child(book, BOOK_PAGES, workdir)
        big_book_run = _normalize_in_child(big_book, BIG_BOOK_PAGES, workdir)
        pillow_rate = _pillow_rate(shots)
        zip_rate = _normalize_rate(owner, shots, SourceKind.ZIP, ZIP_IMAGES, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    dpi = settings.RENDER_DPI
    return [
        Result(
            f"normalize: 300-page PDF vs pdftoppm {dpi} dpi, p/s",
            BOOK_PAGES / book_run["seconds"],
            pdftoppm_rate,
            "p/s",
        ),
        Result(
            f"normalize: 1,000-page PDF vs pdftoppm {dpi} dpi, p/s",
            BIG_BOOK_PAGES / big_book_run["seconds"],
            pdftoppm_rate,
            "p/s",
        ),
        Result("normalize: 300-image zip vs Pillow re-encode, p/s", zip_rate, pillow_rate, "p/s"),
        Result("normalize: peak RSS, 1,000 pages vs 300, MiB", big_book_run["self"], book_run["self"], "MiB"),
    ]


# --- Generated sources --------------------------------------------------------------------


def book_pdf(pages: int, *, seed: int = 7) -> bytes:
    """A text book: each page a chapter heading and about 420 words of prose (a dense page)."""
    chooser = random.Random(seed)
    return pdf_bytes(
        pages, text=lambda number: f"Chapter {number}\n\n" + " ".join(chooser.choice(_WORDS) for _ in range(420))
    )


def images_zip(count: int) -> bytes:
    """A zip of `count` screenshots (A4 at 150 dpi, lines of dark marks on white) named
    page1.png ... pageN.png; ten distinct images repeat."""
    chooser = random.Random(11)
    images = []
    for _ in range(10):
        image = Image.new("RGB", (1240, 1754), "white")
        draw = ImageDraw.Draw(image)
        for row in range(45):
            x = 100
            while x < 1100:
                width = chooser.randint(20, 90)
                draw.rectangle((x, 120 + row * 34, x + width, 138 + row * 34), fill=(30, 30, 30))
                x += width + 14
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        images.append(buffer.getvalue())
    archive_bytes = io.BytesIO()
    with zipfile.ZipFile(archive_bytes, "w", compression=zipfile.ZIP_STORED) as archive:
        for number in range(1, count + 1):
            archive.writestr(f"page{number}.png", images[number % len(images)])
    return archive_bytes.getvalue()


# --- Measurements -------------------------------------------------------------------------


def _pdftoppm_rate(pdf: Path, workdir: Path) -> float:
    """Pages/s of poppler alone: one pdftoppm over the whole file, PNG at RENDER_DPI."""
    output = workdir / "pdftoppm"
    output.mkdir()
    try:
        started = time.perf_counter()
        subprocess.run(["pdftoppm", "-png", "-r", str(settings.RENDER_DPI), str(pdf), str(output / "page")], check=True)
        elapsed = time.perf_counter() - started
        pages = len(list(output.iterdir()))
    finally:
        shutil.rmtree(output)
    return pages / elapsed


def _normalize_seconds(
    owner: User, source: Path, kind: SourceKind, pages: int, storage: Path, *, inline_max_pages: int
) -> float:
    """Seconds of one inline project_normalize of the source, stored under `storage`; the
    project is deleted afterwards. Rendering only: a source without a text layer (the
    images) is not read with OCR here (INTAKE_OCR off; bench_ocr measures reading)."""
    inline = override_settings(NORMALIZE_INLINE_MAX_PAGES=inline_max_pages, INTAKE_OCR=False)
    with _local_storage(storage), inline:
        project = _project_make(owner, source, kind, pages)
        started = time.perf_counter()
        project = project_normalize(project=project)
        seconds = time.perf_counter() - started
        assert project.status == ProjectStatus.CALIBRATING, project.failure_reason
        # Every page rendered before the call returned (not left to a worker).
        assert project.pages.filter(prepared=True).count() == pages, "normalize did not run inline"
        project.delete()
    return seconds


def _normalize_rate(owner: User, source: Path, kind: SourceKind, pages: int, workdir: Path) -> float:
    """Pages/s of project_normalize (inline) on local storage, the source already stored."""
    storage = workdir / "storage"
    try:
        elapsed = _normalize_seconds(owner, source, kind, pages, storage, inline_max_pages=max(pages, 10))
    finally:
        shutil.rmtree(storage, ignore_errors=True)
    return pages / elapsed


def _pillow_rate(archive_path: Path) -> float:
    """Pages/s of reading each image from the zip, decoding it and writing it as a PNG."""
    started = time.perf_counter()
    with zipfile.ZipFile(archive_path) as archive:
        names = archive.namelist()
        for name in names:
            with Image.open(io.BytesIO(archive.read(name))) as image:
                image.convert("RGB").save(io.BytesIO(), format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return len(names) / (time.perf_counter() - started)


def _local_storage(root: Path) -> override_settings:
    return override_settings(
        STORAGES={
            **settings.STORAGES,
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(root)}},
        }
    )


def _project_make(owner: User, source: Path, kind: SourceKind, pages: int) -> Project:
    with source.open("rb") as file:
        key = default_storage.save(f"uploads/{owner.pk}/{source.name}", File(file))
    return Project.objects.create(
        owner=owner,
        name=source.stem,
        target_language_code="fr",
        source_kind=kind,
        source_object_key=key,
        source_file_name=source.name,
        source_size_bytes=source.stat().st_size,
        source_page_count=pages,
        source_has_text_layer=kind == SourceKind.PDF,  # the bench's PDFs are text, as the upload's check finds
    )


_CHILD = """
import django, json, sys
django.setup()
from bench.bench_normalize import normalize_child
print(json.dumps(normalize_child(sys.argv[1], int(sys.argv[2]), sys.argv[3])))
"""


def _normalize_in_child(pdf: Path, pages: int, workdir: Path) -> dict[str, float]:
    """Normalize the PDF in a fresh process: seconds, and peak RSS (MiB) of the process and
    of the poppler tools it ran."""
    storage = workdir / f"storage-{pages}"
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _CHILD, str(pdf), str(pages), str(storage)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            cwd=Path(__file__).resolve().parent.parent,
        )
    finally:
        shutil.rmtree(storage, ignore_errors=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def normalize_child(pdf: str, pages: int, storage: str) -> dict[str, float]:
    """In the child process: time the inline normalize of the PDF, then read peak RSS."""
    owner = User.objects.get_or_create(email=f"normalize-{pages}@example.com", defaults={"display_name": "Bench"})[0]
    seconds = _normalize_seconds(owner, Path(pdf), SourceKind.PDF, pages, Path(storage), inline_max_pages=pages)
    return {"seconds": seconds, "self": peak_rss_mib()}
