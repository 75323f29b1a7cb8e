"""A listing on a scanned page in the original-layout Pdf (docs/book-structure.md, "Code on a
scan"; docs/exports.md, "Scanned pages"): the bzip2 manual's page of return values scanned
(turned, blurred, noisy, JPEG), read by Tesseract at intake and translated by the local
engine. The listing is a code block, left untranslated, and the export shows it as the scan
does, where the prose under it is covered and set in Spanish."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from projects.models import Project
from projects.services.normalize import normalize_run
from tests.exports.test_pdf_original import exported, scan_lines_on_page, words_with_boxes
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import debian_pdf, scan_pages, scans_pdf

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.slow,
    pytest.mark.skipif(
        any(shutil.which(program) is None for program in ("pdftoppm", "tesseract", "apertium")),
        reason="poppler-utils, tesseract-ocr and apertium (scripts/lib.sh installs them)",
    ),
]

LISTING_PAGE = 24  # the bzip2 manual's page 21: a listing of return values, prose under it


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):  # type: ignore[no-untyped-def]
    return local_storage


def test_a_scanned_listing_stays_as_the_scan_shows_it_and_its_prose_is_translated(
    user, auth_client, settings, tmp_path: Path
) -> None:
    settings.TRANSLATION_ENGINE = "local"
    try:
        manual = debian_pdf("bzip2")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scans_pdf(scan_pages(manual, LISTING_PAGE, LISTING_PAGE)))
    credit(user, "50")
    project_id = book_from_upload(auth_client, scan.read_bytes(), target="es")
    normalize_run(project_id=project_id, page_limit=10)
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    (page,) = Project.objects.get(pk=project_id).pages.all()
    assert (page.status, page.layout["source"]) == ("Approved", "ocr")

    # The listing is a code block, copied into the translation; the prose is translated.
    blocks = re.findall(r"^```\n(.*?)\n```$", page.source_markdown, flags=re.DOTALL | re.MULTILINE)
    (listing,) = [block for block in blocks if "BZ_PARAM_ERROR" in block]
    assert "if b is NULL or buf is NULL" in listing
    assert f"```\n{listing}\n```" in page.translation
    assert "data which was read from the compressed file" in page.source_markdown
    assert "data which was read from the compressed file" not in page.translation

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)
    subprocess.run(["pdftoppm", "-r", "72", "-gray", str(out), str(tmp_path / "out")], check=True)
    (output,) = [Image.open(path) for path in sorted(tmp_path.glob("out-*.pgm"))]  # one pixel a point
    paper = statistics.median(output.crop((8, 100, 60, output.height - 100)).getdata())  # the left margin
    middles = [((x0 + x1) / 2, (y0 + y1) / 2) for _, _, x0, y0, x1, y1, *_ in words_with_boxes(out)]
    mono = [  # each layout line's flag, in the order scan_lines_on_page gives them
        all(span["mono"] for span in line["spans"]) for block in page.layout["blocks"] for line in block["lines"]
    ]
    assert sum(mono) >= 15
    kept = covered = 0
    lines = scan_lines_on_page(page.layout, output.width, output.height)
    for (text, (x0, top, x1, bottom)), is_mono in zip(lines, mono, strict=True):
        inside = sorted(output.crop((round(x0), round(top), round(x1), round(bottom))).getdata())
        set_there = sum(x0 <= x <= x1 and top <= y <= bottom for x, y in middles)
        if is_mono:  # a listing's line: the scan's ink, nothing covered, nothing set on it
            kept += 1
            assert inside[0] < inside[len(inside) // 2] - 60, text  # ink on the listing's grey
            assert set_there == 0, text
        elif "data which was read from the compressed file" in text:  # prose: covered, translated there
            covered += 1
            assert abs(inside[len(inside) * 4 // 5] - paper) <= 8, text
            assert set_there >= 5, text
    assert kept >= 15
    assert covered == 1
