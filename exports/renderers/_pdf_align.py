"""The original-layout Pdf's alignment (docs/exports.md, "The original layout"): a page's
paragraphs paired with its translation's blocks, and a carried paragraph's translation
split between its two pages."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from bookstructure.lines import LineRef
from bookstructure.paragraphs import PageText, Paragraph, ParagraphKind
from exports.blocks import Block, blocks_of
from exports.book import ExportPage

logger = logging.getLogger(__name__)

# Kinds never set as prose: code stays as it is, a table is translated cell by cell
# (`table_paired`, _pdf_table) or stays as it is.
KEPT_KINDS = frozenset({ParagraphKind.CODE, ParagraphKind.TABLE})
# Pairings the alignment weighs: (paragraphs, blocks, penalty).
_PAIRINGS = ((1, 1, 0.0), (2, 1, 1.0), (1, 2, 1.0), (1, 0, 3.0), (0, 1, 3.0))
ALIGNMENT_COST_MAX = 1.5  # per paragraph or block: a page scoring worse is set as one region
# Kinds as the alignment compares them: prose of any kind (a paragraph, a list item, a
# quote) pairs with prose (the Markdown of a paragraph inside a list item reads either way).
_KINDS = {"heading": "heading", "code": "code", "table": "table"}

Groups = list[tuple[list[Paragraph], list[Block]]]


def _kind_of(paragraph: Paragraph) -> str:
    return _KINDS.get(paragraph.kind.value, "paragraph")


def aligned(page: ExportPage, text: PageText) -> Groups | None:
    """The page's paragraphs grouped with its translation's blocks, in order, or None when
    they do not pair well enough (one region then). The alignment of sentence aligners
    (Gale and Church): dynamic programming over pairings of one paragraph with one block,
    two with one and one with two (prose only; two paragraphs an engine joined, or one it
    split), and one left alone, each scored by how far its length ratio is from the page's
    and by a penalty per kind of pairing; headings pair only with headings, code with code,
    tables with tables. A block left alone joins the group before it (the first one's
    after it); a paragraph left alone keeps its source text."""
    blocks = [block for block in blocks_of(page.translation) if block.kind != "rule"]
    paragraphs = list(text.paragraphs)
    if not blocks or not paragraphs:
        return None
    # Each side's lengths and kinds once (a block's text is joined from its runs).
    source = [(len(paragraph.text) + 1, _kind_of(paragraph)) for paragraph in paragraphs]
    target = [(len(block.text) + 1, _KINDS.get(block.kind, "paragraph")) for block in blocks]
    ratio = sum(length for length, _ in target) / sum(length for length, _ in source)
    count, total = len(paragraphs), len(blocks)
    cost = [[math.inf] * (total + 1) for _ in range(count + 1)]
    step_of: dict[tuple[int, int], tuple[int, int]] = {}
    cost[0][0] = 0.0
    for here in range(count + 1):
        for there in range(total + 1):
            if cost[here][there] == math.inf:
                continue
            for taken, given, penalty in _PAIRINGS:
                if here + taken > count or there + given > total:
                    continue
                paired = _pairing_cost(source[here : here + taken], target[there : there + given], ratio)
                if cost[here][there] + penalty + paired < cost[here + taken][there + given]:
                    cost[here + taken][there + given] = cost[here][there] + penalty + paired
                    step_of[(here + taken, there + given)] = (taken, given)
    if cost[count][total] > ALIGNMENT_COST_MAX * max(count, total):
        logger.info("Page %s: its translation does not pair with its paragraphs; set as one region", page.index)
        return None
    groups: list[tuple[list[Paragraph], list[Block]]] = []
    here, there = count, total
    while here or there:
        taken, given = step_of[(here, there)]
        groups.append((paragraphs[here - taken : here], blocks[there - given : there]))
        here, there = here - taken, there - given
    groups.reverse()
    return _strays_joined(groups)


def _pairing_cost(source: Sequence[tuple[int, str]], target: Sequence[tuple[int, str]], ratio: float) -> float:
    """The cost of pairing paragraphs with blocks, each given as (length, kind)."""
    if not source or not target:
        return 0.0
    if source[0][1] != target[0][1]:
        return math.inf
    if len(source) + len(target) > 2 and any(kind != "paragraph" for _, kind in (*source, *target)):
        return math.inf
    return abs(math.log(sum(length for length, _ in target) / (sum(length for length, _ in source) * ratio)))


def _strays_joined(groups: list[tuple[list[Paragraph], list[Block]]]) -> list[tuple[list[Paragraph], list[Block]]]:
    """The groups, a block paired with no paragraph joined to the translated group before it
    (or after it, before the first)."""
    kept: list[tuple[list[Paragraph], list[Block]]] = []
    waiting: list[Block] = []
    for paragraphs, blocks in groups:
        is_translated = bool(blocks) and translated((paragraphs, blocks))
        if not paragraphs:
            target = next((group for group in reversed(kept) if group[0] and group[1] and translated(group)), None)
            if target is None:
                waiting += blocks
            else:
                target[1].extend(blocks)
            continue
        if is_translated and waiting:
            blocks = [*waiting, *blocks]
            waiting = []
        kept.append((list(paragraphs), list(blocks)))
    return kept


def translated(group: tuple[list[Paragraph], list[Block]]) -> bool:
    """Whether the group's paragraphs are prose, set with its blocks in their place."""
    return all(paragraph.kind not in KEPT_KINDS for paragraph in group[0])


def table_paired(group: tuple[list[Paragraph], list[Block]]) -> tuple[Paragraph, Block] | None:
    """The table and its translation when the group pairs one table paragraph with one
    table block (its cells are set one by one, _pdf_table); None otherwise."""
    paragraphs, blocks = group
    if len(paragraphs) != 1 or len(blocks) != 1:
        return None
    paragraph, block = paragraphs[0], blocks[0]
    if paragraph.kind != ParagraphKind.TABLE or block.kind != "table" or paragraph.table is None:
        return None
    return paragraph, block


def carried_split(pairs: Groups, *, next_translated: bool) -> dict[tuple[LineRef, ...], str]:
    """The share of the carried paragraph's translation set on the next page, keyed by its
    lines there (`pairs`: the page aligned). Empty when nothing is carried or the next page
    is not translated."""
    carried = carried_pair(pairs)
    if carried is None or not next_translated:
        return {}
    group, blocks = pairs[carried]
    paragraph = group[-1]
    if len(group) != 1 or paragraph.kind in KEPT_KINDS or len(blocks) != 1:
        return {}
    block = blocks[0]
    here = [ref for ref in paragraph.lines if ref.page == paragraph.page]
    there = [ref for ref in paragraph.lines if ref.page != paragraph.page]
    _, rest = split(block.text, len(here) / len(paragraph.lines))
    return {tuple(there): rest} if there and rest else {}


def carried_pair(pairs: Groups) -> int | None:
    """The position in `pairs` of the paragraph carried on to the next page: the page's last
    paragraph of text (its footnotes, set at the end of its Markdown, come after it)."""
    for index in range(len(pairs) - 1, -1, -1):
        group, _ = pairs[index]
        if group and group[-1].kind is ParagraphKind.NOTE:
            continue
        return index if group and group[-1].carried else None
    return None


def split_shares(text: str, shares: Sequence[float]) -> list[str]:
    """`text` cut into parts of about these shares of its words (the last takes the rest)."""
    parts: list[str] = []
    rest, left = text, 1.0
    for share in shares[:-1]:
        part, rest = split(rest, min(share / left, 1.0)) if rest and left > 0 else ("", rest)
        parts.append(part)
        left -= share
    parts.append(rest)
    return parts


def split(text: str, share: float) -> tuple[str, str]:
    """`text` cut after `share` of its words (of its characters when it has no spaces)."""
    words = text.split()
    if len(words) > 1:
        cut = max(1, round(len(words) * share))
        return " ".join(words[:cut]), " ".join(words[cut:])
    cut = max(1, round(len(text) * share))
    return text[:cut], text[cut:]
