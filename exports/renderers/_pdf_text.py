"""Text of the PDF export as reportlab flowables, in whatever script it is written.

`text_flowable(spans, style, ...)` picks the font of each character (`_pdf_fonts`), then:
- text without right-to-left or complex-script characters (Latin, Cyrillic, Greek,
  Chinese, Japanese, Korean) becomes a reportlab `Paragraph` with a `<font>` per run,
  wrapped with `wordWrap='CJK'` when it has CJK characters;
- text with Arabic, Hebrew or Devanagari characters, or whose paragraph direction is
  right-to-left, becomes a `ShapedParagraph`: runs shaped by HarfBuzz (joined Arabic
  letters, Devanagari conjuncts and vowel signs), lines broken at spaces (and between CJK
  characters), each line put in visual order by the bidi algorithm (`_pdf_bidi`), each
  glyph drawn with the text it stands for in the font's ToUnicode map, so text extraction
  gives the words back in logical order.

A note reference (a run with `note`) is its mark, raised and smaller (`RAISED_SCALE` of the
size, `RAISED_RISE` of it above the baseline), kept on the line of the word before it;
with `note_links`, a link to the note's destination (`exports.blocks.note_anchor`, which the
renderer must then draw: the reflowed Pdf does, with each note) in a reportlab paragraph.

reportlab's own shaping and right-to-left support are not used for those: its bidi needs
`rlbidi` (not published on the package index) and is switched off for paragraphs with more
than one font or style, and its shaped glyphs without a character of their own extract as
private-use characters.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from xml.sax.saxutils import escape

import uharfbuzz
from reportlab.lib import colors
from reportlab.lib.enums import TA_CENTER, TA_JUSTIFY, TA_LEFT, TA_RIGHT
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.textsplit import ALL_CANNOT_END, ALL_CANNOT_START
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import ShapeData, ShapedStr
from reportlab.platypus import Flowable, Paragraph

from exports.blocks import Run, note_anchor
from exports.renderers._pdf_bidi import bidi_class, embedding_levels, paragraph_level, visual_order
from exports.renderers._pdf_fonts import (
    CJK_SCRIPTS,
    COMPLEX_SCRIPTS,
    METRIC_FAMILIES,
    MONO,
    SourceFont,
    assign_families,
    family,
    script_of,
    shaping_font,
)

_FEATURES = {"kern": True, "liga": True}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # control characters other than tab and line feed
_RTL_CLASSES = frozenset({"R", "AL", "AN"})


RAISED_SCALE = 0.7  # a note reference's mark: this much of the size
RAISED_RISE = 0.38  # and this much of the size above the baseline
_SPACE_RUN = re.compile(" {2,}")
# A block's `align` as reportlab's alignment (anything else is left).
_ALIGNMENTS: dict[str, Literal[0, 1, 2, 4]] = {
    "center": TA_CENTER,
    "end": TA_RIGHT,
    "right": TA_RIGHT,
    "justify": TA_JUSTIFY,
}


@dataclass(frozen=True)
class TextStyle:
    size: float = 11
    leading: float = 17
    bold: bool = False
    italic: bool = False
    # "start" (left, or right in right-to-left text), "center", "end", "justify" (both edges,
    # the last line at the start), or a side whatever the text's direction: "left", "right"
    # (a table's column, aligned as the table runs)
    align: str = "start"
    space_before: float = 0
    space_after: float = 6
    indent: float = 0  # on the side the text starts
    hanging: float = 0  # how much further in every line but the first starts (a list item's text, past its bullet)
    color: colors.Color = colors.black
    background: colors.Color | None = None
    keep_with_next: bool = False
    # The source's font (the original-layout Pdf): Latin, Greek and Cyrillic set in the face
    # metric-compatible with it, code in Liberation Mono, all of it in the source's weight
    # and slant. None (the reflowed Pdf): the script fonts.
    source: SourceFont | None = None


def code_spaces_kept(text: str) -> str:
    """A code block's text with its indents and column alignment kept: a line's leading
    spaces, and all but the last space of every run of spaces, are no-break spaces (a
    paragraph collapses spaces; the last one of a run still lets a long line wrap)."""
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        body = _SPACE_RUN.sub(lambda run: "\u00a0" * (len(run.group()) - 1) + " ", body)
        lines.append("\u00a0" * (len(line) - len(line.lstrip(" "))) + body)
    return "\n".join(lines)


def text_flowable(
    spans: Sequence[Run],
    style: TextStyle,
    *,
    language: str,
    default_rtl: bool,
    prefix: str = "",
    note_links: bool = False,
) -> Flowable | None:
    """The flowable of one paragraph (None when it has no text). `prefix` (a list item's
    bullet or number, a note's mark) starts it; `default_rtl` is the direction of a
    paragraph without letters (the book's); `note_links`: note references link to their
    notes (see the module's docstring)."""
    if prefix:
        spans = [Run(prefix + " "), *spans]
    spans = [replace(span, text=_CONTROL.sub("", span.text)) for span in spans]
    text = "".join(span.text for span in spans)
    if not text.strip():
        return None
    faces = _faces(spans, text, style, language)
    notes = [span.note for span in spans for _ in span.text]
    if prefix:  # the item's lines hang past its bullet or number, under its text
        style = replace(style, hanging=pdfmetrics.stringWidth(prefix + " ", faces[0], style.size))
    base_level = paragraph_level(text, default_rtl=default_rtl)
    if base_level % 2 or any(_needs_shaping(char) for char in text):
        return ShapedParagraph(text, faces, base_level, style, raised=[bool(note) for note in notes])
    return _paragraph(text, faces, style, notes if note_links else [" " if note else "" for note in notes])


@functools.lru_cache(maxsize=8192)
def _needs_shaping(char: str) -> bool:
    return script_of(char) in COMPLEX_SCRIPTS or bidi_class(char) in _RTL_CLASSES


def _faces(spans: Sequence[Run], text: str, style: TextStyle, language: str) -> list[str]:
    """The reportlab font name of each character of `text`."""
    source = style.source
    latin = source.family if source is not None else "latin"
    mono = METRIC_FAMILIES[MONO] if source is not None else "mono"
    families = assign_families(text, language=language, latin=latin)
    faces: list[str] = []
    position = 0
    for span in spans:
        bold = span.bold or style.bold or (source is not None and source.bold)
        italic = span.italic or style.italic or (source is not None and source.italic)
        for key in families[position : position + len(span.text)]:
            if span.code and key in (latin, "latin"):
                key = mono
            faces.append(family(key).face(bold=bold, italic=italic))
        position += len(span.text)
    return faces


def _paragraph(text: str, faces: list[str], style: TextStyle, notes: list[str]) -> Paragraph:
    """A reportlab paragraph; `notes`: each character's note when it is a note reference's
    mark (" " for a mark that links nowhere), else ""."""
    markup: list[str] = []
    start = 0
    for end in range(1, len(text) + 1):
        if end == len(text) or faces[end] != faces[start] or notes[end] != notes[start]:
            chunk = escape(text[start:end]).replace("\n", "<br/>")
            chunk = f'<font face="{faces[start]}">{chunk}</font>'
            note = notes[start]
            if note:  # a note reference's mark, raised
                chunk = (
                    f'<super size="{style.size * RAISED_SCALE:.2f}" rise="{style.size * RAISED_RISE:.2f}">'
                    f"{chunk}</super>"
                )
                if note.strip():
                    chunk = f'<a href="#{note_anchor(note)}">{chunk}</a>'
            markup.append(chunk)
            start = end
    cjk = any(script_of(char) in CJK_SCRIPTS for char in text)
    paragraph_style = ParagraphStyle(
        "bts",
        fontName=faces[0],
        fontSize=style.size,
        leading=style.leading,
        alignment=_ALIGNMENTS.get(style.align, TA_LEFT),
        spaceBefore=style.space_before,
        spaceAfter=style.space_after,
        leftIndent=style.indent + style.hanging,
        firstLineIndent=-style.hanging,
        textColor=style.color,
        backColor=style.background,
        borderPadding=4 if style.background else 0,
        wordWrap="CJK" if cjk else None,
        keepWithNext=int(style.keep_with_next),
    )
    return Paragraph("".join(markup), paragraph_style)


@dataclass
class Atom:
    """A piece of a line: text of one font and one bidi level, shaped (or white space)."""

    text: str
    face: str
    level: int
    width: float  # points
    glyphs: str = ""  # a ShapedStr of the glyphs' code points, in visual order
    space: bool = False
    raised: bool = False  # a note reference's mark: smaller, above the baseline


@dataclass
class Chunk:
    """What lies between two line-break opportunities."""

    atoms: list[Atom] = field(default_factory=list)
    hard_break: bool = False  # a line break ("\n") ends it

    @property
    def width(self) -> float:
        return sum(atom.width for atom in self.atoms)

    @property
    def trailing_space(self) -> float:
        width = 0.0
        for atom in reversed(self.atoms):
            if not atom.space:
                break
            width += atom.width
        return width


class ShapedParagraph(Flowable):
    """A paragraph laid out by HarfBuzz and the bidi algorithm (see the module docstring);
    splits between lines across frames and table rows."""

    def __init__(
        self,
        text: str,
        faces: list[str],
        base_level: int,
        style: TextStyle,
        *,
        chunks: list[Chunk] | None = None,
        raised: list[bool] | None = None,
    ) -> None:
        super().__init__()
        self.text_style = style
        self.base_level = base_level
        self.spaceBefore = style.space_before
        self.spaceAfter = style.space_after
        self.keepWithNext = int(style.keep_with_next)
        self._chunks = (
            chunks
            if chunks is not None
            else _chunks(text, faces, base_level, style.size, raised or [False] * len(text))
        )
        self._lines: list[list[Chunk]] = []
        self._wrapped_for: float | None = None

    def _inner_width(self, width: float) -> float:
        return max(width - self.text_style.indent, self.text_style.size)

    def wrap(self, availWidth: float, availHeight: float) -> tuple[float, float]:  # noqa: N803 (reportlab)
        if self._wrapped_for != availWidth:
            self._lines = _break_lines(
                self._chunks, self._inner_width(availWidth), self.text_style.size, hanging=self.text_style.hanging
            )
            self._wrapped_for = availWidth
        self.width = availWidth
        self.height = len(self._lines) * self.text_style.leading
        return self.width, self.height

    def split(self, availWidth: float, availHeight: float) -> list[Flowable]:  # noqa: N803 (reportlab)
        self.wrap(availWidth, availHeight)
        fit = int((availHeight + 1e-6) // self.text_style.leading)
        if fit <= 0 or fit >= len(self._lines):
            return []  # nothing fits, or it would all fit: platypus moves it on
        head = [chunk for line in self._lines[:fit] for chunk in line]
        tail = [chunk for line in self._lines[fit:] for chunk in line]
        return [
            ShapedParagraph("", [], self.base_level, replace(self.text_style, space_after=0), chunks=head),
            ShapedParagraph(
                "",
                [],
                self.base_level,
                # every line of the rest hangs: its first is not the item's first
                replace(
                    self.text_style,
                    space_before=0,
                    indent=self.text_style.indent + self.text_style.hanging,
                    hanging=0,
                ),
                chunks=tail,
            ),
        ]

    def draw(self) -> None:
        canvas = self.canv
        style = self.text_style
        if style.background is not None:
            canvas.saveState()
            canvas.setFillColor(style.background)
            canvas.rect(-4, -4, self.width + 8, self.height + 8, stroke=0, fill=1)
            canvas.restoreState()
        inner = self._inner_width(self.width)
        rtl = self.base_level % 2 == 1
        text = canvas.beginText()
        text.setFillColor(style.color)
        for number, line in enumerate(self._lines):
            atoms = _without_trailing_space([atom for chunk in line for atom in chunk.atoms])
            line_width = sum(atom.width for atom in atoms)
            hang = style.hanging if number else 0.0
            side = style.align
            stretch = 0.0  # added to each space of a justified line
            if side == "justify":
                side = "start"
                spaces = sum(atom.space for atom in atoms)
                last = number == len(self._lines) - 1 or line[-1].hard_break
                if spaces and not last:
                    stretch = (inner - hang - line_width) / spaces
                    line_width = inner - hang
            if side in ("start", "end"):
                side = "right" if (side == "start") == rtl else "left"
            if side == "center":
                x = style.indent / 2 + (inner - line_width) / 2
            elif side == "right":
                x = inner - line_width - hang if rtl else self.width - line_width
            else:
                x = 0 if rtl else style.indent + hang
            baseline = self.height - (number + 1) * style.leading + 0.3 * style.leading
            for index in visual_order([atom.level for atom in atoms]):
                atom = atoms[index]
                if atom.glyphs:
                    rise = style.size * RAISED_RISE if atom.raised else 0.0
                    text.setTextOrigin(x, baseline + rise)
                    text.setFont(atom.face, style.size * (RAISED_SCALE if atom.raised else 1.0), style.leading)
                    text.textOut(atom.glyphs)
                x += atom.width + (stretch if atom.space else 0.0)
        canvas.drawText(text)


def _without_trailing_space(line: list[Atom]) -> list[Atom]:
    end = len(line)
    while end and line[end - 1].space:
        end -= 1
    return line[:end]


def _break_lines(chunks: list[Chunk], width: float, size: float, *, hanging: float = 0.0) -> list[list[Chunk]]:
    """Greedy line filling (every line but the first `hanging` narrower); a chunk wider than
    a line is cut between its clusters."""
    lines: list[list[Chunk]] = []
    line: list[Chunk] = []
    line_width = 0.0
    pending = deque(chunks)

    def room() -> float:
        return max(width - hanging, size) if lines else width

    while pending:
        chunk = pending.popleft()
        fits = line_width + chunk.width - chunk.trailing_space <= room() + 1e-6
        if not fits and line:
            lines.append(line)
            line, line_width = [], 0.0
            fits = chunk.width - chunk.trailing_space <= room() + 1e-6
        cut = False
        if not fits:
            head, tail = _cut(chunk, room(), size)
            if tail is not None:
                pending.appendleft(tail)
                chunk, cut = head, True
        line.append(chunk)
        line_width += chunk.width
        if chunk.hard_break or cut:
            lines.append(line)
            line, line_width = [], 0.0
    if line:
        lines.append(line)
    return lines


def _cut(chunk: Chunk, width: float, size: float) -> tuple[Chunk, Chunk | None]:
    """The longest start of `chunk` that fits in `width` (at least one character), and the
    rest; atoms are re-shaped at the cut."""
    used = 0.0
    for position, atom in enumerate(chunk.atoms):
        if used + atom.width <= width + 1e-6:
            used += atom.width
            continue
        cuts = _cluster_starts(atom.text)
        best = None
        for cut in cuts:
            piece = _atom(atom.text[:cut], 0, cut, atom.face, atom.level, size, raised=atom.raised)
            if used + piece.width > width + 1e-6:
                break
            best = cut
        if best is None:
            if position == 0 and cuts:
                best = cuts[0]
            elif position == 0:
                return chunk, None
            else:
                return Chunk(chunk.atoms[:position]), Chunk(chunk.atoms[position:], chunk.hard_break)
        head_atom = _atom(atom.text, 0, best, atom.face, atom.level, size, raised=atom.raised)
        tail_atom = _atom(atom.text, best, len(atom.text), atom.face, atom.level, size, raised=atom.raised)
        return (
            Chunk([*chunk.atoms[:position], head_atom]),
            Chunk([tail_atom, *chunk.atoms[position + 1 :]], chunk.hard_break),
        )
    return chunk, None


def _cluster_starts(text: str) -> list[int]:
    """Positions inside `text` where a cut leaves letters and their marks together."""
    return [
        index
        for index in range(1, len(text))
        if not unicodedata.category(text[index]).startswith("M")
        and text[index - 1] not in "\u094d\u200d"  # after a virama or a joiner: same cluster
    ]


def _is_space(char: str) -> bool:
    return char.isspace()


def _break_allowed(before: str, after: str) -> bool:
    """Whether a line may break between two characters (a space ends a chunk; CJK text
    breaks between characters, keeping closing punctuation off a line's start and
    opening punctuation off its end)."""
    if _is_space(before) and not _is_space(after):
        return True
    if _is_space(after):
        return False
    cjk = script_of(before) in CJK_SCRIPTS or script_of(after) in CJK_SCRIPTS
    return cjk and after not in ALL_CANNOT_START and before not in ALL_CANNOT_END


def _chunks(text: str, faces: list[str], base_level: int, size: float, raised: list[bool]) -> list[Chunk]:
    """The text cut at its line-break opportunities (never before a note reference's mark)."""
    levels = embedding_levels(text, base_level)
    chunks: list[Chunk] = []
    chunk = Chunk()
    start = 0
    for end in range(1, len(text) + 1):
        at_end = end == len(text)
        boundary = (
            at_end
            or faces[end] != faces[start]
            or levels[end] != levels[start]
            or _is_space(text[end]) != _is_space(text[start])
            or text[end - 1] == "\n"
            or raised[end] != raised[start]
        )
        if not boundary:
            continue
        piece = text[start:end]
        if piece.strip():
            chunk.atoms.append(_atom(text, start, end, faces[start], levels[start], size, raised=raised[start]))
        else:
            chunk.atoms.append(_space(piece, faces[start], levels[start], size))
        if at_end or text[end - 1] == "\n" or (_break_allowed(text[end - 1], text[end]) and not raised[end]):
            chunk.hard_break = text[end - 1] == "\n"
            chunks.append(chunk)
            chunk = Chunk()
        start = end
    if chunk.atoms:
        chunks.append(chunk)
    return chunks


def _space(text: str, face: str, level: int, size: float) -> Atom:
    font = shaping_font(face)
    glyph = font.hb_font.get_nominal_glyph(32) or 0
    advance = font.hb_font.get_glyph_h_advance(glyph) * size / font.units_per_em
    width = 0.0 if "\n" in text else advance * len(text)
    return Atom(text, face, level, width, space=True)


_CONTEXT = 8  # characters of context on each side (HarfBuzz reads up to 5)


Position = tuple[int, int, int, int]  # x advance, y advance, x offset, y offset (font units)


def _marks_after_bases(infos: list[Any], positions: list[Position], text: str) -> tuple[list[Any], list[Position]]:
    """Right-to-left glyphs in visual order put a letter's combining marks before it;
    drawn after it instead (at the same places), text extraction attaches them to their
    letter. (Zero-width glyphs that are letters, like the alef of a lam-alef, stay.)"""
    glyphs = list(infos)
    places = list(positions)

    def is_mark(index: int) -> bool:
        return places[index][0] == 0 and unicodedata.category(text[glyphs[index].cluster]).startswith("M")

    index = 0
    while index < len(glyphs):
        end = index
        while end < len(glyphs) and is_mark(end):
            end += 1
        if end == index or end == len(glyphs):
            index = end + 1
            continue
        base_advance = places[end][0]
        marks = [(x_adv, y_adv, x_off - base_advance, y_off) for x_adv, y_adv, x_off, y_off in places[index:end]]
        glyphs[index : end + 1] = [glyphs[end], *glyphs[index:end]]
        places[index : end + 1] = [places[end], *marks]
        index = end + 1
    return glyphs, places


def _atom(text: str, start: int, end: int, face: str, level: int, size: float, *, raised: bool = False) -> Atom:
    """`text[start:end]` shaped in `face`, with its neighbours as context (Arabic letters
    join across a change of emphasis); `raised`: a note reference's mark (its width at
    RAISED_SCALE of the size)."""
    if raised:
        size *= RAISED_SCALE
    font = shaping_font(face)
    window_start = max(0, start - _CONTEXT)
    window = text[window_start : end + _CONTEXT]
    offset = start - window_start
    buffer = uharfbuzz.Buffer()
    buffer.add_str(window, offset, end - start)
    buffer.guess_segment_properties()
    buffer.direction = "rtl" if level % 2 else "ltr"
    buffer.cluster_level = uharfbuzz.BufferClusterLevel.MONOTONE_CHARACTERS
    uharfbuzz.shape(font.hb_font, buffer, _FEATURES)
    infos = buffer.glyph_infos
    positions: list[Position] = [(p.x_advance, p.y_advance, p.x_offset, p.y_offset) for p in buffer.glyph_positions]
    if level % 2:
        infos, positions = _marks_after_bases(infos, positions, window)
    cluster_starts = sorted({info.cluster for info in infos})
    cluster_end = {
        cluster: (cluster_starts[index + 1] if index + 1 < len(cluster_starts) else offset + end - start)
        for index, cluster in enumerate(cluster_starts)
    }
    glyph_counts: dict[int, int] = {}
    cluster_advance: dict[int, int] = {}
    for info, (x_advance, *_rest) in zip(infos, positions, strict=True):
        glyph_counts[info.cluster] = glyph_counts.get(info.cluster, 0) + 1
        cluster_advance[info.cluster] = cluster_advance.get(info.cluster, 0) + x_advance
    scale = 1000 / font.units_per_em
    seen: set[int] = set()
    codes: list[str] = []
    shape_data: list[ShapeData] = []
    advance_total = 0
    for info, (x_advance, y_advance, x_offset, y_offset) in zip(infos, positions, strict=True):
        cluster = info.cluster
        glyph_text = "" if cluster in seen else window[cluster : cluster_end[cluster]]
        seen.add(cluster)
        # The PDF width of the glyph carrying a cluster's text spans the whole cluster,
        # and a mark's reaches the next glyph: text extraction then sees no gap inside a
        # word (see ShapingFont.code_for); the drawing positions stay HarfBuzz's.
        width = None
        if glyph_text and glyph_counts[cluster] > 1:
            width = max(0.0, (cluster_advance[cluster] - x_offset) * scale)
        elif x_offset:
            width = max(0.0, (x_advance - x_offset) * scale)
        code = font.code_for(info.codepoint, glyph_text, width)
        codes.append(chr(code))
        advance_total += x_advance
        shape_data.append(
            ShapeData(
                cluster,
                x_advance * scale,
                y_advance * scale,
                x_offset * scale,
                y_offset * scale,
                font.face.getCharWidth(code),
            )
        )
    # A list of ShapeData, as reportlab's own shapeStr passes it (the stubs say one).
    glyphs = ShapedStr("".join(codes), shapeData=shape_data)  # type: ignore[arg-type]
    return Atom(text[start:end], face, level, advance_total * size / font.units_per_em, glyphs, raised=raised)
