"""Page furniture: the running headers, running footers and page numbers of a book.

Furniture is left out of translation and exports and kept for the page's review package
(docs/book-structure.md, "Page furniture"). The rules, over the pages of a book in order:

1. Candidates. Only lines in a page's top or bottom band (`BAND` of the page's height) can
   be furniture, and only the outermost ones: reading from the top edge down (or the
   bottom edge up), the lines up to the first gap wider than `GAP_LINE_HEIGHTS` of a
   line, at most `MAX_BAND_LINES` of them; lines with no such gap after them within the
   band are none. Furniture stands apart from the body, and nothing of the body lies
   between it and the edge.
2. Repeated text. A candidate's text is normalised (case, whitespace, every run of digits
   one `#`, roman numerals one `#`) and compared with the candidates of the same band on
   the other pages: text that repeats at the same height (within `SLOT_TOLERANCE` of the
   page height) on at least `min_repeats` pages, each of them with another such page at
   most `RUNNING_WINDOW` pages away, is a running header or footer (a body line repeated
   at the top of a few scattered pages is not: a running header runs). Each
   header/footer is counted on its own, so alternating even/odd headers (chapter title on
   one side, book title on the other) are found as two running headers.
3. Slots. The positions where repeated headers and footers stand are the book's furniture
   slots; a candidate that fills a slot (same top and height, within the tolerance) is
   furniture too, though its text is seen once (the running header of a one-page chapter).
4. Page numbers. A candidate that reads as a page number ("7", "vii", "Page 7", "7 / 120",
   "7 of 120", "- 7 -") is one only if the numbering runs across neighbouring pages: some
   page at most `NUMBER_WINDOW` pages away carries a number of the same style, in the same
   band at about the same height, whose value differs by exactly the distance between the
   pages (n, n+1, ...); the line numbers of a listing running from the foot of one page
   to the head of the next are in different bands and stay body text. A body line that
   happens to be a number breaks that pattern and stays body text. A header or footer
   found by rule 2 or 3 whose text is a number (a lone "iii") is a page number too.

Pages are identified by their position in the sequence given (0-based), lines by
`LineRef`; a page without a layout has no furniture.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum

from bookstructure.lines import Layout, LineRef, PageLine, page_height, page_lines

BAND = 0.15
MAX_BAND_LINES = 3
SLOT_TOLERANCE = 0.006
# A scan's furniture (an OCR layout): its place varies with the paper's place on the glass
# and the turn taken out (0.9% of the page's height over 6 pages of the FAQ scanned at 200
# dpi, turned up to 1 degree), and OCR misreads or spaces its text ("DO I", "DOI";
# "PACKAGE ...", "PACKAGE..."): texts this similar are one, at this tolerance.
SCAN_SLOT_TOLERANCE = 0.015
SCAN_TEXT_SIMILARITY = 0.85
SCAN_PART_CHARS = 12  # letters and digits a scanned header's part has at least to be told inside a line
GAP_LINE_HEIGHTS = 0.5
NUMBER_WINDOW = 3
RUNNING_WINDOW = 2
BODY_REACH = 0.1
EDGE_SLACK = 0.003  # of the page's height: how far a header or footer may reach into the body's extent

_ROMAN = re.compile(r"^(?=[mdclxvi])m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+|p\.\s*)?[-\u2013\u2014]?\s*(?P<value>\d{1,4}|[mdclxvi]{1,8})\s*[-\u2013\u2014]?"
    r"(?:\s*(?:/|of)\s*\d{1,4})?$"
)
_DIGITS = re.compile(r"\d+")
_ROMAN_WORD = re.compile(r"\b[mdclxvi]+\b")


class FurnitureKind(StrEnum):
    HEADER = "header"
    FOOTER = "footer"
    PAGE_NUMBER = "page_number"


@dataclass(frozen=True)
class FurnitureLine:
    """A line of page furniture: where it is, what kind, and its text."""

    ref: LineRef
    kind: FurnitureKind
    text: str


@dataclass(frozen=True)
class PageFurniture:
    """The furniture lines of one page, top to bottom."""

    page: int
    lines: tuple[FurnitureLine, ...]


@dataclass(frozen=True)
class BookFurniture:
    """The furniture of every page of a book, in book order."""

    pages: tuple[PageFurniture, ...]

    def refs(self) -> frozenset[LineRef]:
        """Every furniture line of the book."""
        return frozenset(line.ref for page in self.pages for line in page.lines)


@dataclass(frozen=True)
class _Candidate:
    line: PageLine
    band: FurnitureKind  # HEADER for the top band, FOOTER for the bottom band
    key: str
    top: float  # as a fraction of the page's height
    height: float
    tolerance: float  # how far (of the page's height) another page's line may stand and be at its place
    scanned: bool = False  # read by OCR: its key is compared by similarity


def _near(candidate: _Candidate, other: _Candidate, *, times: float = 1.0) -> bool:
    return abs(candidate.top - other.top) <= times * max(candidate.tolerance, other.tolerance)


def furniture_detect(layouts: Sequence[Layout]) -> BookFurniture:
    """Find the running headers, footers and page numbers of a book's pages (in book order)."""
    candidates = [_band_candidates(layout, page=index) for index, layout in enumerate(layouts)]
    short_book = len(layouts) < 5
    body_top, body_bottom = _body_edges(layouts, candidates)
    kinds: dict[LineRef, FurnitureKind] = {}

    slots: list[_Candidate] = []
    by_key: dict[tuple[FurnitureKind, str], list[_Candidate]] = defaultdict(list)
    scanned_keys: dict[FurnitureKind, list[str]] = defaultdict(list)
    for page_candidates in candidates:
        for candidate in page_candidates:
            key = _scanned_key(candidate, scanned_keys[candidate.band]) if candidate.scanned else candidate.key
            by_key[(candidate.band, key)].append(candidate)
    for group in by_key.values():
        for cluster in _clusters_by_top(group):
            cluster_pages = {candidate.line.ref.page for candidate in cluster}
            running = [
                candidate
                for candidate in cluster
                if any(0 < abs(candidate.line.ref.page - page) <= RUNNING_WINDOW for page in cluster_pages)
            ]
            # A header runs from 2 pages (a short chapter's, at the book's start, before any
            # other header showed where they stand); a footer from 3 (a page's last line of
            # body text, such as a definition's "[Constant]", often sits at the same height).
            header = cluster[0].band is FurnitureKind.HEADER
            min_repeats = 2 if short_book or header else 3
            if not _outside_body(cluster, body_top=body_top, body_bottom=body_bottom):
                continue
            if len({candidate.line.ref.page for candidate in running}) >= min_repeats:
                slots.extend(running)
                for candidate in running:
                    kinds[candidate.line.ref] = candidate.band

    for page_candidates in candidates:
        for candidate in page_candidates:
            if candidate.line.ref not in kinds and any(_fills(candidate, slot) for slot in slots):
                kinds[candidate.line.ref] = candidate.band

    for ref in _page_number_refs(candidates):
        kinds[ref] = FurnitureKind.PAGE_NUMBER
    for page_candidates in candidates:
        for candidate in page_candidates:
            if candidate.line.ref in kinds and _page_number(candidate.line.text) is not None:
                kinds[candidate.line.ref] = FurnitureKind.PAGE_NUMBER

    for page_candidates, layout in zip(candidates, layouts, strict=True):
        # A page whose every line looks like furniture keeps its text: a running line with
        # nothing under it is the page's body (a book of one-line pages, a title page).
        refs = {candidate.line.ref for candidate in page_candidates if candidate.line.ref in kinds}
        if refs and len(refs) == len(page_lines(layout, page=page_candidates[0].line.ref.page)):
            for ref in refs:
                if kinds[ref] is not FurnitureKind.PAGE_NUMBER:
                    del kinds[ref]

    pages: list[PageFurniture] = []
    for index, page_candidates in enumerate(candidates):
        found = sorted(
            (candidate.line for candidate in page_candidates if candidate.line.ref in kinds),
            key=lambda line: (line.top, line.x0),
        )
        pages.append(
            PageFurniture(
                page=index,
                lines=tuple(FurnitureLine(ref=line.ref, kind=kinds[line.ref], text=line.text) for line in found),
            )
        )
    return BookFurniture(pages=tuple(pages))


def _body_edges(layouts: Sequence[Layout], candidates: list[list[_Candidate]]) -> tuple[float, float]:
    """Where the body text starts and ends (fractions of the page's height): the median top
    of the pages' first lines that are no candidates, and the bottom of their last ones on
    all but the BODY_REACH share of pages that reach furthest."""
    tops: list[float] = []
    bottoms: list[float] = []
    for index, layout in enumerate(layouts):
        height = page_height(layout)
        refs = {candidate.line.ref for candidate in candidates[index]}
        body = [line for line in page_lines(layout, page=index) if line.ref not in refs]
        if height > 0 and body:
            tops.append(min(line.top for line in body) / height)
            bottoms.append(max(line.bottom for line in body) / height)
    if not tops:
        return 0.0, 1.0
    # Where it ends on full pages: a chapter's last page, a short page end higher. Where it
    # starts on most pages: a page whose header was not read (a scan) starts higher.
    bottoms.sort()
    return statistics.median(tops), bottoms[int((len(bottoms) - 1) * (1 - BODY_REACH))]


def _outside_body(cluster: list[_Candidate], *, body_top: float, body_bottom: float) -> bool:
    """A running header stands above where the body starts on full pages, a running footer
    below where it ends: a page's last line of body text that repeats (a definition's
    "[Constant]" in an API manual) sits where other pages' body text ends, and is body."""
    if cluster[0].band is FurnitureKind.HEADER:
        return statistics.median(candidate.top + candidate.height for candidate in cluster) <= body_top + EDGE_SLACK
    return statistics.median(candidate.top for candidate in cluster) >= body_bottom - EDGE_SLACK


def _scanned_key(candidate: _Candidate, seen: list[str]) -> str:
    """The key of a scanned candidate: the first key seen in its band that its text is as
    similar to as OCR's misreadings leave it (SCAN_TEXT_SIMILARITY), or that starts or ends
    it (a running header's chapter and section OCR read as one line where the gap between
    them is narrow, as two on the next page), else its own."""
    for key in seen:
        shorter, longer = sorted((key, candidate.key), key=len)
        if key == candidate.key or (
            len(shorter) >= 4 and SequenceMatcher(None, key, candidate.key).ratio() >= SCAN_TEXT_SIMILARITY
        ):
            return key
        if len(shorter) >= SCAN_PART_CHARS and (longer.startswith(shorter) or longer.endswith(shorter)):
            return key
    seen.append(candidate.key)
    return candidate.key


def _band_candidates(layout: Layout, *, page: int) -> list[_Candidate]:
    height = page_height(layout)
    scanned = layout.get("source") == "ocr"
    lines = page_lines(layout, page=page)
    if height <= 0 or not lines:
        return []
    by_top = sorted(lines, key=lambda line: (line.top, line.x0))
    top_band = _edge_lines(by_top, inside=lambda line: line.bottom <= height * BAND)
    bottom_band = _edge_lines(by_top[::-1], inside=lambda line: line.top >= height * (1 - BAND))
    seen = {line.ref for line in top_band}
    return [
        _Candidate(
            line=line,
            band=band,
            key=_scan_normalise(line.text) if scanned else _normalise(line.text),
            top=line.top / height,
            height=line.height / height,
            tolerance=SCAN_SLOT_TOLERANCE if scanned else SLOT_TOLERANCE,
            scanned=scanned,
        )
        for band, band_lines in ((FurnitureKind.HEADER, top_band), (FurnitureKind.FOOTER, bottom_band))
        for line in band_lines
        if band is FurnitureKind.HEADER or line.ref not in seen
    ]


def _edge_lines(from_edge: list[PageLine], *, inside: Callable[[PageLine], bool]) -> list[PageLine]:
    """The lines nearest an edge, at most MAX_BAND_LINES, all inside the band, up to the
    first gap wider than half a line: furniture stands apart from the body."""
    taken: list[PageLine] = []
    for line, following in zip(from_edge, [*from_edge[1:], None], strict=True):
        if len(taken) == MAX_BAND_LINES or not inside(line):
            break
        taken.append(line)
        if following is None or _gap(line, following) > GAP_LINE_HEIGHTS * line.height:
            return taken
    return []


def _gap(line: PageLine, following: PageLine) -> float:
    return following.top - line.bottom if following.top >= line.top else line.top - following.bottom


def _normalise(text: str) -> str:
    lowered = " ".join(text.lower().split())
    return _ROMAN_WORD.sub(
        lambda match: "#" if _ROMAN.match(match.group()) else match.group(), _DIGITS.sub("#", lowered)
    )


def _scan_normalise(text: str) -> str:
    """A scanned line's key: its normalised text's letters and digits alone (OCR adds and
    drops spaces and dots: "DO I" and "DOI", "PACKAGE ..." and "PACKAGE...")."""
    return "".join(character for character in _normalise(text) if character.isalnum() or character == "#")


def _clusters_by_top(group: list[_Candidate]) -> list[list[_Candidate]]:
    clusters: list[list[_Candidate]] = []
    for candidate in sorted(group, key=lambda candidate: candidate.top):
        if clusters and _near(candidate, clusters[-1][-1]):
            clusters[-1].append(candidate)
        else:
            clusters.append([candidate])
    return clusters


def _fills(candidate: _Candidate, slot: _Candidate) -> bool:
    return (
        candidate.band is slot.band
        and _near(candidate, slot)
        and abs(candidate.height - slot.height) <= max(SLOT_TOLERANCE, 0.15 * slot.height)
    )


def _page_number_refs(candidates: list[list[_Candidate]]) -> set[LineRef]:
    numbers: dict[int, list[tuple[str, int, _Candidate]]] = defaultdict(list)
    for page_candidates in candidates:
        for candidate in page_candidates:
            parsed = _page_number(candidate.line.text)
            if parsed is not None:
                numbers[candidate.line.ref.page].append((*parsed, candidate))
    found: set[LineRef] = set()
    for page, entries in numbers.items():
        for style, value, candidate in entries:
            for other in range(page - NUMBER_WINDOW, page + NUMBER_WINDOW + 1):
                if other != page and any(
                    other_style == style
                    and other_value - value == other - page
                    and other_candidate.band is candidate.band
                    and _near(other_candidate, candidate, times=2)
                    for other_style, other_value, other_candidate in numbers.get(other, [])
                ):
                    found.add(candidate.line.ref)
                    break
    return found


def _page_number(text: str) -> tuple[str, int] | None:
    """("arabic" | "roman", value) for a line that reads as a page number, else None."""
    match = _PAGE_NUMBER.match(" ".join(text.lower().split()))
    if match is None:
        return None
    value = match.group("value")
    if value.isdigit():
        return "arabic", int(value)
    if _ROMAN.match(value):
        return "roman", _roman_value(value)
    return None


def _roman_value(numeral: str) -> int:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    total = 0
    for index, letter in enumerate(numeral):
        value = values[letter]
        following = values[numeral[index + 1]] if index + 1 < len(numeral) else 0
        total += -value if value < following else value
    return total
