"""OCR you can trust (translation/engines/tesseract.py): real pages of the Debian FAQ,
scanned (turned, blurred, noisy, JPEG), read upright and level, and a reading that cannot
be trusted flagged up to the page's review package and the status view."""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image, ImageFilter

from bench import fidelity
from projects.models import Project
from projects.tasks import normalize_project
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import Degradation, debian_pdf, pages_render, scan_pages, scanned, scans_pdf
from translation.engines.tesseract import OcrReading, page_read

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tesseract") is None, reason="apt-get install tesseract-ocr tesseract-ocr-eng"),
]

PAGE = 11  # the FAQ's page 11: 550 words of prose, URLs in a light monospace, a heading
DPI = 150  # what normalize renders pages at (RENDER_DPI)


def _run(command: list[str], stdin: bytes) -> str:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    return subprocess.run(command, input=stdin, capture_output=True, check=True, env=env).stdout.decode()


def _read(image: Image.Image) -> OcrReading:
    encoded = io.BytesIO()
    image.save(encoded, format="PNG")
    return page_read(encoded.getvalue(), command=["tesseract", "stdin", "stdout", "-l", "eng"], language="en", run=_run)


@pytest.fixture(scope="module")
def faq() -> Path:
    try:
        return debian_pdf("debian-faq")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def clean(faq: Path) -> Image.Image:
    (page,) = pages_render(faq, PAGE, PAGE, dpi=DPI)
    return page


@pytest.fixture(scope="module")
def reference(faq: Path) -> str:
    """What poppler reads on the clean page."""
    (text,) = fidelity.pdftotext_pages(faq, PAGE, PAGE)
    return text


def _recall(reference: str, reading: OcrReading) -> float:
    found, total = fidelity.word_recall(reference, reading.markdown)
    return found / total


def test_a_degraded_scan_is_read_level_with_its_words_and_not_flagged(faq, reference):
    (scan,) = scan_pages(faq, PAGE, PAGE, dpi=DPI)  # turned 1.9 degrees, blurred, noisy, JPEG 60

    reading = _read(scan)

    assert reading.rotation == 0
    assert reading.skew == pytest.approx(-1.9, abs=0.1)
    assert _recall(reference, reading) >= 0.98
    assert reading.warnings == ()
    assert reading.mean_confidence > 85


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_page_turned_a_quarter_or_upside_down_is_read_upright(clean, reference, turn):
    scan = scanned(clean, Degradation(angle=turn + 2.5))  # and skewed 2.5 degrees on top

    reading = _read(scan)

    assert reading.rotation == (360 - turn) % 360
    assert reading.skew == pytest.approx(-2.5, abs=0.1)
    assert _recall(reference, reading) >= 0.98
    assert reading.warnings == ()


def test_the_text_is_markdown_paragraphs_with_hyphenations_rejoined_and_a_layout(clean, reference):
    reading = _read(clean)

    paragraphs = reading.markdown.split("\n\n")
    assert len(paragraphs) >= 8
    assert all("\n" not in paragraph for paragraph in paragraphs)
    # "im-" / "proving" and "sophisti-" / "cated" end lines of the page: one word each here.
    assert "improving" in reading.markdown
    assert "sophisticated" in reading.markdown
    assert _recall(reference, reading) >= 0.99
    layout = reading.layout
    assert (layout["version"], layout["source"]) == (1, "ocr")
    assert layout["width"] == clean.width
    spans = [span for block in layout["blocks"] for line in block["lines"] for span in line["spans"]]
    assert all(0 <= span["conf"] <= 100 for span in spans)
    # The layout holds the words of the text, but for the halves of the words rejoined.
    layout_text = "\n".join(span["text"] for span in spans)
    found, total = fidelity.word_recall(reading.markdown, layout_text)
    assert total - 10 <= found < total
    found, total = fidelity.word_recall(layout_text, reading.markdown)
    assert total - 20 <= found < total
    assert reading.warnings == ()


@pytest.mark.parametrize("edge", ["left", "bottom"])
def test_a_page_cut_at_its_edge_is_flagged(faq, clean, edge):
    if edge == "left":  # the clean page, the left of every line gone
        cut = clean.crop((int(clean.width * 0.3), 0, clean.width, clean.height))
    else:  # the degraded scan (turned 1.9 degrees), its lower half gone through a paragraph
        (scan,) = scan_pages(faq, PAGE, PAGE, dpi=DPI)
        cut = scan.crop((0, 0, scan.width, int(scan.height * 0.6)))

    reading = _read(cut)

    assert any(f"cut at the image's {edge} edge" in warning for warning in reading.warnings), reading.warnings


def test_a_page_blurred_beyond_reading_is_flagged(clean):
    reading = _read(clean.filter(ImageFilter.GaussianBlur(3.5)))

    assert reading.warnings, reading.mean_confidence


def test_a_page_with_a_photo_is_not_flagged_for_its_ink(clean, reference):
    shades = random.Random(7)
    blots = bytes(shades.randrange(40, 200) for _ in range(60 * 40))
    photo = Image.frombytes("L", (60, 40), blots).resize((900, 400), Image.Resampling.BICUBIC)
    page = clean.convert("L")
    page.paste(photo, (170, 600))  # over a third of the text: the rest must still be read

    reading = _read(page)

    assert reading.warnings == ()
    assert _recall(reference, reading) >= 0.6


def test_a_blank_scan_is_blank_not_flagged(faq):
    blank = scanned(Image.new("L", (1275, 1650), 255), Degradation())

    reading = _read(blank)

    assert (reading.markdown, reading.warnings) == ("", ())


def test_the_flag_reaches_the_page_its_review_package_and_the_status_view(user, auth_client, settings, faq):
    """A real translation with the local engine of a two-page scan: a readable page and one
    blurred beyond reading. Both are Approved; the blurred one says why it needs a look, until
    someone approves it."""
    if shutil.which("apertium") is None:
        pytest.skip("apt-get install apertium apertium-eng-spa (scripts/lib.sh installs them)")
    settings.TRANSLATION_ENGINE = "local"
    credit(user, "50")
    (good,) = scan_pages(faq, PAGE, PAGE)
    (bad,) = scan_pages(faq, PAGE + 2, PAGE + 2)  # page 12 is blank
    content = scans_pdf([good, bad.filter(ImageFilter.GaussianBlur(4))])
    upload = auth_client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("scan.pdf", content, "application/pdf")}, format="multipart"
    )
    created = auth_client.post(
        "/v1/projects",
        {"uploadKey": upload.json()["uploadKey"], "targetLanguageCode": "es", "sourceLanguageOverride": "en"},
        format="json",
    )
    project_id = created.json()["id"]
    normalized = auth_client.post(f"/v1/projects/{project_id}/normalize")
    # Two pages, but read with OCR: on a worker, not inside the call.
    assert (normalized.status_code, normalized.json()["status"]) == (200, "Calibrating")
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    normalize_project(project_id)  # what the worker runs for the queued task
    run_worker()

    assert Project.objects.get(pk=project_id).status == "Complete"
    pages = auth_client.get(f"/v1/projects/{project_id}").json()["pages"]
    assert [page["status"] for page in pages] == ["Approved", "Approved"]
    assert pages[0]["reviewFlags"] == []
    assert pages[1]["reviewFlags"]
    detail = auth_client.get(f"/v1/projects/{project_id}/pages/{pages[1]['id']}").json()
    assert detail["reviewFlags"] == detail["review"]["reviewFlags"] == pages[1]["reviewFlags"]
    readable = auth_client.get(f"/v1/projects/{project_id}/pages/{pages[0]['id']}").json()
    assert readable["review"]["reviewFlags"] == []
    assert "Debian" in readable["review"]["sourceText"]
    status = auth_client.get(f"/v1/projects/{project_id}/status").json()
    assert status["progress"]["flaggedPages"] == 1
    assert "1 page flagged for review" in status["detail"]
    stored = Project.objects.get(pk=project_id).pages.get(index=1).layout  # the words it was read with
    assert stored["source"] == "ocr"
    assert any(
        span["text"].startswith("Debian")
        for block in stored["blocks"]
        for line in block["lines"]
        for span in line["spans"]
    )

    # Someone looks at the flagged page and keeps it: it is no longer flagged.
    approved = auth_client.post(f"/v1/projects/{project_id}/pages/{pages[1]['id']}/approve")
    assert (approved.status_code, approved.json()["status"], approved.json()["reviewFlags"]) == (200, "Approved", [])
    assert auth_client.get(f"/v1/projects/{project_id}/status").json()["progress"]["flaggedPages"] == 0
