"""Markdown to blocks: the one parser every renderer shares (markdown-it-py, CommonMark).

A page's translation becomes a list of blocks — headings, paragraphs, list items, block
quotes, code, rules — each carrying inline runs with bold/italic/code flags. Renderers lay
blocks out in their own format (python-docx paragraphs, reportlab flowables, XHTML for
EPUB); the HTML renderer may use markdown-it's own HTML output instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

_parser = MarkdownIt("commonmark", {"html": False})


@dataclass(frozen=True)
class Run:
    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "paragraph", "list_item", "quote", "code", "rule"
    runs: tuple[Run, ...] = ()
    level: int = 0  # heading level 1-6; list nesting depth (1-based) for list items
    ordered: bool = False  # list items: numbered
    number: int | None = None  # list items: the item's number when ordered

    @property
    def text(self) -> str:
        return "".join(run.text for run in self.runs)


@dataclass
class _State:
    blocks: list[Block] = field(default_factory=list)
    lists: list[list[int | bool]] = field(default_factory=list)  # [ordered, next number]
    quote: int = 0


def _runs(inline: Token) -> tuple[Run, ...]:
    runs: list[Run] = []
    bold = italic = False
    for child in inline.children or []:
        if child.type == "strong_open":
            bold = True
        elif child.type == "strong_close":
            bold = False
        elif child.type == "em_open":
            italic = True
        elif child.type == "em_close":
            italic = False
        elif child.type == "text":
            runs.append(Run(child.content, bold=bold, italic=italic))
        elif child.type == "code_inline":
            runs.append(Run(child.content, bold=bold, italic=italic, code=True))
        elif child.type in ("softbreak", "hardbreak"):
            runs.append(Run("\n" if child.type == "hardbreak" else " ", bold=bold, italic=italic))
        elif child.type == "image":
            runs.append(Run(child.content or "", bold=bold, italic=italic))
    merged: list[Run] = []
    for run in runs:
        if merged and (merged[-1].bold, merged[-1].italic, merged[-1].code) == (run.bold, run.italic, run.code):
            merged[-1] = Run(merged[-1].text + run.text, run.bold, run.italic, run.code)
        else:
            merged.append(run)
    return tuple(merged)


def blocks_of(markdown: str) -> list[Block]:
    """The blocks of a Markdown text, in order (links keep their text; raw HTML is text)."""
    state = _State()
    tokens = _parser.parse(markdown or "")
    pending: str | None = None  # what the next inline belongs to
    heading_level = 0
    for token in tokens:
        if token.type == "heading_open":
            pending, heading_level = "heading", int(token.tag[1])
        elif token.type == "paragraph_open":
            pending = "list_item" if state.lists else ("quote" if state.quote else "paragraph")
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            start = int(token.attrGet("start") or 1) if token.type == "ordered_list_open" else 0
            state.lists.append([token.type == "ordered_list_open", start])
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            state.lists.pop()
        elif token.type == "blockquote_open":
            state.quote += 1
        elif token.type == "blockquote_close":
            state.quote -= 1
        elif token.type == "inline" and pending is not None:
            runs = _runs(token)
            if pending == "heading":
                state.blocks.append(Block("heading", runs, level=heading_level))
            elif pending == "list_item":
                ordered, number = bool(state.lists[-1][0]), int(state.lists[-1][1])
                state.blocks.append(
                    Block(
                        "list_item", runs, level=len(state.lists), ordered=ordered, number=number if ordered else None
                    )
                )
                if ordered:
                    state.lists[-1][1] = number + 1
            else:
                state.blocks.append(Block(pending, runs))
            pending = None
        elif token.type in ("fence", "code_block"):
            state.blocks.append(Block("code", (Run(token.content.rstrip("\n"), code=True),)))
        elif token.type == "hr":
            state.blocks.append(Block("rule"))
        elif token.type == "html_block":
            state.blocks.append(Block("paragraph", (Run(token.content.strip()),)))
    return state.blocks


def plain_text_of(markdown: str) -> str:
    """The text without Markdown syntax: blocks separated by blank lines, list items
    bulleted or numbered (the PlainText export and the bilingual source column)."""
    lines: list[str] = []
    for block in blocks_of(markdown):
        if block.kind == "list_item":
            marker = f"{block.number}." if block.ordered else "•"
            lines.append(f"{'  ' * (block.level - 1)}{marker} {block.text}")
        elif block.kind == "rule":
            lines.append("* * *")
        else:
            lines.append(block.text)
    return "\n\n".join(lines)


def first_heading(markdown: str) -> Block | None:
    """The page's first block when it is a heading of level 1 or 2 (a chapter start)."""
    blocks = blocks_of(markdown)
    if blocks and blocks[0].kind == "heading" and blocks[0].level <= 2:
        return blocks[0]
    return None
