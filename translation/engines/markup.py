"""A page's Markdown, split into the prose an engine translates and the literal text it
must keep: code blocks, inline code, URLs, e-mail addresses, options, file paths and
identifiers (docs/book-structure.md, "Code and literal text").

- `segments_split` reads a page's Markdown (as the book-structure layer writes it: blocks
  a blank line apart, fenced code, `#` headings, `- ` list items, pipe tables) into a
  template and the prose texts in it, with every literal replaced by a placeholder
  (`⟦n⟧`, which machine translation passes through) and Markdown's escapes read as their
  characters; `segments_join` puts translated prose back, escaped again, with every
  literal as it was. The local engine translates only the prose this way.
- `literals_restored` is the check for an engine that translates the Markdown whole (an
  LLM told to keep code verbatim): the source's code blocks are put back over the
  reply's, in order, and a literal the reply lost is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bookstructure.words import WordList
from core.markdown import block_start_escape, markdown_escape, markdown_unescape
from translation.engines.base import PageInput
from translation.languages import language_detect

# A page's own language wins over the book's when its prose has this many letters.
CONFIDENT_LETTERS = 150
PLACEHOLDER = "\u27e6{}\u27e7"
_PLACEHOLDER = re.compile("\u27e6(\\d+)\u27e7")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_HEADING = re.compile(r"^(#{1,6} +)(.*)$")
_LIST_ITEM = re.compile(r"^(\s*(?:[-+*]|\d+[.)]) +)(.*)$")
_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# Markdown footnotes (the structure layer's notes): a reference `[^4]` is kept as it is in
# the prose, a definition `[^4]: ...` keeps its label and has its text translated.
_FOOTNOTE_REFERENCE = re.compile(r"(?<!\\)\[\^[^\]\s]+\](?!:)")
_FOOTNOTE_DEFINITION = re.compile(r"^(\[\^[^\]\s]+\]:[ \t]*)(.*)$")
_KEPT_IN_PROSE = re.compile(f"{_CODE_SPAN.pattern}|{_FOOTNOTE_REFERENCE.pattern}")
_GLUED = re.compile(r"[^\s`]*[^\s`.,;:!?)\]'\"\u2019\u201d]")
# Literal text in prose, never translated: URLs, e-mail addresses, command-line options,
# file paths, file names, identifiers (snake_case, CamelCase with a capital inside, calls,
# C++/Rust paths, names with digits such as BZ2).
_LITERAL = re.compile(
    r"(?:https?|ftp)://[^\s<>()]+[^\s<>().,;:!?'\"]"
    r"|www\.[^\s<>()]+[^\s<>().,;:!?'\"]"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|(?<![\w/-])--?[A-Za-z][\w-]*(?:=[^\s,;)]+)?"
    r"|(?<![\w/])(?:~|\.{1,2})?(?:/[\w.+-]+)+/?"
    r"|\b[\w-]+\.(?:c|h|cc|cpp|hpp|py|rs|go|js|ts|java|sh|txt|md|xml|json|ya?ml|toml|conf|cfg|ini|html?|css"
    r"|pdf|gz|bz2|xz|zip|tar|so|o|a|dll|exe|deb|rpm|log|el|pl|rb|in|ac|am)\b"
    r"|\b\w+(?:::\w+)+\b"
    r"|\b\w+\(\)"
    r"|\b[A-Za-z]\w*_\w*\b"
    r"|\b[a-z]+[A-Z]\w*\b"
    r"|\b[A-Z][a-z]+[A-Z]\w*\b"
    r"|\b[A-Z]+\d\w*\b"
    r"|(?<![\w.-])[A-Za-z][\w.+-]*\(\d[a-z]*\)"  # a manual page: apt-get(8), sources.list(5)
)
# A name the page's code uses: a command (a code line's first word, after a shell's prompt,
# or an inline code span's), or a word of its code with a sign inside (`apt-get`, `foo_1.0`).
_PROMPT = re.compile(r"^\s*[$#%]\s+")
_NAME_EDGES = "\"'`()[]{}<>,;:!?.*"
FAMILY_CHARS = 4  # a hyphenated name's first part this short names a family of commands
_SIGNED_NAME = re.compile(r"^[A-Za-z][\w]*(?:[-_.+/][\w]+)+$|^[A-Za-z]+\d[\w]*$")


@dataclass
class Segments:
    """A page's Markdown as a template: `parts` are literal Markdown or, for an int, the
    index of a prose text in `texts`; `literals` are what the placeholders stand for."""

    parts: list[str | int]
    texts: list[str]
    literals: list[str]


def segments_split(markdown: str, *, words: WordList | None = None) -> Segments:
    """The prose of a page's Markdown, each text with its literals replaced by placeholders.
    With the word list of the page's language, the names its code uses (`code_names`) are
    literals in its prose too: `apt-get` and `dpkg` set in a sentence as in its listings."""
    segments = Segments(parts=[], texts=[], literals=[])
    names = code_names(markdown, words) if words is not None else frozenset()
    literal = _LITERAL
    if names:
        alternatives = [re.escape(name) for name in sorted(names, key=len, reverse=True)]
        alternatives += [f"{re.escape(family)}-[\\w-]*\\w" for family in _families(names)]
        literal = re.compile(rf"{_LITERAL.pattern}|(?<![\w.+/-])(?:{'|'.join(alternatives)})(?![\w+/-]|\.\w)")
    fence: str | None = None
    for line in markdown.split("\n"):
        if fence is not None:
            segments.parts.append(line + "\n")
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        opening = _FENCE.match(line.strip())
        if opening:
            fence = opening.group(1)
            segments.parts.append(line + "\n")
        elif not line.strip() or _TABLE_DELIMITER.match(line.strip()):
            segments.parts.append(line + "\n")
        elif line.lstrip().startswith("|"):
            _table_row_split(line, segments, literal)
        else:
            match = _HEADING.match(line) or _LIST_ITEM.match(line) or _FOOTNOTE_DEFINITION.match(line)
            prefix, prose = (match.group(1), match.group(2)) if match else ("", line)
            segments.parts.append(prefix)
            _prose_add(prose, segments, literal)
            segments.parts.append("\n")
    if segments.parts and segments.parts[-1] == "\n" and not markdown.endswith("\n"):
        segments.parts.pop()
    elif segments.parts and isinstance(segments.parts[-1], str) and not markdown.endswith("\n"):
        segments.parts[-1] = str(segments.parts[-1]).removesuffix("\n")
    return segments


def _table_row_split(line: str, segments: Segments, literal: re.Pattern[str]) -> None:
    cells = re.split(r"(?<!\\)\|", line.strip())
    segments.parts.append("|")
    for cell in cells[1:-1] if line.strip().endswith("|") else cells[1:]:
        segments.parts.append(" ")
        _prose_add(cell.strip(), segments, literal)
        segments.parts.append(" |")
    segments.parts.append("\n")


def _prose_add(markdown: str, segments: Segments, literal: re.Pattern[str]) -> None:
    """One prose text: code spans kept whole, its escapes read, its literals protected."""
    if not markdown.strip():
        segments.parts.append(markdown)
        return
    pieces: list[str] = []
    position = 0
    for span in _KEPT_IN_PROSE.finditer(markdown):
        pieces.append(_literals_protect(markdown_unescape(markdown[position : span.start()]), segments, literal))
        # What goes on from a code span with no space between is its literal too: a URL or a
        # path broken at a line's end whose rest the line after did not set as code.
        glued = _GLUED.match(markdown, span.end()) if span.group(0).startswith("`") else None
        end = glued.end() if glued else span.end()
        pieces.append(_placeholder(markdown[span.start() : end], segments))
        position = end
    pieces.append(_literals_protect(markdown_unescape(markdown[position:]), segments, literal))
    segments.parts.append(len(segments.texts))
    segments.texts.append("".join(pieces))


def _literals_protect(prose: str, segments: Segments, literal: re.Pattern[str]) -> str:
    return literal.sub(lambda match: _placeholder(markdown_escape(match.group(0)), segments), prose)


def _families(names: frozenset[str]) -> list[str]:
    """The families of the page's hyphenated names: a name's first part of at most
    FAMILY_CHARS letters (`apt` of `apt-cache`, `dpkg` of `dpkg-deb`), so `apt-get` named in
    a sentence is kept on a page whose code uses `apt-cache`."""
    families = {name.split("-", 1)[0] for name in names if "-" in name}
    return sorted(family for family in families if family.isalpha() and len(family) <= FAMILY_CHARS)


def code_names(markdown: str, words: WordList) -> frozenset[str]:
    """The names a page's code uses, which its prose mentions as they are: each command (a
    fenced code line's first word, after a shell's prompt, and an inline code span's
    first word) that is no word of the language (`dpkg`, `debuild`; not `make`), and each
    word of its code with a sign inside (`apt-get`, `dpkg-deb`, `libc6`)."""
    names: set[str] = set()
    codes = [line for block in code_blocks(markdown) for line in block.split("\n")[1:-1]]
    codes += [span.group(2) for block, part in _parts(markdown) if not block for span in _CODE_SPAN.finditer(part)]
    for code in codes:
        tokens = [token.strip(_NAME_EDGES) for token in _PROMPT.sub("", code).split()]
        for position, token in enumerate(tokens):
            if len(token) < 2 or not token[0].isalpha():
                continue
            if _SIGNED_NAME.match(token) or (position == 0 and token.isalpha() and token.lower() not in words):
                names.add(token)
    return frozenset(names)


def _placeholder(literal: str, segments: Segments) -> str:
    segments.literals.append(literal)
    return PLACEHOLDER.format(len(segments.literals) - 1)


def segments_join(segments: Segments, translated: list[str]) -> str:
    """The page's Markdown with its prose replaced by `translated` (one per text, in
    order), escaped again, each placeholder back to its literal (a literal the
    translation lost is appended to its text, so none is ever dropped)."""
    if len(translated) != len(segments.texts):
        raise ValueError(f"{len(translated)} translations for {len(segments.texts)} texts")
    out: list[str] = []
    for part in segments.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        text = translated[part].strip()
        wanted = [int(number) for number in _PLACEHOLDER.findall(segments.texts[part])]
        found = {int(number) for number in _PLACEHOLDER.findall(text)}
        text += "".join(f" {PLACEHOLDER.format(number)}" for number in wanted if number not in found)
        pieces = _PLACEHOLDER.split(text)
        rebuilt = "".join(
            segments.literals[int(piece)] if index % 2 else markdown_escape(piece) for index, piece in enumerate(pieces)
        )
        at_block_start = not out or out[-1].endswith("\n") or out[-1] == ""
        out.append(block_start_escape(rebuilt) if at_block_start else rebuilt)
    return "".join(out)


def code_blocks(markdown: str) -> list[str]:
    """The fenced code blocks of a Markdown text, each whole (fences included), in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    fence = ""
    for line in markdown.split("\n"):
        if current is not None:
            current.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                blocks.append("\n".join(current))
                current = None
            continue
        opening = _FENCE.match(line.strip())
        if opening:
            fence, current = opening.group(1), [line]
    return blocks


def literals_restored(source: str, translation: str) -> tuple[str, list[str]]:
    """The translation with the source's code put back over its own, in order: its code
    blocks, and its inline code spans when the reply has as many (a model may touch a
    comment, an indent or an identifier); and the source's code blocks and inline code
    the reply lost (empty: every literal is there)."""
    source_blocks, translated_blocks = code_blocks(source), code_blocks(translation)
    lost: list[str] = []
    if len(source_blocks) == len(translated_blocks):
        for original, translated in zip(source_blocks, translated_blocks, strict=True):
            translation = translation.replace(translated, original, 1)
    else:
        lost.extend(block for block in source_blocks if block not in translation)
    spans = [match.group(0) for block, part in _parts(source) if not block for match in _CODE_SPAN.finditer(part)]
    parts = _parts(translation)
    if len(spans) == sum(len(_CODE_SPAN.findall(part)) for block, part in parts if not block):
        kept = iter(spans)
        translation = "".join(part if block else _CODE_SPAN.sub(lambda _: next(kept), part) for block, part in parts)
    lost.extend(span for span in spans if span not in translation)
    return translation, lost


def _parts(markdown: str) -> list[tuple[bool, str]]:
    """The text cut into (is a fenced code block, text) parts, in order."""
    parts: list[tuple[bool, str]] = []
    position = 0
    for block in code_blocks(markdown):
        at = markdown.find(block, position)
        parts.extend(((False, markdown[position:at]), (True, block)))
        position = at + len(block)
    parts.append((False, markdown[position:]))
    return parts


def prose_of(markdown: str) -> str:
    """The prose of a page's Markdown: what is translated, without code or literals."""
    return " ".join(_PLACEHOLDER.sub(" ", text) for text in segments_split(markdown).texts)


def page_language(page: PageInput, text: str) -> str | None:
    """The language a page is translated from: its source language when set; else the one
    its prose (`text`, code and literals aside on a structured page) is detected in when
    it has enough of it (CONFIDENT_LETTERS), else the book's. So a short page, a page of
    code, a contents or an index page is read in the book's language, and a long page in
    another language is translated from its own."""
    if page.source_language:
        return page.source_language
    prose = prose_of(text) if page.structured else text
    detected = language_detect(prose)
    letters = sum(character.isalpha() for character in prose)
    if detected is not None and (letters >= CONFIDENT_LETTERS or page.book_language is None):
        return detected
    return page.book_language or detected
