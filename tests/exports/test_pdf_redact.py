"""Text removal from content streams (exports/renderers/_pdf_redact.py, docs/exports.md
"Removing the text"): each text show measured from its fonts' widths and the text state,
dropped when the middle of its extent lies in a box, in the page's Form XObjects too (the
page given its own copy of a form whose text it loses, the other pages keeping theirs).

Read back with poppler: pdftotext says which words are left and where (-bbox), and where
lines end (-bbox-layout), independently of the measuring under test. The PDFs are made
with reportlab (the constructs the Debian manuals lack: a line continued by a second show,
forms, invisible text), converted by cairo where a composite font is wanted, and real pages
of Debian manuals."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pikepdf
import pytest
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas

from exports.renderers._pdf_redact import Box, Shown, text_remove, text_shows
from tests.support.corpus import debian_pdf

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
HEIGHT = 792.0
Word = tuple[str, float, float, float, float]  # text, x0, top, x1, bottom (pdftotext: y down)


def words(path: Path, page: int = 1) -> list[Word]:
    """The words poppler reads on a page, with their boxes."""
    out = subprocess.run(
        ["pdftotext", "-f", str(page), "-l", str(page), "-bbox", str(path), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        (text, float(x0), float(y0), float(x1), float(y1))
        for x0, y0, x1, y1, text in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', out
        )
    ]


def word(path: Path, text: str, page: int = 1) -> Word:
    (found,) = [each for each in words(path, page) if each[0] == text]
    return found


def box_around(*found: Word) -> Box:
    """A box in page space (y up) around words pdftotext found, a point of margin."""
    return Box(
        min(each[1] for each in found) - 1,
        HEIGHT - max(each[4] for each in found) - 1,
        max(each[3] for each in found) + 1,
        HEIGHT - min(each[2] for each in found) + 1,
    )


def removed(source: Path, target: Path, boxes: list[Box], page: int = 0) -> int:
    with pikepdf.open(source) as pdf:
        dropped = text_remove(pdf, pdf.pages[page], boxes)
        pdf.save(target)
    return dropped


def made(path: Path, draw: Callable[[Canvas], None]) -> Path:
    canvas = Canvas(str(path), pagesize=(612, HEIGHT))
    draw(canvas)
    canvas.save()
    return path


def one_line_two_shows(canvas: Canvas) -> None:
    """One line, one text object, two `Tj`s: the second continues the first (no `Td`)."""
    text = canvas.beginText(72, 700)
    text.setFont("Helvetica", 12)
    text.textOut("alpha beta ")
    text.textOut("gamma delta epsilon")
    canvas.drawText(text)


@pytest.mark.parametrize(
    ("gone", "left"),
    [(["gamma", "delta", "epsilon"], ["alpha", "beta"]), (["alpha", "beta"], ["gamma", "delta", "epsilon"])],
    ids=["second-show", "first-show"],
)
def test_a_show_continuing_a_line_is_removed_by_its_own_extent(tmp_path, gone, left):
    source = made(tmp_path / "line.pdf", one_line_two_shows)
    before = {each[0]: each for each in words(source)}
    target = tmp_path / "removed.pdf"

    assert removed(source, target, [box_around(*(before[text] for text in gone))]) == 1

    after = {each[0]: each for each in words(target)}
    assert sorted(after) == sorted(left)
    for kept in left:
        # Where it was: a dropped show leaves its advance behind.
        assert after[kept][1] == pytest.approx(before[kept][1], abs=0.05)
        assert after[kept][3] == pytest.approx(before[kept][3], abs=0.05)


def test_a_show_goes_or_stays_whole_by_its_middle(tmp_path):
    source = made(tmp_path / "line.pdf", one_line_two_shows)
    beta, gamma, epsilon = word(source, "beta"), word(source, "gamma"), word(source, "epsilon")
    middle = (gamma[1] + epsilon[3]) / 2  # of "gamma delta epsilon", as poppler places its words
    target = tmp_path / "removed.pdf"

    # From "beta" (not the middle of "alpha beta ") to just past the middle of the second show.
    assert removed(source, target, [Box(beta[1] - 1, 690, middle + 1.5, 720)]) == 1
    assert [each[0] for each in words(target)] == ["alpha", "beta"]

    assert removed(source, target, [Box(beta[1] - 1, 690, middle - 1.5, 720)]) == 0


def test_operators_with_damaged_operands_are_kept_unread(tmp_path):
    source = made(tmp_path / "line.pdf", one_line_two_shows)
    before = {each[0]: each for each in words(source)}
    with pikepdf.open(source, allow_overwriting_input=True) as pdf:
        page = pdf.pages[0]
        damaged = [
            pikepdf.ContentStreamInstruction([pikepdf.String("wide")], pikepdf.Operator("Tz")),
            pikepdf.ContentStreamInstruction([pikepdf.Array([pikepdf.Name.F1])], pikepdf.Operator("TJ")),
        ]
        stream = pikepdf.unparse_content_stream([*damaged, *pikepdf.parse_content_stream(page)])
        page.Contents = pdf.make_stream(stream)
        pdf.save(source)
    target = tmp_path / "removed.pdf"

    assert removed(source, target, [box_around(*(before[text] for text in ("gamma", "delta", "epsilon")))]) == 1

    assert [each[0] for each in words(target)] == ["alpha", "beta"]
    with pikepdf.open(target) as pdf:
        assert pdf.pages[0].Contents.read_bytes().startswith(b"(wide) Tz")


def test_invisible_text_is_removed_as_text(tmp_path):
    def draw(canvas: Canvas) -> None:
        canvas.setFont("Helvetica", 12)
        canvas.drawString(72, 700, "visible line")
        text = canvas.beginText(72, 600)
        text.setFont("Helvetica", 12)
        text.setTextRenderMode(3)
        text.textLine("hidden layer")
        canvas.drawText(text)

    source = made(tmp_path / "ocr.pdf", draw)
    with pikepdf.open(source) as pdf:
        assert b"3 Tr" in pdf.pages[0].Contents.read_bytes()
    target = tmp_path / "removed.pdf"

    assert removed(source, target, [box_around(word(source, "hidden"), word(source, "layer"))]) == 1

    assert [each[0] for each in words(target)] == ["visible", "line"]


def test_the_text_state_is_followed_to_the_end_of_a_show(tmp_path):
    def draw(canvas: Canvas) -> None:
        text = canvas.beginText(72, 700)
        text.setFont("Helvetica", 12)
        text.setCharSpace(1.5)
        text.setWordSpace(4)
        text.setHorizScale(80)
        text.setRise(3)
        text.textOut("spaced out words")
        canvas.drawText(text)

    source = made(tmp_path / "state.pdf", draw)
    found = words(source)  # poppler cuts the spaced letters into words of their own
    first, last = found[0], found[-1]
    with pikepdf.open(source) as pdf:
        (shown,) = text_shows(pdf, pdf.pages[0])

    assert shown.x0 == pytest.approx(first[1], abs=0.1)
    # The text matrix moves by the character spacing after the last glyph too (poppler
    # leaves it out of the word's box), scaled as the glyphs are.
    assert shown.x1 == pytest.approx(last[3] + 1.5 * 0.8, abs=0.1)
    assert shown.y0 == pytest.approx(703)


def dejavu_line(canvas: Canvas) -> None:
    pdfmetrics.registerFont(TTFont("RedactDejaVu", str(DEJAVU)))
    canvas.setFont("RedactDejaVu", 11)
    canvas.drawString(90, 700, "Достопримечательности")  # no space: cairo sets one in a font of its own


def helvetica_line(canvas: Canvas) -> None:
    canvas.setFont("Helvetica-Bold", 13)
    canvas.drawString(90, 700, "Wide WAVES of text")


def fonts_shown(path: Path, font_is: Callable[[pikepdf.Dictionary], bool]) -> list[bool]:
    """font_is of each font text is shown in (reportlab sets a font it shows nothing in)."""
    with pikepdf.open(path) as pdf:
        page = pdf.pages[0]
        names, current = set(), None
        for each in pikepdf.parse_content_stream(page, "Tf Tj TJ"):
            if str(each.operator) == "Tf":
                current = str(each.operands[0])
            else:
                names.add(current)
        return [font_is(page.Resources.Font[name]) for name in sorted(names)]


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs fonts-dejavu-core")
@pytest.mark.parametrize(
    ("draw", "through_cairo", "font_is"),
    [
        # reportlab writes a standard font without /Widths (the viewer's metrics, the AFM's)
        (helvetica_line, False, lambda font: font.Subtype == "/Type1" and "/Widths" not in font),
        # and a TrueType font as a subset of single-byte codes of its own, with /Widths
        (dejavu_line, False, lambda font: font.Subtype == "/TrueType" and "/Widths" in font),
        # cairo writes the Cyrillic as a composite font: two-byte CIDs, /W and /DW
        (
            dejavu_line,
            True,
            lambda font: (
                font.Subtype == "/Type0" and font.Encoding == "/Identity-H" and "/W" in font.DescendantFonts[0]
            ),
        ),
    ],
    ids=["standard-14", "truetype-subset", "cid-identity-h"],
)
def test_widths_end_a_show_where_poppler_ends_its_last_word(tmp_path, draw, through_cairo, font_is):
    source = made(tmp_path / "font.pdf", draw)
    if through_cairo:
        if shutil.which("pdftocairo") is None:
            pytest.skip("needs poppler-utils' pdftocairo")
        converted = tmp_path / "cairo.pdf"
        subprocess.run(["pdftocairo", "-pdf", str(source), str(converted)], check=True)
        source = converted
    assert fonts_shown(source, font_is) == [True]
    found = words(source)
    with pikepdf.open(source) as pdf:
        shows = text_shows(pdf, pdf.pages[0])

    assert min(shown.x0 for shown in shows) == pytest.approx(found[0][1], abs=0.5)
    assert max(shown.x1 for shown in shows) == pytest.approx(found[-1][3], abs=0.5)


def forms_two_pages(canvas: Canvas, *, nested: bool = False, twice: bool = False) -> None:
    """A header form (text) and a logo form (text, elsewhere) drawn on two pages; `nested`:
    the header drawn inside a frame form; `twice`: page 1 draws the header a second time,
    lower down."""
    canvas.beginForm("header")
    canvas.setFont("Helvetica", 14)
    canvas.drawString(0, 0, "Running header words")
    canvas.endForm()
    canvas.beginForm("logo")
    canvas.setFont("Helvetica", 9)
    canvas.drawString(0, 0, "Logo caption")
    canvas.endForm()
    if nested:
        canvas.beginForm("frame")
        canvas.translate(20, 10)
        canvas.doForm("header")
        canvas.endForm()
    for number in (1, 2):
        canvas.saveState()
        canvas.translate(52, 730)
        canvas.doForm("frame" if nested else "header")
        canvas.restoreState()
        if twice and number == 1:
            canvas.saveState()
            canvas.translate(72, 400)
            canvas.doForm("header")
            canvas.restoreState()
        canvas.saveState()
        canvas.translate(400, 60)
        canvas.doForm("logo")
        canvas.restoreState()
        canvas.setFont("Helvetica", 12)
        canvas.drawString(72, 600, f"Body of page {number}")
        canvas.showPage()


XObjects = dict[str, tuple[int, int]]


def xobjects(page: pikepdf.Page) -> XObjects:
    return {name: value.objgen for name, value in page.Resources.XObject.items()}


def removed_in_forms(source: Path, target: Path, boxes: list[Box]) -> tuple[int, list[XObjects], list[XObjects]]:
    """text_remove on page 1, with every page's XObjects (name: object) before and after it,
    read in one session (a saved file numbers its objects anew)."""
    with pikepdf.open(source) as pdf:
        before = [xobjects(page) for page in pdf.pages]
        dropped = text_remove(pdf, pdf.pages[0], boxes)
        after = [xobjects(page) for page in pdf.pages]
        pdf.save(target)
    return dropped, before, after


def text_of(path: Path, page: int) -> str:
    return subprocess.run(
        ["pdftotext", "-f", str(page), "-l", str(page), str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def test_text_in_a_shared_form_is_removed_from_this_page_only(tmp_path):
    source = made(tmp_path / "forms.pdf", forms_two_pages)
    with pikepdf.open(source, allow_overwriting_input=True) as pdf:
        # The header drawn at half size and moved: its /Matrix is followed as well as the CTM.
        header = next(value for name, value in pdf.pages[0].Resources.XObject.items() if "header" in name)
        header.Matrix = pikepdf.Array([0.5, 0, 0, 0.5, 30, -20])
        pdf.save(source)
    header_words = [word(source, text) for text in ("Running", "header", "words")]
    assert header_words[0][1] == pytest.approx(52 + 30, abs=0.5)
    assert header_words[2][4] - header_words[2][2] < 10
    target = tmp_path / "removed.pdf"

    dropped, before, after = removed_in_forms(source, target, [box_around(*header_words)])

    assert dropped == 1
    assert "header" not in text_of(target, 1)
    assert "Logo caption" in text_of(target, 1)
    assert "Body of page 1" in text_of(target, 1)
    assert "Running header words" in text_of(target, 2)
    assert after[1] == before[1]
    (copy,) = set(after[0]) - set(before[0])
    assert after[0][copy] not in before[0].values()
    logo = next(name for name in before[0] if "logo" in name)
    assert after[0][logo] == after[1][logo]
    with pikepdf.open(target) as pdf:
        assert f"{copy} Do".encode() in pdf.pages[0].Contents.read_bytes()


def test_a_form_without_text_in_the_boxes_stays_shared(tmp_path):
    source = made(tmp_path / "forms.pdf", forms_two_pages)
    body = [word(source, text) for text in ("Body", "of", "page")]
    target = tmp_path / "removed.pdf"

    dropped, before, after = removed_in_forms(source, target, [box_around(*body)])

    assert dropped == 1
    assert after == before
    assert "Body" not in text_of(target, 1)
    assert "Running header words" in text_of(target, 1)


def test_text_in_a_nested_form_is_removed_through_copies_of_both(tmp_path):
    source = made(tmp_path / "nested.pdf", lambda canvas: forms_two_pages(canvas, nested=True))
    header_words = [word(source, text) for text in ("Running", "header", "words")]
    assert header_words[0][1] == pytest.approx(72, abs=0.5)
    target = tmp_path / "removed.pdf"

    with pikepdf.open(source) as pdf:
        before = [xobjects(page) for page in pdf.pages]
        (frame,) = [value for name, value in pdf.pages[0].Resources.XObject.items() if "frame" in name]
        (original,) = [value.objgen for value in frame.Resources.XObject.values()]
        assert text_remove(pdf, pdf.pages[0], [box_around(*header_words)]) == 1
        assert xobjects(pdf.pages[1]) == before[1]
        (name,) = set(xobjects(pdf.pages[0])) - set(before[0])
        frame = pdf.pages[0].Resources.XObject[name]
        assert "frame" in name
        # The copied frame draws a copied header, under a name of its own beside the original.
        (header,) = [value for value in frame.Resources.XObject.values() if value.objgen != original]
        assert len(frame.Resources.XObject) == 2
        assert b"Running" not in header.read_bytes()
        pdf.save(target)

    assert "header" not in text_of(target, 1)
    assert "Running header words" in text_of(target, 2)


def test_a_form_drawn_twice_on_a_page_loses_its_text_only_where_the_box_is(tmp_path):
    source = made(tmp_path / "twice.pdf", lambda canvas: forms_two_pages(canvas, twice=True))
    header = ("Running", "header", "words")
    top, lower = (
        [each for each in words(source) if each[0] in header and (each[2] < 100) == upper] for upper in (True, False)
    )
    assert len(top) == len(lower) == 3
    target = tmp_path / "removed.pdf"

    dropped, before, after = removed_in_forms(source, target, [box_around(*top)])

    assert dropped == 1
    left = [each for each in words(target) if each[0] in header]
    assert [each[0] for each in left] == list(header)
    for kept, was in zip(left, lower, strict=True):
        assert kept[1:] == pytest.approx(was[1:], abs=0.05)
    assert len(after[0]) == len(before[0]) + 1
    assert "Running header words" in text_of(target, 2)


def pdftotext_lines(path: Path, page: int) -> list[tuple[str, float, float, float, float]]:
    """The lines poppler reads (-bbox-layout): text, x0, top, x1, bottom (y down)."""
    out = subprocess.run(
        ["pdftotext", "-f", str(page), "-l", str(page), "-bbox-layout", str(path), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        (" ".join(re.findall(r">([^<]*)</word>", inside)), float(x0), float(y0), float(x1), float(y1))
        for x0, y0, x1, y1, inside in re.findall(
            r'<line xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</line>', out, re.DOTALL
        )
    ]


@pytest.mark.parametrize(
    ("book", "page"),
    [
        ("bzip2", 10),  # URW Type 1 fonts with /Widths, TeX's TJ with kerning
        ("valgrind", 30),  # the standard fonts themselves, no /Widths (FOP)
        ("shared-mime-info", 5),
        ("debian-faq", 20),  # composite TrueType fonts, Identity-H (XeTeX)
    ],
)
def test_shows_of_a_manual_page_end_where_poppler_ends_their_lines(book, page):
    try:
        path = debian_pdf(book)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    lines = pdftotext_lines(path, page)
    with pikepdf.open(path) as pdf:
        height = float(pdf.pages[page - 1].mediabox[3])
        shows = text_shows(pdf, pdf.pages[page - 1])
    # Each show belongs to the line whose box holds its start and baseline (the nearest
    # baseline where line boxes overlap).
    owned: dict[int, list[Shown]] = {index: [] for index in range(len(lines))}
    for shown in shows:
        baseline = height - shown.y0
        holding = [
            index
            for index, (_, x0, top, x1, bottom) in enumerate(lines)
            if top - 0.5 <= baseline <= bottom + 0.5 and x0 - 2 <= shown.x0 <= x1 + 1
        ]
        if holding:
            owned[min(holding, key=lambda index: lines[index][4])].append(shown)

    assert len(lines) > 25
    assert sum(len(each) for each in owned.values()) > 0.9 * len(shows)
    for index, (text, _, _, x1, _) in enumerate(lines):
        assert owned[index], text
        assert max(shown.x1 for shown in owned[index]) == pytest.approx(x1, abs=1.0), text


def test_rules_drawn_in_removed_text_go_with_it_and_other_drawings_stay(tmp_path):
    """TeX draws an underscore as a short stroked line and an underline as a thin filled
    rectangle: inside a removed line they go with its text. A thicker bar, a curve and a
    rule outside the boxes stay."""

    def draw(canvas: Canvas) -> None:
        canvas.setFont("Helvetica", 12)
        canvas.drawString(72, 700, "size_t length")
        canvas.setLineWidth(0.4)
        canvas.line(98, 699, 104, 699)  # the underscore: a stroked line
        canvas.rect(72, 697, 60, 0.5, stroke=0, fill=1)  # an underline: a thin filled rectangle
        canvas.rect(140, 697, 20, 6, stroke=0, fill=1)  # a bar: too thick to be a rule of text
        canvas.bezier(72, 701, 80, 705, 90, 705, 100, 701)  # a curve
        canvas.line(72, 650, 132, 650)  # a rule under another line, outside the box
        canvas.drawString(72, 652, "kept line")

    source = made(tmp_path / "rules.pdf", draw)
    target = tmp_path / "out.pdf"
    box = Box(70, 695, 170, 712)

    removed(source, target, [box])

    assert [each[0] for each in words(target)] == ["kept", "line"]
    with pikepdf.open(target) as pdf:
        operators = [str(instruction.operator) for instruction in pikepdf.parse_content_stream(pdf.pages[0])]
    assert operators.count("re") == 1  # the bar
    assert operators.count("c") == 1  # the curve
    assert operators.count("S") == 2  # the curve's stroke and the rule outside the box
