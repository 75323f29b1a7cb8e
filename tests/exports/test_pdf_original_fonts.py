"""The original-layout Pdf sets a translation in the face metric-compatible with its
source's font (docs/exports.md, "Fitting"): Liberation Serif where the source is set in
Times or another serif, Liberation Sans for Helvetica, Liberation Mono for Courier, in the
source's weight and slant, for Latin, Greek and Cyrillic; other scripts keep their own
fonts. Read from real font names (those of the Debian manuals) and from exports of a
Times- and Helvetica-set manual (Valgrind's) translated through the API."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pikepdf
import pytest

from exports.renderers._pdf_fonts import MONO, SANS, SERIF, SourceFont, assign_families, source_font
from tests.exports.test_pdf import EXPECTED_FONT
from tests.exports.test_pdf_original import (
    SCRIPT_WORDS,
    debian_window,
    exported,
    original_in_another_script,
    pdfinfo_sizes,
    translated_by_stand_in,
    words_with_boxes,
)
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_processing import credit, run_worker
from tests.support.openai_server import fake_translation

needs_poppler = pytest.mark.skipif(shutil.which("pdffonts") is None, reason="needs poppler-utils")

# Names as pdffonts lists them in the Debian manuals the tests read (bzip2, shared-mime-info,
# fontconfig: URW's clones of Times, Helvetica, Courier and Palladio; Valgrind: the base-14
# fonts themselves; libtasn1, nettle: TeX's Computer Modern; the Debian FAQ: Charis SIL, FreeMono).
SOURCE_FONTS = {
    "XDVKOU+NimbusRomNo9L-Regu": SourceFont(SERIF),
    "AMYDOG+NimbusRomNo9L-ReguItal": SourceFont(SERIF, italic=True),
    "SEBOZB+NimbusRomNo9L-Medi": SourceFont(SERIF, bold=True),
    "PYRIYB+NimbusSanL-Bold": SourceFont(SANS, bold=True),
    "QYKIKI+NimbusMonL-Regu": SourceFont(MONO),
    "ZWXELK+NimbusMonL-Bold": SourceFont(MONO, bold=True),
    "NLFAKE+URWPalladioL-Roma": SourceFont(SERIF),
    "FJZXJA+URWPalladioL-Ital": SourceFont(SERIF, italic=True),
    "Times-Roman": SourceFont(SERIF),
    "Times-Bold": SourceFont(SERIF, bold=True),
    "Times-Italic": SourceFont(SERIF, italic=True),
    "Helvetica-Bold": SourceFont(SANS, bold=True),
    "Courier": SourceFont(MONO),
    "Courier-Oblique": SourceFont(MONO, italic=True),
    "Courier-Bold": SourceFont(MONO, bold=True),
    "PWNLKT+CMR10": SourceFont(SERIF),
    "HCAYNJ+CMR9": SourceFont(SERIF),
    "ECEDAZ+CMBX12": SourceFont(SERIF, bold=True),
    "LCHKSO+CMB10": SourceFont(SERIF, bold=True),
    "VNFIXT+CMTI10": SourceFont(SERIF, italic=True),
    "GCLVEE+CMSL10": SourceFont(SERIF, italic=True),
    "FFYKXD+CMSS10": SourceFont(SANS),
    "HASPPL+CMTT12": SourceFont(MONO),
    "SMDJOQ+CMSLTT10": SourceFont(MONO, italic=True),
    "LLXGNW+CharisSIL": SourceFont(SERIF),
    "PPSGID+CharisSIL-Bold": SourceFont(SERIF, bold=True),
    "BIVSXA+CharisSIL-BoldItalic": SourceFont(SERIF, bold=True, italic=True),
    "EPZGFQ+FreeMono": SourceFont(MONO),
    "SDFAAU+FreeMonoBoldOblique": SourceFont(MONO, bold=True, italic=True),
}


@pytest.mark.parametrize(("name", "expected"), SOURCE_FONTS.items())
def test_a_source_font_is_read_from_its_pdf_name(name: str, expected: SourceFont) -> None:
    assert source_font(name) == expected


def test_a_line_without_a_font_name_has_no_source_font() -> None:
    assert source_font("") is None


def test_latin_greek_and_cyrillic_take_the_metric_family_and_other_scripts_keep_theirs() -> None:
    text = "Road Дорога Δρόμος 道の終わり طريق"
    families = assign_families(text, language="en", latin="liberation-sans")
    by_word = {word: families[text.index(word)] for word in text.split()}

    assert by_word == {
        "Road": "liberation-sans",
        "Дорога": "liberation-sans",
        "Δρόμος": "liberation-sans",
        "道の終わり": "ja",
        "طريق": "arabic",
    }
    assert assign_families(text, language="en")[0] == "latin"  # the reflowed Pdf's script fonts


def test_a_letter_the_metric_face_lacks_falls_back_to_the_script_font() -> None:
    # U+0370 (Greek capital letter heta) is in Noto Serif, not in Liberation Serif.
    families = assign_families("a\u0370b", language="en", latin="liberation-serif")
    assert families == ["liberation-serif", "latin", "liberation-serif"]


FIRST, LAST = 22, 23  # the Valgrind manual: option headings in Courier, prose in Times, a Helvetica heading


def fonts_listed(pdf: Path) -> dict[str, bool]:
    """Each font pdffonts lists (its subset prefix dropped): whether it is embedded. (The
    Valgrind manual names the base-14 fonts without embedding them.)"""
    out = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    listed: dict[str, bool] = {}
    for row in out.splitlines()[2:]:
        columns = row.split()
        listed[columns[0].split("+")[-1]] = listed.get(columns[0].split("+")[-1], True) and columns[-5] == "yes"
    return listed


@pytest.fixture
def valgrind(tmp_path: Path) -> Path:
    return debian_window("valgrind", FIRST, LAST, tmp_path / "valgrind.pdf")


@pytest.fixture
def translated(local_storage, user, auth_client, settings, valgrind):  # type: ignore[no-untyped-def]
    """The manual's pages translated by the stand-in (words spelled backwards): the project id."""
    credit(user, "50")
    return translated_by_stand_in(auth_client, settings, valgrind)


@needs_poppler
@pytest.mark.django_db
def test_a_times_and_helvetica_book_is_set_in_the_liberation_faces(auth_client, translated, valgrind, tmp_path):
    _, content = exported(auth_client, translated, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    fonts = fonts_listed(out)
    added = {name for name in fonts if name not in fonts_listed(valgrind)}
    assert all(fonts[name] for name in added), fonts
    # Times paragraphs in Liberation Serif, the Helvetica heading in Liberation Sans Bold,
    # the Courier options' code in Liberation Mono; nothing in the script fonts.
    assert {"LiberationSerif", "LiberationSans-Bold", "LiberationMono"} <= added, added
    assert not any(name.startswith(("Noto", "DejaVu")) for name in added), added
    text = " ".join(word for _, word, *_ in words_with_boxes(out))
    assert fake_translation("Basic Options") in text


def font_sizes(pdf: Path) -> Counter[tuple[str, float]]:
    """How often each (font, size) is selected (`Tf`) in the pages' content and the forms
    they draw (the original-layout Pdf's overlays), the font without its subset prefix."""
    found: Counter[tuple[str, float]] = Counter()

    def read(content: pikepdf.Object) -> None:
        resources = content.get("/Resources", pikepdf.Dictionary())
        fonts = {str(key): str(value.get("/BaseFont")) for key, value in resources.get("/Font", {}).items()}
        for operands, operator in pikepdf.parse_content_stream(content):
            if str(operator) == "Tf":
                found[(fonts.get(str(operands[0]), "").split("+")[-1].lstrip("/"), round(float(operands[1]), 1))] += 1
            elif str(operator) == "Do":
                drawn = resources["/XObject"][str(operands[0])]
                if drawn.get("/Subtype") == "/Form":
                    read(drawn)

    with pikepdf.open(pdf) as opened:
        for page in opened.pages:
            read(page.obj)
    return found


@needs_poppler
@pytest.mark.django_db
def test_a_translation_as_long_as_its_source_is_set_at_the_source_size(
    local_storage, user, auth_client, settings, valgrind, tmp_path
):
    """The echo engine's "translation" is the source text: in the metric-compatible faces,
    at the source's line spacing, it fits each paragraph's box at the source's size."""
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    credit(user, "50")
    project_id = book_from_upload(auth_client, valgrind.read_bytes(), target="es")
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    _, content = exported(auth_client, project_id, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)

    source_sizes = {size for _, size in font_sizes(valgrind)}
    set_in = Counter({key: count for key, count in font_sizes(out).items() if key[0].startswith("Liberation")})
    at_source_size = sum(count for (_, size), count in set_in.items() if size in source_sizes)
    assert set_in.total() > 50
    assert at_source_size / set_in.total() > 0.9, set_in


@needs_poppler
@pytest.mark.django_db
@pytest.mark.parametrize("language", ["ar", "ja"])
def test_a_translation_in_another_script_keeps_its_script_fonts(language, translated, valgrind, tmp_path):
    words = SCRIPT_WORDS[language]
    out = original_in_another_script(translated, language, tmp_path / "out.pdf")

    assert pdfinfo_sizes(out) == pdfinfo_sizes(valgrind)
    fonts = fonts_listed(out)
    assert any(EXPECTED_FONT[language] in name and embedded for name, embedded in fonts.items()), fonts
    text = "".join(word for _, word, *_ in words_with_boxes(out))
    assert sum(char in set("".join(words)) for char in text) > 300
