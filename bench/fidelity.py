"""The measures of bench_fidelity: how faithfully an export renders the source book.

Pure functions over text, so tests can check each on small hand-made inputs
(tests/exports/test_fidelity_metrics.py); the poppler readers at the end turn a PDF into
their inputs. The source is always what poppler reads from the PDF (pdftotext for the
words in reading order, `pdftohtml -xml` for positions, fonts, sizes and the outline).
"""

from __future__ import annotations

import bisect
import itertools
import re
import subprocess
import unicodedata
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
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
BOLD = re.compile(r"bold|black|heavy|medi|semibold|demi|cmbx|bx\d", re.IGNORECASE)
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
    bold: bool = False
    column: int = 0  # on a page in columns, 1.. from the left; 0 for a line across them or a page in one


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
    hyphenated at a line end itself; its -layout mode, which normalize reads, does not); a
    page in columns column by column, after the lines across them (title, abstract)."""
    return "\n".join(line.text for line in sorted(lines, key=lambda line: (line.page, line.column, line.top)))


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
    spans' backticks gone, the echo engine's marker taken out), less the book's title (its
    first `# ` line)."""
    found = [
        markdown_unescape(ECHO_MARKER.sub("", match.group(2)).replace("`", ""))
        for match in MARKDOWN_HEADING.finditer(markdown)
    ]
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


def words_kept(source_text: str, export_text: str, *, excluded_text: str = "") -> tuple[int, int]:
    """(words of the export, words of the source less those of `excluded_text`, the running
    headers and footers): their ratio is the words kept, 1.0 when the export has as many
    words as the book (goal 0.9-1.1: a translation is a little longer or shorter)."""
    source = Counter(words(source_text)) - Counter(words(excluded_text))
    return len(words(export_text)), sum(source.values())


CAPTION = re.compile(r"^(?:fig(?:ure)?|table|tab|listing|algorithm)\.?\s*[\dIVX]", re.IGNORECASE)


def heading_lines(lines: Sequence[SourceLine], *, furniture: Mapping[int, list[str]]) -> list[str]:
    """Headings by type, for a paper without an outline: lines of up to 12 words set
    wholly in bold, or at least 15% larger than the paper's prose (the size most of its
    lines of six words or more are set in, lines in a monospace font aside), starting with
    a capital or a section number; not furniture, a caption (`Fig. 2`, `Table 1`), a
    contents line or a date (ending with a number after a space), an author list (ending
    with a comma) or an address (an e-mail); not one of three lines or more in a row of four
    words or more (a bold abstract, a paragraph in a larger type); and not the title block: the first
    page's lines above its first line set in a column (above its abstract, on a first page
    read as one column). A paper's title, authors and affiliations are its front matter."""
    prose = body_size([line for line in lines if not line.mono and len(line.text.split()) >= 6])
    pages = {line.page for line in lines}
    first = min(pages, default=0)
    opening = [line for line in lines if line.page == first]
    in_columns = [line.top for line in opening if line.column]
    abstract = [line.top for line in opening if re.match(r"(?i)\W*(abstract|summary)\b", line.text)]
    body_top = min(in_columns or abstract or [0.0])
    ordered = sorted(lines, key=lambda line: (line.page, line.column, line.top))
    marked = [(line.bold or line.size >= 1.15 * prose) and not line.mono for line in ordered]
    # A paragraph set in bold or large type: three lines or more in a row of four words or more.
    running = [mark and len(line.text.split()) >= 4 for mark, line in zip(marked, ordered, strict=True)]
    paragraph = [False] * len(ordered)
    start = 0
    for end in range(len(ordered) + 1):
        if end == len(ordered) or not running[end]:
            if end - start >= 3:
                paragraph[start:end] = [True] * (end - start)
            start = end + 1
    found = []
    for at, line in enumerate(ordered):
        text = normalized(line.text)
        in_a_paragraph = paragraph[at]
        if (
            marked[at]
            and not in_a_paragraph
            and 0 < len(text.split()) <= 12
            and (text[:1].isupper() or SECTION_NUMBER.match(text) is not None)
            and not CAPTION.match(text)
            and not re.search(r"\s\d+$|,$|@", text)
            and text not in furniture.get(line.page, [])
            and not (line.page == first and line.top < body_top)
        ):
            found.append(text)
    return found


# --- Reading order ------------------------------------------------------------------------

# What a token loses at its ends before it is compared: punctuation that sits against a
# word in running text (a sentence's full stop, brackets, quotes, emphasis marks).
EDGE_PUNCTUATION = "\"'()[]{}<>.,;:!?*\u2018\u2019\u201c\u201d\u00ab\u00bb\u2026\u2013\u2014"
IDENTIFIER_MARKS = re.compile(r"[_/\\=<>@#$%&+~|^]|::|->")
INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
SENTENCE_ENDS = (".", "!", "?", ":")


def invariant_tokens(text: str, *, joined: Iterable[str] = ()) -> list[str]:
    """The tokens of a text that translation leaves as they are, in their order: the text
    cut at white space, each piece's edge punctuation (EDGE_PUNCTUATION) taken off and the rest
    put in Unicode's NFKC form, kept when it is
    - a number or holds a digit (`2.1`, `1999`, `x86`, `3.4-1`);
    - an identifier: it holds one of `_ / \\ = < > @ # $ % & + ~ | ^`, `::` or `->`
      (`BZ_OK`, `/usr/bin`, `a->b`), a dot between two of its parts when one has two
      letters or more (`bzlib.h`, `www.debian.org`; not `e.g`), starts with a hyphen
      (`--leak-check`) or has a capital inside (`LaTeX`, `BibTeX`);
    - an acronym: two to five capitals (`IEEE`, `ASME`, `PDF`);
    - a name: a capitalised word (a capital, then lowercase letters) that does not start a
      sentence: the text's first word, the word after one ending in `.`, `!`, `?` or `:`
      and the first word after a blank line (a heading, an item) are not names.
    Case is kept: a name is compared as it is written. A line's last piece and the next
    line's first are one token where that token is one of `joined` (the export's tokens)
    and either piece alone is not: a URL or a path broken at a line end (`https://www.` /
    `debian.org/doc/`), which the export rightly holds whole, is one token."""
    whole = set(joined)
    found: list[str] = []
    sentence_start = True
    lines = [line.split() for line in text.splitlines()]
    for number, pieces in enumerate(lines):
        if not pieces:
            sentence_start = True
            continue
        following = lines[number + 1] if number + 1 < len(lines) else []
        if following and whole:
            together = _token(pieces[-1] + following[0])
            if together in whole and not (_token(pieces[-1]) in whole and _token(following[0]) in whole):
                pieces = [*pieces[:-1], pieces[-1] + following[0]]
                lines[number + 1] = following[1:]
        for piece in pieces:
            token = _token(piece)
            if token and _invariant(token, sentence_start=sentence_start):
                found.append(token)
            if piece.strip(")]}\"'\u2019\u201d*"):
                sentence_start = piece.rstrip(")]}\"'\u2019\u201d*").endswith(SENTENCE_ENDS)
    return found


def _token(piece: str) -> str:
    return unicodedata.normalize("NFKC", piece.strip(EDGE_PUNCTUATION))


def _invariant(token: str, *, sentence_start: bool) -> bool:
    if any(character.isdigit() for character in token) or IDENTIFIER_MARKS.search(token):
        return True
    if "." in token.strip(".") and any(len(part) >= 2 for part in token.split(".")):
        return True
    if token.startswith("-") and token.lstrip("-")[:1].isalpha():
        return True
    if INNER_CAPITAL.search(token):
        return True
    letters = token.replace("-", "")
    if letters.isalpha() and letters.isupper() and 2 <= len(letters) <= 5:
        return True
    return not sentence_start and letters.isalpha() and token[0].isupper() and token[1:].islower()


def common_subsequence_length(first: Sequence[str], second: Sequence[str]) -> int:
    """The length of a longest common subsequence of two token sequences (Hunt and
    Szymanski: each token of `first` against its places in `second`, a longest increasing
    run of those places; fast when tokens repeat little, as these do)."""
    places: dict[str, list[int]] = {}
    for index, token in enumerate(second):
        places.setdefault(token, []).append(index)
    ends: list[int] = []  # ends[k]: the smallest place in `second` a common run of k+1 tokens ends at
    for token in first:
        for place in reversed(places.get(token, ())):
            at = bisect.bisect_left(ends, place)
            if at == len(ends):
                ends.append(place)
            else:
                ends[at] = place
    return len(ends)


def source_invariant_tokens(
    source_pages: Mapping[int, str], furniture: Mapping[int, list[str]], *, export_text: str = ""
) -> list[str]:
    """The invariant tokens of the source, page after page in pdftotext's reading order,
    each page's running header and footer lines (`furniture_lines`) taken out: where a
    furniture line's tokens stand together on the page, nearest the page's start or end
    (else each of its tokens, nearest the page's start or end: pdftotext may set a header's
    page number apart from its title). With the export's text: a token broken at a line end
    is read whole where the export has it whole, and a token pdftotext joined across a
    line-end hyphen (`Debian-` / `based` read `Debianbased`) is read as the export writes
    it where the export has it with its hyphen (`Debian-based`)."""
    exported = _tokens(export_text)
    hyphenated = {token.replace("-", ""): token for token in exported if "-" in token.strip("-")}
    present = set(exported)
    tokens: list[str] = []
    for page in sorted(source_pages):
        own = invariant_tokens(without_cells(source_pages[page]), joined=present)
        for line in furniture.get(page, []):
            own = _run_removed(own, invariant_tokens(line))
        tokens += [token if token in present else hyphenated.get(token, token) for token in own]
    return tokens


def without_cells(text: str) -> str:
    """pdftotext's text less its blocks of cells: a block (lines between blank lines) of two
    lines or more, each of at most three pieces, is a table's column or an equation's
    pieces, which pdftotext reads cell by cell, a column after the other, where a reader
    (and a faithful export) reads a table by its rows. Its order is no reading order
    (the words and the tables are measured elsewhere)."""
    blocks = re.split(r"(\n\s*\n)", text)
    return "".join(
        "\n" * block.count("\n")
        if len(lines := [line for line in block.splitlines() if line.strip()]) >= 2
        and all(len(line.split()) <= 3 for line in lines)
        else block
        for block in blocks
    )


def _run_removed(tokens: list[str], run: list[str]) -> list[str]:
    if not run:
        return tokens
    starts = [at for at in range(len(tokens) - len(run) + 1) if tokens[at : at + len(run)] == run]
    if starts:
        at = min(starts, key=lambda start: min(start, len(tokens) - start - len(run)))
        return tokens[:at] + tokens[at + len(run) :]
    kept = list(tokens)
    for token in run:
        places = [at for at, other in enumerate(kept) if other == token]
        if places:
            del kept[min(places, key=lambda at: min(at, len(kept) - 1 - at))]
    return kept


def reading_order(source_tokens: Sequence[str], export_text: str) -> tuple[int, int]:
    """(the source's invariant tokens that the export holds in the source's order, the
    source's invariant tokens): a longest common subsequence of the source's tokens and the
    export's (every token of the export that could be one of them, wherever it stands), so
    1.0 of the source's is every token there and in order. A column read after the one it
    follows, or a footnote spliced in elsewhere, leaves the shorter of the two runs out;
    a token lost or changed is out; what the export adds costs nothing (furniture_leaks
    counts that)."""
    wanted = set(source_tokens)
    exported = [token for token in _tokens(export_text) if token in wanted]
    return common_subsequence_length(source_tokens, exported), len(source_tokens)


def _tokens(text: str) -> list[str]:
    return [unicodedata.normalize("NFKC", piece.strip(EDGE_PUNCTUATION)) for piece in text.split()]


# --- Section numbers ----------------------------------------------------------------------

# A heading's leading section number: `2`, `2.1`, `A.1` (a letter only with a number after
# it), or a Roman numeral with its full stop (`IV.`); its own full stop is no part of it.
SECTION_NUMBER = re.compile(
    r"^(?P<number>(?:\d{1,2}|[A-Z])(?:\.\d{1,2})+|\d{1,2}|[IVX]{1,5}(?=\.))\.?\s+(?P<title>\S.*)$"
)


def numbered_headings(
    lines: Sequence[SourceLine], outline: Iterable[tuple[int, str]], *, furniture: Mapping[int, list[str]]
) -> list[tuple[str, str]]:
    """The source's headings that start with a section number, as (number, title).

    From the outline's entries (page, title) when there are any: an entry whose title
    starts with a number, or whose page has a line that is a number and the entry's title
    (or, else, starts with them: a heading run into its paragraph). Without an outline, from
    the lines: a line of up to 15 words set wholly in bold or at least 15% larger than its
    page's prose (lines in a monospace font aside), not furniture, that is a number and a title
    starting with a capital, not ending with a number after a space (a contents line,
    `5 Document Structure 3`, or a date); a Roman numeral only before a title in capitals
    (`II. MATH AND EQUATIONS`: an author's initial, `V. G. Mitts`, is none)."""
    entries = list(outline)
    found: list[tuple[str, str]] = []
    if entries:
        for page, title in entries:
            numbered = SECTION_NUMBER.match(title)
            if numbered:
                found.append((numbered["number"], numbered["title"]))
                continue
            key = _heading_key(title)
            candidates = [
                (match["number"], _heading_key(match["title"]))
                for match in (SECTION_NUMBER.match(normalized(line.text)) for line in lines if line.page == page)
                if match
            ]
            exact = [number for number, got in candidates if key and got == key]
            run_in = [number for number, got in candidates if key and got.startswith(key)]
            if exact or run_in:
                found.append(((exact or run_in)[0], title))
        return found
    prose = {
        page: body_size([line for line in lines if line.page == page and not line.mono])
        for page in {line.page for line in lines}
    }
    for line in lines:
        text = normalized(line.text)
        match = SECTION_NUMBER.match(text)
        if (
            match
            and (line.bold or line.size >= 1.15 * prose[line.page])
            and len(text.split()) <= 15
            and match["title"][:1].isupper()
            and not re.search(r"\s\d+$", text)
            and (match["number"][0].isdigit() or "." in match["number"] or match["title"].isupper())
            and text not in furniture.get(line.page, [])
        ):
            found.append((match["number"], match["title"]))
    return found


def _titles_match(key: str, got: str) -> bool:
    return key == got or key in got or got in key


def section_numbers_kept(source_headings: Iterable[tuple[str, str]], export_headings: Iterable[str]) -> tuple[int, int]:
    """(numbered source headings whose number and title are one heading of the export,
    numbered source headings): `## 2 Template Overview` keeps "2" with "Template Overview";
    a heading `## Template Overview` after a paragraph `2` does not. The number is compared
    as it is (its full stop aside), the title as headings_found compares titles."""
    present = []
    for text in export_headings:
        match = SECTION_NUMBER.match(normalized(text))
        if match:
            present.append((match["number"], _heading_key(match["title"])))
    wanted = [(number, _heading_key(title)) for number, title in source_headings]
    kept = sum(
        1
        for number, key in wanted
        if key
        and any(number == got_number and (key == got or key in got or got in key) for got_number, got in present if got)
    )
    return kept, len(wanted)


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
    prose or a footnote's mark, sits a little higher or lower), unless a column's gutter
    lies between them (`page_gutters`: on a page in columns, the left column's line and the
    right one's beside it are two lines). Its runs are read left to right, a space between
    two where either has one at its edge or the gap is 3% of the line's font size, as
    pdftotext spaces words (`bzip2` then `,` is `bzip2,`)."""
    fonts: dict[str, tuple[float, bool, bool]] = {}
    lines: list[SourceLine] = []
    for page in root.iter("page"):
        for spec in page.iter("fontspec"):
            family = spec.get("family", "")
            fonts[spec.get("id", "")] = (
                float(spec.get("size", "0")),
                bool(MONOSPACE.search(family)),
                bool(BOLD.search(family)),
            )
        height = float(page.get("height", "1")) or 1.0
        runs = sorted(
            (
                _Run(
                    top=float(text.get("top", "0")),
                    bottom=float(text.get("top", "0")) + float(text.get("height", "0")),
                    left=float(text.get("left", "0")),
                    right=float(text.get("left", "0")) + float(text.get("width", "0")),
                    text="".join(text.itertext()),
                    size=fonts.get(text.get("font", ""), (0.0, False, False))[0],
                    mono=fonts.get(text.get("font", ""), (0.0, False, False))[1],
                    bold=fonts.get(text.get("font", ""), (0.0, False, False))[2] or _bold_marked(text),
                )
                for text in page.iter("text")
            ),
            key=lambda run: (run.top + run.bottom) / 2,
        )
        gutters = page_gutters(
            [(run.left, run.right) for run in runs if run.text.strip()], float(page.get("width", "1")) or 1.0
        )
        groups: list[list[_Run]] = []
        for run in runs:
            # The line so far in the run's column (on a page in one column, the last line).
            line = next((group for group in reversed(groups) if not _gutter_between(run, group, gutters)), None)
            if line is not None and _on_line(run, line):
                line.append(run)
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
                    bold=all(run.bold for run in inked),
                    column=_column(inked[0].left, max(run.right for run in inked), gutters),
                )
            )
    return lines


def _bold_marked(text: ElementTree.Element) -> bool:
    """Whether pdftohtml marks the run's whole text bold (`<text><b>...</b></text>`): it
    knows a bold font that its family's name does not say (`CharisSIL`)."""
    marked = "".join("".join(child.itertext()) for child in text if child.tag == "b")
    return bool(marked.strip()) and marked.strip() == "".join(text.itertext()).strip()


def page_gutters(spans: Sequence[tuple[float, float]], width: float) -> list[float]:
    """The x of each gutter between a page's columns (none on a page in one column): an
    upright strip in the middle three fifths of the page, with text on both sides of it
    (each an eighth of the page's text at least, by the runs' widths), that runs cross
    less than a third as much (a title, an abstract or a wide table crosses it; a single
    column's lines almost all do), and with column-wide runs on both sides: an eighth of the
    text in runs as wide as 60% of the space from the text's edge to the strip (from strip
    to strip, on a page in three columns), so that a table's columns or a right-aligned tag
    (`[Function]`) beside prose are no columns. One gutter a strip, at its middle."""
    inked = [(left, right) for left, right in spans if right > left]
    if len(inked) < 20:
        return []
    total = sum(right - left for left, right in inked)
    steps = 120
    strips: list[list[tuple[float, float]]] = []  # (x, how much crosses it) along each strip
    previous = False
    for step in range(steps + 1):
        x = width * (0.2 + 0.6 * step / steps)
        left_of = sum(right - left for left, right in inked if right <= x)
        right_of = sum(right - left for left, right in inked if left >= x)
        across = total - left_of - right_of
        clear = min(left_of, right_of) >= total / 8 and across < min(left_of, right_of) / 2
        if clear and previous:
            strips[-1].append((x, across))
        elif clear:
            strips.append([(x, across)])
        previous = clear
    candidates = []
    for strip in strips:  # the middle of the part of the strip that the least crosses
        least = min(across for _, across in strip)
        clearest = [x for x, across in strip if across <= least + 0.001 * total]
        candidates.append((clearest[0] + clearest[-1]) / 2)
    while candidates:  # a strip with no column on one side of it (a contents list's page numbers) is none
        edges = [min(left for left, _ in inked), *candidates, max(right for _, right in inked)]
        failed = next(
            (
                gutter
                for index, gutter in enumerate(candidates)
                if not _column_side(
                    [(gutter - right, right - left) for left, right in inked if right <= gutter],
                    gutter - edges[index],
                    total,
                )
                or not _column_side(
                    [(left - gutter, right - left) for left, right in inked if left >= gutter],
                    edges[index + 2] - gutter,
                    total,
                )
            ),
            None,
        )
        if failed is None:
            break
        candidates.remove(failed)
    return candidates


def _column_side(runs: Sequence[tuple[float, float]], room: float, total: float) -> bool:
    """Whether the runs on one side of a gutter, as (distance from it, width), are a
    column's: an eighth of the page's text in runs as wide as 60% of the room (a column's
    lines), or a quarter of the runs ending within a tenth of the room from the gutter (a
    contents list's page numbers, set flush against it)."""
    wide = sum(width for _, width in runs if width >= 0.6 * room)
    flush = sum(1 for distance, _ in runs if distance <= 0.1 * room)
    return wide >= total / 8 or (bool(runs) and flush >= len(runs) / 4)


def _gutter_between(run: _Run, line: list[_Run], gutters: Sequence[float]) -> bool:
    """Whether a gutter parts the run from the line: one lies wholly left of it, the other
    wholly right."""
    left, right = min(other.left for other in line), max(other.right for other in line)
    return any((run.right <= gutter <= left) or (right <= gutter <= run.left) for gutter in gutters)


def _column(left: float, right: float, gutters: Sequence[float]) -> int:
    if not gutters or any(left < gutter < right for gutter in gutters):
        return 0
    return 1 + sum(1 for gutter in gutters if gutter <= left)


@dataclass(frozen=True)
class _Run:
    top: float
    bottom: float
    left: float
    right: float
    text: str
    size: float
    mono: bool
    bold: bool = False


def _on_line(run: _Run, line: list[_Run]) -> bool:
    """Whether the run shares at least 40% of its height (or the line's, if smaller) with
    the line: a line's next line, closer than its own height, shares far less."""
    top, bottom = min(other.top for other in line), max(other.bottom for other in line)
    shared = min(bottom, run.bottom) - max(top, run.top)
    return shared >= 0.4 * min(run.bottom - run.top, bottom - top)


def pdftohtml_outline(root: ElementTree.Element) -> list[tuple[int, str]]:
    return [(int(item.get("page", "0")), normalized("".join(item.itertext()))) for item in root.iter("item")]
