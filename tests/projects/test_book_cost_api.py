"""The word estimate of books without a text layer, and a book's price before commitment
(bookCost: about expectedUsd, at most maxUsd) on the estimate, the project and the quote."""

from __future__ import annotations

import io
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from PIL import Image, ImageFilter

from projects.intake.word_estimate import words_count
from projects.models import Page, Project
from tests.projects.test_intake_api import upload
from tests.support.pdfs import pdf_bytes

pytestmark = pytest.mark.django_db

# Real prose every Debian machine has (base-files): the GNU GPL, version 3.
PROSE = Path("/usr/share/common-licenses/GPL-3")
WORDS_PER_PAGE = 330
PAGES = 12


def prose_pdf(tmp_path: Path, page_words: list[int] | None = None) -> Path:
    """A PDF of the GPL's words, `page_words[n]` of them on page n + 1 (WORDS_PER_PAGE on each
    of PAGES pages by default)."""
    counts = page_words or [WORDS_PER_PAGE] * PAGES
    words = PROSE.read_text().split()
    ends = [sum(counts[: n + 1]) for n in range(len(counts))]
    text = {n: " ".join(words[end - count : end]) for n, (count, end) in enumerate(zip(counts, ends, strict=True), 1)}
    path = tmp_path / "prose.pdf"
    path.write_bytes(pdf_bytes(len(counts), text=lambda n: text[n]))
    return path


def scanned_zip(pdf: Path, tmp_path: Path) -> bytes:
    """The PDF as a scanner would give it: grey, turned a little, blurred, JPEG."""
    subprocess.run(["pdftoppm", "-r", "150", "-gray", "-png", str(pdf), str(tmp_path / "page")], check=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for number, path in enumerate(sorted(tmp_path.glob("page-*.png")), start=1):
            page = Image.open(path).rotate(1.2, expand=True, fillcolor=255).filter(ImageFilter.GaussianBlur(0.7))
            jpeg = io.BytesIO()
            page.save(jpeg, format="JPEG", quality=70)
            archive.writestr(f"scan-{number}.jpg", jpeg.getvalue())
    return buffer.getvalue()


def screenshots_zip(pdf: Path, tmp_path: Path) -> bytes:
    """The PDF as screenshots of a reader: colour PNGs at a screen's 110 dpi."""
    subprocess.run(["pdftoppm", "-r", "110", "-png", str(pdf), str(tmp_path / "shot")], check=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for number, path in enumerate(sorted(tmp_path.glob("shot-*.png")), start=1):
            archive.writestr(f"Screenshot {number}.png", path.read_bytes())
    return buffer.getvalue()


def real_words(pdf: Path) -> int:
    return words_count(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, check=True).stdout.decode())


def test_a_scanned_book_is_estimated_within_a_fifth_of_its_words(api_client, tmp_path):
    pdf = prose_pdf(tmp_path)
    real = real_words(pdf)
    assert real > PAGES * 250  # denser than the words-per-page constant: the old estimate was low

    body = upload(api_client, "scan.zip", scanned_zip(pdf, tmp_path), url="/v1/anonymous-estimate").json()

    assert body["pageCount"] == PAGES
    assert body["hasTextLayer"] is False
    assert abs(body["wordEstimate"] - real) <= 0.2 * real, (body["wordEstimate"], real)


def test_a_book_of_screenshots_is_estimated_within_a_fifth_of_its_words(api_client, tmp_path):
    pdf = prose_pdf(tmp_path)
    real = real_words(pdf)

    body = upload(api_client, "shots.zip", screenshots_zip(pdf, tmp_path), url="/v1/anonymous-estimate").json()

    assert body["pageCount"] == PAGES
    assert body["hasTextLayer"] is False
    assert abs(body["wordEstimate"] - real) <= 0.2 * real, (body["wordEstimate"], real)


def test_a_book_whose_pages_vary_is_estimated_from_the_ink_of_every_page(api_client, tmp_path):
    # Short pages, with three full ones (a contents list, say) where no sample page falls:
    # the mean of the sampled pages times the page count would be a quarter of the words.
    page_words = [40] * PAGES
    for dense in (2, 5, 9):
        page_words[dense] = 520
    pdf = prose_pdf(tmp_path, page_words)
    real = real_words(pdf)

    body = upload(api_client, "scan.zip", scanned_zip(pdf, tmp_path), url="/v1/anonymous-estimate").json()

    assert body["pageCount"] == PAGES
    assert abs(body["wordEstimate"] - real) <= 0.2 * real, (body["wordEstimate"], real)


def test_without_tesseract_the_estimate_is_the_ink_at_the_words_per_ink_constant(api_client, tmp_path, settings):
    settings.TESSERACT_COMMAND = "/nonexistent/tesseract"
    pdf = prose_pdf(tmp_path)
    real = real_words(pdf)

    body = upload(api_client, "scan.zip", scanned_zip(pdf, tmp_path), url="/v1/anonymous-estimate").json()

    assert body["wordEstimate"] != PAGES * settings.WORDS_PER_PAGE_ESTIMATE
    assert abs(body["wordEstimate"] - real) <= 0.2 * real, (body["wordEstimate"], real)


def test_a_budget_spent_falls_back_to_the_constant(api_client, tmp_path, settings):
    settings.WORD_ESTIMATE_BUDGET_SECONDS = 0
    body = upload(api_client, "scan.zip", scanned_zip(prose_pdf(tmp_path), tmp_path), url="/v1/anonymous-estimate")

    assert body.json()["wordEstimate"] == PAGES * settings.WORDS_PER_PAGE_ESTIMATE


def never_exceed(pages: int, settings) -> float:
    return float(Decimal(settings.CALIBRATION_HOLD_USD) + (pages - 1) * Decimal("0.08"))


def test_the_anonymous_estimate_prices_the_whole_book(api_client, settings):
    settings.PRICE_TIERS = "0.002:0.0015:0.003,0.01:0.006:0.012,0.03:0.02:0.036,-:0.05:0.08"
    body = upload(api_client, "book.pdf", pdf_bytes(40, text=lambda n: "word " * 300), url="/v1/anonymous-estimate")

    assert body.json()["bookCost"] == {
        "expectedUsd": 0.06,  # 40 pages in tier 1 (predicted cost per page 0.00028), 0.0015 a page
        "maxUsd": never_exceed(40, settings),
        "currency": "USD",
        "estimated": True,
        "basis": "price_table",
    }


def test_without_a_price_table_there_is_no_bound(api_client, settings):
    settings.PRICE_TIERS = ""
    cost = upload(api_client, "book.pdf", pdf_bytes(4, text=lambda n: "word " * 300), url="/v1/anonymous-estimate")

    assert cost.json()["bookCost"]["maxUsd"] is None


def test_the_project_and_its_quote_carry_the_book_cost_measured_after_calibration(auth_client, settings):
    key = upload(auth_client, "book.pdf", pdf_bytes(6, text=lambda n: "word " * 300)).json()["uploadKey"]
    project_id = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]
    created = auth_client.get(f"/v1/projects/{project_id}").json()["bookCost"]
    assert created["estimated"] is True
    assert created["basis"] == "price_table"
    assert created["maxUsd"] == never_exceed(6, settings)
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    assert auth_client.get(f"/v1/projects/{project_id}/batch-quote").json()["bookCost"] == created

    # A page measured at $0.02 puts the book in tier 3 (expected $0.02 a page).
    project = Project.objects.get(pk=project_id)
    Page.objects.filter(project=project, index=1).update(cost_usd=Decimal("0.02"))
    Page.objects.filter(project=project, index=6).update(included=False)
    quote = auth_client.get(f"/v1/projects/{project_id}/batch-quote").json()["bookCost"]
    body = auth_client.get(f"/v1/projects/{project_id}").json()["bookCost"]

    assert (
        quote
        == body
        == {
            "expectedUsd": 0.1,  # 5 included pages x 0.02
            "maxUsd": never_exceed(5, settings),
            "currency": "USD",
            "estimated": False,
            "basis": "measured",
        }
    )


def test_the_quote_of_a_book_not_yet_split_into_pages_says_to_normalize_it_first(auth_client):
    key = upload(auth_client, "book.pdf", pdf_bytes(3, text=lambda n: "word " * 300)).json()["uploadKey"]
    project_id = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]

    before = auth_client.get(f"/v1/projects/{project_id}/batch-quote").json()
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    after = auth_client.get(f"/v1/projects/{project_id}/batch-quote").json()

    assert (before["canStart"], before["blockedOn"], before["pageCount"]) == (False, "nothing_pending", 0)
    assert "normalize it first" in before["explanation"]
    assert (after["blockedOn"], after["pageCount"]) == ("credit", 1)  # the first page, and no credit yet
