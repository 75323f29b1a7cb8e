"""The measures of bench_fidelity: how faithfully an export renders the source book.

Pure functions over text, so tests can check each on small hand-made inputs
(tests/exports/test_fidelity_metrics.py); the poppler readers at the end turn a PDF into
their inputs. The source is always what poppler reads from the PDF (pdftotext for the
words in reading order, `pdftohtml -xml` for positions, fonts, sizes and the outline).
"""

from __future__ import annotations

import itertools
import re
import subprocess
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from core.markdown import markdown_unescape

WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
PAGE_NUMBER = re.compile(r"\A\W*(?:\d{1,4}|[ivxlcdm]{1,7})\W*\Z", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.!?:;\u2026][\"'\u201d\u2019)\]*_`]*\Z")
MARKDOWN_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
PAGE_MARKER = re.compile(r"<!-- page (\d+) -->")
ECHO_MARKER = re.compile(r"\[echo → [\w-]+\]\s?")
MONOSPACE = re.compile(r"mono|monl|courier|typewriter|tt\d|code|consol|fixed", re.IGNORECASE)
LINE_END_HYPHEN = re.compile(r"([^\W\d_]+)-\n\s*([^\W\d_]+)")
EDGE = 0.12  # the top and bottom 12% of a page: where running headers and footers sit
ROW = 0.01  # lines whose tops are within 1% of the page's height stand in one row
APART = 0.025  # a header or footer row stands this far (of the page's height) from the body


@dataclass(frozen=True)
class SourceLine:
    """A line of a source page as pdftohtml places it: `top` as a fraction of the page's
    height (0 at the top), the font size of its largest run, whether every run of it is in
    a monospace font."""

    page: int
    top: float
    text: str
    size: float = 10.0
    mono: bool = False


def normalized(text: str) -> str:
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(text)]


def paragraphs(text: str) -> list[str]:
    """Blocks of text separated by blank lines, whitespace collapsed."""
    return [normalized(block) for block in re.split(r"\n\s*\n", text) if block.strip()]


# --- Page furniture -----------------------------------------------------------------------


def furniture_lines(lines: Iterable[SourceLine], *, page_count: int) -> dict[int, list[str]]:
    """Running headers and footers, page by page: a page's first and last lines, when near
    its top or bottom edge at a height (to 1% of the page) where such a line sits on at
    least 40% of the pages (and two at least). Positional, as Marker and olmOCR find them,
    so a header that changes from page to page (the current section) is found too."""
    by_page: dict[int, list[SourceLine]] = {}
    for line in lines:
        if line.text.strip():
            by_page.setdefault(line.page, []).append(line)
    edge: list[SourceLine] = []
    for page_lines in by_page.values():
        ordered = sorted(page_lines, key=lambda line: line.top)
        # The first and last lines, with what stands beside them (a header's runs at left
        # and right, set at slightly different heights, are one row).
        # Only a row standing apart from the text beside it (a page's full last line of body
        # text sits at the same height on many pages too).
        first, last = ordered[0], ordered[-1]
        top = [line for line in ordered if line.top < EDGE and line.top - first.top <= ROW]
        bottom = [line for line in ordered if line.top > 1 - EDGE and last.top - line.top <= ROW and line not in top]
        below = [line.top for line in ordered if line.top - first.top > ROW]
        above = [line.top for line in ordered if last.top - line.top > ROW]
        edge += top if not below or below[0] - first.top > APART else []
        edge += bottom if not above or last.top - above[-1] > APART else []
    pages_at: dict[int, set[int]] = {}
    for line in edge:
        pages_at.setdefault(round(line.top * 100), set()).add(line.page)
    needed = max(2, 0.4 * page_count)
    bands = {band for band, pages in pages_at.items() if len(pages) >= needed}
    found: dict[int, list[str]] = {}
    for line in edge:
        band = round(line.top * 100)
        if bands & {band - 1, band, band + 1}:
            found.setdefault(line.page, []).append(normalized(line.text))
    return found


def furniture_leaks(furniture: Mapping[int, list[str]], export_pages: Mapping[int, str]) -> int:
    """Running header and footer lines (page numbers aside: page_number_paragraphs counts
    them) found in the export of their page."""
    leaks = 0
    for page, texts in furniture.items():
        exported = normalized(export_pages.get(page, ""))
        leaks += sum(1 for text in texts if not PAGE_NUMBER.match(text) and text in exported)
    return leaks


def page_number_paragraphs(export_pages: Mapping[int, str]) -> int:
    """Paragraphs of the export that are only a number (arabic or roman)."""
    return sum(1 for text in export_pages.values() for block in paragraphs(text) if PAGE_NUMBER.match(block))


# --- Hyphenation --------------------------------------------------------------------------


def vocabulary(text: str) -> tuple[set[str], set[str]]:
    """(words, hyphenated compounds) of a text read inside its lines (not across a line
    end), lowercased: what tells a hyphenation from a compound."""
    inside = re.sub(r"-\n", " ", text)
    compounds = {match.lower() for match in re.findall(r"[^\W\d_]+-[^\W\d_]+", inside)}
    return set(words(inside)), compounds


def source_lines_text(lines: Iterable[SourceLine]) -> str:
    """The lines as they are set on the page, one a line (poppler's pdftotext joins words
    hyphenated at a line end itself; its -layout mode, which normalize reads, does not)."""
    return "\n".join(line.text for line in sorted(lines, key=lambda line: (line.page, line.top)))


def hyphenations(source_text: str, known_words: set[str], compounds: set[str]) -> list[tuple[str, str]]:
    """The words the source splits at a line end with a hyphen: (first half, second half)
    where the joined word is a known word and the hyphenated form is not a compound the
    text writes elsewhere ("well-known" stays)."""
    found = []
    for first, second in LINE_END_HYPHEN.findall(source_text):
        joined, kept = (first + second).lower(), f"{first}-{second}".lower()
        if joined in known_words and kept not in compounds:
            found.append((first, second))
    return found


def unjoined_hyphenations(split_words: Iterable[tuple[str, str]], export_text: str) -> int:
    """Hyphenated words still split in the export ("Pen- tium", "Pen-\\ntium", "Pen-tium")."""
    return sum(
        len(re.findall(rf"(?<![^\W\d_]){re.escape(first)}-\s*{re.escape(second)}(?![^\W\d_])", export_text))
        for first, second in set(split_words)
    )


# --- Sentences cut at page breaks ---------------------------------------------------------


def cut_sentences(export_pages: Mapping[int, str], skipped: Mapping[int, list[str]] | None = None) -> int:
    """Page breaks in the export where the page's last paragraph does not end a sentence
    and the next page's first paragraph starts in lowercase: a sentence read (and
    translated) as two fragments. Page numbers and a page's `skipped` paragraphs (its
    running header and footer, counted by furniture_leaks) are looked through."""
    skipped = skipped or {}
    cuts = 0
    numbers = sorted(export_pages)
    for page, following in itertools.pairwise(numbers):
        if following != page + 1:
            continue
        last = _content(export_pages[page], skipped.get(page, []))
        first = _content(export_pages[following], skipped.get(following, []))
        if last and first and not SENTENCE_END.search(last[-1]) and first[0][:1].islower():
            cuts += 1
    return cuts


def _content(text: str, skipped: list[str]) -> list[str]:
    return [block for block in paragraphs(text) if not PAGE_NUMBER.match(block) and block not in skipped]


# --- Code and literal text ----------------------------------------------------------------


def code_lines(lines: Iterable[SourceLine]) -> list[str]:
    """The source lines set wholly in a monospace font (listings, commands), of 3 characters
    or more."""
    return [normalized(line.text) for line in lines if line.mono and len(line.text.strip()) >= 3]


def not_verbatim(texts: Iterable[str], export_text: str) -> int:
    """How many of the texts do not appear in the export as they are (spaces collapsed)."""
    exported = normalized(export_text)
    return sum(1 for text in texts if normalized(text) not in exported)


# --- Words and headings -------------------------------------------------------------------


def missing_words(source_text: str, export_text: str, *, excluded_text: str = "") -> tuple[int, int]:
    """(source words the export lacks, source words), counting repeats: a word the source
    has 5 times and the export 3 times is 2 missing. The words of `excluded_text` (the
    running headers and footers, not text of the book) are taken out of the source first,
    as many times as they occur there."""
    source = Counter(words(source_text)) - Counter(words(excluded_text))
    exported = Counter(words(export_text))
    missing = sum(max(0, count - exported[word]) for word, count in source.items())
    return missing, sum(source.values())


def _heading_key(text: str) -> str:
    return " ".join(re.sub(r"^[\d.\s]*|[^\w\s]", " ", text.lower()).split())


def headings_found(source_headings: Iterable[str], export_headings: Iterable[str]) -> tuple[int, int]:
    """(source headings that are a heading of the export, source headings): equal once
    lowercased, numbering and punctuation aside, or one containing the other."""
    wanted = [_heading_key(text) for text in source_headings]
    present = [_heading_key(text) for text in export_headings]
    found = sum(1 for key in wanted if key and any(key == got or key in got or got in key for got in present if got))
    return found, len(wanted)


def markdown_headings(markdown: str, *, skip_title: bool = True) -> list[str]:
    """The headings of a Markdown text (ATX) as a reader sees them (escapes read, code
    spans' backticks gone), less the book's title (its first `# ` line)."""
    found = [markdown_unescape(match.group(2).replace("`", "")) for match in MARKDOWN_HEADING.finditer(markdown)]
    return found[1:] if skip_title and found else found


def body_size(lines: Iterable[SourceLine]) -> float:
    """The font size most of the text is set in."""
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def large_lines(lines: list[SourceLine], *, furniture: Mapping[int, list[str]]) -> list[str]:
    """Headings by size, for a PDF without an outline: short lines (up to 15 words) set
    at least 15% larger than the body, not page furniture."""
    body = body_size(lines)
    return [
        normalized(line.text)
        for line in lines
        if line.size >= 1.15 * body
        and 0 < len(line.text.split()) <= 15
        and normalized(line.text) not in furniture.get(line.page, [])
    ]


# --- OCR ----------------------------------------------------------------------------------


def word_recall(reference_text: str, read_text: str) -> tuple[int, int]:
    """(words of the reference found in the text read, words of the reference), counting
    repeats."""
    reference, read = Counter(words(reference_text)), Counter(words(read_text))
    return sum(min(count, read[word]) for word, count in reference.items()), sum(reference.values())


# --- Exports ------------------------------------------------------------------------------


def export_pages(markdown: str) -> dict[int, str]:
    """A Markdown export made with page markers, page by page (the echo engine's marker
    taken out)."""
    parts = PAGE_MARKER.split(ECHO_MARKER.sub("", markdown))
    return {int(number): text for number, text in zip(parts[1::2], parts[2::2], strict=True)}


def without_echo_marker(text: str) -> str:
    return ECHO_MARKER.sub("", text)


# --- Poppler readers ----------------------------------------------------------------------


# A crop far wider than any page: pdftotext keeps what is set past the page's right edge
# (a listing's long line), which it drops without one.
WHOLE_PAGE = ["-x", "0", "-y", "0", "-W", "10000", "-H", "10000"]


def pdftotext_pages(pdf: Path, first: int, last: int) -> list[str]:
    """The text of each page first..last in poppler's reading order, with what is set past
    the page's right edge."""
    text = subprocess.run(
        ["pdftotext", *WHOLE_PAGE, "-f", str(first), "-l", str(last), "-enc", "UTF-8", str(pdf), "-"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="replace")
    return text.split("\f")[: last - first + 1]


def pdftohtml_read(pdf: Path, first: int, last: int) -> tuple[list[SourceLine], list[tuple[int, str]]]:
    """(the lines of pages first..last with their position, size and font, the whole
    PDF's outline as (page, title)) from `pdftohtml -xml`."""
    xml = subprocess.run(
        ["pdftohtml", "-xml", "-i", "-stdout", "-q", "-f", str(first), "-l", str(last), str(pdf)],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="replace")
    # Poppler's own output for a local PDF: no entities or external references to fear.
    root = ElementTree.fromstring(xml.encode("utf-8"))  # noqa: S314
    return pdftohtml_lines(root), pdftohtml_outline(root)


def pdftohtml_lines(root: ElementTree.Element) -> list[SourceLine]:
    """The text runs of each page grouped into lines: a run that shares most of its height
    with the line so far is on it (a run in another font, a URL in a monospace font inside
    prose or a footnote's mark, sits a little higher or lower). Its runs are read
    left to right, a space between two where either has one at its edge or the gap is 3% of
    the line's font size, as pdftotext spaces words (`bzip2` then `,` is `bzip2,`)."""
    fonts: dict[str, tuple[float, bool]] = {}
    lines: list[SourceLine] = []
    for page in root.iter("page"):
        for spec in page.iter("fontspec"):
            fonts[spec.get("id", "")] = (float(spec.get("size", "0")), bool(MONOSPACE.search(spec.get("family", ""))))
        height = float(page.get("height", "1")) or 1.0
        runs = sorted(
            (
                _Run(
                    top=float(text.get("top", "0")),
                    bottom=float(text.get("top", "0")) + float(text.get("height", "0")),
                    left=float(text.get("left", "0")),
                    right=float(text.get("left", "0")) + float(text.get("width", "0")),
                    text="".join(text.itertext()),
                    size=fonts.get(text.get("font", ""), (0.0, False))[0],
                    mono=fonts.get(text.get("font", ""), (0.0, False))[1],
                )
                for text in page.iter("text")
            ),
            key=lambda run: (run.top + run.bottom) / 2,
        )
        groups: list[list[_Run]] = []
        for run in runs:
            if groups and _on_line(run, groups[-1]):
                groups[-1].append(run)
            else:
                groups.append([run])
        for group in groups:
            inked = sorted((run for run in group if run.text.strip()), key=lambda run: run.left)
            if not inked:
                continue
            text = inked[0].text.strip()
            for before, run in itertools.pairwise(inked):
                spaced = before.text[-1].isspace() or run.text[0].isspace()
                text += (" " if spaced or run.left - before.right >= 0.03 * inked[0].size else "") + run.text.strip()
            lines.append(
                SourceLine(
                    page=int(page.get("number", "0")),
                    top=min(run.top for run in group) / height,
                    text=text,
                    size=max(run.size for run in inked),
                    mono=all(run.mono for run in inked),
                )
            )
    return lines


@dataclass(frozen=True)
class _Run:
    top: float
    bottom: float
    left: float
    right: float
    text: str
    size: float
    mono: bool


def _on_line(run: _Run, line: list[_Run]) -> bool:
    """Whether the run shares at least 40% of its height (or the line's, if smaller) with
    the line: a line's next line, closer than its own height, shares far less."""
    top, bottom = min(other.top for other in line), max(other.bottom for other in line)
    shared = min(bottom, run.bottom) - max(top, run.top)
    return shared >= 0.4 * min(run.bottom - run.top, bottom - top)


def pdftohtml_outline(root: ElementTree.Element) -> list[tuple[int, str]]:
    return [(int(item.get("page", "0")), normalized("".join(item.itertext()))) for item in root.iter("item")]
