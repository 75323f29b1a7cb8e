"""The original-layout Pdf (docs/exports.md, "The original layout"): pages of a real manual
(Debian's bzip2 manual) uploaded, normalized and translated through the API — by the
OpenAI-compatible stand-in, whose "translation" spells every word backwards, so that no
source word can pass for the translation — then exported with `layout: original` and read
back with poppler: the same pages, sizes and images as the source, the source's words gone
from the translated blocks and the translation's words there, every character on its
page, and the page outside the text blocks as it was."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageChops
from rest_framework.test import APIClient

from exports.models import ExportFile
from projects.models import Project
from tests.exports.test_export_api import run_export_queue
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import debian_pdf, pdf_window
from tests.support.openai_server import OpenAIServer, fake_translation

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils"),
]

FIRST, LAST = 9, 12  # the bzip2 manual: prose, options, a preformatted table, a heading


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):  # type: ignore[no-untyped-def]
    return local_storage


@pytest.fixture
def manual(tmp_path: Path) -> Path:
    try:
        source = debian_pdf("bzip2")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return pdf_window(source, FIRST, LAST, tmp_path / "bzip2.pdf")


@pytest.fixture
def translated(user, auth_client, settings, manual):  # type: ignore[no-untyped-def]
    """The manual's pages translated by the stand-in (words spelled backwards): the project id."""
    credit(user, "50")
    with OpenAIServer() as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_API_KEY = server.url, server.model, ""
        project_id = book_from_upload(auth_client, manual.read_bytes(), target="es")
        assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
        run_worker()
    assert set(Project.objects.get(pk=project_id).pages.values_list("status", flat=True)) == {"Approved"}
    return project_id


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


def rendered(path: Path, folder: Path, name: str) -> list[Image.Image]:
    prefix = folder / name
    subprocess.run(["pdftoppm", "-r", "50", "-gray", str(path), str(prefix)], check=True)
    return [Image.open(page).convert("L") for page in sorted(folder.glob(f"{name}-*.pgm"))]


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
    assert all(0 <= x0 and x1 <= width + 0.5 and 0 <= y0 and y1 <= height + 0.5 for *_, x0, y0, x1, y1, width, height in [
        (page, word, *box) for page, word, *box in output_words
    ])
    # The translation's words are there; the prose words of the source are gone from the pages.
    text = " ".join(word for _, word, *_ in output_words)
    assert fake_translation("Compression") in text or fake_translation("compression") in text
    prose = {word for _, word, *_ in source_words if re.fullmatch(r"[a-z]{6,}", word) and word != word[::-1]}
    left = {word for word in prose if re.search(rf"\b{word}\b", text)}
    assert len(left) < 0.1 * len(prose), sorted(left)[:40]
