"""The original-layout Pdf (docs/exports.md, "The original layout"): pages of a real manual
(Debian's bzip2 manual) uploaded, normalized and translated through the API — by the
OpenAI-compatible stand-in, whose "translation" spells every word backwards, so that no
source word can pass for the translation — then exported with `layout: original` and read
back with poppler: the same pages, sizes and images as the source, the source's words gone
from the translated blocks and the translation's words there, every character on its
page, and the page outside the text blocks as it was."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import statistics
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pikepdf
import pytest
from PIL import Image, ImageChops
from rest_framework.test import APIClient

from exports.book import ExportOptions, ExportPage
from exports.models import ExportFile
from exports.renderers import pdf_original, renderer_for
from exports.services import book_for
from projects.models import Project
from projects.services.normalize import normalize_run
from tests.exports.test_export_api import run_export_queue
from tests.exports.test_pdf import EXPECTED_FONT, assert_fonts_embedded
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_book_structure import _faq_with
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import debian_pdf, pages_render, pdf_window, scan_pages, scans_pdf
from tests.support.openai_server import OpenAIServer, fake_translation

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils"),
]

FIRST, LAST = 9, 12  # the bzip2 manual: prose, options, a preformatted table, a heading


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):  # type: ignore[no-untyped-def]
    return local_storage


def debian_window(name: str, first: int, last: int, path: Path) -> Path:
    """Pages first..last of a Debian manual (DEBIAN_BOOKS) written to `path`; the test
    skipped when its package is not installed."""
    try:
        source = debian_pdf(name)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return pdf_window(source, first, last, path)


def translated_by_stand_in(client: APIClient, settings: Any, pdf: Path) -> str:
    """`pdf` uploaded, normalized and translated through the API by the OpenAI-compatible
    stand-in (every word spelled backwards): the project id. The caller credits the user."""
    with OpenAIServer() as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_API_KEY = server.url, server.model, ""
        project_id = book_from_upload(client, pdf.read_bytes(), target="es")
        assert client.post(f"/v1/projects/{project_id}/process").status_code == 202
        run_worker()
    assert set(Project.objects.get(pk=project_id).pages.values_list("status", flat=True)) == {"Approved"}
    return project_id


@pytest.fixture
def manual(tmp_path: Path) -> Path:
    return debian_window("bzip2", FIRST, LAST, tmp_path / "bzip2.pdf")


@pytest.fixture
def translated(user, auth_client, settings, manual):  # type: ignore[no-untyped-def]
    """The manual's pages translated by the stand-in (words spelled backwards): the project id."""
    credit(user, "50")
    return translated_by_stand_in(auth_client, settings, manual)


def exported(client: APIClient, project_id: str, **options: object) -> tuple[dict[str, object], bytes]:
    response = client.post(f"/v1/projects/{project_id}/export", {"format": "Pdf", **options}, format="json")
    assert response.status_code == 202, response.json()
    (entry,) = response.json()
    run_export_queue()
    listed = {item["fileName"]: item for item in client.get(f"/v1/projects/{project_id}/exports").json()}
    assert listed[entry["fileName"]]["status"] == "ready", ExportFile.objects.values_list("error_text", flat=True)
    return entry, b"".join(client.get(entry["url"]).streaming_content)


def pdfinfo_sizes(path: Path) -> list[str]:
    out = subprocess.run(["pdfinfo", "-f", "1", "-l", "999", str(path)], capture_output=True, text=True, check=True)
    return re.findall(r"Page +\d+ size: +(.+)", out.stdout)


def images(path: Path) -> int:
    out = subprocess.run(["pdfimages", "-list", str(path)], capture_output=True, text=True, check=True).stdout
    return len(out.splitlines()) - 2


def words_with_boxes(path: Path) -> list[tuple[int, str, float, float, float, float, float, float]]:
    """Every word poppler reads: (page, text, x0, y0, x1, y1, page width, page height)."""
    out = subprocess.run(["pdftotext", "-bbox", str(path), "-"], capture_output=True, text=True, check=True).stdout
    found = []
    for number, page in enumerate(re.findall(r"<page (.*?)</page>", out, re.DOTALL), start=1):
        width, height = (float(value) for value in re.findall(r'(?:width|height)="([\d.]+)"', page)[:2])
        for x0, y0, x1, y1, word in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', page
        ):
            found.append((number, word, float(x0), float(y0), float(x1), float(y1), width, height))
    return found


DPI = 50


def rendered(path: Path, folder: Path, name: str) -> list[Image.Image]:
    """The pages at DPI dots per inch, in grey."""
    subprocess.run(["pdftoppm", "-r", str(DPI), "-gray", str(path), str(folder / name)], check=True)
    return [Image.open(page).convert("L") for page in sorted(folder.glob(f"{name}-*.pgm"))]


def changed_outside_text(
    source: Image.Image, output: Image.Image, words: list[tuple[float, float, float, float]]
) -> float:
    """The share of the page's pixels that differ (by over a quarter of the grey scale)
    outside the words' boxes (points, each grown by 3 points and out to the line's height)."""
    scale = DPI / 72
    difference = ImageChops.difference(source, output).point(lambda value: 255 if value > 64 else 0)
    mask = Image.new("L", difference.size, 255)
    for x0, y0, x1, y1 in words:
        box = (int((x0 - 3) * scale), int((y0 - 3) * scale), int((x1 + 3) * scale) + 1, int((y1 + 3) * scale) + 1)
        mask.paste(0, box)
    outside = ImageChops.multiply(difference, mask)
    return sum(outside.histogram()[1:]) / (difference.width * difference.height)


def overlapping(words: list[tuple[int, str, float, float, float, float, float, float]]) -> list[tuple[str, str]]:
    """The pairs of words on one page whose boxes share over a quarter of the smaller one."""
    found = []
    for index, (page, word, x0, y0, x1, y1, *_) in enumerate(words):
        for other_page, other, a0, b0, a1, b1, *_ in words[index + 1 :]:
            if other_page != page:
                continue
            across, down = min(x1, a1) - max(x0, a0), min(y1, b1) - max(y0, b0)
            if across <= 0 or down <= 0:
                continue
            smaller = min((x1 - x0) * (y1 - y0), (a1 - a0) * (b1 - b0))
            if across * down > 0.25 * smaller:
                found.append((word, other))
    return found


def page_words(words: list[tuple[int, str, float, float, float, float, float, float]], page: int) -> list[str]:
    return [word for number, word, *_ in words if number == page]


def test_the_original_layout_keeps_every_page_and_image_and_replaces_the_text(
    auth_client, translated, manual, tmp_path
):
    entry, content = exported(auth_client, translated, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert "original" in str(entry["fileName"])
    assert pdfinfo_sizes(out) == pdfinfo_sizes(manual)
    assert images(out) == images(manual)
    source_words = words_with_boxes(manual)
    output_words = words_with_boxes(out)
    # Every character on its page.
    assert all(
        x0 >= 0 and x1 <= width + 0.5 and y0 >= 0 and y1 <= height + 0.5
        for *_, x0, y0, x1, y1, width, height in [(page, word, *box) for page, word, *box in output_words]
    )
    # The translation's words are there; the prose words of the source are gone from the pages.
    text = " ".join(word for _, word, *_ in output_words)
    assert fake_translation("Compression") in text or fake_translation("compression") in text
    prose = {word for _, word, *_ in source_words if re.fullmatch(r"[a-z]{6,}", word) and word != word[::-1]}
    left = {word for word in prose if re.search(rf"\b{word}\b", text)}
    assert len(prose) > 200
    assert not left, sorted(left)


def test_the_original_layout_is_the_source_page_outside_its_text_blocks(auth_client, translated, manual, tmp_path):
    _, content = exported(auth_client, translated, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)
    boxes = words_with_boxes(manual) + words_with_boxes(out)
    sources, outputs = rendered(manual, tmp_path, "source"), rendered(out, tmp_path, "output")

    assert len(sources) == len(outputs) == 4
    for number, (source, output) in enumerate(zip(sources, outputs, strict=True), start=1):
        assert source.size == output.size
        words = [tuple(box[:4]) for page, _, *box in boxes if page == number]
        # Rules, the shaded listing and the table, the running header and the page number stay.
        assert changed_outside_text(source, output, words) < 0.002, number  # type: ignore[arg-type]
        # The listing (code, kept as it was) is still the source's text.
    listing = "   -1      1200k     500k       350k    914704"
    assert listing.split() == [word for word in page_words(words_with_boxes(out), 1) if word in listing.split()][:6]


def test_bilingual_puts_each_source_page_before_its_translated_page(auth_client, translated, manual, tmp_path):
    entry, content = exported(auth_client, translated, layout="original", bilingual=True)
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert "original" in str(entry["fileName"])
    assert "bilingual" in str(entry["fileName"])
    sizes = pdfinfo_sizes(manual)
    assert pdfinfo_sizes(out) == [size for size in sizes for _ in range(2)]
    assert images(out) == 2 * images(manual)
    source_words, output_words = words_with_boxes(manual), words_with_boxes(out)
    for page in range(1, 5):
        assert page_words(output_words, 2 * page - 1) == page_words(source_words, page)
        assert page_words(output_words, 2 * page) != page_words(source_words, page)


def test_the_same_options_give_the_same_file_and_a_bad_combination_is_refused(auth_client, translated):
    first, _ = exported(auth_client, translated, layout="original")
    again = auth_client.post(
        f"/v1/projects/{translated}/export", {"format": "Pdf", "layout": "original"}, format="json"
    )
    assert [entry["fileName"] for entry in again.json()] == [first["fileName"]]
    assert again.json()[0]["layout"] == "original"
    exports_before = ExportFile.objects.count()

    refused = auth_client.post(
        f"/v1/projects/{translated}/export", {"format": "Epub", "layout": "original"}, format="json"
    )
    unknown = auth_client.post(
        f"/v1/projects/{translated}/export", {"format": "Pdf", "layout": "facing"}, format="json"
    )

    assert refused.status_code == 400
    assert refused.json()["code"] == "validation_error"
    assert "layout" in refused.json()["errors"]
    assert unknown.status_code == 400
    assert "layout" in unknown.json()["errors"]
    assert ExportFile.objects.count() == exports_before


def test_all_and_the_archive_include_the_original_layout_pdf(auth_client, translated):
    response = auth_client.post(f"/v1/projects/{translated}/export", {"format": "All"}, format="json")
    assert response.status_code == 202
    pdfs = sorted(entry["layout"] for entry in response.json() if entry["format"] == "Pdf")
    assert pdfs == ["original", "reflow"]
    run_export_queue()
    archive = next(entry for entry in response.json() if entry["format"] == "Archive")
    content = b"".join(auth_client.get(archive["url"]).streaming_content)
    with zipfile.ZipFile(io.BytesIO(content)) as opened:
        manifest = json.loads(opened.read("manifest.json"))
        original = opened.read("book-original.pdf")
    assert original.startswith(b"%PDF")
    assert {"name": "book-original.pdf", "format": "Pdf", "layout": "original", "mimeType": "application/pdf"} in (
        manifest["files"]
    )


def test_a_failed_page_and_a_scanned_page_are_the_source_pages_with_a_mark(
    user, auth_client, settings, manual, tmp_path
):
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scans_pdf(pages_render(manual, 3, 3, dpi=100), dpi=100))
    mixed = tmp_path / "mixed.pdf"
    subprocess.run(["pdfunite", str(manual), str(scan), str(mixed)], check=True)
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {"fail_pages": [2], "fail_attempts": 0}  # page 2 always fails
    credit(user, "50")
    project_id = book_from_upload(auth_client, mixed.read_bytes(), target="es")
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    statuses = list(Project.objects.get(pk=project_id).pages.order_by("index").values_list("status", flat=True))
    assert statuses == ["Approved", "Failed", "Approved", "Approved", "Approved"]

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert pdfinfo_sizes(out) == pdfinfo_sizes(mixed)
    source_words, output_words = words_with_boxes(mixed), words_with_boxes(out)
    for page in (2, 5):
        marks = [word for number, word, _, _, _, y1, *_ in output_words if number == page and y1 < 16]
        body = [word for number, word, _, _, _, y1, *_ in output_words if number == page and y1 >= 16]
        assert marks, page
        assert body == page_words(source_words, page)
    assert "scanned" in " ".join(word for number, word, *_ in output_words if number == 5)
    sources, outputs = rendered(mixed, tmp_path, "source"), rendered(out, tmp_path, "output")
    for page in (2, 5):
        top = int(16 * DPI / 72)
        source, output = sources[page - 1], outputs[page - 1]
        lower = (0, top, source.width, source.height)
        assert ImageChops.difference(source.crop(lower), output.crop(lower)).getbbox() is None, page


def test_a_scanned_page_is_its_scan_with_the_translation_set_in_its_text_regions(user, auth_client, settings, tmp_path):
    """The FAQ's pages 25-27 scanned (turned, blurred, noisy, JPEG), read by Tesseract and
    translated by the local engine: each page is its scan, with the translated paragraphs'
    lines covered in the paper's colour and the translation set there as real text."""
    settings.TRANSLATION_ENGINE = "local"
    faq = _faq_with("tesseract", "apertium")
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scans_pdf(scan_pages(faq, 25, 27)))  # pages 26 and 27 share a running header
    credit(user, "50")
    project_id = book_from_upload(auth_client, scan.read_bytes(), target="es")
    normalize_run(project_id=project_id, page_limit=10)
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    pages = list(Project.objects.get(pk=project_id).pages.order_by("index"))
    assert [(page.status, page.layout["source"]) for page in pages] == [("Approved", "ocr")] * 3

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)
    assert pdfinfo_sizes(out) == pdfinfo_sizes(scan)
    assert images(out) == images(scan)  # the scan kept, nothing drawn over it but the covers and the text
    output_words = words_with_boxes(out)
    assert all(0 <= x0 <= x1 <= width and 0 <= y0 <= y1 <= height for *_, x0, y0, x1, y1, width, height in output_words)
    assert not overlapping(output_words)  # each paragraph's lines apart, and apart from the next's
    subprocess.run(["pdftoppm", "-r", "72", "-gray", str(out), str(tmp_path / "page")], check=True)
    for page in pages:
        found = set(re.findall(r"[^\W\d_]{4,}", " ".join(page_words(output_words, page.index)).lower()))
        wanted = set(re.findall(r"[^\W\d_]{4,}", page.translation.lower()))
        assert len(wanted & found) >= 0.9 * len(wanted), (page.index, sorted(wanted - found))
        image = Image.open(tmp_path / f"page-{page.index}.pgm")  # one pixel a point
        paper = statistics.median(image.crop((8, 100, 60, image.height - 100)).getdata())  # the left margin
        furniture = {item["text"] for item in page.furniture}
        covered = kept = 0
        for text, (x0, top, x1, bottom) in scan_lines_on_page(page.layout, image.width, image.height):
            inside = sorted(image.crop((round(x0), round(top), round(x1), round(bottom))).getdata())
            if text in furniture:  # a running header, a page number: as the scan shows it
                kept += 1
                assert inside[0] < 100, text
            elif len(text) > 30:  # a line of prose: covered in the paper's colour, the translation set on it
                covered += 1
                cover = inside[len(inside) * 4 // 5]  # between the letters: the cover
                assert abs(cover - paper) <= 8, (text, cover, paper)
        assert covered > 20
        assert kept >= 1


def scan_lines_on_page(
    layout: dict[str, Any], width: float, height: float
) -> Iterator[tuple[str, tuple[float, float, float, float]]]:
    """Each OCR line's text and box in points of the page (y down): the scan levelled on
    the page about its centre (docs/exports.md, "Scanned pages"), the layout in pixels of
    the upright, level image, which the skew made larger than the page."""
    turn = math.radians(layout["skew"])
    scale = layout["width"] / (width * abs(math.cos(turn)) + height * abs(math.sin(turn)))
    for block in layout["blocks"]:
        for line in block["lines"]:
            x0, top, x1, bottom = line["bbox"]
            yield (
                " ".join(span["text"] for span in line["spans"]),
                (
                    (x0 - layout["width"] / 2) / scale + width / 2,
                    (top - layout["height"] / 2) / scale + height / 2,
                    (x1 - layout["width"] / 2) / scale + width / 2,
                    (bottom - layout["height"] / 2) / scale + height / 2,
                ),
            )


# Words of each script that replace the translation's words, its Markdown kept.
SCRIPT_WORDS = {
    "ar": [
        "كان",
        "البيت",
        "القديم",
        "في",
        "نهاية",
        "الطريق",
        "الطويل",
        "وكل",
        "صباح",
        "يمشي",
        "الأطفال",
        "إلى",
        "النهر",
    ],
    "ja": ["古い家は", "長い道の", "終わりに", "立っていた", "毎朝", "子供たちは", "川まで", "歩いた"],
}


def original_in_another_script(project_id: str, language: str, out: Path) -> Path:
    """The book's original-layout Pdf written to `out` with its translation's words
    replaced by SCRIPT_WORDS[language] (its Markdown kept), as a book in that language."""
    book = book_for(project=Project.objects.get(pk=project_id))
    words = SCRIPT_WORDS[language]

    def in_script(markdown: str) -> str:
        count = iter(range(1_000_000))
        return re.sub(r"(?<![`#\w-])[^\W\d_]{2,}", lambda _: words[next(count) % len(words)], markdown)

    def pages() -> Iterator[ExportPage]:
        for page in book.pages():
            yield replace(page, translation=in_script(page.translation))

    with out.open("wb") as file:
        renderer_for("Pdf").render(
            replace(book, language=language, pages=pages), ExportOptions(layout="original"), file
        )
    return out


@pytest.mark.parametrize("language", ["ar", "ja"])
def test_a_translation_in_another_script_is_set_in_place_in_its_own_fonts(language, translated, manual, tmp_path):
    words = SCRIPT_WORDS[language]
    out = original_in_another_script(translated, language, tmp_path / "out.pdf")

    assert pdfinfo_sizes(out) == pdfinfo_sizes(manual)
    fonts = assert_fonts_embedded(out)
    assert any(EXPECTED_FONT[language] in name for name in fonts), fonts
    output_words = words_with_boxes(out)
    text = " ".join(word for _, word, *_ in output_words)
    letters = set("".join(words))  # counted as letters: CJK text is cut between characters
    assert sum(char in letters for char in text) > 1000
    assert all(
        x0 >= 0 and x1 <= width + 0.5 and y0 >= 0 and y1 <= height + 0.5
        for _, _, x0, y0, x1, y1, width, height in output_words
    )


def test_pages_left_out_of_the_book_are_left_out_of_the_file(user, auth_client, settings, manual, tmp_path):
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    credit(user, "50")
    project_id = book_from_upload(auth_client, manual.read_bytes(), target="es")
    second = Project.objects.get(pk=project_id).pages.get(index=2)
    left_out = auth_client.patch(f"/v1/projects/{project_id}/pages/{second.pk}", {"included": False}, format="json")
    assert left_out.status_code == 200, left_out.json()
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()

    _, content = exported(auth_client, project_id, layout="original", bilingual=True)
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    sizes = pdfinfo_sizes(manual)
    assert pdfinfo_sizes(out) == [sizes[index] for index in (0, 0, 2, 2, 3, 3)]
    source_words, output_words = words_with_boxes(manual), words_with_boxes(out)
    for sheet, page in ((1, 1), (3, 3), (5, 4)):
        assert page_words(output_words, sheet) == page_words(source_words, page)


def test_a_book_written_in_parts_is_the_same_book(translated, manual, tmp_path, monkeypatch):
    """The output saved and opened again every page (CHECKPOINT_PAGES, which bounds qpdf's
    memory on long books) has the same pages, text, images and links as one written whole."""
    book = book_for(project=Project.objects.get(pk=translated))
    outputs = []
    for checkpoint in (pdf_original.CHECKPOINT_PAGES, 1):
        monkeypatch.setattr(pdf_original, "CHECKPOINT_PAGES", checkpoint)
        out = tmp_path / f"out-{checkpoint}.pdf"
        with out.open("wb") as file:
            renderer_for("Pdf").render(book, ExportOptions(layout="original", bilingual=True), file)
        outputs.append(out)
    whole, parts = outputs

    assert pdfinfo_sizes(parts) == pdfinfo_sizes(whole) == [size for size in pdfinfo_sizes(manual) for _ in range(2)]
    assert images(parts) == images(whole) == 2 * images(manual)
    assert words_with_boxes(parts) == words_with_boxes(whole)
    with pikepdf.open(whole) as first, pikepdf.open(parts) as second:
        assert [len(page.obj.get("/Annots", [])) for page in second.pages] == [
            len(page.obj.get("/Annots", [])) for page in first.pages
        ]


_ESSAY = (
    "The database is built from the source files by a tool that merges what each package installs, "
    "so that applications only read the result and never parse the sources themselves, which keeps "
    "them quick to start and lets the packages change their files without breaking any reader of them. "
)


@pytest.mark.parametrize("alignment", ["justified", "ragged"])
def test_a_justified_page_is_set_justified_and_a_ragged_one_ragged(user, auth_client, settings, tmp_path, alignment):
    from reportlab.lib.enums import TA_JUSTIFY, TA_LEFT
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import Paragraph

    from tests.projects.test_tables import _pdf

    style = ParagraphStyle(
        "essay",
        parent=getSampleStyleSheet()["BodyText"],
        alignment=TA_JUSTIFY if alignment == "justified" else TA_LEFT,
    )
    words = (_ESSAY * 2).split()
    # Five paragraphs, each its words turned a little further, so their lines break apart.
    pdf = _pdf(tmp_path / "essay.pdf", [Paragraph(" ".join(words[n * 7 :] + words[: n * 7]), style) for n in range(5)])
    credit(user, "50")
    book = book_for(project=Project.objects.get(pk=translated_by_stand_in(auth_client, settings, pdf)))
    out = tmp_path / "out.pdf"
    with out.open("wb") as file:
        renderer_for("Pdf").render(book, ExportOptions(layout="original"), file)

    def line_ends(path: Path) -> list[float]:
        ends: dict[int, float] = {}
        for page, _, _, y0, x1, *_ in words_with_boxes(path):
            if page == 1:
                ends[round(y0)] = max(ends.get(round(y0), 0.0), x1)
        return list(ends.values())

    assert fake_translation("files") in {word for _, word, *_ in words_with_boxes(out)}
    ends = line_ends(out)
    at_the_edge = sum(max(ends) - end <= 2.0 for end in ends) / len(ends)
    if alignment == "justified":
        assert at_the_edge >= 0.7, sorted(ends)  # every line but each paragraph's last
    else:
        assert at_the_edge <= 0.3, sorted(ends)
