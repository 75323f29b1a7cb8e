"""The original-layout Pdf's fitting on real books: the share of regions set at their
source's size (docs/exports.md, "Fitting").

For the first pages of a Debian manual, each page as normalize stores it and translated by
spelling every word backwards (as long as the source; with `--longer` every fifth word is
said twice, a translation a fifth longer), the original-layout Pdf is rendered and each
region's size is read from what `fitted` sets, three ways: as before (the script fonts,
Noto Serif for Latin, at 1.18 of the size), with the metric-compatible faces only, and as
now (those faces at the source's line pitch).

    python -m bench.fitting_sizes valgrind 1 60 [--longer]
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

WAYS: dict[str, Callable[[Any], Any]] = {
    "before": lambda region: replace(region, font=None, leading=0.0, line_height=0.0),
    "faces only": lambda region: replace(region, leading=0.0, line_height=0.0),
    "now": lambda region: region,
}
_WORD = re.compile(r"(?<![`\w])([^\W\d_]{2,})")


def _longer(text: str) -> str:
    count = iter(range(10**9))
    return _WORD.sub(lambda match: match.group(1) + (" " + match.group(1) if next(count) % 5 == 4 else ""), text)


def measure(name: str, first: int, last: int, *, longer: bool) -> dict[str, list[float]]:
    """Each way's sizes, one per region: the size set over the source's (0.0: the box grew)."""
    import pikepdf

    from bookstructure.book import pages_structure
    from bookstructure.words import word_list
    from exports.book import BookSource, ExportOptions, ExportPage, PageLayout
    from exports.renderers import _pdf_fit, pdf_original, renderer_for
    from projects.intake.layout import pdf_layouts
    from tests.exports.books import sample_book
    from tests.support.corpus import debian_pdf
    from tests.support.openai_server import fake_translation

    folder = Path(tempfile.mkdtemp(prefix="bt-fitting-"))
    window = folder / "book.pdf"
    with pikepdf.open(debian_pdf(name)) as manual, pikepdf.new() as book:
        book.pages.extend(manual.pages[first - 1 : last])
        book.save(window)
    count = last - first + 1
    layouts = pdf_layouts(window, first=1, last=count)
    bodies = pages_structure(layouts, first_index=1, start=1, ready_through=count, carried_in={}, words=word_list("en"))
    carried = {each.page: each for body in bodies for each in body.carries_into}

    def pages() -> Iterator[ExportPage]:
        for body in bodies:
            text = fake_translation(body.markdown)
            text = _longer(text) if longer else text
            yield ExportPage(
                index=body.index,
                translated=bool(text.strip()),
                translation=text,
                source_text="",
                failed=False,
                failure_reason="",
                image_key="",
                blank=not text.strip(),
            )

    def stored(start: int, end: int) -> list[PageLayout]:
        return [
            PageLayout(
                index=body.index,
                layout=layouts[body.index - 1],
                carried_from=carried[body.index].origin if body.index in carried else None,
                carried_lines=tuple(carried[body.index].lines) if body.index in carried else (),
                furniture=tuple(body.furniture),
            )
            for body in bodies
            if start <= body.index <= end
        ]

    book = replace(
        sample_book("en", pages=2),
        language="es",
        page_count=count,
        pages=pages,
        source=BookSource(pdf=lambda: nullcontext(window), layouts=stored),
    )
    sizes: dict[str, list[float]] = {way: [] for way in WAYS}

    def size_set(region: Any) -> float:
        flowables, room = _pdf_fit.fitted(region, book)
        _, top, _, bottom = region.box
        if not flowables or room > bottom - top + 2.0 + _pdf_fit._lead_in(region) + 0.01:
            return 0.0
        first_flowable: Any = flowables[0]
        style = getattr(first_flowable, "style", None)
        size = style.fontSize if style is not None else first_flowable.text_style.size
        return float(size) / region.size

    draw = pdf_original.region_draw

    def counted(canvas: Any, region: Any, book_: Any, to_pdf: Any) -> None:
        for way, make in WAYS.items():
            sizes[way].append(size_set(make(region)))
        draw(canvas, region, book_, to_pdf)

    pdf_original.region_draw = counted  # type: ignore[assignment]
    try:
        with (folder / "out.pdf").open("wb") as out:
            renderer_for("Pdf").render(book, ExportOptions(layout="original"), out)
    finally:
        pdf_original.region_draw = draw
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", help="a key of tests.support.corpus.DEBIAN_BOOKS")
    parser.add_argument("first", type=int)
    parser.add_argument("last", type=int)
    parser.add_argument("--longer", action="store_true", help="every fifth word said twice")
    arguments = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    sizes = measure(arguments.book, arguments.first, arguments.last, longer=arguments.longer)
    regions = len(sizes["now"])
    print(f"{arguments.book} pages {arguments.first}-{arguments.last}: {regions} regions")
    for way, values in sizes.items():
        at_source = sum(value >= 0.999 for value in values) / regions
        mean = sum(values) / regions
        print(f"  {way}: {at_source:.0%} at the source's size, mean size {mean:.3f} of the source's")


if __name__ == "__main__":
    main()
