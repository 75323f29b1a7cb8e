"""The fonts the PDF export embeds: which TrueType file covers which script, found in the
Debian font packages (docs/exports-pdf-fonts.md), registered with reportlab once per
process, and chosen per run of text by the script of its characters.

reportlab embeds TrueType outlines only (the CFF-flavoured Noto CJK fonts are refused), so
Chinese, Japanese and Korean come from TrueType packages with licences that allow
embedding. The original-layout Pdf sets Latin, Greek and Cyrillic in the face
metric-compatible with the source's font where it knows it (`source_font`,
`METRIC_FAMILIES`: Liberation Serif for Times and its kin, Liberation Sans for Helvetica,
Liberation Mono for Courier), so a translation takes the room its source took.
`ShapingFont` adds what the complex-script layout (`_pdf_text`) needs: a
HarfBuzz font, glyphs without a character of their own drawn through private code points,
and a ToUnicode map that gives each such glyph the text it stands for (so text extraction
gives back conjuncts and ligatures).
"""

from __future__ import annotations

import functools
import os
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import uharfbuzz
from reportlab.lib.fonts import addMapping
from reportlab.pdfbase import pdfdoc, pdfmetrics
from reportlab.pdfbase.ttfonts import SUBSETN, TTFont

FONT_ROOTS = ("/usr/share/fonts", "/usr/local/share/fonts")

# Script keys. "latin" also covers Greek, Cyrillic and any other alphabet not listed.
LATIN, ARABIC, HEBREW, DEVANAGARI, HAN, KANA, HANGUL = (
    "latin",
    "arabic",
    "hebrew",
    "devanagari",
    "han",
    "kana",
    "hangul",
)
COMPLEX_SCRIPTS = frozenset({ARABIC, HEBREW, DEVANAGARI})  # need shaping (and bidi)
CJK_SCRIPTS = frozenset({HAN, KANA, HANGUL})

_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0590, 0x05FF, HEBREW),
    (0xFB1D, 0xFB4F, HEBREW),
    (0x0600, 0x06FF, ARABIC),
    (0x0750, 0x077F, ARABIC),
    (0x0870, 0x08FF, ARABIC),
    (0xFB50, 0xFDFF, ARABIC),
    (0xFE70, 0xFEFF, ARABIC),
    (0x0900, 0x097F, DEVANAGARI),
    (0xA8E0, 0xA8FF, DEVANAGARI),
    (0x1CD0, 0x1CFF, DEVANAGARI),
    (0x1100, 0x11FF, HANGUL),
    (0x3130, 0x318F, HANGUL),
    (0xA960, 0xA97F, HANGUL),
    (0xAC00, 0xD7FF, HANGUL),
    (0xFFA0, 0xFFDC, HANGUL),
    (0x3040, 0x30FF, KANA),
    (0x31F0, 0x31FF, KANA),
    (0xFF65, 0xFF9F, KANA),
    (0x2E80, 0x2FDF, HAN),
    (0x3000, 0x303F, HAN),  # CJK punctuation: set in the CJK font
    (0x3190, 0x31EF, HAN),
    (0x3200, 0x33FF, HAN),
    (0x3400, 0x4DBF, HAN),
    (0x4E00, 0x9FFF, HAN),
    (0xF900, 0xFAFF, HAN),
    (0xFE30, 0xFE4F, HAN),
    (0xFF00, 0xFF64, HAN),  # full-width forms
    (0xFFE0, 0xFFEF, HAN),
    (0x20000, 0x3FFFF, HAN),
)


def script_of(char: str) -> str | None:
    """The script a character is set in, or None for characters every script shares
    (spaces, digits, punctuation, combining marks): those follow their neighbours."""
    code = ord(char)
    if code < 0x80:
        return LATIN if char.isalpha() else None
    for start, end, script in _SCRIPT_RANGES:
        if start <= code <= end:
            return script
    return LATIN if unicodedata.category(char).startswith("L") else None


@dataclass(frozen=True)
class FaceFile:
    file: str  # the file's name under FONT_ROOTS
    subfont: int = 0  # the face's index in a TrueType collection (.ttc)


@dataclass(frozen=True)
class Family:
    key: str
    package: str  # the Debian package that installs it
    regular: FaceFile
    bold: FaceFile | None = None
    italic: FaceFile | None = None
    bold_italic: FaceFile | None = None


FAMILIES: dict[str, Family] = {
    spec.key: spec
    for spec in (
        Family(
            "latin",
            "fonts-noto-core",
            FaceFile("NotoSerif-Regular.ttf"),
            FaceFile("NotoSerif-Bold.ttf"),
            FaceFile("NotoSerif-Italic.ttf"),
            FaceFile("NotoSerif-BoldItalic.ttf"),
        ),
        Family(
            "sans",
            "fonts-noto-core",
            FaceFile("NotoSans-Regular.ttf"),
            FaceFile("NotoSans-Bold.ttf"),
            FaceFile("NotoSans-Italic.ttf"),
            FaceFile("NotoSans-BoldItalic.ttf"),
        ),
        Family(
            "mono",
            "fonts-dejavu-core",
            FaceFile("DejaVuSansMono.ttf"),
            FaceFile("DejaVuSansMono-Bold.ttf"),
            FaceFile("DejaVuSansMono-Oblique.ttf"),
            FaceFile("DejaVuSansMono-BoldOblique.ttf"),
        ),
        Family(
            "arabic", "fonts-noto-core", FaceFile("NotoNaskhArabic-Regular.ttf"), FaceFile("NotoNaskhArabic-Bold.ttf")
        ),
        Family(
            "hebrew", "fonts-noto-core", FaceFile("NotoSerifHebrew-Regular.ttf"), FaceFile("NotoSerifHebrew-Bold.ttf")
        ),
        Family(
            "devanagari",
            "fonts-noto-core",
            FaceFile("NotoSerifDevanagari-Regular.ttf"),
            FaceFile("NotoSerifDevanagari-Bold.ttf"),
        ),
        Family(
            "liberation-serif",
            "fonts-liberation2",
            FaceFile("LiberationSerif-Regular.ttf"),
            FaceFile("LiberationSerif-Bold.ttf"),
            FaceFile("LiberationSerif-Italic.ttf"),
            FaceFile("LiberationSerif-BoldItalic.ttf"),
        ),
        Family(
            "liberation-sans",
            "fonts-liberation2",
            FaceFile("LiberationSans-Regular.ttf"),
            FaceFile("LiberationSans-Bold.ttf"),
            FaceFile("LiberationSans-Italic.ttf"),
            FaceFile("LiberationSans-BoldItalic.ttf"),
        ),
        Family(
            "liberation-mono",
            "fonts-liberation2",
            FaceFile("LiberationMono-Regular.ttf"),
            FaceFile("LiberationMono-Bold.ttf"),
            FaceFile("LiberationMono-Italic.ttf"),
            FaceFile("LiberationMono-BoldItalic.ttf"),
        ),
        Family("ja", "fonts-ipafont-mincho", FaceFile("ipam.ttf")),
        Family("ko", "fonts-nanum", FaceFile("NanumMyeongjo.ttf"), FaceFile("NanumMyeongjoBold.ttf")),
        Family("zh", "fonts-wqy-microhei", FaceFile("wqy-microhei.ttc", 0)),
    )
}
FONT_PACKAGES = tuple(sorted({spec.package for spec in FAMILIES.values()}))

# The family a script is set in; Han characters depend on the language (see cjk_family).
_SCRIPT_FAMILY = {LATIN: "latin", ARABIC: "arabic", HEBREW: "hebrew", DEVANAGARI: "devanagari"}
_CJK_LANGUAGE_FAMILY = {"ja": "ja", "ko": "ko", "zh": "zh"}
# Tried in order for a character its own family lacks (Hebrew fonts have no digits, the
# Arabic font no Latin punctuation).
FALLBACK_ORDER = ("latin", "sans", "zh", "ja", "ko", "arabic", "hebrew", "devanagari")

SERIF, SANS, MONO = "serif", "sans", "mono"
# The family metric-compatible with each kind of source font: Liberation Serif has the
# widths of Times (Nimbus Roman), Liberation Sans of Helvetica (Arial, Nimbus Sans),
# Liberation Mono of Courier (Nimbus Mono). It stands for TeX's Computer Modern Roman too:
# Latin Modern (fonts-lmodern) has CFF outlines only, which reportlab does not embed, and
# of the TrueType serifs Liberation Serif comes closest (Computer Modern runs 10% wider
# than Times; Noto Serif 19%, DejaVu Serif 27%).
METRIC_FAMILIES = {SERIF: "liberation-serif", SANS: "liberation-sans", MONO: "liberation-mono"}
_SUBSET_PREFIX = re.compile(r"^[A-Z]{6}\+")
_MONO_NAME = re.compile(
    r"courier|mono|nimbusmon|typewriter|cmtt|cmsltt|cmitt|sftt|lmtt|consol|menlo|fixed|inconsolata|cousine|lettergothic",
    re.IGNORECASE,
)
_SANS_NAME = re.compile(
    r"sans|helvetica|arial|nimbussan|cmss|sfss|lmss|verdana|tahoma|calibri|carlito|gill|futura|frutiger|myriad"
    r"|segoe|roboto|trebuchet|avantgarde|gothic|univers|grotesk|franklin|optima|geneva|lucidagrande",
    re.IGNORECASE,
)
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|-medi|ultra|cmbx|cmb\d|sfbx|cmssbx", re.IGNORECASE)
_ITALIC_NAME = re.compile(
    r"italic|ital|oblique|obli|slant|cmti|cmsl|cmmi|cmbxti|cmbxsl|cmssi|cmitt|sfti|sfsl|sfit|[-,](bold)?it$",
    re.IGNORECASE,
)


class FontsMissing(RuntimeError):
    """The font files the PDF export needs are not installed."""

    def __init__(self, missing: Iterable[str]) -> None:
        self.missing = sorted(set(missing))
        packages = " ".join(FONT_PACKAGES)
        super().__init__(f"PDF fonts not found: {', '.join(self.missing)} (apt-get install {packages})")


class ShapingFont(TTFont):
    """A TrueType font that can draw HarfBuzz's glyphs, each with the text it stands for.

    `code_for(glyph, text)` returns the code point to draw `glyph` with: the character
    itself when the glyph is that character's own, otherwise a private-use code point
    (plane 15) mapped to the glyph; the ToUnicode map then gives back `text` for it
    (a conjunct's letters, a ligature's pair, nothing for a cluster's second glyph)."""

    _PRIVATE_START = 0xF0000
    _PRIVATE_END = 0xFFFFD

    def __init__(self, name: str, filename: str, subfont: int = 0) -> None:
        super().__init__(name, filename, subfontIndex=subfont)
        self._lock = threading.Lock()
        self._private_text: dict[int, str] = {}
        self._private_code: dict[tuple[int, str, float], int] = {}
        self._next_private = self._PRIVATE_START
        self._glyph_char: dict[int, int] = {}
        for code, glyph in sorted(self.face.charToGlyph.items()):
            self._glyph_char.setdefault(glyph, code)
        self.hb_font = uharfbuzz.Font(uharfbuzz.Face(uharfbuzz.Blob.from_file_path(filename), subfont))
        self.units_per_em = self.hb_font.face.upem

    def covers(self, char: str) -> bool:
        return ord(char) in self.face.charToGlyph

    def code_for(self, glyph: int, text: str, width: float | None = None) -> int:
        """The code point that draws `glyph` standing for `text`. `width` (thousandths of
        an em) overrides the glyph's advance in the PDF: a mark drawn left of the pen gets
        the width up to the next glyph, so text extraction sees no gap (and no space)
        between it and the letter that follows."""
        natural = self.hb_font.get_glyph_h_advance(glyph) * 1000 / self.units_per_em
        pdf_width = natural if width is None else round(width, 1)
        own = self._glyph_char.get(glyph)
        if own is not None and chr(own) == text and abs(pdf_width - natural) < 0.05:
            return own
        key = (glyph, text, pdf_width)
        code = self._private_code.get(key)
        if code is not None:
            return code
        with self._lock:
            code = self._private_code.get(key)
            if code is None:
                if self._next_private > self._PRIVATE_END:
                    return own if own is not None else 0
                code = self._next_private
                self._next_private += 1
                self.face.charToGlyph[code] = glyph
                self.face.charWidths[code] = pdf_width
                self._private_text[code] = text
                self._private_code[key] = code
        return code

    def text_of_code(self, code: int) -> str:
        return self._private_text.get(code, chr(code) if code else "")

    def addObjects(self, doc: pdfdoc.PDFDocument) -> None:  # noqa: N802 (reportlab's hook)
        """reportlab's own, with a ToUnicode map that knows the private code points (and
        writes characters beyond the BMP as UTF-16 pairs)."""
        state = self._assignState(doc)  # type: ignore[attr-defined]  # reportlab's own, not in its stubs
        state.frozen = 1
        for index, subset in enumerate(state.subsets):
            internal_name = self.getSubsetInternalName(index, doc)[1:]
            base_font_name = (b"".join((SUBSETN(index), b"+", self.face.name, self.face.subfontNameX))).decode("pdfdoc")
            # A PDF object takes its dictionary entries as attributes, which the stubs do not declare.
            pdf_font: Any = pdfdoc.PDFTrueTypeFont()
            pdf_font.__Comment__ = f"Font {self.fontName} subset {index}"
            pdf_font.Name = internal_name
            pdf_font.BaseFont = base_font_name
            pdf_font.FirstChar = 0
            pdf_font.LastChar = len(subset) - 1
            pdf_font.Widths = pdfdoc.PDFArray(list(map(self.face.getCharWidth, subset)))
            cmap_stream = pdfdoc.PDFStream()
            cmap_stream.content = _to_unicode_cmap(base_font_name, [self.text_of_code(code) for code in subset])
            if doc.compression:
                cmap_stream.filters = [pdfdoc.PDFZCompress]
            pdf_font.ToUnicode = doc.Reference(cmap_stream, "toUnicodeCMap:" + base_font_name)
            pdf_font.FontDescriptor = self.face.addSubsetObjects(doc, base_font_name, subset)
            doc.Reference(pdf_font, internal_name)
            cast(pdfdoc.PDFDictionary, doc.idToObject["BasicFonts"]).dict[internal_name] = pdf_font
        del self.state[doc]


def _utf16_hex(text: str) -> str:
    return text.encode("utf-16-be").hex().upper()


def _to_unicode_cmap(name: str, texts: list[str]) -> str:
    entries = [f"<{code:02X}> <{_utf16_hex(text)}>" for code, text in enumerate(texts)]
    lines = [
        "/CIDInit /ProcSet findresource begin",
        "12 dict begin",
        "begincmap",
        f"/CIDSystemInfo << /Registry ({name}) /Ordering ({name}) /Supplement 0 >> def",
        f"/CMapName /{name} def",
        "/CMapType 2 def",
        "1 begincodespacerange",
        f"<00> <{max(len(texts) - 1, 0):02X}>",
        "endcodespacerange",
    ]
    for start in range(0, len(entries), 100):  # at most 100 entries per block
        chunk = entries[start : start + 100]
        lines += [f"{len(chunk)} beginbfchar", *chunk, "endbfchar"]
    lines += ["endcmap", "CMapName currentdict /CMap defineresource pop", "end", "end"]
    return "\n".join(lines)


@cache
def _font_index() -> dict[str, str]:
    """Font file name -> path, over the system font folders."""
    index: dict[str, str] = {}
    for root in FONT_ROOTS:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                index.setdefault(name, os.path.join(folder, name))
    return index


def missing_font_files() -> list[str]:
    """The font files (of FAMILIES) not installed; empty when the PDF export can run."""
    index = _font_index()
    return [
        face.file
        for spec in FAMILIES.values()
        for face in (spec.regular, spec.bold, spec.italic, spec.bold_italic)
        if face is not None and face.file not in index
    ]


STYLES = ("regular", "bold", "italic", "bold_italic")


@dataclass(frozen=True)
class Registered:
    """The reportlab font names of one family, per style (a missing style maps to the
    nearest one the family has: bold italic to bold, italic to regular)."""

    key: str
    faces: dict[str, str]

    def face(self, *, bold: bool = False, italic: bool = False) -> str:
        return self.faces[STYLES[int(bold) + 2 * int(italic)]]


_registry_lock = threading.Lock()
_registered: dict[str, Registered] = {}


def family(key: str) -> Registered:
    """The family `key` of FAMILIES, registered with reportlab on first use (a process
    loads only the fonts its books need). Raises FontsMissing when any PDF font file is
    not installed."""
    registered = _registered.get(key)
    if registered is not None:
        return registered
    with _registry_lock:
        if key not in _registered:
            _registered[key] = _register(FAMILIES[key])
        return _registered[key]


def ensure_fonts() -> None:
    """Raises FontsMissing unless every font file of FAMILIES is installed."""
    missing = missing_font_files()
    if missing:
        _font_index.cache_clear()  # a later call sees fonts installed since
        raise FontsMissing(missing)


def _register(spec: Family) -> Registered:
    ensure_fonts()
    index = _font_index()
    files = {
        "regular": spec.regular,
        "bold": spec.bold or spec.regular,
        "italic": spec.italic or spec.regular,
        "bold_italic": spec.bold_italic or spec.bold or spec.italic or spec.regular,
    }
    faces: dict[str, str] = {}
    by_file: dict[FaceFile, str] = {}
    for style, face_file in files.items():
        if face_file not in by_file:
            name = f"BTS-{spec.key}-{style}"
            pdfmetrics.registerFont(ShapingFont(name, index[face_file.file], face_file.subfont))
            by_file[face_file] = name
        faces[style] = by_file[face_file]
    family_name = f"BTS-{spec.key}"
    for bold in (0, 1):
        for italic in (0, 1):
            addMapping(family_name, bold, italic, faces[STYLES[bold + 2 * italic]])
    return Registered(spec.key, faces)


def shaping_font(name: str) -> ShapingFont:
    font = pdfmetrics.getFont(name)
    assert isinstance(font, ShapingFont)
    return font


@dataclass(frozen=True)
class SourceFont:
    """What a source font's name tells: its kind (serif, sans or mono) and its style."""

    kind: str
    bold: bool = False
    italic: bool = False

    @property
    def family(self) -> str:
        """The family metric-compatible with it, for Latin, Greek and Cyrillic text."""
        return METRIC_FAMILIES[self.kind]


def source_font(name: str) -> SourceFont | None:
    """A source font read from its PDF name (a subset prefix such as ABCDEF+ dropped):
    monospace by name (Courier, *Mono*, TeX's CMTT and its kin), sans by name (Helvetica,
    Arial, Nimbus Sans, TeX's CMSS, *Sans*), any other font a serif; bold and italic by
    name too. None for no name (an OCR layout's lines)."""
    base = _SUBSET_PREFIX.sub("", name.strip())
    if not base:
        return None
    kind = MONO if _MONO_NAME.search(base) else SANS if _SANS_NAME.search(base) else SERIF
    return SourceFont(kind, bold=bool(_BOLD_NAME.search(base)), italic=bool(_ITALIC_NAME.search(base)))


def cjk_family(text: str, language: str) -> str:
    """The CJK family for Han characters in `text`: Japanese when it has kana, Korean when
    it has Hangul, else the book's language when that is Chinese, Japanese or Korean,
    else Chinese."""
    scripts = {script_of(char) for char in text}
    if KANA in scripts:
        return "ja"
    if HANGUL in scripts:
        return "ko"
    return _CJK_LANGUAGE_FAMILY.get(language, "zh")


def family_for_script(script: str, cjk: str, latin: str = "latin") -> str:
    if script in CJK_SCRIPTS:
        return {KANA: "ja", HANGUL: "ko"}.get(script, cjk)
    key = _SCRIPT_FAMILY.get(script, "latin")
    return latin if key == "latin" else key


def assign_families(text: str, *, language: str, latin: str = "latin") -> list[str]:
    """The family of each character of `text`: its script's family (falling back, in
    FALLBACK_ORDER, to one that has the character); shared characters (spaces, digits,
    punctuation, marks) take the family of the character before them when it has them,
    else of the next character with a script, else the first that has them. `latin` is
    the family of Latin, Greek and Cyrillic letters and of text without letters (a
    metric-compatible one, `SourceFont.family`, in the original-layout Pdf); a character
    it lacks falls back as any other. The same text is read once (the original-layout
    Pdf sets a paragraph at several sizes)."""
    return list(_families(text, language, latin))


@functools.lru_cache(maxsize=256)
def _families(text: str, language: str, latin: str) -> tuple[str, ...]:
    cjk = cjk_family(text, language)
    own: list[str | None] = [
        None if script is None else _covering(char, family_for_script(script, cjk, latin))
        for char, script in ((char, _script(char)) for char in text)
    ]
    following: list[str] = []
    upcoming = latin
    for key in reversed(own):
        upcoming = key or upcoming
        following.append(upcoming)
    following.reverse()
    chosen: list[str] = []
    previous = ""
    for index, char in enumerate(text):
        key = own[index]
        if key is None:
            joins_previous = bool(previous) and (unicodedata.category(char).startswith("M") or _covers(previous, char))
            key = previous if joins_previous else _covering(char, following[index])
        chosen.append(key)
        previous = key
    return tuple(chosen)


@functools.lru_cache(maxsize=8192)
def _covering(char: str, preferred: str) -> str:
    """The family that sets `char`: `preferred` when it has it, else the first of
    FALLBACK_ORDER that does (kept per character: a book uses a few hundred)."""
    for key in (preferred, *FALLBACK_ORDER):
        if _covers(key, char):
            return key
    return preferred


_script = functools.lru_cache(maxsize=8192)(script_of)


def _covers(key: str, char: str) -> bool:
    return char.isspace() or shaping_font(family(key).faces["regular"]).covers(char)
