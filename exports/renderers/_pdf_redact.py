"""Removing text from a PDF page's content stream (the original-layout Pdf, docs/exports.md).

`text_remove(pdf, page, boxes)` parses the page's content stream with pikepdf (qpdf's
tokenizer), follows the graphics and text state — `q`/`Q` and `cm` (the CTM), `BT`/`ET`,
`Tm`, `Td`, `TD`, `TL`, `T*` — and drops every text-showing operator (`Tj`, `TJ`, `'`,
`"`) whose origin, in page space, lies inside one of `boxes`; the rest of the stream
(drawings, images, other text) is written back unchanged. The text is gone from the file,
not painted over: it cannot be copied out.

What it does not measure: the width of the text shown. A show's origin is the current
line's start as the positioning operators left it (the advance of an earlier show on the
same line, without a `Td` between, is not added), so a run that continues a line counts as
that line's. Text inside Form XObjects (`Do`) is not touched: the books the tests read
(TeX, DocBook via FOP) draw none there; such text stays, under the translation.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pikepdf

Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SHOWS = frozenset({"Tj", "TJ", "'", '"'})


@dataclass(frozen=True)
class Box:
    """A rectangle in PDF page space (points, y up)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def holds(self, x: float, y: float) -> bool:
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1


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


def text_remove(pdf: pikepdf.Pdf, page: pikepdf.Page, boxes: Sequence[Box]) -> int:
    """Drop the page's text shows whose origin lies in one of `boxes` and write its content
    back as one stream; returns how many were dropped (0: the page is left as it was)."""
    if not boxes:
        return 0
    instructions = pikepdf.parse_content_stream(page)
    kept: list[pikepdf.ContentStreamInstruction | pikepdf.ContentStreamInlineImage] = []
    ctm, stack = IDENTITY, []
    text_matrix = line_matrix = IDENTITY
    leading = 0.0
    dropped = 0
    for instruction in instructions:
        if isinstance(instruction, pikepdf.ContentStreamInlineImage):
            kept.append(instruction)
            continue
        operands, operator = instruction.operands, str(instruction.operator)
        if operator == "q":
            stack.append(ctm)
        elif operator == "Q":
            ctm = stack.pop() if stack else IDENTITY
        elif operator == "cm" and len(operands) == 6:
            ctm = multiply(_matrix(operands), ctm)
        elif operator == "BT":
            text_matrix = line_matrix = IDENTITY
        elif operator == "Tm" and len(operands) == 6:
            text_matrix = line_matrix = _matrix(operands)
        elif operator in ("Td", "TD") and len(operands) == 2:
            tx, ty = _numbers(operands)
            if operator == "TD":
                leading = -ty
            text_matrix = line_matrix = multiply((1.0, 0.0, 0.0, 1.0, tx, ty), line_matrix)
        elif operator == "TL" and len(operands) == 1:
            leading = _numbers(operands)[0]
        elif operator in ("T*", "'", '"'):
            text_matrix = line_matrix = multiply((1.0, 0.0, 0.0, 1.0, 0.0, -leading), line_matrix)
        if operator in _SHOWS:
            origin = multiply(text_matrix, ctm)
            if any(box.holds(origin[4], origin[5]) for box in boxes):
                dropped += 1
                # ' and " move to the next line before showing: the move stays.
                if operator == "'":
                    kept.append(pikepdf.ContentStreamInstruction([], pikepdf.Operator("T*")))
                elif operator == '"':
                    word_spacing, char_spacing = operands[0], operands[1]
                    kept.append(pikepdf.ContentStreamInstruction([word_spacing], pikepdf.Operator("Tw")))
                    kept.append(pikepdf.ContentStreamInstruction([char_spacing], pikepdf.Operator("Tc")))
                    kept.append(pikepdf.ContentStreamInstruction([], pikepdf.Operator("T*")))
                continue
        kept.append(instruction)
    if dropped:
        # Kept compressed until the file is written (a book's changed pages wait in memory).
        stream = pikepdf.Stream(pdf, b"")
        stream.write(zlib.compress(pikepdf.unparse_content_stream(kept)), filter=pikepdf.Name.FlateDecode)
        page.obj.Contents = stream
    return dropped
