"""Reading a page image with Tesseract, and saying when the reading cannot be trusted.

`page_read(image, ...)` (docs/book-structure.md, "OCR"):

1. **Orientation and skew.** The page is binarised at a reduced size; text lines make a
   row profile with sharp peaks when they run level, so the page is turned the quarter
   turn (0 or 90 degrees) and then the small angle (within SKEW_MAX_DEGREES, to 0.025
   degree) whose profile is sharpest. Whether it stands upside down is told from its lines:
   Latin, Greek and Cyrillic letters reach above the x-height (b, d, h, k, l, t, capitals)
   far more than below it (g, p, q, y). Only when that is unsure, or the reading comes back
   with low confidence, does Tesseract's own orientation detection (`--psm 0`) decide.
2. **Contrast.** A light blur (0.7 px) takes the scanner's noise out; the paper becomes
   white and every darker grey is darkened on a cubic curve, so thin and light glyphs (the
   FAQ's grey monospace URLs, which Tesseract's own Otsu threshold loses) keep their shape
   while the recogniser still gets the greys of their edges (it reads greys better than a
   binarised page: 99.3% of the words against 98.9%).
3. **Reading.** `tesseract ... --oem 1 --psm 3 tsv`: words with
   their boxes and confidence, in blocks, paragraphs and lines. The page's Markdown is one
   paragraph per Tesseract paragraph (its lines joined, hyphenations rejoined as
   `bookstructure.words.hyphenation_resolve` decides), and its layout is the stored
   `Page.layout` format with `source: "ocr"` (pixels of the corrected image).
4. **Plausibility** (`reading_warnings`): low mean word confidence, many low-confidence
   words, words cut at the image's edge, or much of the page's ink outside every word read
   make a warning, which the page carries to its review package and the status view.
"""

from __future__ import annotations

import io
import math
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from django.conf import settings
from PIL import Image, ImageChops, ImageFilter, ImageMath

from bookstructure.paragraphs import lines_join
from bookstructure.words import vocabulary_collect, word_list
from core.images import ImageLimits, ImageRefused, image_errors, image_open
from core.markdown import block_start_escape, code_span, markdown_escape
from translation.engines.base import EngineError

# Runs a program: (command, stdin) -> stdout; raises the engine's errors (LocalEngine._run).
Runner = Callable[[list[str], bytes], str]

PROFILE_WIDTH = 600  # pixels: the reduced page whose row profiles tell orientation and skew
SKEW_MAX_DEGREES = 5.0
SKEW_MIN_DEGREES = 0.15  # a page leaning less (3 px over a 1,300 px line) is not turned
QUARTER_MARGIN = 1.2  # a page is read turned a quarter when its lines are this much sharper so
CONTRAST_MIN = 24  # grey levels between ink and paper: less, and the page is blank
BLUR_RADIUS = 0.7
SINGLE_LINE_LARGER = 1.3
BODY_SIZE_SPREAD = 0.1
COLUMN_GAP = 2.0  # a gap between two words of a line this many line heights wide parts two columns
PAPER_SHARE = 0.75  # the threshold: this share of the way from the ink's grey to the paper's
PAPER_MARGIN = 10  # grey levels below the paper's still paper (its noise, smoothed)
INK_GAMMA = 3.0
TESSERACT_OPTIONS = ("--oem", "1", "--psm", "3")
OSD_OPTIONS = ("--psm", "0")
UPRIGHT_MARGIN = 1.3  # ink above the x-height this many times that below it (or less): sure
RETRY_CONFIDENCE = 60.0  # a mean word confidence below this asks Tesseract's orientation too

LOW_WORD_CONFIDENCE = 50.0  # a word read below this is unsure
MEAN_CONFIDENCE_MIN = 70.0
LOW_WORDS_SHARE_MAX = 0.25
EDGE_PIXELS = 2  # a word's box within this of the image's edge touches it
EDGE_WORDS_MIN = 3
INK_UNREAD_SHARE_MAX = 0.4  # of the page's text-like ink, outside every word read
SOLID_PIXELS = 7  # of the reduced page: ink this thick in both directions is no letter's stroke
INK_MIN_SHARE = 0.002  # less ink than this share of the page: a blank page, nothing to read
INK_LEVEL = 128  # of the contrasted image: darker is ink (a stroke's width is measured in it)
BOLD_STROKE = 1.4  # strokes this many times the body's: bold (measured: bold 1.5-1.65, body 1)
BOLD_MIN_LINES = 5
EDGE_ALIGN = 0.25  # of the body's line height: a paragraph's lines starting this close start at one edge
RULE_CELL = 16  # pixels: a rule is found on the page reduced this many times across
RULE_CELLS = 8  # cells in a row darker than the paper (128 pixels, 0.65 inch at 200 dpi) make a rule
RULE_LEVEL = 245  # of the contrasted page, its paper white: a cell's mean grey under this is darker
RULE_PAPER = 250  # a cell's mean grey this light is paper
RULE_THICK = 5  # pixels: a rule is thinner (the rows this far above and below it are paper)
RULE_PAPER_SHARE = 0.75
LINE_INK_ROW = 3  # of 255: a row of a line's box with ink over this share of its width (1%) holds its text
SWOLLEN_WORD = 1.6  # a word's box this many times taller than its line's median took in a rule or a speck
BULLET_SIZE = 0.5  # of its line's median word height: a bullet's box at most this wide and tall
BULLET_INK = 0.5  # and at least this share of it ink (a filled dot: 0.64-0.79 measured; `+` or `*` less)
BULLET_MISREAD = frozenset("*+\u2022\u00b7\u00b0\u00ab\u00bbeo\u00a9\u00ae@")  # what OCR reads a bullet as
URL_SCHEMES = ("http:", "https:", "ftp:")

# A listing (docs/book-structure.md, "Code on a scan"): a run of lines whose words' ink is as
# wide as their characters say, at one pitch. Measured on Debian manuals' scanned pages.
INK_REACH = 0.25  # of a word's height: how far past Tesseract's box its ink is looked for
MONO_RUN_WORDS = 10  # words of two characters or more a run needs before its widths can tell
MONO_RUN_CHARS = 40
MONO_MEDIAN_CELLS = 0.12  # half the run's words this close (in character cells) to the fit
MONO_Q80_CELLS = 0.3  # four in five this close
MONO_LINE_CELLS = 0.2  # and each line's median word (a line of two words or more)
MONO_BEARINGS = (-0.3, 0.8)  # cells a word's ink may fall short of its characters' (side bearings)
MONO_FIT_SHARE = 0.8  # the words the pitch is refitted on: the rest may be misread
MONO_KNOWN_WORDS = 4  # at a listing's fit found on the page, a run of this many words is one too
MONO_KNOWN_CHARS = 16
MONO_SEARCH_LINES = 40  # lines searched for runs at once (the search takes their cube)
# The look of a page's code, where it has one (docs/book-structure.md, "Code on a scan"): a
# shaded box behind a listing, a lighter ink than the body's (grey or coloured code).
SHADE_SCALE = 8  # page pixels per pixel of the map of its shaded areas
SHADE_LEVELS = 6  # a background this many grey levels under the paper's is shaded (the FAQ's: 11)
SHADE_FILL = 0.6  # a shaded area fills this share of its bounding box at least (a box, not a shadow)
SHADE_MIN_CELLS = 12  # and covers this many cells of the map at least (a glyph's edges, darker, do not)
SHADE_CLEAR_MIN = 8  # of 255: a cell with no more of its pixels clear of ink reads dark (text in a box)
SHADE_LINE_SHARE = 0.6  # of a line's box on a shaded area: the line stands in it
LIGHT_INK_LEVELS = 28  # a word's darkest ink this many levels lighter than the body's: another ink
INK_PERCENTILE = 0.05  # a word's darkest ink: this share of its box's pixels is darker
PROSE_WORDS = 4  # a line of this many words, nearly all plain words and no code's signs, is prose
PROSE_SHARE = 0.75
PROMPTS = frozenset({"$", "#", "%"})  # a shell's prompt starting a command line
GLUE_CELLS = 0.8  # code words whose inks stand closer than this (of a cell) are one word OCR parted
PLAIN_CODE_CHARS = 4  # a plain word in a lighter ink is told code by its width from this many characters
WORD_CELLS = 0.25  # a word in a lighter ink this close (in cells) to the code font's width is code
RUN_CELLS = 0.5  # and one beside code unless further than this from it (a proportional font's)
PUNCTUATION_CELLS = 0.4  # of a code cell: a sentence's period or bracket around a name, set in its font
_QUOTES_OPEN, _QUOTES_CLOSE = "(\"'\u201c\u2018", ")\"'\u201d\u2019"
_PLAIN_WORD = re.compile(
    rf"^[{_QUOTES_OPEN}]*[^\W\d_]+(?:['\u2019][^\W\d_]+)?[{_QUOTES_CLOSE}]*[.,;:!?]*[{_QUOTES_CLOSE}]*$"
)


@dataclass(frozen=True)
class OcrWord:
    text: str
    box: tuple[int, int, int, int]  # left, top, right, bottom (pixels of the corrected image)
    conf: float  # 0-100
    block: int
    paragraph: int
    line: int


@dataclass(frozen=True)
class _InkWord:
    chars: int
    left: float  # its ink's left and right edges, pixels
    right: float

    @property
    def width(self) -> float:
        return self.right - self.left


@dataclass(frozen=True)
class OcrReading:
    markdown: str  # the page's text, one paragraph per Tesseract paragraph
    layout: dict[str, Any]  # the Page.layout format, source "ocr"
    warnings: tuple[str, ...]  # why the reading may not be trusted; () when it may
    rotation: int  # quarter turns corrected, in degrees counter-clockwise (0, 90, 180, 270)
    skew: float  # degrees turned counter-clockwise to level the lines
    mean_confidence: float


# --- The image -------------------------------------------------------------------------


def _greys(histogram: Sequence[int]) -> tuple[int, int | None]:
    """(the paper's grey: the most common level in the brighter half, the threshold between
    ink and paper: PAPER_SHARE of the way from the ink, its 2nd percentile, to the paper);
    no threshold when the two are too close for the page to hold ink (a blank page, its
    scanner noise aside)."""
    total = sum(histogram)
    seen, ink = 0, 0
    for level, count in enumerate(histogram):
        seen += count
        if seen >= total * 0.02:
            ink = level
            break
    paper = max(range(128, 256), key=lambda level: histogram[level])
    if paper - ink < CONTRAST_MIN:
        return paper, None
    return paper, round(ink + PAPER_SHARE * (paper - ink))


def _contrasted(grey: Image.Image, paper: int) -> Image.Image:
    """What Tesseract reads: the paper (down to PAPER_MARGIN below its grey) white, every
    darker grey darkened on a curve, (grey / that level) ** INK_GAMMA, so light and thin glyphs
    keep their full shape while the greys of their edges stay for the recogniser."""
    top = max(1, paper - PAPER_MARGIN)
    return grey.point(lambda value: 255 if value >= top else round(255 * (value / top) ** INK_GAMMA))


def _binary(smooth: Image.Image, level: int | None) -> Image.Image:
    """Black text on white, in mode L (0 and 255); all white without a threshold."""
    return smooth.point(lambda value: 255 if level is None or value >= level else 0)


def _ink(binary: Image.Image, width: int) -> Image.Image:
    """The page reduced to `width` pixels, ink white (255) on black."""
    height = max(1, round(binary.height * width / binary.width))
    small = binary.resize((width, height), Image.Resampling.BOX)
    return small.point(lambda value: 255 if value < 160 else 0)


def _profile_sharpness(ink: Image.Image) -> float:
    """The variance of the row sums: high when text lines run level."""
    rows = ink.resize((1, ink.height), Image.Resampling.BOX).tobytes()
    mean = sum(rows) / len(rows)
    return sum((value - mean) ** 2 for value in rows) / len(rows)


def _turned(image: Image.Image, degrees: float) -> Image.Image:
    return image.rotate(degrees, resample=Image.Resampling.NEAREST, fillcolor=0)


def _best_angle(ink: Image.Image, angles: Iterable[float]) -> tuple[float, float]:
    scored = [(_profile_sharpness(_turned(ink, angle)), angle) for angle in angles]
    score, angle = max(scored)
    return angle, score


def _coarse_angles() -> list[float]:
    steps = int(SKEW_MAX_DEGREES * 2)
    return [step / 2 for step in range(-steps, steps + 1)]


def _skew_refined(ink: Image.Image, angle: float) -> float:
    """The angle (degrees, counter-clockwise) that levels the lines, from a coarse one
    (half degrees) refined to tenths, then fortieths, of a degree."""
    angle, _ = _best_angle(ink, (angle + step / 10 for step in range(-5, 6)))
    angle, _ = _best_angle(ink, (angle + step / 40 for step in range(-4, 5)))
    return angle


def _upside_down(ink: Image.Image) -> bool | None:
    """Whether the (level) page stands upside down, from its text lines' ink above and below
    the x-height band; None when the lines do not tell."""
    rows = list(ink.resize((1, ink.height), Image.Resampling.BOX).tobytes())
    above = below = 0.0
    start = None
    for number, value in enumerate([*rows, 0]):
        if value > 4 and start is None:
            start = number
        elif value <= 4 and start is not None:
            line = rows[start:number]
            if len(line) >= 4:
                peak = max(line)
                band = [index for index, value in enumerate(line) if value >= peak * 0.5]
                above += sum(line[: band[0]])
                below += sum(line[band[-1] + 1 :])
            start = None
    if above + below < 50:
        return None
    if above > below * UPRIGHT_MARGIN:
        return False
    if below > above * UPRIGHT_MARGIN:
        return True
    return None


@dataclass(frozen=True)
class _Prepared:
    image: Image.Image  # upright, level and contrasted, mode L
    blank: bool  # ink and paper too close for any text: Tesseract is not asked
    rotation: int
    skew: float
    sure: bool  # whether the orientation was told for sure
    ink_pixels: int  # ink of the reduced page (PROFILE_WIDTH wide)
    scale: float  # corrected image pixels per reduced page pixel
    shading: Image.Image | None = None  # the page's shaded boxes (`_shading`), SHADE_SCALE times smaller


def _prepare(grey: Image.Image, rotation: int | None = None) -> _Prepared:
    """The page turned upright and level, contrasted for Tesseract. Its quarter turn is `rotation` when
    given, else estimated (and `sure` says whether the estimate is)."""
    smooth = grey.filter(ImageFilter.GaussianBlur(BLUR_RADIUS))
    paper, level = _greys(smooth.histogram())
    ink = _ink(_binary(smooth, level), PROFILE_WIDTH)
    ink_pixels = ink.histogram()[255]
    sure = rotation is not None or level is None
    if level is None:
        rotation, skew = 0, 0.0
    elif rotation is None:
        level_angle, level_score = _best_angle(ink, _coarse_angles())
        quarter_angle, quarter_score = _best_angle(ink.rotate(90, expand=True), _coarse_angles())
        rotation = 90 if quarter_score > level_score * QUARTER_MARGIN else 0
        skew = _skew_refined(
            ink.rotate(rotation, expand=True) if rotation else ink, quarter_angle if rotation else level_angle
        )
    else:
        quartered = ink.rotate(rotation, expand=True) if rotation else ink
        skew = _skew_refined(quartered, _best_angle(quartered, _coarse_angles())[0])
    if not sure:
        flipped = _upside_down(_turned(ink.rotate(rotation, expand=True) if rotation else ink, skew))
        sure = flipped is not None
        if flipped:
            rotation = (rotation + 180) % 360
    turned = smooth.rotate(rotation, expand=True) if rotation else smooth
    if abs(skew) >= SKEW_MIN_DEGREES:
        turned = turned.rotate(skew, resample=Image.Resampling.BILINEAR, expand=True, fillcolor=255)
    return _Prepared(
        image=_rules_removed(_contrasted(turned, paper)) if level is not None else turned,
        shading=_shading(turned, paper=paper, level=level) if level is not None else None,
        blank=level is None,
        rotation=rotation,
        skew=round(skew, 3) if abs(skew) >= SKEW_MIN_DEGREES else 0.0,
        sure=sure,
        ink_pixels=ink_pixels,
        scale=grey.width / PROFILE_WIDTH,
    )


def _rules_removed(image: Image.Image) -> Image.Image:
    """The page without its horizontal rules: a rule under a running header or a table's
    row, which Tesseract takes into the boxes of the words over it (a header's `THE` 37
    pixels tall over its rule, its other words 21), so a line's place and height would vary
    with the words the rule touches. On the page reduced RULE_CELL times across (each cell
    its pixels' mean grey), a rule is a row of RULE_CELLS cells or more all darker than the
    paper (a thin rule turned level is a faint grey over two or three rows) with paper
    RULE_THICK rows above and below it (not a line of text, nor the inside of a shaded box);
    each is whitened a pixel above and below, and a cell further at each end."""
    width = image.width // RULE_CELL
    if width < RULE_CELLS:
        return image
    cells = image.resize((width, image.height), Image.Resampling.BOX).tobytes()
    rules = []
    for y in range(RULE_THICK, image.height - RULE_THICK):
        row = cells[y * width : (y + 1) * width]
        x = 0
        while x < width:
            if row[x] >= RULE_LEVEL:
                x += 1
                continue
            end = x
            while end < width and row[end] < RULE_LEVEL:
                end += 1
            above = cells[(y - RULE_THICK) * width + x : (y - RULE_THICK) * width + end]
            below = cells[(y + RULE_THICK) * width + x : (y + RULE_THICK) * width + end]
            paper = sum(value >= RULE_PAPER for value in above + below)
            if end - x >= RULE_CELLS and paper >= RULE_PAPER_SHARE * 2 * (end - x):
                rules.append(((x - 1) * RULE_CELL, y - 1, (end + 1) * RULE_CELL, y + 2))
            x = end
    if not rules:
        return image
    cleared = image.copy()
    for rule in rules:
        cleared.paste(255, rule)
    return cleared


def _shading(turned: Image.Image, *, paper: int, level: int) -> Image.Image:
    """Where the page is shaded behind its text, each shaded box numbered (1, 2, ...; 0
    elsewhere), SHADE_SCALE times smaller than the page: its background (in each cell, the
    mean of its pixels that are neither ink, darker than `level`, nor next to ink, a glyph's
    grey edge; a cell all ink reads dark, as text inside a box; then a median over 5 cells)
    SHADE_LEVELS darker than the paper, in areas that fill most of their bounding box, are
    taller than a cell and keep off the scan's edges: a box set behind a listing, not a
    shadow of the binding or of the scanner's lid."""
    width, height = max(1, turned.width // SHADE_SCALE), max(1, turned.height // SHADE_SCALE)
    ink = turned.point(lambda value: 255 if value < level else 0)
    ink = ImageChops.lighter(
        ImageChops.lighter(ink, ImageChops.offset(ink, 1, 0)),
        ImageChops.lighter(
            ImageChops.offset(ink, -1, 0),
            ImageChops.lighter(ImageChops.offset(ink, 0, 1), ImageChops.offset(ink, 0, -1)),
        ),
    )
    clear = ImageChops.invert(ink)
    values = ImageChops.multiply(turned, clear).resize((width, height), Image.Resampling.BOX).convert("F")
    share = clear.resize((width, height), Image.Resampling.BOX)
    mean = ImageMath.lambda_eval(
        lambda image: image["values"] * 255 / image["share"], values=values, share=share.convert("F")
    )
    background = ImageChops.subtract(
        mean.convert("L"), share.point(lambda value: 255 if value <= SHADE_CLEAR_MIN else 0)
    ).filter(ImageFilter.MedianFilter(5))
    # Opened (a cell's 3 by 3 all shaded, then grown back): a bridge of a cell or two to the
    # edges of a text line beside a box, and a speck, are gone.
    shaded = background.point(lambda value: 255 if value <= paper - SHADE_LEVELS else 0)
    pixels = bytearray(shaded.filter(ImageFilter.MinFilter(3)).filter(ImageFilter.MaxFilter(3)).tobytes())
    kept = bytearray(len(pixels))
    boxes = 0
    for start, value in enumerate(pixels):
        if value != 255 or boxes == 255:
            continue
        area = _area_flood(pixels, start, width, height)
        xs = [index % width for index in area]
        ys = [index // width for index in area]
        box_area = (max(xs) - min(xs) + 1) * (max(ys) - min(ys) + 1)
        inside = min(xs) > 0 and min(ys) > 0 and max(xs) < width - 1 and max(ys) < height - 1
        if inside and max(ys) > min(ys) and len(area) >= max(SHADE_MIN_CELLS, SHADE_FILL * box_area):
            boxes += 1
            for index in area:
                kept[index] = boxes
    # Less a cell all round: the median and the opening grow a box by about that much, and
    # a line set right over a box (its heading) stands outside it.
    return Image.frombytes("L", (width, height), bytes(kept)).filter(ImageFilter.MinFilter(3))


def _area_flood(pixels: bytearray, start: int, width: int, height: int) -> list[int]:
    """The pixels (indexes) of the area of 255s holding `start`, each set to 128 (seen)."""
    area, stack = [], [start]
    pixels[start] = 128
    while stack:
        index = stack.pop()
        area.append(index)
        x, y = index % width, index // width
        for near, inside in (
            (index - 1, x > 0),
            (index + 1, x < width - 1),
            (index - width, y > 0),
            (index + width, y < height - 1),
        ):
            if inside and pixels[near] == 255:
                pixels[near] = 128
                stack.append(near)
    return area


# --- Tesseract ------------------------------------------------------------------------


def tsv_words(tsv: str) -> list[OcrWord]:
    """The words of Tesseract's TSV output (level 5 rows with text), in its reading order."""
    words: list[OcrWord] = []
    for row in tsv.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) < 12 or fields[0] != "5" or not fields[11].strip():
            continue
        left, top, width, height = (int(value) for value in fields[6:10])
        words.append(
            OcrWord(
                text=fields[11].strip(),
                box=(left, top, left + width, top + height),
                conf=max(0.0, float(fields[10])),
                block=int(fields[2]),
                paragraph=int(fields[3]),
                line=int(fields[4]),
            )
        )
    return words


def _pgm(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PPM")  # mode L: a binary PGM, which Tesseract reads fastest
    return out.getvalue()


def _read(run: Runner, command: Sequence[str], image: Image.Image) -> list[OcrWord]:
    return tsv_words(run([*command, *TESSERACT_OPTIONS, "tsv"], _pgm(image)))


def _osd_rotation(run: Runner, command: Sequence[str], image: Image.Image) -> int | None:
    """Tesseract's orientation detection: the counter-clockwise turn that sets the page
    upright (0, 90, 180, 270), None when it cannot tell."""
    try:
        answer = run([command[0], "stdin", "stdout", *OSD_OPTIONS], _pgm(image))
    except EngineError:  # no osd.traineddata, or no script it knows on the page
        return None
    for line in answer.splitlines():
        if line.startswith("Rotate:"):
            # Tesseract's `Rotate` is clockwise; Pillow turns counter-clockwise.
            return (360 - int(line.split(":")[1])) % 360
    return None


def _mean_confidence(words: Sequence[OcrWord]) -> float:
    return statistics.fmean(word.conf for word in words) if words else 0.0


def _page_limits() -> ImageLimits:
    """A page image normalize stored (a PNG it encoded, within IMAGE_MAX_PIXELS); opened
    through core.images all the same, so no size or format is taken on trust."""
    return ImageLimits(max_pixels=settings.IMAGE_MAX_PIXELS, formats=("PNG", "JPEG", "WEBP", "TIFF"))


def page_read(image: bytes, *, command: Sequence[str], language: str | None, run: Runner) -> OcrReading:
    """The page image (PNG, JPEG, ...) read: its Markdown, layout and warnings. `command`
    is the Tesseract call up to its options (`tesseract stdin stdout -l eng`); `language`
    the page's ISO 639-1 code (its word list rejoins hyphenations), None when not known.
    EngineError when the bytes are not a page image within IMAGE_MAX_PIXELS."""
    try:
        with image_open(io.BytesIO(image), limits=_page_limits()) as opened, image_errors():
            grey = opened.convert("L")
    except ImageRefused as refused:
        raise EngineError(f"The page image could not be read: {refused}", retryable=False) from refused
    prepared = _prepare(grey)
    words = [] if prepared.blank else _read(run, command, prepared.image)
    if not prepared.sure or (words and _mean_confidence(words) < RETRY_CONFIDENCE):
        rotation = _osd_rotation(run, command, prepared.image)
        if rotation:
            again = _prepare(grey, rotation=(prepared.rotation + rotation) % 360)
            retried = _read(run, command, again.image)
            if _mean_confidence(retried) > _mean_confidence(words):
                prepared, words = again, retried
    words = words_repaired(words, image=prepared.image)
    return OcrReading(
        markdown=words_markdown(words, language=language, image=prepared.image, shading=prepared.shading),
        # How the words' pixels lie on the scan: the original-layout Pdf maps them back.
        layout={
            **words_layout(words, image=prepared.image, shading=prepared.shading),
            "rotation": prepared.rotation,
            "skew": prepared.skew,
        },
        warnings=reading_warnings(words, prepared=prepared),
        rotation=prepared.rotation,
        skew=prepared.skew,
        mean_confidence=round(_mean_confidence(words), 1),
    )


# --- What was read ----------------------------------------------------------------------


def words_repaired(words: Sequence[OcrWord], *, image: Image.Image) -> list[OcrWord]:
    """What OCR misreads the same way on every scan, set right: a list's bullet (a small
    filled dot, read as `*`, `+`, `e`, `\u00b0`...) is `\u2022`, as a text layer has it, so
    the book structure finds the list, and a bullet OCR did not read at all, a filled dot
    where the page's other bullets stand before a line that starts where their items'
    text does, is one too (`_bullets_missed`); a URL's scheme parted from its `//` by the
    space OCR reads in a monospace font's wide `//` (`https: //www...`) is one word again."""
    ink = image.point(lambda value: 255 if value < INK_LEVEL else 0)
    lines: list[list[OcrWord]] = []
    for _, grouped in groupby(words, key=lambda word: (word.block, word.paragraph, word.line)):
        line = list(grouped)
        if len(line) > 1 and _bullet(line, ink):
            line[0] = replace(line[0], text="\u2022")
        joined: list[OcrWord] = []
        for word in line:
            if joined and joined[-1].text.lower().endswith(URL_SCHEMES) and word.text.startswith("//"):
                scheme = joined[-1]
                joined[-1] = replace(
                    scheme,
                    text=scheme.text + word.text,
                    box=(scheme.box[0], min(scheme.box[1], word.box[1]), word.box[2], max(scheme.box[3], word.box[3])),
                    conf=min(scheme.conf, word.conf),
                )
            else:
                joined.append(word)
        lines.append(joined)
    return [word for line in _bullets_missed(lines, ink) for word in line]


def _bullets_missed(lines: list[list[OcrWord]], ink: Image.Image) -> list[list[OcrWord]]:
    """The lines, a bullet put before each that starts where the page's list items' text
    starts (within a third of a line's height) and has, where their bullets stand, a
    bullet's ink that OCR did not read (a small filled dot: `_dot`)."""
    items = [line for line in lines if len(line) > 1 and line[0].text == "\u2022"]
    if not items:
        return lines
    found = []
    for line in lines:
        height = statistics.median(word.box[3] - word.box[1] for word in line)
        item = next(
            (item for item in items if line[0].text != "\u2022" and abs(line[0].box[0] - item[1].box[0]) <= height / 3),
            None,
        )
        dot = None
        if item is not None:
            bullet = item[0].box
            reach = round(height / 4)
            dot = _dot(ink, (bullet[0] - reach, line[0].box[1], bullet[2] + reach, line[0].box[3]), height)
        found.append([replace(line[0], text="\u2022", box=dot), *line] if dot is not None else line)
    return found


def _dot(ink: Image.Image, area: tuple[int, int, int, int], height: float) -> tuple[int, int, int, int] | None:
    """The box of a bullet's filled dot alone in `area` of the page's ink, None when it holds
    none (nothing, or ink of another shape or size)."""
    left, top, right, bottom = area
    if right <= left or bottom <= top:
        return None
    edges = ink.crop(area).getbbox()
    if edges is None:
        return None
    box = (left + edges[0], top + edges[1], left + edges[2], top + edges[3])
    width, tall = box[2] - box[0], box[3] - box[1]
    if width > BULLET_SIZE * height or tall > BULLET_SIZE * height:
        return None
    return box if ink.crop(box).histogram()[255] >= BULLET_INK * width * tall else None


def _bullet(line: Sequence[OcrWord], ink: Image.Image) -> bool:
    """Whether the line's first word is a bullet OCR misread: one character, a small box
    (BULLET_SIZE of the line's words' height) mostly ink (a filled dot)."""
    first = line[0]
    if len(first.text) != 1 or first.text not in BULLET_MISREAD:
        return False
    height = statistics.median(word.box[3] - word.box[1] for word in line[1:])
    left, top, right, bottom = first.box
    if right - left > BULLET_SIZE * height or bottom - top > BULLET_SIZE * height or right <= left or bottom <= top:
        return False
    return ink.crop(first.box).histogram()[255] >= BULLET_INK * (right - left) * (bottom - top)


def _lines(words: Sequence[OcrWord]) -> list[list[OcrWord]]:
    """Tesseract's lines, each cut where a gap wider than COLUMN_GAP line heights parts its
    words: a running header's left and right parts (chapter, section), a table's cells."""
    lines: list[list[OcrWord]] = []
    for _, grouped in groupby(words, key=lambda word: (word.block, word.paragraph, word.line)):
        line = list(grouped)
        height = statistics.median(word.box[3] - word.box[1] for word in line)
        start = 0
        for index in range(1, len(line)):
            if line[index].box[0] - line[index - 1].box[2] > COLUMN_GAP * height:
                lines.append(line[start:index])
                start = index
        lines.append(line[start:])
    return lines


def _box(boxes: Iterable[tuple[int, int, int, int]]) -> list[float]:
    lefts, tops, rights, bottoms = zip(*boxes, strict=True)
    return [float(min(lefts)), float(min(tops)), float(max(rights)), float(max(bottoms))]


def _line_box(line: Sequence[OcrWord], ink: Image.Image | None = None) -> list[float]:
    """A line's box: from its first word's left to its last word's right, and as high as
    its words but those SWOLLEN_WORD times taller than the line's median word, whose box
    took in a rule under the line or a speck (a running header's `THE` and `A` 37 pixels
    tall over its rule, where its other words are 21); with the page's `ink` (white), as
    high as the ink in that box (Tesseract gives a short word of a line of capitals its
    line's whole height, `I` and `GO` 41 pixels where the letters are 21): a line's place
    and height are what the book structure compares from page to page."""
    heights = [word.box[3] - word.box[1] for word in line]
    limit = SWOLLEN_WORD * statistics.median(heights)
    kept = [word for word, height in zip(line, heights, strict=True) if height <= limit] if len(line) >= 3 else line
    left, _, right, _ = _box(word.box for word in line)
    _, top, _, bottom = _box(word.box for word in kept or line)
    if ink is not None and right > left and bottom > top:
        rows = ink.crop((int(left), int(top), int(right), int(bottom))).resize(
            (1, int(bottom - top)), Image.Resampling.BOX
        )
        inked = [row for row, value in enumerate(rows.tobytes()) if value >= LINE_INK_ROW]
        if inked:
            top, bottom = top + inked[0], top + inked[-1] + 1
    return [left, top, right, bottom]


# --- Listings ----------------------------------------------------------------------------


def _ink_words(line: Sequence[OcrWord], ink: Image.Image) -> list[_InkWord]:
    """The line's words with their ink's edges: Tesseract's boxes on a scan are the
    recogniser's guess, as wide per character whatever the letters (`will` and `come` both
    38 pixels on the FAQ's degraded scan, 32 and 45 in ink), so the ink is looked for
    within INK_REACH of the word's height past its box, short of its neighbours'."""
    found = []
    for index, word in enumerate(line):
        left, top, right, bottom = word.box
        reach = round(INK_REACH * (bottom - top))
        start = max(left - reach, line[index - 1].box[2] + 1 if index else 0)
        end = min(right + reach, line[index + 1].box[0] - 1 if index + 1 < len(line) else ink.width)
        edges = ink.crop((start, top, max(end, start + 1), bottom)).getbbox()
        ink_left, ink_right = (start + edges[0], start + edges[2]) if edges else (left, right)
        found.append(_InkWord(chars=len(word.text), left=float(ink_left), right=float(ink_right)))
    return found


Fit = tuple[float, float]  # a listing's font: pixels a character, and the offset (bearings)


def _line_fit(points: Sequence[tuple[float, float]]) -> Fit | None:
    """Least squares: width = pitch * characters + offset; None when it does not rise."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if not spread:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return (slope, mean_y - slope * mean_x) if slope > 0 else None


def _cells_off(points: Sequence[tuple[float, float]], fit: Fit) -> list[float]:
    """How far each word's width is from the fit, in character cells, smallest first."""
    pitch, offset = fit
    return sorted(abs(width - (pitch * chars + offset)) / pitch for chars, width in points)


def _points(run: Sequence[Sequence[_InkWord]]) -> list[tuple[int, float]]:
    return [(word.chars, word.width) for line in run for word in line if word.chars >= 2]


def _run_fits(run: Sequence[Sequence[_InkWord]], fit: Fit) -> bool:
    """Whether the run's words, and each line's, lie within a fraction of a cell of `fit`."""
    off = _cells_off(_points(run), fit)
    if off[len(off) // 2] > MONO_MEDIAN_CELLS or off[int(len(off) * 0.8)] > MONO_Q80_CELLS:
        return False
    for line in run:
        own = _points([line])
        if len(own) >= 2 and _cells_off(own, fit)[len(own) // 2] > MONO_LINE_CELLS:
            return False
    return True


def _run_fit(run: Sequence[Sequence[_InkWord]], known: Sequence[Fit] = ()) -> Fit | None:
    """The fit of a run of lines set in a monospace font, None when its words do not say
    so. In a monospace font every character takes one cell, so a word's ink is its
    characters' cells less the side bearings of its first and last glyph, a fraction of a
    cell whatever the letters; in a proportional font `ill` and `mmm` differ by half. The
    widths are fitted against the characters (refitted on the MONO_FIT_SHARE closest, a
    misread word aside) and the run is monospace when its words, and each line's, lie
    within a fraction of a cell of the fit. A run too short to be fitted on its own is a
    listing when it lies as close to the fit of a listing `known` on the page (its font)."""
    points = _points(run)
    if len(points) < MONO_KNOWN_WORDS or sum(chars for chars, _ in points) < MONO_KNOWN_CHARS:
        return None
    if len(points) < MONO_RUN_WORDS or sum(chars for chars, _ in points) < MONO_RUN_CHARS:
        return next((fit for fit in known if _run_fits(run, fit)), None)
    first = _line_fit(points)
    if first is None:
        return None
    closest = sorted(points, key=lambda point: abs(point[1] - (first[0] * point[0] + first[1])))
    fit = _line_fit(closest[: max(3, int(len(closest) * MONO_FIT_SHARE))]) or first
    pitch, offset = fit
    if not MONO_BEARINGS[0] <= -offset / pitch <= MONO_BEARINGS[1]:
        return None
    return fit if _run_fits(run, fit) else None


def _line_alone(line: Sequence[_InkWord]) -> bool:
    """Whether a line may belong to a listing, by its own words (three or more of two
    characters fitted alone; a shorter line may)."""
    own = _points([line])
    if len(own) < 3:
        return True
    fit = _line_fit(own)
    return fit is not None and _cells_off(own, fit)[len(own) // 2] <= MONO_LINE_CELLS


def _weak(line: Sequence[_InkWord]) -> bool:
    """Whether a line has too few words (of two characters or more) to say anything alone."""
    return sum(word.chars >= 2 for word in line) < 2


def _prose_edge(lines: Sequence[Sequence[_InkWord]], paragraphs: Sequence[int], start: int, end: int) -> bool:
    """Whether the run from `start` to `end` begins or ends with a line of one word that
    starts or ends the Tesseract paragraph of the line beside it."""
    return (start > 0 and paragraphs[start - 1] == paragraphs[start] and _weak(lines[start])) or (
        end < len(lines) and paragraphs[end] == paragraphs[end - 1] and _weak(lines[end - 1])
    )


def _longest_run(
    lines: Sequence[Sequence[_InkWord]], paragraphs: Sequence[int], low: int, high: int, known: Sequence[Fit]
) -> tuple[int, int, Fit] | None:
    """The longest run of lines between `low` and `high` that `_run_fit` finds monospace
    (the first of that length), its start, end and fit."""
    for length in range(high - low, 0, -1):
        for start in range(low, high - length + 1):
            end = start + length
            if _prose_edge(lines, paragraphs, start, end):
                continue
            fit = _run_fit(lines[start:end], known)
            if fit is not None:
                return start, end, fit
    return None


def _listings(lines: Sequence[Sequence[_InkWord]], paragraphs: Sequence[int], known: list[Fit]) -> list[Fit | None]:
    """Each line's fit where it belongs to a listing, else None. Lines whose own words
    rule it out part the block; in each stretch between them (MONO_SEARCH_LINES lines at
    a time) the longest run of consecutive lines that `_run_fit` finds monospace is a
    listing, then the longest in what is left above and below it, and so on (a listing
    under the sentence that introduces it, in one Tesseract block). A line of one word at
    a listing's edge that ends or starts the Tesseract paragraph of the prose beside it
    (`paragraphs`, each line's) is that paragraph's (Valgrind's "... do-something-useful /
    wrappers:" over a list of functions). Each listing's fit joins `known`."""
    fits: list[Fit | None] = [None] * len(lines)
    spans = []
    for possible, group in groupby(range(len(lines)), key=lambda index: _line_alone(lines[index])):
        indexes = list(group)
        if possible:
            spans.append((indexes[0], indexes[-1] + 1))
    while spans:
        low, high = spans.pop()
        if high - low > MONO_SEARCH_LINES:  # whole, else in parts: a listing across two is found as two
            whole = None if _prose_edge(lines, paragraphs, low, high) else _run_fit(lines[low:high], known)
            if whole is None:
                spans += [
                    (start, min(start + MONO_SEARCH_LINES, high)) for start in range(low, high, MONO_SEARCH_LINES)
                ]
                continue
            found: tuple[int, int, Fit] | None = (low, high, whole)
        else:
            found = _longest_run(lines, paragraphs, low, high, known)
        if found:
            start, end, fit = found
            fits[start:end] = [fit] * (end - start)
            if fit not in known:
                known.append(fit)
            spans += [(low, start), (end, high)]
    return fits


def _mono_pitches(lines: Sequence[Sequence[OcrWord]], image: Image.Image | None) -> list[float | None]:
    """Each line's character pitch where it is a line of a listing, else None (all None
    without the image: the ink tells, not Tesseract's boxes). A line alone says little, so
    listings are looked for in each Tesseract block's lines together, and the page read
    twice: a short listing is told by the font of a longer one found anywhere on it."""
    if image is None or not lines:
        return [None] * len(lines)
    ink = image.point(lambda value: 255 if value < INK_LEVEL else 0)
    inked = [_ink_words(line, ink) for line in lines]
    paragraph = [line[0].paragraph for line in lines]
    blocks = [list(group) for _, group in groupby(range(len(lines)), key=lambda index: lines[index][0].block)]
    known: list[Fit] = []
    fits: list[Fit | None] = []
    for indexes in blocks:
        fits += _listings([inked[index] for index in indexes], [paragraph[index] for index in indexes], [])
        known += [fit for fit in fits if fit is not None and fit not in known]
    if known:
        fits = []
        for indexes in blocks:
            fits += _listings([inked[index] for index in indexes], [paragraph[index] for index in indexes], list(known))
    return [fit[0] if fit is not None else None for fit in fits]


def _shaded_box(box: Sequence[float], shading: Image.Image | None) -> int:
    """The shaded box (its number on the map `_shading` made) a line stands in: the one
    under SHADE_LINE_SHARE of its box at least; 0 when none is."""
    if shading is None:
        return 0
    third = (box[3] - box[1]) / 3  # its middle: a line set right over a box may touch it
    left, top, right, bottom = (
        round(value / SHADE_SCALE) for value in (box[0], box[1] + third, box[2], box[3] - third)
    )
    histogram = shading.crop((left, top, max(right, left + 1), max(bottom, top + 1))).histogram()
    label = max(range(1, 256), key=histogram.__getitem__)
    return label if histogram[label] and histogram[label] >= SHADE_LINE_SHARE * sum(histogram) else 0


def _word_ink(word: OcrWord, image: Image.Image) -> int:
    """A word's darkest ink: the grey that INK_PERCENTILE of its box's pixels are darker than."""
    histogram = image.crop(word.box).histogram()
    wanted, seen = INK_PERCENTILE * sum(histogram), 0
    for grey, count in enumerate(histogram):
        seen += count
        if seen >= wanted:
            return grey
    return 255


def _light_words(lines: Sequence[Sequence[OcrWord]], image: Image.Image | None) -> list[list[bool]]:
    """Which words are set in a lighter ink than the body's (LIGHT_INK_LEVELS lighter, the
    body's being the page's median word of three characters or more): grey or coloured
    code, as a manual sets a command or a URL inside a sentence. A word of one character
    (a footnote's mark, an `a` read thin) is not told."""
    if image is None or not lines:
        return [[False] * len(line) for line in lines]
    inks = [[_word_ink(word, image) for word in line] for line in lines]
    body = [
        ink
        for line, line_inks in zip(lines, inks, strict=True)
        for word, ink in zip(line, line_inks, strict=True)
        if len(word.text) >= 3
    ]
    if not body:
        return [[False] * len(line) for line in lines]
    level = statistics.median(body) + LIGHT_INK_LEVELS
    return [
        [ink >= level and len(word.text) >= 2 for word, ink in zip(line, line_inks, strict=True)]
        for line, line_inks in zip(lines, inks, strict=True)
    ]


def _prose_like(line: Sequence[OcrWord]) -> bool:
    """Whether a line reads as a sentence: PROSE_WORDS words or more, nearly all of them
    plain words (letters, with the punctuation prose puts around them); a listing's line
    has options, paths, names with signs inside, or few words."""
    plain = sum(bool(_PLAIN_WORD.match(word.text)) for word in line)
    return len(line) >= PROSE_WORDS and plain >= PROSE_SHARE * len(line)


def _prompted(line: Sequence[OcrWord]) -> bool:
    """Whether a line is a command after a shell's prompt (`$ make`, `# apt-get install`)."""
    return len(line) >= 2 and line[0].text in PROMPTS and not line[1].text[:1].isupper()


def _signed(text: str) -> bool:
    """Whether a word holds letters and, inside it, a sign no plain word has (`apt-get`,
    `/etc/fstab`, `--fast`, `foo_1.0.deb`, `https://...`): a name, a path or an option."""
    core = text.strip(_QUOTES_OPEN + _QUOTES_CLOSE + ".,;:!?")
    signs = {character for character in core if not character.isalpha() and character not in "'\u2019"}
    # Words joined by a hyphen alone are a command's name in lowercase (`apt-get`), prose
    # in capitals (a link's `Release-critical`, `Work-Needing`).
    return any(character.isalpha() for character in core) and bool(signs) and (signs != {"-"} or not core[0].isupper())


@dataclass(frozen=True)
class _Code:
    """The code on a page: each line's character pitch where it is a line of code, and
    each word of the other lines whether it is code set inside a sentence."""

    pitches: list[float | None]
    inline: list[list[bool]]
    lines: list[list[OcrWord]]  # the lines, a code word OCR parted in two (`www.` `linux.org`) one again


def _code_read(lines: Sequence[Sequence[OcrWord]], image: Image.Image | None, shading: Image.Image | None) -> _Code:
    """The page's code. Lines of code are the lines of a listing its glyphs' widths tell
    (`_mono_pitches`) but those that read as sentences without the look of the page's code,
    and the lines the page's look sets apart as code: in a shaded box holding a line that
    reads as no sentence (a note's box holds sentences), after a shell's prompt, or in a
    Tesseract paragraph all of code words, none a sentence. A code word is set in a lighter ink than the body's (grey or
    coloured code, `_light_words`) and is a name, path or option (`_signed`) or as wide as
    the page's code font makes it (`_code_font`): a link's text, in the same light ink but
    a proportional font, stays prose."""
    pitches = _mono_pitches(lines, image)
    if image is None or not lines:
        return _Code(
            pitches=pitches, inline=[[False] * len(line) for line in lines], lines=[list(line) for line in lines]
        )
    prose = [_prose_like(line) for line in lines]
    ink = image.point(lambda value: 255 if value < INK_LEVEL else 0)
    inked = [_ink_words(line, ink) for line in lines]
    light = _light_words(lines, image)
    signed = [[_signed(word.text) for word in line] for line in lines]
    font = _code_font(
        [
            (_code_chars(lines[index][number].text), word.width)
            for index, line in enumerate(inked)
            for number, word in enumerate(line)
            if word.chars >= 2
            and ((pitches[index] is not None and not prose[index]) or (light[index][number] and signed[index][number]))
        ]
    )
    if font is None:
        # No listing nor name tells the code font: the words in a lighter ink do, when they
        # are as wide as one monospace font makes them (a link's text in a proportional one
        # is not).
        points = [
            (_code_chars(lines[index][number].text), word.width)
            for index, line in enumerate(inked)
            for number, word in enumerate(line)
            if word.chars >= 2 and light[index][number]
        ]
        fitted = _code_font(points)
        if fitted is not None and _fits(points, fitted):
            font = fitted
    words = [_code_words(line, inked[index], light[index], font) for index, line in enumerate(lines)]
    boxes = [_shaded_box(_line_box(line), shading) for line in lines]
    code_boxes = {box for box, sentence in zip(boxes, prose, strict=True) if box and not sentence}
    paragraph_of = [(line[0].block, line[0].paragraph) for line in lines]
    # A line all of code after a line ending in code carries on the code of a sentence (a URL
    # or a command broken at the line's end: `https://.../` + `netinst/`), as does a line of
    # code ending a sentence (`dpkg` + `--list 'foo*'.`); other paragraphs all of code words,
    # none a sentence, are code.
    carried = [index > 0 and words[index - 1][-1:] == [True] and all(words[index]) for index in range(len(lines))]
    code_paragraphs = set()
    for key, group in groupby(range(len(lines)), key=paragraph_of.__getitem__):
        indexes = list(group)
        ended = lines[indexes[-1]][-1].text.endswith((".", ","))
        if not carried[indexes[0]] and not ended and all(all(words[index]) and not prose[index] for index in indexes):
            code_paragraphs.add(key)
    # A listing's line its widths tell, that reads as a sentence, is prose where the page's code
    # has a look this line has not (the page's code stands in shaded boxes, or is set in a
    # lighter ink): the FAQ's "and remove the hold with" between two boxed commands, a list
    # item's first line. Elsewhere it is a listing's (a comment, bzip2's table of states).
    shaded_code = bool(code_boxes)
    light_code = any(all(light[index]) for index in range(len(lines)) if pitches[index] is not None)
    found: list[float | None] = []
    added: list[int] = []
    for index, line in enumerate(lines):
        unlike = (shaded_code and not boxes[index]) or (light_code and not any(light[index]))
        if boxes[index] in code_boxes or (pitches[index] is not None and not (prose[index] and unlike)):
            code = True
        else:
            code = not prose[index] and (_prompted(line) or paragraph_of[index] in code_paragraphs)
        found.append(pitches[index] if code else None)
        if code and pitches[index] is None:
            added.append(index)
    if added:
        pitch = font[0] if font is not None else _pitch_guess([inked[index] for index in added], found)
        for index in added:
            found[index] = pitch
    # A line all of code that is no listing's stays a line of its sentence (the book structure
    # makes a line all in a monospace font a listing's): its code is read as prose, which keeps
    # a URL, a path or an option as it is (translation/engines/markup.py).
    inline = [
        [False] * len(line) if pitch is not None or all(part[1] for part in _inline_parts(line, flags)) else flags
        for line, pitch, flags in zip(lines, found, words, strict=True)
    ]
    joined = [_code_joined(line, inked[index], inline[index], light[index], font) for index, line in enumerate(lines)]
    return _Code(pitches=found, inline=[flags for _, flags in joined], lines=[words for words, _ in joined])


def _code_joined(
    line: Sequence[OcrWord],
    inked: Sequence[_InkWord],
    code: Sequence[bool],
    light: Sequence[bool],
    font: Fit | None,
) -> tuple[list[OcrWord], list[bool]]:
    """The line's words, a code word and the word in the same lighter ink beside it one
    where OCR parted a word of a monospace font (its glyphs stand a cell apart, and OCR
    reads a space in `www. linux.org`, `select ions.txt`): their inks less than GLUE_CELLS
    of the code font's cell apart (a space is a cell and the glyphs' side bearings), no
    bracket between them."""
    if font is None:
        return list(line), list(code)
    words, flags = [line[0]], [code[0]]
    for index in range(1, len(line)):
        gap = inked[index].left - inked[index - 1].right
        # Never across a bracket: a link's text before the URL it gives in brackets.
        bracket = line[index].text.startswith("(") or words[-1].text.endswith(")")
        parted = light[index] and light[index - 1] and (code[index] or flags[-1]) and not bracket
        if parted and gap < GLUE_CELLS * font[0]:
            first, second = words[-1], line[index]
            box = (first.box[0], min(first.box[1], second.box[1]), second.box[2], max(first.box[3], second.box[3]))
            words[-1] = replace(first, text=first.text + second.text, box=box, conf=min(first.conf, second.conf))
            flags[-1] = True
            continue
        words.append(line[index])
        flags.append(code[index])
    return words, flags


def _code_words(
    line: Sequence[OcrWord], inked: Sequence[_InkWord], light: Sequence[bool], font: Fit | None
) -> list[bool]:
    """Which words of a line are code: in a lighter ink, and a name, path or option
    (`_signed`), or as wide as the code `font` sets them (WORD_CELLS); a word in a lighter
    ink beside code is code too unless its width says it is no code font's (RUN_CELLS:
    `dpkg` before `--configure`), and never across a bracket (a link's text before the URL
    it gives in brackets is set in a proportional font)."""
    off = [_word_cells(word.text, ink, font) for word, ink in zip(line, inked, strict=True)]
    # A plain word is told by its width alone when it stands alone in the lighter ink and has
    # letters enough for a width to tell (a link's text runs over words, and a short word of
    # any font fits some cell by chance).
    alone = [
        lit and not (index > 0 and light[index - 1]) and not (index + 1 < len(light) and light[index + 1])
        for index, lit in enumerate(light)
    ]
    code = [
        lit
        and (
            _signed(word.text)
            or (single and cells is not None and cells <= WORD_CELLS and _code_chars(word.text) >= PLAIN_CODE_CHARS)
        )
        for word, lit, single, cells in zip(line, light, alone, off, strict=True)
    ]
    grown = True
    while grown:
        grown = False
        for index, (lit, cells) in enumerate(zip(light, off, strict=True)):
            before = index > 0 and code[index - 1] and not line[index - 1].text.endswith(")")
            after = index + 1 < len(code) and code[index + 1] and not line[index + 1].text.startswith("(")
            if lit and not code[index] and (before or after) and (cells is None or cells <= RUN_CELLS):
                code[index] = grown = True
    return code


def _word_cells(text: str, ink: _InkWord, font: Fit | None) -> float | None:
    """How far a word's ink is from the width the code `font` gives its characters
    (`_code_chars`), in cells; None without a font, or for a word of one character."""
    chars = _code_chars(text)
    if font is None or chars < 2:
        return None
    pitch, offset = font
    return abs(ink.width - (pitch * chars + offset)) / pitch


def _code_chars(text: str) -> float:
    """A word's width in a code font's cells: its characters, but the punctuation a
    sentence puts around a name (`foo.`, `(foo`), set in the text's font, PUNCTUATION_CELLS
    of a cell each."""
    core = text.strip(_QUOTES_OPEN + _QUOTES_CLOSE + ".,;:!?")
    return len(core) + PUNCTUATION_CELLS * (len(text) - len(core)) if core else float(len(text))


def _code_font(points: Sequence[tuple[float, float]]) -> Fit | None:
    """The fit of the page's code font from its code words' widths (refitted on the
    MONO_FIT_SHARE closest, a misread word aside), None without enough of them or when its
    bearings are no font's."""
    if len(points) < MONO_KNOWN_WORDS or sum(chars for chars, _ in points) < MONO_KNOWN_CHARS:
        return None
    first = _line_fit(points)
    if first is None:
        return None
    closest = sorted(points, key=lambda point: abs(point[1] - (first[0] * point[0] + first[1])))
    fit = _line_fit(closest[: max(3, int(len(closest) * MONO_FIT_SHARE))]) or first
    return fit if MONO_BEARINGS[0] <= -fit[1] / fit[0] <= MONO_BEARINGS[1] else None


def _fits(points: Sequence[tuple[float, float]], fit: Fit) -> bool:
    """Whether words' widths lie as close to `fit` as a listing's do (MONO_MEDIAN_CELLS for
    half of them, MONO_Q80_CELLS for four in five)."""
    off = _cells_off(points, fit)
    return off[len(off) // 2] <= MONO_MEDIAN_CELLS and off[int(len(off) * 0.8)] <= MONO_Q80_CELLS


def _pitch_guess(inked: Sequence[Sequence[_InkWord]], known: Sequence[float | None]) -> float:
    """The pitch of code lines told by their look alone, with no code font fitted on the
    page: the listings' found on it, else their words' ink per character."""
    found = [pitch for pitch in known if pitch]
    if found:
        return statistics.median(found)
    widths = [word.width / word.chars for line in inked for word in line if word.chars >= 2]
    return statistics.median(widths or [word.width / max(1, word.chars) for line in inked for word in line])


def _cell_start(word: OcrWord, pitch: float) -> float:
    """Where a listing's word's first cell starts, in pixels: from its box's middle, as a
    scan's boxes are surer there than at their edges (a glyph's ink sits about the middle
    of its cell, an `i` as a `W`)."""
    return (word.box[0] + word.box[2]) / 2 - len(word.text) * pitch / 2


def _listing_left(lines: Sequence[Sequence[OcrWord]], pitch: float) -> float:
    """A listing's left edge: where its least indented line's first cell starts."""
    return min(_cell_start(line[0], pitch) for line in lines)


def _cells_text(line: Sequence[OcrWord], pitch: float, *, left: float) -> str:
    """A listing's line as set: each word at its column (where its first cell starts, from
    `left`, in cells of `pitch`), one space at least between words."""
    text = ""
    for word in line:
        column = max(0, round((_cell_start(word, pitch) - left) / pitch))
        text = text.ljust(column) if len(text) < column else (text + " " if text else text)
        text += word.text
    return text


def _fenced(lines: Sequence[Sequence[OcrWord]], pitch: float) -> str:
    """A listing's lines as a fenced code block, indented as on the page."""
    left = _listing_left(lines, pitch)
    body = "\n".join(_cells_text(line, pitch, left=left) for line in lines)
    longest = max((len(run) for run in re.findall("`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}"


def words_markdown(
    words: Sequence[OcrWord],
    *,
    language: str | None,
    image: Image.Image | None = None,
    shading: Image.Image | None = None,
) -> str:
    """One Markdown paragraph per Tesseract paragraph, its lines joined with a space and a
    word hyphenated at a line end rejoined where `hyphenation_resolve` says so (the page's
    own words are its vocabulary), paragraphs a blank line apart. With the `image` the
    words were read from (and the map of its `shading`), a listing's lines (`_code_read`)
    are a fenced code block, indented as set, and words set in a lighter ink than the body's
    inline code, which no engine translates."""
    lines = _lines(words)
    vocabulary = vocabulary_collect([" ".join(word.text for word in line) for line in lines])
    known = word_list(language) if language else frozenset()
    code = _code_read(lines, image, shading)
    lines, pitches = code.lines, code.pitches
    inline = dict(zip(map(id, lines), code.inline, strict=True))
    paragraphs = []
    # A listing is one block however Tesseract parted its lines into paragraphs.
    for (_, _, listing), run in groupby(
        zip(lines, pitches, strict=True),
        key=lambda pair: (pair[0][0].block, pair[0][0].paragraph if pair[1] is None else -1, pair[1] is not None),
    ):
        pairs = list(run)
        run_lines = [line for line, _ in pairs]
        if listing:
            paragraphs.append(_fenced(run_lines, statistics.median(pitch for _, pitch in pairs if pitch)))
            continue
        texts = [_line_markdown(line, inline[id(line)]) for line in run_lines]
        paragraphs.append(block_start_escape(lines_join(texts, vocabulary=vocabulary, words=known)))
    return "\n\n".join(paragraphs)


def _code_trimmed(text: str) -> tuple[str, str, str]:
    """A run of code words as (what opens it, the code, what closes it): the punctuation a
    sentence puts after a name (`foo.`, `apt-get,`), a bracket closing outside it
    (`bullseye).`) and the brackets around it (`(https://www.debian.org/)`) are prose."""
    core, tail, lead = text, "", ""
    while len(core) > 1 and (core[-1] in ".,;:!?" or (core[-1] == ")" and core.count(")") > core.count("("))):
        core, tail = core[:-1], core[-1] + tail
    if len(core) > 2 and core[0] == "(" and core[-1] == ")" and core[1:-1].count("(") == core[1:-1].count(")"):
        lead, core, tail = "(", core[1:-1], ")" + tail
    elif len(core) > 1 and core[0] == "(" and core.count("(") > core.count(")"):
        lead, core = "(", core[1:]
    return lead, core, tail


def _inline_parts(line: Sequence[OcrWord], light: Sequence[bool]) -> list[tuple[str, bool, list[OcrWord], bool]]:
    """A prose line's words in runs: (text, code, words, glued), a run of words in a
    lighter ink one run of code, the prose around it (`_code_trimmed`) parts of their own
    glued to it (no space between)."""
    parts: list[tuple[str, bool, list[OcrWord], bool]] = []
    for code, run in groupby(zip(line, light, strict=True), key=lambda pair: pair[1]):
        group = [word for word, _ in run]
        text = " ".join(word.text for word in group)
        if not code:
            parts.append((text, False, group, False))
            continue
        lead, core, tail = _code_trimmed(text)
        if lead:
            parts.append((lead, False, group[:1], False))
        parts.append((core, True, group, bool(lead)))
        if tail:
            parts.append((tail, False, group[-1:], True))
    return parts


def _line_markdown(line: Sequence[OcrWord], light: Sequence[bool]) -> str:
    """A prose line as Markdown: its text escaped, its runs of code as code spans."""
    out = ""
    for text, code, _, glued in _inline_parts(line, light):
        piece = code_span(text) if code else markdown_escape(text)
        out += piece if not out or glued else f" {piece}"
    return out


def _spans(
    line: Sequence[OcrWord], *, bold: bool, pitch: float | None = None, light: Sequence[bool] = ()
) -> list[dict[str, Any]]:
    """A line's words as spans: runs of confident words, each unsure word on its own, each
    with its mean confidence, and runs of words in a lighter ink (`light`, each word's)
    monospace spans (code inside a sentence), the punctuation ending such a run a span
    `glued` to it. A listing's line (its `pitch` given) is one monospace span, its words
    at their columns, so the spaces between them keep its alignment (its indentation is
    its box's, as a text layer's listing line's)."""
    groups: list[tuple[str, list[OcrWord], bool, bool]] = []  # text, words, mono, glued
    if pitch is not None:
        groups.append((_cells_text(line, pitch, left=_cell_start(line[0], pitch)), list(line), True, False))
    else:
        for text, code, part, glued in _inline_parts(line, light or [False] * len(line)):
            if code or glued or text == "(":  # a run of code, and the brackets and punctuation around it
                groups.append((text, part, code, glued))
                continue
            for unsure, run in groupby(part, key=lambda word: word.conf < LOW_WORD_CONFIDENCE):
                group = list(run)
                for piece in [[word] for word in group] if unsure else [group]:
                    groups.append((" ".join(word.text for word in piece), piece, False, False))
    return [
        {
            "text": text,
            "font": "",
            "size": float(max(word.box[3] - word.box[1] for word in part)),
            "bold": bold,
            "italic": False,
            "mono": mono,
            "conf": round(statistics.fmean(word.conf for word in part), 1),
            **({"glued": True} if glued else {}),
        }
        for text, part, mono, glued in groups
    ]


def _strokes(lines: Sequence[Sequence[OcrWord]], image: Image.Image) -> list[float]:
    """Each line's stroke width: its ink pixels over its ink runs (a run starts where a
    pixel is ink and the one left of it paper), the mean width of its letters' strokes
    whatever the letters; a bold line's are about 1.6 times the body's."""
    ink = image.point(lambda value: 255 if value < INK_LEVEL else 0)
    widths = []
    for line in lines:
        left, top, right, bottom = _box(word.box for word in line)
        crop = ink.crop((round(left), round(top), round(right), round(bottom)))
        starts = ImageChops.subtract(crop, ImageChops.offset(crop, 1, 0)).histogram()[255]
        widths.append(crop.histogram()[255] / starts if starts else 0.0)
    return widths


def _bold_lines(lines: Sequence[Sequence[OcrWord]], image: Image.Image | None) -> list[bool]:
    """Which lines are set in bold: strokes BOLD_STROKE times the page's median line's (on a
    page of at least BOLD_MIN_LINES lines, so a median is the body's)."""
    if image is None or len(lines) < BOLD_MIN_LINES:
        return [False] * len(lines)
    widths = _strokes(lines, image)
    body = statistics.median(widths)
    return [body > 0 and width >= BOLD_STROKE * body for width in widths]


def _paragraphs(
    lines: Sequence[list[OcrWord]], bold: Sequence[bool], pitches: Sequence[float | None]
) -> list[list[tuple[list[OcrWord], bool, float | None]]]:
    """The lines (with whether each is bold, and its pitch where it is a listing's) in
    Tesseract's paragraphs, a paragraph parted where its lines turn from bold to regular or
    back, or into a listing or out of one: a bold heading Tesseract ran into the paragraph
    under it is a paragraph of its own, and so is the listing a sentence introduces; a
    paragraph Tesseract starts inside a sentence goes on with the one before (`_carried_on`)."""
    paragraphs: list[list[tuple[list[OcrWord], bool, float | None]]] = []
    previous: tuple[int, int, bool, float | None] | None = None
    for line, heavy, pitch in zip(lines, bold, pitches, strict=True):
        key = (line[0].block, line[0].paragraph, heavy, pitch)
        carried = paragraphs and pitch is None and previous is not None and previous[2:] == (heavy, None)
        if key != previous and not (carried and _carried_on(paragraphs[-1][-1][0], line)):
            paragraphs.append([])
        paragraphs[-1].append((line, heavy, pitch))
        previous = key
    return paragraphs


def _carried_on(last: Sequence[OcrWord], line: Sequence[OcrWord]) -> bool:
    """Whether `line`, which Tesseract starts a paragraph (or a block) with, goes on with the
    sentence `last` leaves unfinished: `last` ends in no sentence's end (or in a hyphen) and
    `line` starts in lowercase, no bullet, right under it (a line's height apart at most)
    and at its left edge (within a line's height)."""
    height = statistics.median(word.box[3] - word.box[1] for word in last)
    unfinished = not last[-1].text.endswith((".", "!", "?", ":")) or last[-1].text.endswith("-")
    return (
        unfinished
        and line[0].text[:1].islower()
        and 0 <= line[0].box[1] - max(word.box[3] for word in last) <= height
        and abs(line[0].box[0] - last[0].box[0]) <= height
    )


def _edges_aligned(boxes: list[list[float]], *, tolerance: float) -> list[list[float]]:
    """The boxes of a paragraph's lines, the left edges within `tolerance` of each other one
    edge (their leftmost): a scan's lines that start at one margin start a pixel or three
    apart as their first glyphs' ink does, which the book structure would read as an
    indent (a new paragraph, or a list item's wrapped line taken for one)."""
    aligned = [list(box) for box in boxes]
    order = sorted(range(len(boxes)), key=lambda index: boxes[index][0])
    start = 0
    for position in range(1, len(order) + 1):
        if position == len(order) or boxes[order[position]][0] - boxes[order[position - 1]][0] > tolerance:
            edge = boxes[order[start]][0]
            for index in order[start:position]:
                aligned[index][0] = edge
            start = position
    return aligned


def words_layout(
    words: Sequence[OcrWord], *, image: Image.Image | None = None, shading: Image.Image | None = None
) -> dict[str, Any]:
    """The words in the stored page layout format (docs/book-structure.md): `source: "ocr"`,
    pixels of the corrected image (`image`, where the words were read: its size and its
    strokes, which tell bold lines), one block per Tesseract paragraph, spans with `conf`.

    A span's `size` is its paragraph's type size: the median height of the paragraph's
    lines. A word's box is as tall as its letters (`a` is short, `ly` tall), so a line's own
    height says little of its type; a paragraph's median says what the book-structure layer
    asks (a heading set larger than the body, where a paragraph ends). Sizes within
    BODY_SIZE_SPREAD of the page's median line are the body's, and a paragraph of one line
    is body-sized unless it is SINGLE_LINE_LARGER times taller: a chapter's title stands
    out, while a section heading barely larger than the body is told by its weight (better
    than a body line read as a heading, which would start a chapter).

    A line is `bold` when its strokes are BOLD_STROKE times the page's median line's
    (`_strokes`), and a Tesseract paragraph whose lines turn from bold to regular is two
    (a bold heading run into the paragraph under it), so a numbered section heading set in
    bold at the body's size is a heading, as on a text page.

    Code (`_code_read`, with the map of the page's `shading`) is monospace: a listing's
    lines wholly, a run of words set in a lighter ink inside a sentence as a span."""
    blocks = []
    all_lines = _lines(words)
    bold = _bold_lines(all_lines, image)
    code = _code_read(all_lines, image, shading)
    all_lines, pitches = code.lines, code.pitches
    ink = image.point(lambda value: 255 if value < INK_LEVEL else 0) if image is not None else None
    inline = dict(zip(map(id, all_lines), code.inline, strict=True))
    # The body's type: its prose lines' (a page of many short code lines, set smaller and
    # with fewer ascenders, would otherwise make its prose look set larger than its headings).
    prose = [line for line, pitch in zip(all_lines, pitches, strict=True) if pitch is None] or all_lines
    page_size = statistics.median(box[3] - box[1] for box in (_line_box(line, ink) for line in prose)) if prose else 0
    for paragraph in _paragraphs(all_lines, bold, pitches):
        lines = [line for line, _, _ in paragraph]
        boxes = _edges_aligned([_line_box(line, ink) for line in lines], tolerance=EDGE_ALIGN * page_size)
        size = float(statistics.median(bottom - top for _, top, _, bottom in boxes))
        if abs(size - page_size) <= BODY_SIZE_SPREAD * page_size or (
            len(lines) == 1 and size < SINGLE_LINE_LARGER * page_size
        ):
            size = float(page_size)  # the body's type: a pixel or two either way is the letters
        blocks.append(
            {
                "bbox": _box((int(left), int(top), int(right), int(bottom)) for left, top, right, bottom in boxes),
                "lines": [
                    {
                        "bbox": box,
                        "spans": [
                            {**span, "size": size}
                            for span in _spans(line, bold=heavy, pitch=pitch, light=inline[id(line)])
                        ],
                    }
                    for box, (line, heavy, pitch) in zip(boxes, paragraph, strict=True)
                ],
            }
        )
    width, height = image.size if image is not None else (0, 0)
    return {"version": 1, "source": "ocr", "width": float(width), "height": float(height), "blocks": blocks}


def reading_warnings(words: Sequence[OcrWord], *, prepared: _Prepared) -> tuple[str, ...]:
    """Why the page's reading may not be trusted, in words; () when nothing says so."""
    image = prepared.image
    page_ink = prepared.ink_pixels
    reduced_area = (image.width / prepared.scale) * (image.height / prepared.scale)
    if prepared.blank or (page_ink < reduced_area * INK_MIN_SHARE and not words):
        return ()  # a blank page
    warnings = []
    if not words:
        return ("No text was recognised on a page that holds ink: check the scan.",)
    mean = _mean_confidence(words)
    if mean < MEAN_CONFIDENCE_MIN:
        warnings.append(f"Low OCR confidence: the words were read with {mean:.0f}% confidence on average.")
    unsure = sum(1 for word in words if word.conf < LOW_WORD_CONFIDENCE)
    if unsure > len(words) * LOW_WORDS_SHARE_MAX:
        warnings.append(f"{unsure} of {len(words)} words were read with under {LOW_WORD_CONFIDENCE:.0f}% confidence.")
    edges = _edge_words(words, prepared)
    if edges:
        warnings.append(f"Text is cut at the image's {' and '.join(edges)} edge: part of the page is missing.")
    unread = _ink_unread_share(words, prepared)
    if unread > INK_UNREAD_SHARE_MAX:
        warnings.append(
            f"{unread:.0%} of the page's text-like ink is outside every word read: text may have been missed."
        )
    return tuple(warnings)


def _edge_words(words: Sequence[OcrWord], prepared: _Prepared) -> list[str]:
    """The edges of the scan (left, top, right, bottom) that at least EDGE_WORDS_MIN words
    touch."""
    touching = {"left": 0, "top": 0, "right": 0, "bottom": 0}
    for word in words:
        left, top, right, bottom = word.box
        corners = [_edge_frame(prepared, x, y) for x, y in ((left, top), (right, top), (left, bottom), (right, bottom))]
        width, height = corners[0][2], corners[0][3]
        xs = [corner[0] for corner in corners]
        ys = [corner[1] for corner in corners]
        touching["left"] += min(xs) <= EDGE_PIXELS
        touching["top"] += min(ys) <= EDGE_PIXELS
        touching["right"] += max(xs) >= width - 1 - EDGE_PIXELS
        touching["bottom"] += max(ys) >= height - 1 - EDGE_PIXELS
    return [edge for edge, count in touching.items() if count >= EDGE_WORDS_MIN]


def _edge_frame(prepared: _Prepared, x: float, y: float) -> tuple[float, float, float, float]:
    """(x, y) in the frame of the scan before the skew was corrected, and that frame's
    width and height."""
    image = prepared.image
    if abs(prepared.skew) < SKEW_MIN_DEGREES:
        return x, y, float(image.width), float(image.height)
    angle = math.radians(prepared.skew)
    cos, sin = math.cos(angle), abs(math.sin(angle))
    determinant = cos * cos - sin * sin
    width = (image.width * cos - image.height * sin) / determinant
    height = (image.height * cos - image.width * sin) / determinant
    turn = math.radians(-prepared.skew)  # undo Pillow's counter-clockwise turn (y down)
    dx, dy = x - image.width / 2, y - image.height / 2
    ox = dx * math.cos(turn) + dy * math.sin(turn)
    oy = -dx * math.sin(turn) + dy * math.cos(turn)
    return ox + width / 2, oy + height / 2, width, height


def _opened(ink: Image.Image, size: int) -> Image.Image:
    """The morphological opening of `ink` (white on black) by a `size` x `size` square (odd):
    an erosion (a pixel stays when every pixel of its window is ink: the window's mean is
    255) then a dilation (a pixel is set when any of its window is: the mean is above 0),
    each a box mean, which Pillow computes in time independent of `size`, where its rank
    filters take size squared (80 ms a page at 7)."""
    radius = size // 2
    eroded = ink.filter(ImageFilter.BoxBlur(radius)).point(lambda value: 255 if value == 255 else 0)
    return eroded.filter(ImageFilter.BoxBlur(radius)).point(lambda value: 255 if value > 0 else 0)


def _ink_unread_share(words: Sequence[OcrWord], prepared: _Prepared) -> float:
    """The share of the page's text-like ink (the corrected image, reduced) outside every
    word's box. Solid areas (a photo, a filled figure: what stays after an opening by
    SOLID_PIXELS, which wipes out strokes as thin as a letter's) are not text and count
    neither way."""
    image = prepared.image
    scale = prepared.scale
    width = max(1, round(image.width / scale))
    height = max(1, round(image.height / scale))
    ink = _ink(image, width)
    solid = _opened(ink, SOLID_PIXELS)
    text_ink = ImageChops.subtract(ink, solid)
    total = text_ink.histogram()[255]
    if not total:
        return 0.0
    read = Image.new("L", (width, height), 0)
    pad = 2 * scale
    for word in words:
        left, top, right, bottom = word.box
        box = (int((left - pad) / scale), int((top - pad) / scale))
        read.paste(255, (*box, math.ceil((right + pad) / scale), math.ceil((bottom + pad) / scale)))
    return ImageChops.subtract(text_ink, read).histogram()[255] / total
