"""The Unicode Bidirectional Algorithm (UAX #9) for one paragraph of a PDF export, as the
layout in `_pdf_text` needs it: the paragraph's direction, the embedding level of every
character, and the visual order of a line's runs.

The rules for implicit text are implemented in full (W1-W7, N1-N2, I1-I2, L1-L2);
explicit embeddings, overrides and isolates (rare in translated Markdown) are treated as
neutral characters. Mirrored characters ("(" in right-to-left text) are left to HarfBuzz,
which mirrors them when it shapes a right-to-left run.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

_STRONG = {"L": "L", "R": "R", "AL": "R"}
_NEUTRAL = frozenset({"B", "S", "WS", "ON"})
_EXPLICIT = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def bidi_class(char: str) -> str:
    kind = unicodedata.bidirectional(char) or "L"  # unassigned code points: L
    if kind in _EXPLICIT:
        return "ON"
    return kind


def paragraph_level(text: str, *, default_rtl: bool) -> int:
    """Rules P2-P3: 1 when the first strong character is right-to-left, 0 when it is
    left-to-right, the default when there is none (a paragraph of digits in an Arabic
    book reads right-to-left)."""
    for char in text:
        strong = _STRONG.get(bidi_class(char))
        if strong is not None:
            return 1 if strong == "R" else 0
    return 1 if default_rtl else 0


def embedding_levels(text: str, base_level: int) -> list[int]:
    """The resolved level of each character (even: left-to-right, odd: right-to-left)."""
    if not text:
        return []
    types = [bidi_class(char) for char in text]
    embedding = "R" if base_level % 2 else "L"
    count = len(types)

    # W1: a combining mark (or a boundary neutral) takes the type of what it follows.
    previous = embedding
    for index, kind in enumerate(types):
        if kind in ("NSM", "BN"):
            types[index] = previous
        else:
            previous = types[index]
    # W2, W3: European numbers after Arabic letters are Arabic numbers; AL is R.
    last_strong = embedding
    for index, kind in enumerate(types):
        if kind in ("L", "R", "AL"):
            last_strong = kind
        elif kind == "EN" and last_strong == "AL":
            types[index] = "AN"
    types = ["R" if kind == "AL" else kind for kind in types]
    # W4: one separator between two numbers of a type joins them.
    for index in range(1, count - 1):
        before, kind, after = types[index - 1], types[index], types[index + 1]
        if kind == "ES" and before == after == "EN":
            types[index] = "EN"
        elif kind == "CS" and before == after and before in ("EN", "AN"):
            types[index] = before
    # W5: terminators next to European numbers are European numbers.
    index = 0
    while index < count:
        if types[index] != "ET":
            index += 1
            continue
        end = index
        while end < count and types[end] == "ET":
            end += 1
        if (index > 0 and types[index - 1] == "EN") or (end < count and types[end] == "EN"):
            types[index:end] = ["EN"] * (end - index)
        index = end
    # W6: remaining separators and terminators are neutral.
    types = ["ON" if kind in ("ES", "ET", "CS") else kind for kind in types]
    # W7: European numbers after left-to-right text are left-to-right.
    last_strong = embedding
    for index, kind in enumerate(types):
        if kind in ("L", "R"):
            last_strong = kind
        elif kind == "EN" and last_strong == "L":
            types[index] = "L"
    # N1, N2: neutrals between two runs of one direction take it; others the embedding's.
    index = 0
    while index < count:
        if types[index] not in _NEUTRAL:
            index += 1
            continue
        end = index
        while end < count and types[end] in _NEUTRAL:
            end += 1
        before = _direction(types[index - 1]) if index > 0 else embedding
        after = _direction(types[end]) if end < count else embedding
        resolved = before if before == after else embedding
        types[index:end] = [resolved] * (end - index)
        index = end
    # I1, I2.
    levels: list[int] = []
    for kind in types:
        if base_level % 2 == 0:
            levels.append(base_level + {"R": 1, "AN": 2, "EN": 2}.get(kind, 0))
        else:
            levels.append(base_level + (1 if kind in ("L", "EN", "AN") else 0))
    return levels


def _direction(kind: str) -> str:
    return "L" if kind == "L" else "R"  # numbers count as right-to-left for N1


def visual_order(levels: Sequence[int]) -> list[int]:
    """Rule L2: the logical indices of a line's items in visual (left-to-right) order."""
    order = list(range(len(levels)))
    if not levels:
        return order
    highest = max(levels)
    lowest_odd = min((level for level in levels if level % 2), default=highest + 1)
    for level in range(highest, lowest_odd - 1, -1):
        index = 0
        while index < len(order):
            if levels[order[index]] < level:
                index += 1
                continue
            end = index
            while end < len(order) and levels[order[end]] >= level:
                end += 1
            order[index:end] = reversed(order[index:end])
            index = end
    return order
