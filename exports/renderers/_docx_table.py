"""A table of the book as a Word table (`w:tbl`), built as a detached element like the
Docx renderer's paragraphs: Word's "Table Grid" style, the header row bold, shaded and
repeated at the top of every page the table runs over, columns as wide as their text
asks (within the text width, fixed so that a wide table wraps its cells instead of
running off the page), cells aligned as the Markdown says and right-to-left tables laid
out from the right (`w:bidiVisual`). Elements are appended in schema order (ECMA-376
CT_Tbl, CT_TblPr, CT_Row, CT_Tc)."""

from __future__ import annotations

from collections.abc import Callable

from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from lxml.etree import _Element

from exports.blocks import Block, Cell, Run, column_widths
from exports.renderers._docx_script import Script, paragraph_element

TABLE_STYLE_ID = "TableGrid"  # "Table Grid", in python-docx's default template
HEADER_FILL = "F0EFEB"
# Word reads "left" and "right" as the paragraph's start and end in a right-to-left
# paragraph, as the Markdown's alignment is read here (see exports.blocks).
_JUSTIFICATION = {"left": "left", "center": "center", "right": "right"}

RunElement = Callable[[Run, bool], _Element]  # (run, bold) -> w:r


CHAR_WIDTH = 110  # twentieths of a point: half an em of 11-point text
CELL_PADDING = 216  # Table Grid's left and right cell margins (0.08 inch each)


def _column_widths(block: Block, total: int) -> list[int]:
    """Each column's width (twentieths of a point), together `total`."""
    widths = [int(width) for width in column_widths(block, total, char_width=CHAR_WIDTH, padding=CELL_PADDING)]
    widths[-1] += total - sum(widths)
    return widths


def _set(element: _Element, tag: str, **attributes: str) -> _Element:
    child = OxmlElement(tag)
    for name, value in attributes.items():
        child.set(qn(f"w:{name}"), value)
    element.append(child)
    return child


def _cell(cell: Cell, *, width: int, align: str, header: bool, script: Script, run_element: RunElement) -> _Element:
    tc = OxmlElement("w:tc")
    properties = _set(tc, "w:tcPr")
    _set(properties, "w:tcW", w=str(width), type="dxa")
    if header:
        _set(properties, "w:shd", val="clear", color="auto", fill=HEADER_FILL)
    paragraph = paragraph_element(style_id=None, page_break_before=False, rtl=script.rtl)
    paragraph_properties = paragraph.find(qn("w:pPr"))
    if paragraph_properties is None:
        paragraph_properties = OxmlElement("w:pPr")
        paragraph.insert(0, paragraph_properties)
    _set(paragraph_properties, "w:spacing", before="40", after="40")
    if align in _JUSTIFICATION:
        _set(paragraph_properties, "w:jc", val=_JUSTIFICATION[align])
    for run in cell:
        if run.text:
            paragraph.append(run_element(run, header))
    tc.append(paragraph)  # a cell holds at least one paragraph, even an empty one
    return tc


def table_element(block: Block, *, text_width: int, script: Script, run_element: RunElement) -> _Element:
    """The `w:tbl` of a table block, `text_width` wide (twentieths of a point)."""
    table = OxmlElement("w:tbl")
    properties = _set(table, "w:tblPr")
    _set(properties, "w:tblStyle", val=TABLE_STYLE_ID)
    if script.rtl:
        _set(properties, "w:bidiVisual")
    _set(properties, "w:tblW", w=str(text_width), type="dxa")
    _set(properties, "w:tblLayout", type="fixed")
    _set(
        properties,
        "w:tblLook",
        val="04A0",
        firstRow="1" if block.header else "0",
        lastRow="0",
        firstColumn="0",
        lastColumn="0",
        noHBand="0",
        noVBand="1",
    )
    widths = _column_widths(block, text_width)
    grid = _set(table, "w:tblGrid")
    for width in widths:
        _set(grid, "w:gridCol", w=str(width))
    for number, row in enumerate(block.rows):
        header = block.header and number == 0
        tr = _set(table, "w:tr")
        if header:
            _set(_set(tr, "w:trPr"), "w:tblHeader")  # repeated on every page the table runs over
        for column, cell in enumerate(row):
            tr.append(
                _cell(
                    cell,
                    width=widths[column],
                    align=block.align[column],
                    header=header,
                    script=script,
                    run_element=run_element,
                )
            )
    return table
