"""The original-layout Pdf never sets a translation over what it keeps: on the API
reference of GNU Nettle's manual (Texinfo: each definition a kept monospace name beside a
`[Function]` label that the book structure joins with its description), no word of the
output stands over another (docs/exports.md, "Fitting": a region is cut clear of the lines
it does not replace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.exports.test_pdf_original import (
    debian_window,
    exported,
    overlapping,
    translated_by_stand_in,
    words_with_boxes,
)
from tests.projects.test_processing import credit

pytestmark = [pytest.mark.django_db]

FIRST, LAST = 14, 16  # Nettle's reference: SHA-2 constants, functions and their descriptions


def test_no_translation_is_set_over_a_line_the_page_keeps(user, auth_client, settings, tmp_path):
    source = debian_window("nettle", FIRST, LAST, tmp_path / "nettle.pdf")
    credit(user, "50")
    project_id = translated_by_stand_in(auth_client, settings, source)

    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    assert not overlapping(words_with_boxes(source))  # the source's own words stand apart
    output_words = words_with_boxes(Path(out))
    assert len(output_words) > 500
    assert not overlapping(output_words)
