"""The Docx footnotes: Word's own, at the foot of the page where their reference falls.

python-docx has no API for notes, so the pieces are built here the way Word writes them:

- the part `/word/footnotes.xml` (related to the main document by the `footnotes`
  relationship, with its content type), holding first the two notes Word draws its
  separators with (`w:type="separator"`, id -1, and `continuationSeparator`, id 0, named
  in the settings' `w:footnotePr`), then one `w:footnote` per note;
- a reference: a run in the "footnote reference" character style (raised) holding
  `<w:footnoteReference w:customMarkFollows="1" w:id="N"/>` and the book's mark as its
  text. A custom mark, not Word's numbering: the book's own marks (`4`, `*`, `†`) stay,
  as the other formats show them, and the text's own "see note 4" still holds;
- a note: paragraphs in the "footnote text" style, the first starting with the same mark
  in the reference style, then the note's runs.

The styles carry Word's built-in names ("footnote text", "footnote reference"), which Word
and LibreOffice map to their own footnote styles.
"""

from __future__ import annotations

from docx.document import Document as DocumentObject
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import nsdecls, qn
from docx.shared import Pt
from lxml.etree import _Element

from exports.renderers._docx_script import Script, paragraph_element, run_element

TEXT_STYLE = "footnote text"
TEXT_STYLE_ID = "FootnoteText"
REFERENCE_STYLE = "footnote reference"
REFERENCE_STYLE_ID = "FootnoteReference"
FIRST_ID = 1  # ids -1 and 0 are the separators'

PART_START = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f"<w:footnotes {nsdecls('w', 'r')}>"
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:pPr><w:spacing w:after="0" w:line="240" '
    'w:lineRule="auto"/></w:pPr><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:pPr><w:spacing w:after="0" w:line="240" '
    'w:lineRule="auto"/></w:pPr><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>'
).encode()
PART_END = b"</w:footnotes>"
# CT_Settings: w:footnotePr comes before these.
_SETTINGS_AFTER_FOOTNOTE_PR = (
    "w:endnotePr",
    "w:compat",
    "w:docVars",
    "w:rsids",
    "m:mathPr",
    "w:attachedSchema",
    "w:themeFontLang",
    "w:clrSchemeMapping",
    "w:doNotIncludeSubdocsInStats",
    "w:doNotAutoCompressPictures",
    "w:forceUpgrade",
    "w:captions",
    "w:readModeInkLockDown",
    "w:smartTagType",
    "sl:schemaLibrary",
    "w:shapeDefaults",
    "w:doNotEmbedSmartTags",
    "w:decimalSymbol",
    "w:listSeparator",
)


def notes_set_up(document: DocumentObject) -> None:
    """The footnote styles, and the separators named in the settings (once a book has notes:
    a book without keeps the document it had)."""
    styles = document.styles
    text = styles.add_style(TEXT_STYLE, WD_STYLE_TYPE.PARAGRAPH)
    text.element.set(qn("w:styleId"), TEXT_STYLE_ID)
    text.base_style = styles["Normal"]
    text.font.size = Pt(9)
    text.paragraph_format.space_after = Pt(2)
    text.unhide_when_used = True
    text.priority = 99
    reference = styles.add_style(REFERENCE_STYLE, WD_STYLE_TYPE.CHARACTER)
    reference.element.set(qn("w:styleId"), REFERENCE_STYLE_ID)
    reference.font.superscript = True
    reference.unhide_when_used = True
    reference.priority = 99
    settings = document.settings.element
    if settings.find(qn("w:footnotePr")) is None:
        properties = OxmlElement("w:footnotePr")
        for separator in ("-1", "0"):
            entry = OxmlElement("w:footnote")
            entry.set(qn("w:id"), separator)
            properties.append(entry)
        settings.insert_element_before(properties, *_SETTINGS_AFTER_FOOTNOTE_PR)


def mark_run(mark: str, script: Script, *, footnote_id: int | None = None) -> _Element:
    """The mark in the footnote reference style (raised); with `footnote_id`, a reference
    to that footnote whose mark is this text."""
    run = run_element(mark, script)
    properties = run.find(qn("w:rPr"))
    assert properties is not None  # run_element always writes one
    style = OxmlElement("w:rStyle")
    style.set(qn("w:val"), REFERENCE_STYLE_ID)
    properties.insert(0, style)
    if footnote_id is not None:
        reference = OxmlElement("w:footnoteReference")
        reference.set(qn("w:customMarkFollows"), "1")
        reference.set(qn("w:id"), str(footnote_id))
        properties.addnext(reference)
    return run


def note_paragraph(mark: str, runs: list[_Element], script: Script) -> _Element:
    """A note's text as a paragraph in the footnote text style, its mark first."""
    paragraph = paragraph_element(style_id=TEXT_STYLE_ID, page_break_before=False, rtl=script.rtl)
    paragraph.append(mark_run(mark, script))
    paragraph.append(run_element(" ", script))
    for run in runs:
        paragraph.append(run)
    return paragraph


def footnote_element(footnote_id: int, paragraph: _Element) -> _Element:
    """A `w:footnote` holding the note's paragraph."""
    footnote = OxmlElement("w:footnote")
    footnote.set(qn("w:id"), str(footnote_id))
    footnote.append(paragraph)
    return footnote
