"""The original-layout Pdf of a book of images (docs/exports.md, "Books of images"): the
Debian FAQ's pages 25-27 scanned (turned, blurred, noisy) and uploaded as a zip of JPEG
files, read by Tesseract at intake and translated by the local engine, come back as a PDF
of their scans — each page the size its image states — with the translation set in the
text regions as real, searchable text; pages left out of the book are left out of the file."""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

import pikepdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image
from rest_framework.test import APIClient

from exports.models import ExportFile
from projects.models import Project
from projects.services.normalize import normalize_run
from tests.exports.test_pdf_original import exported, images, overlapping, page_words, words_with_boxes
from tests.projects.test_book_structure import _faq_with
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import scan_pages

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils"),
]

DPI = 200


@pytest.fixture
def scans(tmp_path: Path) -> list[Image.Image]:
    return scan_pages(_faq_with("tesseract", "apertium"), 25, 27, dpi=DPI)


def zip_of_jpegs(scans: list[Image.Image], *, dpi: int | None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for number, scan in enumerate(scans, start=1):
            encoded = io.BytesIO()
            scan.convert("L").save(encoded, format="JPEG", quality=80, **({"dpi": (dpi, dpi)} if dpi else {}))
            archive.writestr(f"scan-{number:02}.jpg", encoded.getvalue())
    return buffer.getvalue()


def book_of_images(client: APIClient, content: bytes, *, left_out: tuple[int, ...] = ()) -> str:
    upload = client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("scans.zip", content, "application/zip")}, format="multipart"
    )
    assert upload.status_code == 200, upload.content
    created = client.post(
        "/v1/projects", {"uploadKey": upload.json()["uploadKey"], "targetLanguageCode": "es"}, format="json"
    )
    assert created.status_code == 201, created.content
    project_id = str(created.json()["id"])
    assert client.post(f"/v1/projects/{project_id}/normalize").status_code == 200
    normalize_run(project_id=project_id, page_limit=10)  # the worker's run: Tesseract reads the pages
    for page in Project.objects.get(pk=project_id).pages.filter(index__in=left_out):
        answer = client.patch(f"/v1/projects/{project_id}/pages/{page.pk}", {"included": False}, format="json")
        assert answer.status_code == 200, answer.content
    assert client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    return project_id


def page_sizes(content: bytes) -> list[tuple[float, float]]:
    with pikepdf.open(io.BytesIO(content)) as pdf:
        return [(float(page.mediabox[2]), float(page.mediabox[3])) for page in pdf.pages]


def test_a_book_of_images_comes_back_as_its_scans_with_the_translation_set_in_them(
    user, auth_client, settings, scans, tmp_path
):
    settings.TRANSLATION_ENGINE = "local"
    credit(user, "50")
    project_id = book_of_images(auth_client, zip_of_jpegs(scans, dpi=DPI))
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))
    assert [(page.status, page.layout["source"]) for page in pages] == [("Approved", "ocr")] * 3

    entry, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert "original" in str(entry["fileName"])
    # Each page the size its image states (200 dpi), holding its scan and nothing else drawn as an image.
    assert page_sizes(content) == [
        pytest.approx((scan.width * 72 / DPI, scan.height * 72 / DPI), abs=0.01) for scan in scans
    ]
    assert images(out) == 3
    output_words = words_with_boxes(out)
    assert all(0 <= x0 <= x1 <= width and 0 <= y0 <= y1 <= height for *_, x0, y0, x1, y1, width, height in output_words)
    assert not overlapping(output_words)
    for page in pages:
        found = set(re.findall(r"[^\W\d_]{4,}", " ".join(page_words(output_words, page.index)).lower()))
        wanted = set(re.findall(r"[^\W\d_]{4,}", page.translation.lower()))
        assert len(wanted & found) >= 0.9 * len(wanted), (page.index, sorted(wanted - found))


def test_a_book_of_images_in_bilingual_and_without_its_pages_left_out(user, auth_client, settings, scans, tmp_path):
    """Images that state no resolution are set at 150 dpi; bilingual puts each scan before
    its translated page; a page left out of the book is not in the file; All includes the
    original layout; a book whose images are gone is refused for it."""
    settings.TRANSLATION_ENGINE = "local"
    credit(user, "50")
    project_id = book_of_images(auth_client, zip_of_jpegs(scans, dpi=None), left_out=(2,))
    project = Project.objects.get(pk=project_id)
    kept = [scans[0], scans[2]]

    _, content = exported(auth_client, project_id, layout="original", bilingual=True)
    out = tmp_path / "bilingual.pdf"
    out.write_bytes(content)

    assert page_sizes(content) == [
        pytest.approx((scan.width * 72 / 150, scan.height * 72 / 150), abs=0.01) for scan in kept for _ in range(2)
    ]
    output_words = words_with_boxes(out)
    translated = {page.index: page.translation for page in project.pages.filter(included=True)}
    for position, index in ((2, 1), (4, 3)):
        assert not page_words(output_words, position - 1)  # the scan alone: no text layer
        found = set(re.findall(r"[^\W\d_]{4,}", " ".join(page_words(output_words, position)).lower()))
        wanted = set(re.findall(r"[^\W\d_]{4,}", translated[index].lower()))
        assert len(wanted & found) >= 0.9 * len(wanted), (index, sorted(wanted - found))

    every = auth_client.post(f"/v1/projects/{project_id}/export", {"format": "All"}, format="json")
    assert sorted(entry["layout"] for entry in every.json() if entry["format"] == "Pdf") == ["original", "reflow"]

    project.pages.update(image_key="")
    exports_before = ExportFile.objects.count()
    refused = auth_client.post(
        f"/v1/projects/{project_id}/export", {"format": "Pdf", "layout": "original", "bilingual": False}, format="json"
    )
    assert refused.status_code == 400
    assert "layout" in refused.json()["errors"]
    assert ExportFile.objects.count() == exports_before
