"""A real manual through the public API, read as a book: normalize reads each page's body
from its layout with its neighbours' (docs/book-structure.md, "From layout to the page's
Markdown"), the engines translate that Markdown, and the export is the book's text with
its headings and code, without its running headers and page numbers, no sentence cut at
a page break, no literal translated."""

from __future__ import annotations

import re
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import ImageFilter

from projects.models import Project
from projects.services.normalize import normalize_run
from projects.tasks import job_run_next
from tests.exports.test_export_api import run_export_queue
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import (
    Degradation,
    debian_pdf,
    pages_render,
    pdf_window,
    scan_pages,
    scanned_jpeg,
    scans_pdf,
    scans_zip,
)
from tests.support.openai_server import OpenAIServer
from tests.support.pdfs import pdf_bytes

pytestmark = pytest.mark.slow

FIRST, LAST = 8, 16  # the bzip2 manual: options, a preformatted table, sections 2.5-2.9, chapter 3


@pytest.fixture
def manual(tmp_path: Path) -> bytes:
    try:
        source = debian_pdf("bzip2")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return pdf_window(source, FIRST, LAST, tmp_path / "bzip2.pdf").read_bytes()


def _book(client, content: bytes, *, target: str) -> str:  # type: ignore[no-untyped-def]
    upload = client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("bzip2.pdf", content, "application/pdf")}, format="multipart"
    )
    assert upload.status_code == 200, upload.content
    created = client.post(
        "/v1/projects", {"uploadKey": upload.json()["uploadKey"], "targetLanguageCode": target}, format="json"
    )
    assert created.status_code == 201, created.content
    project_id = created.json()["id"]
    assert client.post(f"/v1/projects/{project_id}/normalize").status_code == 200
    return str(project_id)


def _exported_markdown(client, project_id: str) -> str:  # type: ignore[no-untyped-def]
    assert client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    assert Project.objects.get(pk=project_id).status == "Complete"
    asked = client.post(f"/v1/projects/{project_id}/export", {"format": "Markdown"}, format="json")
    assert asked.status_code == 202, asked.content
    run_export_queue()
    (entry,) = client.get(f"/v1/projects/{project_id}/exports").json()
    return b"".join(client.get(entry["url"]).streaming_content).decode()


def _poppler_text(content: bytes, tmp_path: Path) -> str:
    path = tmp_path / "window.pdf"
    path.write_bytes(content)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout


def test_a_manual_comes_back_as_a_book_without_its_furniture_with_headings_and_code(
    user, auth_client, settings, manual, tmp_path
):
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    credit(user, "50")
    project_id = _book(auth_client, manual, target="es")
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))

    assert all(page.prepared and page.structured for page in pages)
    # Every page's running header ("How to use bzip2") and number is furniture, not body.
    headers = [item["text"] for page in pages for item in page.furniture if item["kind"] == "header"]
    numbers = [item["text"] for page in pages for item in page.furniture if item["kind"] == "page_number"]
    assert headers.count("How to use bzip2") >= 2
    assert len(numbers) >= len(pages) - 1
    assert not any("How to use bzip2" in page.source_markdown.split("\n")[0] for page in pages)
    # The paragraph that runs from page 1 of the window onto page 2 is translated with page 1.
    assert pages[1].carried_from == 1
    assert "## 2.5. MEMORY MANAGEMENT" in pages[0].source_markdown

    book = _exported_markdown(auth_client, project_id)

    # The review package shows what was left out and where the carried lines went.
    second = auth_client.get(f"/v1/projects/{project_id}/pages/{pages[1].pk}").json()["review"]
    assert {"kind": "header", "text": "How to use bzip2"} in second["furniture"]
    assert second["carriedFrom"] == 1
    assert second["sourceText"] == pages[1].source_markdown
    assert re.search(r"^#+ .*2\.6\. RECOVERING DATA FROM DAMAGED FILES$", book, re.MULTILINE)
    assert re.search(r"^#+ .*3\. Programming with `libbzip2`$", book, re.MULTILINE)
    # The memory table, set in a monospace font, is a code block with its rows intact.
    assert re.search(r"^ -9 +7600k +3700k +2350k +828642$", book, re.MULTILINE)
    assert "`--repetitive-fast`" in book
    source_lines = {" ".join(line.split()) for line in _poppler_text(manual, tmp_path).splitlines()}
    assert "How to use bzip2" in source_lines
    assert not re.search(r"^(\[echo → es\] )?How to use bzip2$", book, re.MULTILINE)  # as a line of its own
    assert not re.search(r"^\d+$", book, re.MULTILINE)  # no paragraph that is only a page number
    assert "decompress the file" in book  # the sentence across the first page break, whole


def test_the_local_engine_translates_the_prose_and_keeps_the_code(user, auth_client, settings, manual):
    settings.TRANSLATION_ENGINE = "local"
    if subprocess.run(["sh", "-c", "command -v apertium"], capture_output=True).returncode != 0:
        pytest.skip("apt-get install apertium apertium-eng-spa (scripts/lib.sh installs them)")
    credit(user, "50")
    project_id = _book(auth_client, manual, target="es")

    book = _exported_markdown(auth_client, project_id)

    # Options, commands, file names and the preformatted table stay as they were.
    for literal in ("`--repetitive-fast`", "`bzip2recover`", "`rec0001file.bz2`", "`-1`"):
        assert literal in book
    assert re.search(r"^ -9 +7600k +3700k +2350k +828642$", book, re.MULTILINE)
    # The prose is Spanish, the headings headings.
    assert "memoria" in book.lower()
    assert re.search(r"^#+ .*2\.6\.", book, re.MULTILINE)


def test_a_book_named_after_its_file_is_exported_under_its_own_title(user, auth_client, settings, manual):
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    credit(user, "50")
    # The window's first page's first heading (the manual's metadata has no title).
    project_id = _book(auth_client, manual, target="es")
    body = auth_client.get(f"/v1/projects/{project_id}").json()
    assert (body["name"], body["bookTitle"]) == ("bzip2", "2.5. MEMORY MANAGEMENT")

    book = _exported_markdown(auth_client, project_id)

    assert book.startswith("# 2.5. MEMORY MANAGEMENT\n")


def test_a_pdfs_metadata_title_wins_and_a_name_given_is_kept(user, auth_client, settings):
    settings.TRANSLATION_ENGINE = "echo"
    try:
        faq = debian_pdf("debian-faq")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    content = faq.read_bytes()
    upload = auth_client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("faq.pdf", content, "application/pdf")}, format="multipart"
    )
    created = auth_client.post(
        "/v1/projects", {"uploadKey": upload.json()["uploadKey"], "name": "My FAQ"}, format="json"
    ).json()
    project = Project.objects.get(pk=created["id"])
    auth_client.post(f"/v1/projects/{project.pk}/normalize")
    normalize_run(project_id=project.pk, page_limit=3)

    body = auth_client.get(f"/v1/projects/{project.pk}").json()
    assert (body["name"], body["bookTitle"]) == ("My FAQ", "The Debian GNU/Linux FAQ")


def test_a_book_read_in_windows_has_each_line_once_and_no_running_header(user, auth_client, settings, tmp_path):
    """The FAQ's pages 9-20, read as normalize reads a book (a few pages at a time): the
    paragraph carried over a page break is on its first page only, and the chapter's running
    header, on only two pages before the next chapter, is furniture."""
    try:
        source = debian_pdf("debian-faq")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    settings.NORMALIZE_INLINE_MAX_PAGES = 20
    project_id = _book(auth_client, pdf_window(source, 9, 20, tmp_path / "faq.pdf").read_bytes(), target="es")
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))

    assert pages[1].carried_from == 1
    assert "to freedom, not price" in pages[0].source_markdown
    assert "to freedom, not price" not in pages[1].source_markdown
    for before, after in pairwise(pages):
        assert not before.source_markdown or before.source_markdown[-80:] not in after.source_markdown
    assert not any("CHAPTER 1. DEFINITIONS AND OVERVIEW" in page.source_markdown for page in pages)
    assert sum("CHAPTER 1. DEFINITIONS AND OVERVIEW" in item["text"] for page in pages for item in page.furniture) == 2


def test_a_title_page_translated_first_is_read_in_the_language_of_the_pages_after_it(user, auth_client, settings):
    """The calibration batch is page 1 alone, a title too short to tell its language, while
    the pages after it are still being prepared: it is read in the book's language."""
    settings.TRANSLATION_ENGINE = "local"
    if subprocess.run(["sh", "-c", "command -v apertium"], capture_output=True).returncode != 0:
        pytest.skip("apt-get install apertium apertium-eng-spa (scripts/lib.sh installs them)")
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    prose = "The keeper climbed the stairs of the lighthouse every evening to light the great lamp. " * 4
    book = pdf_bytes(6, text=lambda n: "Lighthouses" if n == 1 else prose)
    credit(user, "50")
    project_id = _book(auth_client, book, target="es")
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202

    normalize_run(project_id=project_id, page_limit=3)  # pages 1-3 read, page 1 prepared
    assert job_run_next() is not None

    first = Project.objects.get(pk=project_id).pages.get(index=1)
    assert (first.status, first.detected_source_language) == ("Approved", "en"), first.failure_reason


def _faq_with(*programs: str) -> Path:
    """The Debian FAQ's PDF, the test skipped without it or without one of `programs`."""
    missing = [program for program in programs if shutil.which(program) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/lib.sh installs them)")
    try:
        return debian_pdf("debian-faq")
    except FileNotFoundError as absent:
        pytest.skip(str(absent))


def test_a_scanned_book_is_read_at_intake_and_structured_like_a_text_pdf(user, auth_client, settings):
    """The FAQ's pages 25-28 scanned (turned, blurred, noisy, JPEG), normalized on a worker
    with the local engine: each page is read by OCR at intake, its running header and page
    number are furniture, and the book is translated from that text."""
    settings.TRANSLATION_ENGINE = "local"
    faq = _faq_with("tesseract", "apertium")
    credit(user, "50")
    project_id = _book(auth_client, scans_pdf(scan_pages(faq, 25, 28)), target="es")
    assert Project.objects.get(pk=project_id).status == "Calibrating"  # 4 pages, read on a worker
    for _ in range(2):  # the worker's tasks, 3 pages each
        normalize_run(project_id=project_id, page_limit=3)
    assert Project.objects.get(pk=project_id).normalize_state == "done"
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))

    assert all(page.layout["source"] == "ocr" and not page.text_layer for page in pages)
    assert all(page.structured for page in pages)
    headers = [item["text"] for page in pages for item in page.furniture if item["kind"] == "header"]
    numbers = [item["text"] for page in pages for item in page.furniture if item["kind"] == "page_number"]
    assert sum("CHAPTER 5" in text for text in headers) == 3  # the running header, read from the scan
    assert len(numbers) >= 3  # as many as OCR read
    assert set(numbers) <= {"17", "18", "19", "20"}
    assert not any("CHAPTER 5. SOFTWARE" in page.source_markdown for page in pages)
    assert re.match(r"#+ Chapter 5\n", pages[0].source_markdown)  # headings from the scan's type sizes
    # Sections 5.1-5.14, set in bold at the body's size: bold told from the scan's strokes.
    sections = [re.findall(r"^#{2,4} (5\.\d+)", page.source_markdown, re.M) for page in pages]
    assert [number for numbers in sections for number in numbers] == [f"5.{n}" for n in range(1, 15)]

    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    translated = list(Project.objects.get(pk=project_id).pages.order_by("index"))
    assert [page.status for page in translated] == ["Approved"] * len(pages)
    assert all(page.source_text == page.source_markdown for page in translated)  # not read again


def test_with_the_vllm_engine_a_scan_is_read_at_intake_and_a_page_it_cannot_trust_goes_to_the_model(
    user, auth_client, settings
):
    """The vLLM engine reads a scanned book with Tesseract at intake too, so its pages are
    structured across the book and translated as text; a page whose reading cannot be
    trusted (blurred beyond reading) is left for the model to read from its image."""
    faq = _faq_with("tesseract")
    credit(user, "50")
    scans = scan_pages(faq, 25, 27)
    with OpenAIServer() as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_API_KEY = server.url, server.model, ""
        project_id = _book(auth_client, scans_pdf([*scans, scans[1].filter(ImageFilter.GaussianBlur(4))]), target="es")
        assert Project.objects.get(pk=project_id).status == "Calibrating"
        normalize_run(project_id=project_id, page_limit=10)
        pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))
        assert [page.structured for page in pages] == [True, True, True, False]
        assert [(page.layout or {}).get("source") for page in pages[:3]] == ["ocr"] * 3
        headers = [item["text"] for page in pages for item in page.furniture if item["kind"] == "header"]
        assert sum("CHAPTER 5" in text for text in headers) >= 2

        assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
        run_worker()
        requests = server.chat_requests()
    assert [page.status for page in Project.objects.get(pk=project_id).pages.order_by("index")] == ["Approved"] * 4
    read_by_the_model = [request for request in requests if request.image_urls]
    sent_as_text = [request.user_text for request in requests if not request.image_urls]
    assert (len(read_by_the_model), len(sent_as_text)) == (1, 3)
    assert not any("CHAPTER 5. SOFTWARE" in text for text in sent_as_text)


def _scans_zip(pdf: Path, first: int, last: int) -> bytes:
    """Pages first..last printed at 200 dpi and scanned as a user scans a book, each turned
    its own way by up to a degree (blurred, speckled, JPEG), as a zip of a folder of images."""
    angles = [0.4, -0.7, 1.0, -0.3, 0.8, -1.0, 0.2, 0.6]
    jpegs = [
        scanned_jpeg(image, Degradation(angle=angles[offset % len(angles)]), page_seed=first + offset, dpi=200)
        for offset, image in enumerate(pages_render(pdf, first, last, dpi=200))
    ]
    return scans_zip(jpegs, folder="faq", first=first)


def _zip_book(client, content: bytes, *, pages: int) -> str:  # type: ignore[no-untyped-def]
    upload = client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("faq.zip", content, "application/zip")}, format="multipart"
    )
    assert upload.status_code == 200, upload.content
    assert (upload.json()["kind"], upload.json()["pageCount"]) == ("zip", pages)
    created = client.post(
        "/v1/projects", {"uploadKey": upload.json()["uploadKey"], "targetLanguageCode": "es"}, format="json"
    )
    assert created.status_code == 201, created.content
    project_id = str(created.json()["id"])
    assert client.post(f"/v1/projects/{project_id}/normalize").status_code == 200
    assert Project.objects.get(pk=project_id).status == "Calibrating"  # images read by OCR on a worker
    normalize_run(project_id=project_id, page_limit=pages)
    assert Project.objects.get(pk=project_id).normalize_state == "done"
    return project_id


def test_a_scanned_folder_of_images_loses_its_running_headers_and_keeps_its_lists_and_code(user, auth_client, settings):
    """The FAQ's pages 40-45 (7.12-8.1: commands in shaded boxes, a listing, commands and
    URLs inside sentences, lists) uploaded as a zip of JPEG scans, each page turned its own
    way: the chapter's running header is furniture on every page that has one, bullets make
    list items, and the local engine translates the prose around code kept as it was."""
    settings.TRANSLATION_ENGINE = "local"
    faq = _faq_with("tesseract", "apertium")
    credit(user, "50")
    project_id = _zip_book(auth_client, _scans_zip(faq, 40, 45), pages=6)
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))

    assert all(page.layout["source"] == "ocr" for page in pages)
    assert [page.structured for page in pages] == [True, True, False, True, True, True]  # 42 is blank
    headers = [[item["text"] for item in page.furniture if item["kind"] == "header"] for page in pages]
    # Pages 40, 41, 44 and 45 have the running header (42 is blank, 43 opens chapter 8).
    assert [any(text.startswith("CHAPTER") for text in found) for found in headers] == [
        True,
        True,
        False,
        False,
        True,
        True,
    ]
    assert not any(re.search(r"CHAPTER [78]\.|BASICS OF THE DEBIAN", page.source_markdown) for page in pages)
    first = pages[0].source_markdown
    assert first.startswith("- unknown - the user has never indicated")  # a list, its bullets read as `*` and `+`
    assert "\n\n```\napt-get source foo\n```\n\n" in first
    assert "\n```\napt-mark hold package_name\n```\n" in first
    assert "and remove the hold with" not in "".join(re.findall(r"```.*?```", first, flags=re.DOTALL))
    assert "`dpkg --install foo_VVV-RRR.deb`" in pages[3].source_markdown
    # An item whose bullet OCR did not read at all is one, its wrapped lines with it.
    assert "\n- Unpack (but do not configure) a Debian archive into the file system of the hard disk: `dpkg" in (
        pages[3].source_markdown
    )
    assert (
        "`. Note that this operation does not necessarily"
        in pages[3].source_markdown.split("- Unpack")[1].split("\n")[0]
    )
    # A section's heading, bold at the body's size on a page of many code lines, is a heading.
    assert re.search(r"^#+ 8\.1\.2 APT$", pages[4].source_markdown, re.MULTILINE)

    book = _exported_markdown(auth_client, project_id)

    for command in (
        "apt-get source foo",
        "sudo apt-get build-dep foo",
        "debuild -us -uc",
        "dpkg-buildpackage -rfakeroot -b",
    ):
        assert f"```\n{command}\n```" in book
    assert re.search(r"^apt-get update +-> +apt update$", book, re.MULTILINE)  # the table of commands, aligned
    assert "`dpkg --install foo_VVV-RRR.deb`" in book
    prose = re.sub(r"```.*?```|`[^`]*`", "", book, flags=re.DOTALL)
    assert "apt-get" in prose  # the command named in a sentence, kept as it is
    assert "apto-coger" not in prose.lower()
    assert "paquete" in prose or "envase" in prose  # and the prose is Spanish


def test_a_sentence_over_a_page_break_of_a_scan_is_whole_under_the_running_header(user, auth_client, settings):
    """The FAQ's pages 10-11 scanned into a zip: page 10 ends inside a sentence ("... have
    some kind of") that page 11 finishes under its running header; the sentence is read
    whole, with page 10, and the header is left out."""
    settings.TRANSLATION_ENGINE = "local"
    faq = _faq_with("tesseract")
    project_id = _zip_book(auth_client, _scans_zip(faq, 10, 11), pages=2)
    first, second = Project.objects.get(pk=project_id).pages.order_by("index")

    assert "kind of package maintenance system" in first.source_markdown
    assert second.carried_from == 1
    assert not second.source_markdown.startswith("package maintenance system")
    assert any(item["text"].startswith("CHAPTER 1") for item in second.furniture)
    assert "CHAPTER 1" not in first.source_markdown + second.source_markdown
