"""What Word needs to know about a language, and the WordprocessingML that tells it.

Word sorts characters into three classes, each with its own font, language and bold /
italic switches: Latin-like text (`w:val`, `w:b`), East Asian text (`w:eastAsia`) and
complex scripts — Arabic, Hebrew, Devanagari, Thai... (`w:bidi`, `w:bCs`, `w:iCs`).
Right-to-left paragraphs also need `w:bidi` on the paragraph and `w:rtl` on their runs.
python-docx has no API for these, so paragraphs and runs are built here as elements, in
the order the schema requires (appended in sequence, or `insert_element_before` the
elements that must follow when added to an existing element).
"""

from __future__ import annotations

from dataclasses import dataclass

from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.oxml.text.parfmt import CT_PPr
from lxml.etree import _Element

from exports.book import RTL_LANGUAGES
from exports.labels import base_language

# Word's usual region for a bare language code; any other code is used as it is.
_TAGS = {
    "ar": "ar-SA",
    "he": "he-IL",
    "fa": "fa-IR",
    "ur": "ur-PK",
    "hi": "hi-IN",
    "bn": "bn-IN",
    "ta": "ta-IN",
    "th": "th-TH",
    "ja": "ja-JP",
    "zh": "zh-CN",
    "ko": "ko-KR",
    "en": "en-US",
    "ru": "ru-RU",
    "uk": "uk-UA",
    "el": "el-GR",
    "de": "de-DE",
    "fr": "fr-FR",
    "es": "es-ES",
    "it": "it-IT",
    "pt": "pt-PT",
}
# Indic and South-East Asian scripts are complex scripts to Word too.
_COMPLEX_SCRIPT = RTL_LANGUAGES | {
    "hi",
    "bn",
    "ta",
    "te",
    "mr",
    "gu",
    "kn",
    "ml",
    "pa",
    "ne",
    "si",
    "th",
    "lo",
    "km",
    "my",
}
# Serif faces every Windows Word has; Word substitutes where they are missing.
_EAST_ASIAN_FONTS = {"ja": "MS Mincho", "zh": "SimSun", "ko": "Batang"}

# Elements that must come after the ones inserted here (ECMA-376 CT_PPr, CT_RPr, CT_SectPr).
_PPR_AFTER_BIDI = (
    "w:adjustRightInd",
    "w:snapToGrid",
    "w:spacing",
    "w:ind",
    "w:contextualSpacing",
    "w:mirrorIndents",
    "w:suppressOverlap",
    "w:jc",
    "w:textDirection",
    "w:textAlignment",
    "w:textboxTightWrap",
    "w:outlineLvl",
    "w:divId",
    "w:cnfStyle",
    "w:rPr",
    "w:sectPr",
    "w:pPrChange",
)
_PPR_AFTER_SHD = (
    "w:tabs",
    "w:suppressAutoHyphens",
    "w:kinsoku",
    "w:wordWrap",
    "w:overflowPunct",
    "w:topLinePunct",
    "w:autoSpaceDE",
    "w:autoSpaceDN",
    "w:bidi",
    *_PPR_AFTER_BIDI,
)
_PPR_AFTER_PBDR = ("w:shd", *_PPR_AFTER_SHD)
_RPR_AFTER_LANG = ("w:eastAsianLayout", "w:specVanish", "w:oMath")
_SECTPR_AFTER_BIDI = ("w:rtlGutter", "w:docGrid", "w:printerSettings", "w:sectPrChange")


@dataclass(frozen=True)
class Script:
    """How Word should treat text in one language."""

    language: str  # BCP 47 tag, e.g. "ar-SA"
    rtl: bool
    complex_script: bool
    east_asian_font: str | None

    @property
    def east_asian(self) -> bool:
        return self.east_asian_font is not None


def script_for(language: str | None) -> Script:
    code = base_language(language)
    return Script(
        language=_TAGS.get(code, language or "und"),
        rtl=code in RTL_LANGUAGES,
        complex_script=code in _COMPLEX_SCRIPT,
        east_asian_font=_EAST_ASIAN_FONTS.get(code),
    )


def run_element(
    text: str, script: Script, *, bold: bool = False, italic: bool = False, font: str | None = None
) -> _Element:
    """A `w:r` with its properties built in schema order (faster than python-docx's
    ordered inserts, which matter over a whole book): font (and the East Asian font),
    bold / italic and their complex-script twins, direction, language. Line breaks and
    tabs in the text become `w:br` and `w:tab`."""
    run = OxmlElement("w:r")
    properties = OxmlElement("w:rPr")
    if font or script.east_asian_font:
        fonts = OxmlElement("w:rFonts")
        if font:
            fonts.set(qn("w:ascii"), font)
            fonts.set(qn("w:hAnsi"), font)
        if script.east_asian_font:
            fonts.set(qn("w:eastAsia"), script.east_asian_font)
            fonts.set(qn("w:hint"), "eastAsia")
        properties.append(fonts)
    if bold:
        properties.append(OxmlElement("w:b"))
        if script.complex_script:
            properties.append(OxmlElement("w:bCs"))
    if italic:
        properties.append(OxmlElement("w:i"))
        if script.complex_script:
            properties.append(OxmlElement("w:iCs"))
    if script.rtl:
        properties.append(OxmlElement("w:rtl"))
    properties.append(_lang(script))
    run.append(properties)
    for number, line in enumerate(text.split("\n")):
        if number:
            run.append(OxmlElement("w:br"))
        for position, piece in enumerate(line.split("\t")):
            if position:
                run.append(OxmlElement("w:tab"))
            if piece:
                run.append(_text_element(piece))
    return run


def _text_element(text: str) -> _Element:
    element = OxmlElement("w:t")
    element.text = text
    if text != text.strip():
        element.set(qn("xml:space"), "preserve")
    return element


def _lang(script: Script) -> _Element:
    lang = OxmlElement("w:lang")
    if script.east_asian:
        lang.set(qn("w:eastAsia"), script.language)
    elif script.complex_script:
        lang.set(qn("w:bidi"), script.language)
    else:
        lang.set(qn("w:val"), script.language)
    return lang


def paragraph_element(*, style_id: str | None, page_break_before: bool, rtl: bool) -> _Element:
    """A `w:p` whose properties (style, page break, direction) are built in schema order."""
    paragraph = OxmlElement("w:p")
    properties = OxmlElement("w:pPr")
    if style_id:
        style = OxmlElement("w:pStyle")
        style.set(qn("w:val"), style_id)
        properties.append(style)
    if page_break_before:
        properties.append(OxmlElement("w:pageBreakBefore"))
    if rtl:
        properties.append(OxmlElement("w:bidi"))
    if len(properties):
        paragraph.append(properties)
    return paragraph


def paragraph_shading_set(ppr: CT_PPr, *, fill: str, border: str) -> None:
    """A box around the paragraph and a background (the failed-page notice)."""
    borders = OxmlElement("w:pBdr")
    for side in ("top", "left", "bottom", "right"):
        edge = OxmlElement(f"w:{side}")
        edge.set(qn("w:val"), "single")
        edge.set(qn("w:sz"), "6")
        edge.set(qn("w:space"), "4")
        edge.set(qn("w:color"), border)
        borders.append(edge)
    # python-docx annotates the element as ElementBase; any lxml element goes (addprevious).
    ppr.insert_element_before(borders, *_PPR_AFTER_PBDR)  # type: ignore[arg-type]
    shading = OxmlElement("w:shd")
    shading.set(qn("w:val"), "clear")
    shading.set(qn("w:color"), "auto")
    shading.set(qn("w:fill"), fill)
    ppr.insert_element_before(shading, *_PPR_AFTER_SHD)  # type: ignore[arg-type]


def default_language_set(document_defaults_rpr: _Element, script: Script) -> None:
    """The document's default language (docDefaults), which every style inherits."""
    lang = document_defaults_rpr.find(qn("w:lang"))
    if lang is None:
        # A python-docx element (CT_RPr), typed here as the lxml element .find() returns.
        document_defaults_rpr.insert_element_before(_lang(script), *_RPR_AFTER_LANG)  # type: ignore[attr-defined]
        return
    for attribute, value in _lang(script).attrib.items():
        lang.set(attribute, value)


def section_rtl_set(sect_pr: _Element) -> None:
    """A right-to-left section: columns and page layout run from the right."""
    if sect_pr.find(qn("w:bidi")) is None:
        # A python-docx element (CT_SectPr), typed here as a plain lxml element.
        sect_pr.insert_element_before(OxmlElement("w:bidi"), *_SECTPR_AFTER_BIDI)  # type: ignore[attr-defined]
