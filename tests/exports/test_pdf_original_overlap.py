"""The original-layout Pdf never sets a translation over what it keeps: on the API
reference of GNU Nettle's manual (Texinfo: each definition a kept monospace name beside a
`[Function]` label that the book structure joins with its description), no word of the
output stands over another (docs/exports.md, "Fitting": a region is cut clear of the lines
it does not replace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from projects.models import Project
from tests.exports.test_pdf_original import exported, overlapping, words_with_boxes
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import debian_pdf, pdf_window
from tests.support.openai_server import OpenAIServer

pytestmark = [pytest.mark.django_db]

FIRST, LAST = 14, 16  # Nettle's reference: SHA-2 constants, functions and their descriptions


def test_no_translation_is_set_over_a_line_the_page_keeps(user, auth_client, settings, tmp_path):
    try:
        source = pdf_window(debian_pdf("nettle"), FIRST, LAST, tmp_path / "nettle.pdf")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    credit(user, "50")
    with OpenAIServer() as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_API_KEY = server.url, server.model, ""
        project_id = book_from_upload(auth_client, source.read_bytes(), target="es")
        assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
        run_worker()
    assert set(Project.objects.get(pk=project_id).pages.values_list("status", flat=True)) == {"Approved"}

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert not overlapping(words_with_boxes(source))  # the source's own words stand apart
    output_words = words_with_boxes(Path(out))
    assert len(output_words) > 500
    assert not overlapping(output_words)
