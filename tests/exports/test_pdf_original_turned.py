"""The original-layout Pdf of turned pages (docs/exports.md, "Turned pages"): pages of the
bzip2 manual stored as a landscape page is — drawn turned, with /Rotate turning them back
for the reader (90 and 270 degrees) — come back turned the same way, their text replaced and
the translation set upright as the reader sees the page."""

from __future__ import annotations

import re
from pathlib import Path

import pikepdf
import pytest

from projects.models import Project
from projects.services.normalize import normalize_run
from tests.exports.test_pdf_original import (
    FIRST,
    LAST,
    changed_outside_text,
    debian_window,
    exported,
    page_words,
    pdfinfo_sizes,
    rendered,
    translated_by_stand_in,
    words_with_boxes,
)
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_book_structure import _faq_with
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import scan_pages, scans_pdf
from tests.support.openai_server import fake_translation

pytestmark = [pytest.mark.django_db]

TURNS = {1: 90, 3: 270}  # page -> its /Rotate; page 2 stays as it was


def turned_copy(source: Path, out: Path, turns: dict[int, int] = TURNS) -> Path:
    """The PDF with each page of `turns` drawn turned against its /Rotate: shown, it is the
    page it was (text, drawings and all), as a landscape page in a portrait book is stored."""
    with pikepdf.open(source) as pdf:
        for number, rotation in turns.items():
            page = pdf.pages[number - 1]
            x0, y0, x1, y1 = (float(value) for value in page.mediabox)
            width, height = x1 - x0, y1 - y0
            # Shown point (x, y) -> stored point: the inverse of the turn /Rotate makes.
            cm = {90: f"0 1 -1 0 {height} 0", 270: f"0 -1 1 0 0 {width}"}[rotation]
            page.contents_add(f"q {cm} cm 1 0 0 1 {-x0} {-y0} cm\n".encode(), prepend=True)
            page.contents_add(b"\nQ\n")
            page.mediabox = pikepdf.Array([0, 0, height, width])
            if "/CropBox" in page.obj:
                del page.obj["/CropBox"]
            if "/Annots" in page.obj:
                del page.obj["/Annots"]  # links would need turning too; not what this test reads
            page.obj.Rotate = rotation
        pdf.save(out)
    return out


@pytest.fixture
def turned(tmp_path: Path) -> Path:
    return turned_copy(debian_window("bzip2", FIRST, LAST, tmp_path / "bzip2.pdf"), tmp_path / "turned.pdf")


def test_turned_pages_keep_their_turn_and_read_upright_in_the_translation(
    user, auth_client, settings, turned, tmp_path
):
    credit(user, "50")
    project_id = translated_by_stand_in(auth_client, settings, turned)
    pages = Project.objects.get(pk=project_id).pages.order_by("index")
    assert {page.status for page in pages} == {"Approved"}
    # Read as shown: the turned pages' layouts are portrait, as their lines are, with the
    # running header found as on the other pages.
    assert [(page.layout["width"], page.layout["height"]) for page in pages] == [(612.0, 792.0)] * 4
    assert all(page.furniture for page in pages)

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert pdfinfo_sizes(out) == pdfinfo_sizes(turned)  # sizes and "(rotated 90 degrees)"
    with pikepdf.open(out) as pdf:
        assert [int(page.obj.get("/Rotate", 0)) for page in pdf.pages] == [90, 0, 270, 0]
    source_words, output_words = words_with_boxes(turned), words_with_boxes(out)
    sources, outputs = rendered(turned, tmp_path, "source"), rendered(out, tmp_path, "output")
    for page in TURNS:
        source, output = sources[page - 1], outputs[page - 1]
        assert source.height > source.width  # shown as the portrait page it was (stored landscape)
        assert source.size == output.size
        words = [tuple(box[:4]) for number, _, *box in source_words + output_words if number == page]
        assert changed_outside_text(source, output, words) < 0.002, page  # type: ignore[arg-type]
        # The source's prose gone, the translation there, read by poppler as upright lines.
        before, after = page_words(source_words, page), page_words(output_words, page)
        prose = {word for word in before if word.isalpha() and word.islower() and len(word) >= 6}
        assert len(prose) > 30
        assert not prose & set(after), sorted(prose & set(after))
        spelled = {fake_translation(word) for word in prose}
        assert len(spelled & set(after)) >= 0.8 * len(spelled)
        upright = [
            (x1 - x0) > (y1 - y0)
            for number, word, x0, y0, x1, y1, *_ in output_words
            if number == page and len(word) >= 6 and word in spelled
        ]
        assert upright
        assert all(upright)
        # Every character inside the page as shown (poppler gives a turned page's words as
        # shown, and its size unturned).
        assert all(
            0 <= x0 <= x1 <= height + 0.5 and 0 <= y0 <= y1 <= width + 0.5
            for number, _, x0, y0, x1, y1, width, height in output_words
            if number == page
        )


def test_a_turned_scanned_page_is_its_scan_with_the_translation_set_upright(user, auth_client, settings, tmp_path):
    """A scan stored turned (its image drawn sideways, /Rotate turning it back), read by
    Tesseract as shown: the translation is set in its text regions, upright as shown."""
    settings.TRANSLATION_ENGINE = "local"
    faq = _faq_with("tesseract", "apertium")
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scans_pdf(scan_pages(faq, 25, 25)))
    turned = turned_copy(scan, tmp_path / "turned.pdf", {1: 90})
    credit(user, "50")
    project_id = book_from_upload(auth_client, turned.read_bytes(), target="es")
    normalize_run(project_id=project_id, page_limit=10)
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    (page,) = Project.objects.get(pk=project_id).pages.all()
    assert (page.status, page.layout["source"], page.layout["rotation"]) == ("Approved", "ocr", 0)

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert pdfinfo_sizes(out) == pdfinfo_sizes(turned)
    words = [word for word in words_with_boxes(out) if word[0] == 1]
    found = set(re.findall(r"[^\W\d_]{4,}", " ".join(word for _, word, *_ in words).lower()))
    wanted = set(re.findall(r"[^\W\d_]{4,}", page.translation.lower()))
    assert len(wanted & found) >= 0.9 * len(wanted), sorted(wanted - found)
    long_words = [(x1 - x0) > (y1 - y0) for _, word, x0, y0, x1, y1, *_ in words if len(word) >= 6]
    assert long_words
    assert all(long_words)  # upright as shown
