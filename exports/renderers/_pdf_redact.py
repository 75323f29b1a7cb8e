"""Removing text from a PDF page's content stream (the original-layout Pdf, docs/exports.md).

`text_remove(pdf, page, boxes)` parses the page's content stream with pikepdf (qpdf's
tokenizer) and follows the graphics and text state as a viewer does: `q`/`Q` and `cm` (the
CTM, and the text state parameters `q` saves), `BT`/`ET`, `Tm`, `Td`, `TD`, `T*`, `TL`,
`Tf` (font and size), `Tc`, `Tw`, `Tz`, `Ts`, and the text matrix advanced after each
show by the widths of the glyphs it shows. So every text-showing operator (`Tj`, `TJ`,
`'`, `"`) has an extent: its baseline from its first glyph's origin to where its last
glyph's advance ends, in page space (`text_shows` lists them).

The rule: a show is dropped when the middle of its extent lies in one of `boxes`. A show is
one unit: one that spans two boxes, or a removed and a kept region (TeX writes one `TJ` a
line; most producers one a word or a run of one font), goes or stays whole by its middle.
A dropped show is replaced by a `TJ` of its displacement alone (`[-n] TJ`, no glyphs), so
the text after it on the same line stays where it was; a dropped `'` or `"` keeps its move
to the next line (and the spacings `"` sets). The rest of the stream (drawings, images,
other text) is written back unchanged. The text is gone from the file, not painted over:
it cannot be copied out. Text in rendering mode 3 (`3 Tr`, invisible: the text layer OCR
puts over a scan, which is what makes an old page's text copyable) is text like any other:
it is measured and dropped the same way. Rules drawn as part of the text (TeX's underscore
a short stroked line, an underline a thin filled rectangle: `_Rule`) are dropped with it
when they lie wholly inside a box.

Widths come from the font dictionaries, read through pikepdf: a simple font's `/Widths`
from `/FirstChar` (codes outside them: the descriptor's `/MissingWidth`), the 14 standard
fonts' AFM metrics (reportlab's `pdfmetrics`, by the glyph names of the font's encoding and
its `/Differences`) where such a font has no `/Widths`, a Type 3 font's widths through its
`/FontMatrix`, and a composite (Type 0) font's `/W` and `/DW` with two-byte codes read as
CIDs (`Identity-H`). Word spacing applies to the single-byte code 32, as in viewers.

Form XObjects the page draws (`Do` of a `/Subtype /Form`) are followed with their
`/Matrix` and the CTM at the call, nested ones too (`FORM_DEPTH` levels deep, at most
`FORM_WALKS` forms a page), and their shows are measured and dropped the same way. A
form is often shared (a header or a logo drawn on every page): when text inside one is
dropped, the page gets its own copy of the form, under a new name in the page's
`/Resources` written into that `Do`, so other pages (and other draws of it on the same
page) keep it whole; a form none of whose text is dropped stays shared, not copied.

What it does not measure: a composite font whose CMap is not `Identity-H`/`Identity-V` (a
predefined CJK CMap such as `UniJIS-UCS2-H`, or one embedded as a stream) is read as
two-byte codes at its `/DW` width, as the CMap that maps codes to CIDs is not read;
vertical writing advances by `/DW2` alone (its per-glyph `/W2` is not read); a font with no
widths and none of the 14 standard names measures zero, so its shows fall back to their
origin. Text in annotations' appearance streams, patterns and Type 3 glyph procedures is
not the page's content stream and is not touched.
"""

from __future__ import annotations

import functools
import math
import sys
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pikepdf
from reportlab.pdfbase import pdfmetrics

Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
FORM_DEPTH = 8  # nested Form XObjects followed (a form that draws itself stops here)
FORM_WALKS = 256  # forms walked on one page at most (forms drawing forms many times over)
_SHOWS = frozenset({"Tj", "TJ", "'", '"'})
# Path construction, and what paints a rule: TeX draws an underscore as a short stroked
# line (`0 0 m 3.27 0 l S`) or a filled rectangle (`re f`), an underline likewise: part of
# the text its line shows, dropped with it.
_PATH_BUILDS = frozenset({"m", "l", "c", "v", "y", "h", "re", "W", "W*"})
_FILLS = frozenset({"f", "F", "f*"})
_STROKES = frozenset({"S", "s"})
RULE_THICKNESS = 1.0  # points: a rule this thin wholly inside a removed line is part of its text
_STREAM_KEYS = frozenset({"/Length", "/Filter", "/DecodeParms"})
# Names the PDF reference gives for the standard fonts' families (Arial, Times New Roman).
_FAMILIES = {
    "Arial": "Helvetica",
    "ArialMT": "Helvetica",
    "Helvetica": "Helvetica",
    "TimesNewRoman": "Times",
    "TimesNewRomanPSMT": "Times",
    "Times": "Times",
    "CourierNew": "Courier",
    "CourierNewPSMT": "Courier",
    "Courier": "Courier",
}


@dataclass(frozen=True)
class Box:
    """A rectangle in PDF page space (points, y up)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def holds(self, x: float, y: float) -> bool:
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1


@dataclass(frozen=True)
class Shown:
    """A text show's extent in page space: its baseline from the first glyph's origin
    (x0, y0) to the end of the last glyph's advance (x1, y1); `depth` is 0 on the page, 1
    inside a form it draws, and so on."""

    x0: float
    y0: float
    x1: float
    y1: float
    depth: int = 0

    @property
    def middle(self) -> tuple[float, float]:
        return (self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2


def multiply(first: Matrix, second: Matrix) -> Matrix:
    """first x second, as PDF matrices compose (a point is transformed by first, then second)."""
    a, b, c, d, e, f = first
    a2, b2, c2, d2, e2, f2 = second
    return (
        a * a2 + b * c2,
        a * b2 + b * d2,
        c * a2 + d * c2,
        c * b2 + d * d2,
        e * a2 + f * c2 + e2,
        e * b2 + f * d2 + f2,
    )


def _numbers(operands: Iterable[Any]) -> list[float]:
    return [float(value) for value in operands]


def _matrix(operands: Iterable[Any]) -> Matrix:
    a, b, c, d, e, f = _numbers(operands)
    return (a, b, c, d, e, f)


def _translate(x: float, y: float) -> Matrix:
    return (1.0, 0.0, 0.0, 1.0, x, y)


@dataclass(frozen=True)
class _Font:
    """A font's advances per unit of font size: by code (a simple font) or CID (a
    composite one read two bytes a code); `vertical`: the advance goes along y."""

    widths: Mapping[int, float]
    missing: float = 0.0
    two_byte: bool = False
    vertical: bool = False
    by_byte: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_byte", tuple(self.widths.get(code, self.missing) for code in range(256)))

    def measure(self, data: bytes) -> tuple[float, int, int]:
        """The glyphs' advances summed, how many glyphs, and how many take word spacing
        (the single-byte code 32)."""
        if not self.two_byte:
            return sum(map(self.by_byte.__getitem__, data)), len(data), data.count(32)
        codes = array("H", data[: len(data) // 2 * 2])
        if sys.byteorder == "little":
            codes.byteswap()
        widths, missing = self.widths, self.missing
        return sum(widths.get(code, missing) for code in codes), len(codes), 0


_NO_FONT = _Font({})


def _standard_name(base_font: str) -> str:
    """The standard-14 name a /BaseFont stands for ("ABCDEF+Times-Roman", "Arial,Bold")."""
    name = base_font.removeprefix("/")
    prefix, plus, rest = name.partition("+")
    if plus and len(prefix) == 6 and prefix.isalpha() and prefix.isupper():
        name = rest
    if name in pdfmetrics.standardFonts:
        return name
    family_name, _, style = name.replace(",", "-").partition("-")
    family = _FAMILIES.get(family_name)
    if family is None:
        return name
    bold, italic = "Bold" in style, "Italic" in style or "Oblique" in style
    if family == "Times":
        return "Times-" + ("BoldItalic" if bold and italic else "Bold" if bold else "Italic" if italic else "Roman")
    suffix = "BoldOblique" if bold and italic else "Bold" if bold else "Oblique" if italic else ""
    return f"{family}-{suffix}" if suffix else family


@functools.cache
def _glyph_widths(name: str) -> Mapping[str, int]:
    return dict(pdfmetrics.TypeFace(name).glyphWidths)


@functools.cache
def _encoding_names(name: str) -> tuple[str | None, ...]:
    return tuple(pdfmetrics.Encoding(name).vector)


def _standard_widths(font: pikepdf.Dictionary) -> dict[int, float] | None:
    """A standard-14 font's widths by code under its encoding, from reportlab's AFM metrics."""
    name = _standard_name(str(font.get("/BaseFont", "")))
    if name not in pdfmetrics.standardFonts:
        return None
    glyph_widths = _glyph_widths(name)
    base = {"Symbol": "SymbolEncoding", "ZapfDingbats": "ZapfDingbatsEncoding"}.get(name, "StandardEncoding")
    encoding = font.get("/Encoding")
    differences: Iterable[Any] = ()
    if isinstance(encoding, pikepdf.Dictionary):
        differences = encoding.get("/Differences", ())
        encoding = encoding.get("/BaseEncoding")
    if isinstance(encoding, pikepdf.Name) and str(encoding)[1:] in pdfmetrics.standardEncodings:
        base = str(encoding)[1:]
    names = list(_encoding_names(base))
    code = 0
    for item in differences:
        if isinstance(item, pikepdf.Name):
            if 0 <= code < len(names):
                names[code] = str(item)[1:]
            code += 1
        else:
            code = int(item)
    return {
        code: glyph_widths[glyph] / 1000
        for code, glyph in enumerate(names)
        if glyph is not None and glyph in glyph_widths
    }


def _cid_widths(array: Any) -> dict[int, float]:
    """A CIDFont's /W: `c [w1 w2 ...]` (widths from c on) and `c_first c_last w` runs."""
    widths: dict[int, float] = {}
    if not isinstance(array, pikepdf.Array):
        return widths
    items = list(array)
    index = 0
    while index + 1 < len(items):
        first, after = int(items[index]), items[index + 1]
        if isinstance(after, pikepdf.Array):
            widths.update((first + offset, float(width) / 1000) for offset, width in enumerate(after))
            index += 2
        elif index + 2 < len(items):
            last, width = int(after), float(items[index + 2]) / 1000
            widths.update((cid, width) for cid in range(first, min(last, first + 0xFFFF) + 1))
            index += 3
        else:
            break
    return widths


def _composite(font: pikepdf.Dictionary) -> _Font:
    encoding = font.get("/Encoding")
    encoding_name = str(encoding) if isinstance(encoding, pikepdf.Name) else ""
    descendants = font.get("/DescendantFonts")
    cid_font = descendants[0] if isinstance(descendants, pikepdf.Array) and len(descendants) else pikepdf.Dictionary()
    if encoding_name.endswith("-V"):
        vertical = cid_font.get("/DW2")
        advance = float(vertical[1]) / 1000 if isinstance(vertical, pikepdf.Array) and len(vertical) == 2 else -1.0
        return _Font({}, advance, two_byte=True, vertical=True)
    widths = _cid_widths(cid_font.get("/W")) if encoding_name == "/Identity-H" else {}
    return _Font(widths, float(cid_font.get("/DW", 1000)) / 1000, two_byte=True)


def _font_read(font: pikepdf.Dictionary) -> _Font:
    subtype = font.get("/Subtype")
    if subtype == pikepdf.Name.Type0:
        return _composite(font)
    scale = 0.001
    if subtype == pikepdf.Name.Type3:
        font_matrix = font.get("/FontMatrix")
        scale = float(font_matrix[0]) if isinstance(font_matrix, pikepdf.Array) and len(font_matrix) == 6 else scale
    descriptor = font.get("/FontDescriptor")
    missing = float(descriptor.get("/MissingWidth", 0)) * scale if isinstance(descriptor, pikepdf.Dictionary) else 0.0
    widths = font.get("/Widths")
    if isinstance(widths, pikepdf.Array):
        first = int(font.get("/FirstChar", 0))
        return _Font({first + offset: float(width) * scale for offset, width in enumerate(widths)}, missing)
    return _Font(_standard_widths(font) or {}, missing)


def _inherited_resources(page: pikepdf.Object) -> pikepdf.Dictionary:
    """The page's /Resources, or the one it inherits from the page tree."""
    node: Any = page
    hops = 0
    while isinstance(node, pikepdf.Dictionary) and hops < 64:
        resources = node.get("/Resources")
        if isinstance(resources, pikepdf.Dictionary):
            return resources
        node, hops = node.get("/Parent"), hops + 1
    return pikepdf.Dictionary()


def _with_xobjects(resources: pikepdf.Dictionary, added: Mapping[str, pikepdf.Object]) -> pikepdf.Dictionary:
    """A copy of `resources` (its entries shared, not copied) whose /XObject also holds `added`."""
    copy = pikepdf.Dictionary({key: value for key, value in resources.items()})
    xobjects = resources.get("/XObject")
    entries = {key: value for key, value in xobjects.items()} if isinstance(xobjects, pikepdf.Dictionary) else {}
    entries.update(added)
    copy.XObject = pikepdf.Dictionary(entries)
    return copy


def _stream_write(pdf: pikepdf.Pdf, instructions: list[Any]) -> pikepdf.Stream:
    # Kept compressed until the file is written (a book's changed pages wait in memory).
    stream = pikepdf.Stream(pdf, b"")
    stream.write(zlib.compress(pikepdf.unparse_content_stream(instructions)), filter=pikepdf.Name.FlateDecode)
    return stream


def _instruction(operator: str, *operands: Any) -> pikepdf.ContentStreamInstruction:
    return pikepdf.ContentStreamInstruction(list(operands), pikepdf.Operator(operator))


@dataclass
class _TextState:
    """The text state parameters, which `q`/`Q` save and restore with the CTM."""

    font: _Font = _NO_FONT
    size: float = 0.0
    char_spacing: float = 0.0
    word_spacing: float = 0.0
    scale: float = 1.0
    leading: float = 0.0
    rise: float = 0.0

    def displacement(self, shown: Iterable[Any]) -> float:
        """How far the strings and TJ numbers of a show move the text matrix (text space)."""
        total = 0.0
        for item in shown:
            if isinstance(item, (int, float, Decimal)):
                total -= float(item) / 1000 * self.size
            elif isinstance(item, pikepdf.String):
                advances, glyphs, spaced = self.font.measure(bytes(item))
                total += advances * self.size + glyphs * self.char_spacing + spaced * self.word_spacing
        return total if self.font.vertical else total * self.scale


def _scale(ctm: Matrix) -> float:
    """How much the CTM scales a length (its mean axis scale)."""
    a, b, c, d, _, _ = ctm
    return math.sqrt(abs(a * d - b * c))


@dataclass
class _Rule:
    """A path as it is built, read as a rule: its points in page space, whether it is only
    rectangles (each at most RULE_THICKNESS thick) or only straight lines, or neither."""

    points: list[tuple[float, float]] = field(default_factory=list)
    rectangles: bool = True
    lines: bool = True

    def add(self, operator: str, operands: Sequence[Any], ctm: Matrix) -> None:
        a, b, c, d, e, f = ctm
        try:
            numbers = _numbers(operands)
        except (TypeError, ValueError):
            self.rectangles = self.lines = False
            return
        if operator == "re" and len(numbers) == 4:
            x, y, width, height = numbers
            self.lines = False
            across, up = math.hypot(a * width, b * width), math.hypot(c * height, d * height)
            self.rectangles = self.rectangles and min(across, up) <= RULE_THICKNESS
            self.points += [(a * u + c * v + e, b * u + d * v + f) for u in (x, x + width) for v in (y, y + height)]
        elif operator in ("m", "l") and len(numbers) == 2:
            x, y = numbers
            self.rectangles = False
            self.points.append((a * x + c * y + e, b * x + d * y + f))
        elif operator != "h":
            self.rectangles = self.lines = False  # curves, clipping

    def removed(self, operator: str, line_width: float, boxes: Sequence[Box]) -> bool:
        """Whether painting the path with `operator` draws a rule of removed text: thin
        rectangles filled, or thin straight lines stroked, every point in one of `boxes`."""
        drawn = (operator in _FILLS and self.rectangles) or (
            operator in _STROKES and self.lines and line_width <= RULE_THICKNESS
        )
        return drawn and bool(self.points) and any(all(box.holds(x, y) for x, y in self.points) for box in boxes)


@dataclass
class _Walk:
    """One page's walk: the fonts read, the shows measured, the forms copied."""

    pdf: pikepdf.Pdf
    boxes: Sequence[Box]
    record: bool = False
    shown: list[Shown] = field(default_factory=list)
    dropped: int = 0
    fonts: dict[tuple[int, int], _Font] = field(default_factory=dict)
    copies: dict[tuple[tuple[int, int], bytes], pikepdf.Object] = field(default_factory=dict)
    forms_walked: int = 0

    def font(self, resources: pikepdf.Dictionary, name: Any) -> _Font:
        fonts = resources.get("/Font")
        font = fonts.get(name) if isinstance(fonts, pikepdf.Dictionary) else None
        if not isinstance(font, pikepdf.Dictionary):
            return _NO_FONT
        key = font.objgen
        if key != (0, 0) and key in self.fonts:
            return self.fonts[key]
        try:
            read = _font_read(font)
        except (pikepdf.PdfError, TypeError, ValueError, IndexError, AttributeError):
            read = _NO_FONT
        if key != (0, 0):
            self.fonts[key] = read
        return read

    def content(
        self,
        instructions: Iterable[Any],
        resources: pikepdf.Dictionary,
        ctm: Matrix,
        state: _TextState,
        depth: int,
    ) -> tuple[list[Any], dict[str, pikepdf.Object]] | None:
        """The stream with the shows whose middle is in a box dropped and the forms whose
        text is dropped drawn from copies (the copies, by the new names its `Do`s call);
        None when nothing changed."""
        kept: list[Any] = []
        added: dict[str, pikepdf.Object] = {}
        changed = False
        stack: list[tuple[Matrix, _TextState]] = []
        text_matrix = line_matrix = IDENTITY
        path: list[Any] = []  # the path being built, held until it is painted
        rule = _Rule()  # what the path is, as a rule
        widths: list[float] = []  # the line widths `q` saved
        line_width = 1.0
        for instruction in instructions:
            if isinstance(instruction, pikepdf.ContentStreamInlineImage):
                kept.extend(path)
                path, rule = [], _Rule()
                kept.append(instruction)
                continue
            operands, operator = instruction.operands, str(instruction.operator)
            if operator in _PATH_BUILDS:
                path.append(instruction)
                rule.add(operator, operands, ctm)
                continue
            if path:
                if rule.removed(operator, line_width * _scale(ctm), self.boxes):
                    self.dropped += 1
                    changed = True
                    path, rule = [], _Rule()
                    continue
                kept.extend(path)
                path, rule = [], _Rule()
            if operator == "q":
                widths.append(line_width)
            elif operator == "Q" and widths:
                line_width = widths.pop()
            elif operator == "w" and len(operands) == 1 and isinstance(operands[0], (int, float, Decimal)):
                line_width = float(operands[0])
            try:
                if operator == "q":
                    stack.append((ctm, replace(state)))
                elif operator == "Q":
                    if stack:
                        ctm, state = stack.pop()
                elif operator == "cm" and len(operands) == 6:
                    ctm = multiply(_matrix(operands), ctm)
                elif operator == "BT":
                    text_matrix = line_matrix = IDENTITY
                elif operator == "Tm" and len(operands) == 6:
                    text_matrix = line_matrix = _matrix(operands)
                elif operator in ("Td", "TD") and len(operands) == 2:
                    tx, ty = _numbers(operands)
                    if operator == "TD":
                        state.leading = -ty
                    text_matrix = line_matrix = multiply(_translate(tx, ty), line_matrix)
                elif operator == "Tf" and len(operands) == 2:
                    state.font, state.size = self.font(resources, operands[0]), float(operands[1])
                elif operator in ("TL", "Tc", "Tw", "Tz", "Ts") and len(operands) == 1:
                    value = float(operands[0])
                    if operator == "TL":
                        state.leading = value
                    elif operator == "Tc":
                        state.char_spacing = value
                    elif operator == "Tw":
                        state.word_spacing = value
                    elif operator == "Tz":
                        state.scale = value / 100
                    else:
                        state.rise = value
                elif operator == '"' and len(operands) == 3:
                    state.word_spacing, state.char_spacing = float(operands[0]), float(operands[1])
            except (TypeError, ValueError, ArithmeticError):
                # Operands of the wrong kind (a damaged stream): the operator is kept, unread.
                kept.append(instruction)
                continue
            if operator == "Do" and len(operands) == 1:
                copy = self.form(resources, operands[0], ctm, state, depth)
                if copy is not None:
                    name = _free_name(resources, added, str(operands[0]))
                    added[name] = copy
                    kept.append(_instruction("Do", pikepdf.Name(name)))
                    changed = True
                    continue
            if operator in ("T*", "'", '"'):
                text_matrix = line_matrix = multiply(_translate(0.0, -state.leading), line_matrix)
            if operator in _SHOWS and operands:
                shows = operands[0] if operator == "TJ" else (operands[-1],)
                if not isinstance(shows, (pikepdf.Array, tuple)):
                    kept.append(instruction)
                    continue
                displacement = state.displacement(shows)
                a, b, c, d, e, f = multiply(text_matrix, ctm)
                x0, y0 = c * state.rise + e, d * state.rise + f
                ta, tb, tc, td, te, tf = text_matrix
                if state.font.vertical:
                    dx, dy = c * displacement, d * displacement
                    text_matrix = (ta, tb, tc, td, te + displacement * tc, tf + displacement * td)
                else:
                    dx, dy = a * displacement, b * displacement
                    text_matrix = (ta, tb, tc, td, te + displacement * ta, tf + displacement * tb)
                if self.record:
                    self.shown.append(Shown(x0, y0, x0 + dx, y0 + dy, depth))
                middle_x, middle_y = x0 + dx / 2, y0 + dy / 2
                if any(box.holds(middle_x, middle_y) for box in self.boxes):
                    self.dropped += 1
                    changed = True
                    kept.extend(_dropped_show(operator, operands, state, displacement))
                    continue
            kept.append(instruction)
        kept.extend(path)
        return (kept, added) if changed else None

    def form(
        self, resources: pikepdf.Dictionary, name: Any, ctm: Matrix, state: _TextState, depth: int
    ) -> pikepdf.Object | None:
        """A copy of the Form XObject `name` with its text in the boxes dropped; None when
        it is not a form, or none of its text is dropped (it stays shared)."""
        xobjects = resources.get("/XObject")
        form = xobjects.get(name) if isinstance(xobjects, pikepdf.Dictionary) else None
        if not isinstance(form, pikepdf.Stream) or form.get("/Subtype") != pikepdf.Name.Form:
            return None
        if depth >= FORM_DEPTH or self.forms_walked >= FORM_WALKS:
            return None
        self.forms_walked += 1
        matrix = form.get("/Matrix")
        at = multiply(_matrix(matrix), ctm) if isinstance(matrix, pikepdf.Array) and len(matrix) == 6 else ctm
        own = form.get("/Resources")
        form_resources = own if isinstance(own, pikepdf.Dictionary) else resources
        try:
            instructions = pikepdf.parse_content_stream(form)
        except pikepdf.PdfError:
            return None
        walked = self.content(instructions, form_resources, at, replace(state), depth + 1)
        if walked is None:
            return None
        kept, added = walked
        data = pikepdf.unparse_content_stream(kept)
        key = (form.objgen, data)
        if not added and key in self.copies:
            return self.copies[key]
        copy: pikepdf.Object = _stream_write(self.pdf, kept)
        for entry, value in form.items():
            if entry not in _STREAM_KEYS:
                copy[entry] = value
        if added:
            copy.Resources = _with_xobjects(form_resources, added)
        copy = self.pdf.make_indirect(copy)
        if not added:
            self.copies[key] = copy
        return copy


def _free_name(resources: pikepdf.Dictionary, added: Mapping[str, Any], name: str) -> str:
    xobjects = resources.get("/XObject")
    taken = set(xobjects.keys()) if isinstance(xobjects, pikepdf.Dictionary) else set()
    number = 1
    while f"{name}r{number}" in taken or f"{name}r{number}" in added:
        number += 1
    return f"{name}r{number}"


def _dropped_show(
    operator: str, operands: Sequence[Any], state: _TextState, displacement: float
) -> list[pikepdf.ContentStreamInstruction]:
    """What stands for a dropped show: the line move of `'` and `"` (and the spacings `"`
    sets), then its displacement as a TJ without glyphs, so the text after it stays put."""
    stand_in = []
    if operator == "'":
        stand_in.append(_instruction("T*"))
    elif operator == '"':
        stand_in += [_instruction("Tw", operands[0]), _instruction("Tc", operands[1]), _instruction("T*")]
    unit = state.size * (1.0 if state.font.vertical else state.scale)
    if displacement and unit:
        stand_in.append(_instruction("TJ", pikepdf.Array([round(-displacement * 1000 / unit, 3)])))
    return stand_in


def _walk(pdf: pikepdf.Pdf, page: pikepdf.Page, boxes: Sequence[Box], *, record: bool = False) -> tuple[_Walk, Any]:
    walk = _Walk(pdf, boxes, record)
    walked = walk.content(pikepdf.parse_content_stream(page), _inherited_resources(page.obj), IDENTITY, _TextState(), 0)
    return walk, walked


def text_shows(pdf: pikepdf.Pdf, page: pikepdf.Page) -> list[Shown]:
    """Every text show the page draws (in its forms too), in drawing order, with its extent."""
    walk, _ = _walk(pdf, page, (), record=True)
    return walk.shown


def text_remove(pdf: pikepdf.Pdf, page: pikepdf.Page, boxes: Sequence[Box]) -> int:
    """Drop the page's text shows (its forms' too) whose extent's middle lies in one of
    `boxes` and write its content back as one stream; returns how many were dropped (0: the
    page is left as it was)."""
    if not boxes:
        return 0
    walk, walked = _walk(pdf, page, boxes)
    if walked is None:
        return 0
    kept, added = walked
    if added:
        page.obj.Resources = _with_xobjects(_inherited_resources(page.obj), added)
    page.obj.Contents = _stream_write(pdf, kept)
    return walk.dropped
