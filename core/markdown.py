"""Writing Markdown text that reads back as itself (CommonMark): what the book-structure
layer writes for a page's body and what an engine writes back after translating its prose.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_BLOCK_START = re.compile(r"(#|[-+=>]|\d+[.)](\s|$))")


def markdown_escape(text: str) -> str:
    """Prose as Markdown text that reads back as itself: the characters Markdown gives a
    meaning inside a line escaped (the start of a block is `block_start_escape`'s)."""
    return _SPECIAL.sub(r"\\\1", text)


def markdown_unescape(text: str) -> str:
    """The prose of Markdown text: each backslash escape read as its character."""
    return _ESCAPED.sub(r"\1", text)


def block_start_escape(text: str) -> str:
    """Prose whose start Markdown would read as a block's syntax (a heading's `#`, a list's
    `-`, `+` or `1.`, a quote's `>`, a setext underline's `=`) with that start escaped."""
    if not _BLOCK_START.match(text):
        return text
    digits = re.match(r"\d+", text)
    end = digits.end() if digits else 0
    return text[:end] + "\\" + text[end:]


def code_span(text: str) -> str:
    """`text` as an inline code span: a fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"
