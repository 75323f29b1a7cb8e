"""Words: the language's word list and the book's own vocabulary, for rejoining hyphenations.

A word hyphenated at a line end ("Pen-" / "tium") is rejoined, a real compound
("well-" / "known") keeps its hyphen. `hyphenation_resolve` decides, in this order:

1. A literal keeps its hyphen: a command-line option or identifier ("--gen-" /
   "suppressions", "x86-" / "64"), a word already holding a hyphen ("day-to-" / "day"),
   a part that is not letters, or a second part that starts with a capital ("Anglo-" /
   "Saxon").
2. The book's own vocabulary (its words and hyphenated compounds seen inside lines, never
   across a line end): a compound the book writes with its hyphen, and never without,
   keeps it ("well-known" seen, "wellknown" not); a word the book writes whole is joined.
3. The language's word list: a known whole word is joined ("digital" from "Dig-" / "ital").
4. Two known words whose join is unknown form a compound and keep the hyphen ("non-" /
   "existing").
5. Anything else was hyphenated by the typesetter and is joined ("Pen-" / "tium" when the
   word list lacks "Pentium").

The word list is pyspellchecker's frequency dictionary of the language (English, Spanish,
French, Portuguese, German, Italian, Russian, Arabic, Latvian, Basque, Dutch, Persian):
a pip dependency pinned in requirements/base.txt, pure Python, maintained, with the same
interface for every language it ships. A language it lacks gets an empty word list, and
rules 1, 2 and 5 still apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from spellchecker import SpellChecker

_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LEADING_LETTERS = re.compile(r"^[^\W\d_]+")
_LITERAL_WORD_END = re.compile(r"[/?.:=`\"'<]([^\W\d_]+)$")

# The languages pyspellchecker ships a dictionary for (ISO 639-1).
WORD_LIST_LANGUAGES = frozenset({"en", "es", "fr", "pt", "de", "it", "ru", "ar", "lv", "eu", "nl", "fa"})


class WordList(Protocol):
    def __contains__(self, word: str, /) -> bool: ...


@dataclass(frozen=True)
class Vocabulary:
    """The book's own words (lowercased), as they occur inside its lines."""

    words: frozenset[str]
    compounds: frozenset[str]


def vocabulary_collect(lines: Iterable[str]) -> Vocabulary:
    """The words and hyphenated compounds of these lines, leaving out each line's last
    word when it ends in a hyphen (that one is split across the line end)."""
    words: set[str] = set()
    compounds: set[str] = set()
    for line in lines:
        tokens = line.split()
        if tokens and tokens[-1].endswith(("-", "\u00ad", "\u2010")):
            tokens = tokens[:-1]
        for token in tokens:
            for match in _WORD.finditer(token):
                word = match.group().lower()
                (compounds if "-" in word else words).add(word)
    return Vocabulary(words=frozenset(words), compounds=frozenset(compounds))


@cache
def word_list(language: str) -> WordList:
    """The word list of a language (ISO 639-1 code); empty for a language without one."""
    code = language.split("-")[0].lower()
    if code not in WORD_LIST_LANGUAGES:
        return frozenset()
    return SpellChecker(language=code, case_sensitive=False)


def hyphenation_resolve(head: str, tail: str, *, vocabulary: Vocabulary, words: WordList) -> bool:
    """Whether the hyphen ending `head` (the last word of a line, with its hyphen) is kept
    before `tail` (the first word of the next line); False: it is a typesetter's hyphen
    and the two parts are one word."""
    if head.endswith("\u00ad"):
        return False
    core = head.rstrip("-\u2010").lstrip("(\"'\u201c\u2018[")
    inside = _LITERAL_WORD_END.search(core)
    if inside is not None:
        # The last word of a path, a quoted string or a keyword: "/usr/lo-" + "cal/src/",
        # '"?CUR-' + 'RENT"' are words like any other.
        core = inside.group(1)
    tail_letters = _LEADING_LETTERS.match(tail)
    if not core.isalpha() or tail_letters is None or (tail[0].isupper() and not core.isupper()):
        return True
    first, second = core.lower(), tail_letters.group().lower()
    joined, compound = first + second, f"{first}-{second}"
    if compound in vocabulary.compounds and joined not in vocabulary.words:
        return True
    if joined in vocabulary.words or joined in words:
        return False
    return first in words and second in words and len(first) > 1 and len(second) > 1
