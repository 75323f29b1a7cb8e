"""The Docx table of contents: Word's own TOC field over the Heading 1-3 styles, its result
already written out, and a bookmark on every heading it lists.

python-docx has no API for fields or bookmarks (it reads and writes paragraphs, runs,
styles and tables), so the field and the bookmarks are built here as WordprocessingML
elements, the way Word itself writes them:

    <w:p>(toc 1) <w:r><w:fldChar begin/></w:r> <w:r><w:instrText> TOC \\o "1-3" \\h \\z \\u </w:instrText></w:r>
         <w:r><w:fldChar separate/></w:r> <w:hyperlink w:anchor="_Toc_p3_h0">title</w:hyperlink></w:p>
    <w:p>(toc 2) <w:hyperlink ...>title</w:hyperlink></w:p> ...
    <w:p>(toc 1) ... <w:r><w:fldChar end/></w:r></w:p>

Word and LibreOffice show a field's stored result until the field is updated, so the result
holds the entries — every heading of levels 1-3 in order, each in the built-in "toc N"
style of its level and linked to its heading's bookmark — and the file reads right, with
working links, as it is opened. What the stored result cannot hold is page numbers (only
the word processor knows where its pages break): updating the field (F9 in Word, Tools >
Update in LibreOffice) rebuilds it from the headings with them. The field is not marked to
update itself on opening, which makes Word ask the reader a question about fields first.
"""

from __future__ import annotations

from docx.document import Document as DocumentObject
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt
from lxml.etree import _Element

from exports.renderers._docx_script import Script, paragraph_element, run_element
from exports.toc import TOC_DEPTH

CONTENTS_HEADING_STYLE = "TOC Heading"  # in python-docx's default template (a Heading 1 left out of the contents)
INSTRUCTION = f' TOC \\o "1-{TOC_DEPTH}" \\h \\z \\u '
_ENTRY_INDENT = Pt(11)  # each level one step further in, as Word's own toc styles are


def entry_style_id(level: int) -> str:
    return f"TOC{level}"


def toc_styles_add(document: DocumentObject) -> None:
    """Word's built-in "toc 1".."toc N" paragraph styles (python-docx's template has them
    only as latent styles): Word's field uses them by these names."""
    styles = document.styles
    for level in range(1, TOC_DEPTH + 1):
        style = styles.add_style(f"toc {level}", WD_STYLE_TYPE.PARAGRAPH)
        style.element.set(qn("w:styleId"), entry_style_id(level))
        style.base_style = styles["Normal"]
        style.paragraph_format.left_indent = _ENTRY_INDENT * (level - 1)
        style.paragraph_format.space_after = Pt(4)
        style.unhide_when_used = True
        style.priority = 39


def bookmark_name(anchor: str) -> str:
    """A heading's bookmark ("_Toc" like Word's own: hidden from the bookmark list)."""
    return "_Toc_" + anchor.replace("-", "_")


def bookmark_add(paragraph: _Element, *, name: str, bookmark_id: int) -> None:
    """Wrap the paragraph's content (after its properties) in a bookmark."""
    start = OxmlElement("w:bookmarkStart")
    start.set(qn("w:id"), str(bookmark_id))
    start.set(qn("w:name"), name)
    end = OxmlElement("w:bookmarkEnd")
    end.set(qn("w:id"), str(bookmark_id))
    properties = paragraph.find(qn("w:pPr"))
    paragraph.insert(0 if properties is None else 1, start)
    paragraph.append(end)


def _field_char(kind: str, script: Script) -> _Element:
    run = run_element("", script)
    char = OxmlElement("w:fldChar")
    char.set(qn("w:fldCharType"), kind)
    run.append(char)
    return run


def _instruction(script: Script) -> _Element:
    run = run_element("", script)
    text = OxmlElement("w:instrText")
    text.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    text.text = INSTRUCTION
    run.append(text)
    return run


def contents_elements(
    entries: list[tuple[int, str, str]], *, heading_style_id: str, label: str, script: Script
) -> list[_Element]:
    """The contents' paragraphs: its heading (`label`, in the book's language), the TOC field
    whose result is the `entries` (level, title, bookmark name), and a page break after it.
    Nothing when there is no entry."""
    if not entries:
        return []
    heading = paragraph_element(style_id=heading_style_id, page_break_before=False, rtl=script.rtl)
    heading.append(run_element(label, script))
    paragraphs = [heading]
    for number, (level, title, bookmark) in enumerate(entries):
        paragraph = paragraph_element(style_id=entry_style_id(level), page_break_before=False, rtl=script.rtl)
        if number == 0:
            paragraph.extend((_field_char("begin", script), _instruction(script), _field_char("separate", script)))
        link = OxmlElement("w:hyperlink")
        link.set(qn("w:anchor"), bookmark)
        link.set(qn("w:history"), "1")
        link.append(run_element(title, script))
        paragraph.append(link)
        if number == len(entries) - 1:
            paragraph.append(_field_char("end", script))
        paragraphs.append(paragraph)
    page_break = paragraph_element(style_id=None, page_break_before=False, rtl=script.rtl)
    run = run_element("", script)
    brk = OxmlElement("w:br")
    brk.set(qn("w:type"), "page")
    run.append(brk)
    page_break.append(run)
    paragraphs.append(page_break)
    return paragraphs
