"""Rendering a checked source into page images, one page at a time.

A book never sits in memory whole: a PDF is rendered by poppler in chunks of
NORMALIZE_CHUNK_PAGES pages into a temporary folder (NORMALIZE_THREADS pdftoppm processes
at once, the next chunk rendering while the caller stores the current one); images are
decoded one by one; each page's file is deleted as soon as the caller asks for the next
page. Memory stays flat whatever the page count.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import zipfile
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from PIL import Image, ImageOps

from core.images import (
    ImageLimits,
    ImageRefused,
    ImageTooLarge,
    ImageTooManyFrames,
    ImageUnsupported,
    image_errors,
    image_open,
    image_seek,
)
from projects.errors import (
    FileCorrupt,
    FileTypeUnsupported,
    ImageOverPixelLimit,
    PdfEncrypted,
    PdfNoPages,
    TooManyPages,
    ZipEntryUnsupported,
    ZipTooLarge,
    ZipUnsafe,
)
from projects.intake.layout import pdf_layouts
from projects.intake.poppler import (
    PopplerRefused,
    PopplerTimedOut,
    pdfinfo_read,
    pdftoppm_png_files,
    pdftotext_pages,
    poppler_problems,
)
from projects.models import SourceKind

# Formats a page image may come in; anything else inside a zip or folder is refused.
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "TIFF")
# Re-encoded images (zip, folder, single image) favour speed over a few percent of size.
PNG_COMPRESS_LEVEL = 3
# A stated resolution kept with a page image when it lies here (dots per inch): below, the 72 or 96
# that cameras and screens write whatever they saw.
MIN_STATED_DPI, MAX_STATED_DPI = 100.0, 1200.0
_READ_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RenderedPage:
    """One page ready to store.

    png_path is a PNG file owned by the renderer: it exists until the caller asks for the
    next page (or closes the iterator), then it is deleted.
    """

    index: int
    source_name: str
    png_path: Path
    width: int
    height: int
    text: str = ""
    thumbnail: bytes | None = None  # made while the image was decoded anyway; else None
    # The text layer's blocks, lines and font runs (docs/book-structure.md); {} without one.
    layout: dict[str, Any] = field(default_factory=dict)


def pages_render(
    *,
    path: Path,
    kind: SourceKind | str,
    entries: tuple[str, ...] = (),
    start_index: int = 1,
    file_name: str = "",
) -> Generator[RenderedPage, None, None]:
    """Yield the source's pages in book order, from `start_index` (1-based) on.

    `entries` are the image names of a zip or folder in page order (from the source check);
    `file_name` names the pages of a PDF or single image (defaults to the path's name).
    Raises ServiceError (file_corrupt, pdf_encrypted, pdf_no_pages, too_many_pages,
    image_too_large, zip_too_large, zip_entry_unsupported) for a content problem found while
    rendering; a page is yielded only once it rendered whole. Close the iterator (or
    exhaust it) to remove the temporary files.
    """
    name = file_name or path.name
    path = path.absolute()  # never a name a tool could read as an option
    if kind == SourceKind.PDF:
        return _pdf_pages(path, name=name, start_index=start_index)
    if kind == SourceKind.ZIP:
        return _zip_pages(path, entries=entries, start_index=start_index)
    if kind == SourceKind.FOLDER:
        return _folder_pages(path, entries=entries, start_index=start_index)
    if kind == SourceKind.IMAGE:
        return _image_pages(path, name=name, start_index=start_index)
    raise FileTypeUnsupported(f"Unknown source kind {kind!r}.")


def thumbnail_make(png_path: Path) -> bytes:
    """A PNG of the page at most THUMBNAIL_SIZE pixels on its long side (never enlarged)."""
    with image_open(png_path, limits=_rendered_limits()) as image:
        return _thumbnail_encode(image)


def _thumbnail_encode(image: Image.Image) -> bytes:
    size = settings.THUMBNAIL_SIZE
    thumb = (
        image.copy()
        if image.width <= size and image.height <= size
        else image.resize(_fitted(image.size, size), Image.Resampling.BICUBIC, reducing_gap=2.0)
    )
    if thumb.mode not in ("RGB", "L"):
        thumb = thumb.convert("RGB")
    buffer = io.BytesIO()
    thumb.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def _fitted(size: tuple[int, int], longest: int) -> tuple[int, int]:
    width, height = size
    scale = longest / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


# --- PDF ------------------------------------------------------------------------------------


def _pdf_pages(path: Path, *, name: str, start_index: int) -> Generator[RenderedPage, None, None]:
    sizes = _pdf_page_sizes(path)
    chunk = max(1, settings.NORMALIZE_CHUNK_PAGES)
    ranges = [
        (first, min(first + chunk - 1, len(sizes))) for first in range(max(1, start_index), len(sizes) + 1, chunk)
    ]
    if not ranges:
        return
    # One chunk renders in the background while the caller stores the one before, so the
    # cores never wait for the storing (the files of at most two chunks are on disk).
    with tempfile.TemporaryDirectory(prefix="render-") as folder, ThreadPoolExecutor(max_workers=1) as renderer:
        upcoming = renderer.submit(_pdf_chunk, path, Path(folder), sizes, *ranges[0])
        for position, (first, last) in enumerate(ranges):
            images, texts, layouts = upcoming.result()
            if position + 1 < len(ranges):
                upcoming = renderer.submit(_pdf_chunk, path, Path(folder), sizes, *ranges[position + 1])
            try:
                for number in range(first, last + 1):
                    png_path = images[number]
                    with image_open(png_path, limits=_rendered_limits()) as image:
                        width, height = image.size
                    yield RenderedPage(
                        index=number,
                        source_name=f"{name}#page={number}",
                        png_path=png_path,
                        width=width,
                        height=height,
                        text=texts[number - first],
                        layout=layouts[number - first],
                    )
                    png_path.unlink(missing_ok=True)
            finally:
                for png_path in images.values():
                    png_path.unlink(missing_ok=True)


def _pdf_chunk(
    path: Path, folder: Path, sizes: list[tuple[float, float]], first: int, last: int
) -> tuple[dict[int, Path], list[str], list[dict[str, Any]]]:
    """Pages first..last: their PNG files by page number, their text layers and layouts."""
    _pixels_check(sizes, first, last)
    images = _pdf_chunk_render(path, folder, first, last)
    try:
        return images, _pdf_chunk_text(path, first, last), pdf_layouts(path, first=first, last=last)
    except BaseException:
        for png_path in images.values():
            png_path.unlink(missing_ok=True)
        raise


def _pdf_page_sizes(path: Path) -> list[tuple[float, float]]:
    """Every page's size in points, in order, read by pdfinfo (one call for the whole file)."""
    with poppler_problems("pdfinfo"):
        info = pdfinfo_read(path, first=1, last=settings.MAX_PAGES + 1)
    count = info.pages
    if count == 0:
        raise PdfNoPages()
    if count > settings.MAX_PAGES:
        raise TooManyPages(f"The book has {count} pages; at most {settings.MAX_PAGES} are allowed.")
    if info.encrypted:
        raise PdfEncrypted("The PDF is encrypted; upload an unprotected copy.")
    sizes = info.page_sizes
    if sorted(sizes) != list(range(1, count + 1)):
        raise FileCorrupt(f"The PDF says it has {count} pages but describes {len(sizes)}.")
    return [sizes[number] for number in range(1, count + 1)]


def _pixels_check(sizes: list[tuple[float, float]], first: int, last: int) -> None:
    scale = settings.RENDER_DPI / 72
    for number in range(first, last + 1):
        width, height = sizes[number - 1]
        pixels = round(width * scale) * round(height * scale)
        if pixels > settings.IMAGE_MAX_PIXELS:
            raise ImageOverPixelLimit(
                f"Page {number} is {width:.0f} x {height:.0f} points: too large to render at "
                f"{settings.RENDER_DPI} dpi.",
            )


def _pdf_chunk_render(path: Path, folder: Path, first: int, last: int) -> dict[int, Path]:
    """Pages first..last as PNG files in `folder`, by page number; every page or an error."""
    try:
        images = pdftoppm_png_files(
            path, folder, first=first, last=last, dpi=settings.RENDER_DPI, processes=settings.NORMALIZE_THREADS
        )
    except PopplerTimedOut as error:
        raise FileCorrupt(f"Rendering pages {first}-{last} took too long.") from error
    except PopplerRefused as error:
        raise FileCorrupt(f"Pages {first}-{last} could not be rendered: {error}") from error
    missing = [number for number in range(first, last + 1) if number not in images]
    if missing:
        for file in images.values():
            file.unlink(missing_ok=True)
        raise FileCorrupt(f"Page {missing[0]} of the PDF could not be rendered.")
    return images


def _pdf_chunk_text(path: Path, first: int, last: int) -> list[str]:
    """The text layer of pages first..last ("" for a page without one), with what is set
    past a page's right edge."""
    with poppler_problems("pdftotext"):
        pages = pdftotext_pages(path, first=first, last=last)
    expected = last - first + 1
    if len(pages) != expected:
        raise FileCorrupt(
            f"The text of pages {first}-{last} does not match the page count ({len(pages)} of {expected}).",
        )
    return [page.rstrip() for page in pages]


# --- Images ---------------------------------------------------------------------------------


def _zip_pages(path: Path, *, entries: tuple[str, ...], start_index: int) -> Generator[RenderedPage, None, None]:
    with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory(prefix="render-") as folder:
        for index, entry in enumerate(entries, start=1):
            if index < start_index:
                continue
            data = _zip_entry_read(archive, entry)
            with _image_open(io.BytesIO(data), name=entry) as image:
                yield from _image_page(image, folder=Path(folder), index=index, source_name=entry)


def _zip_entry_read(archive: zipfile.ZipFile, entry: str) -> bytes:
    """The entry's bytes, reading at most its declared size (a lying header is refused)."""
    try:
        info = archive.getinfo(entry)
    except KeyError as error:
        raise FileCorrupt(f"The zip has no entry {entry!r}.") from error
    declared = info.file_size
    if declared > settings.ZIP_MAX_UNCOMPRESSED_BYTES:
        raise ZipTooLarge(f"{entry} is larger than allowed.")
    buffer = io.BytesIO()
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(min(_READ_CHUNK_BYTES, declared + 1 - buffer.tell())):
                buffer.write(chunk)
                if buffer.tell() > declared:
                    raise ZipTooLarge(f"{entry} unpacks to more than it declares.")
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise FileCorrupt(f"{entry} could not be read from the zip.") from error
    return buffer.getvalue()


def _folder_pages(path: Path, *, entries: tuple[str, ...], start_index: int) -> Generator[RenderedPage, None, None]:
    root = path.resolve()
    with tempfile.TemporaryDirectory(prefix="render-") as folder:
        for index, entry in enumerate(entries, start=1):
            if index < start_index:
                continue
            file = (root / entry).resolve()
            if root not in file.parents or not file.is_file():
                raise ZipUnsafe(f"{entry} is not a file inside the folder.")
            with _image_open(file, name=entry) as image:
                yield from _image_page(image, folder=Path(folder), index=index, source_name=entry)


def _image_pages(path: Path, *, name: str, start_index: int) -> Generator[RenderedPage, None, None]:
    with (
        tempfile.TemporaryDirectory(prefix="render-") as folder,
        _image_open(path, name=name, max_frames=settings.MAX_PAGES) as image,
    ):
        frames = getattr(image, "n_frames", 1)
        if frames == 1:
            if start_index <= 1:
                yield from _image_page(image, folder=Path(folder), index=1, source_name=name)
            return
        for number in range(max(1, start_index), frames + 1):
            with _refusals(f"{name} frame {number}"):
                frame = image_seek(image, number - 1, limits=_image_limits())
            yield from _image_page(frame, folder=Path(folder), index=number, source_name=f"{name}#frame={number}")


def _image_limits(*, max_frames: int | None = None) -> ImageLimits:
    return ImageLimits(max_pixels=settings.IMAGE_MAX_PIXELS, formats=IMAGE_FORMATS, max_frames=max_frames)


def _rendered_limits() -> ImageLimits:
    """A page poppler rendered for us: a PNG within IMAGE_MAX_PIXELS (checked before rendering)."""
    return ImageLimits(max_pixels=settings.IMAGE_MAX_PIXELS, formats=("PNG",))


def _image_open(source: Path | io.BytesIO, *, name: str, max_frames: int | None = None) -> Image.Image:
    """Open an image of an accepted format, refusing one over IMAGE_MAX_PIXELS (or over
    `max_frames` frames)."""
    with _refusals(name):
        return image_open(source, limits=_image_limits(max_frames=max_frames))


@contextlib.contextmanager
def _refusals(name: str, *, decoding: bool = False) -> Iterator[None]:
    """core.images' refusals as the problems a rendered page reports."""
    try:
        yield
    except ImageTooManyFrames as refused:
        raise TooManyPages(
            f"The image has {refused.frames} frames; at most {refused.max_frames} pages are allowed.",
        ) from refused
    except ImageTooLarge as refused:
        size = f"is {refused.width} x {refused.height} pixels: more" if refused.width is not None else "has more pixels"
        raise ImageOverPixelLimit(f"{name} {size} than allowed.") from refused
    except ImageUnsupported as refused:
        raise ZipEntryUnsupported(f"{name} is not a PNG, JPEG, WebP or TIFF image.") from refused
    except ImageRefused as refused:
        problem = "could not be decoded" if decoding else "could not be read"
        raise FileCorrupt(f"{name} {problem}.") from refused


def _resolution(image: Image.Image) -> dict[str, tuple[float, float]]:
    """The image's stated resolution as PNG's `dpi` option, when it states a plausible one
    (a camera's 72 dpi default and a missing value say nothing: {} then)."""
    stated = image.info.get("dpi")
    try:
        across, down = (float(value) for value in stated) if stated else (0.0, 0.0)
    except (TypeError, ValueError):
        return {}
    if not (MIN_STATED_DPI <= across <= MAX_STATED_DPI and MIN_STATED_DPI <= down <= MAX_STATED_DPI):
        return {}
    return {"dpi": (across, down)}


def _image_page(
    image: Image.Image, *, folder: Path, index: int, source_name: str
) -> Generator[RenderedPage, None, None]:
    """Re-encode one image (orientation applied, RGB or greyscale, no metadata but its
    resolution, which gives its page its size in the original-layout Pdf) and yield it."""
    png_path = folder / f"{index}.png"
    with _refusals(source_name, decoding=True), image_errors():
        resolution = _resolution(image)
        page = _page_mode(ImageOps.exif_transpose(image))
        page.save(png_path, format="PNG", compress_level=PNG_COMPRESS_LEVEL, **resolution)
    try:
        thumbnail = _thumbnail_encode(page)
        yield RenderedPage(
            index=index,
            source_name=source_name,
            png_path=png_path,
            width=page.width,
            height=page.height,
            thumbnail=thumbnail,
        )
    finally:
        png_path.unlink(missing_ok=True)


def _page_mode(image: Image.Image) -> Image.Image:
    """RGB, or L for greyscale; transparency flattened onto white."""
    if image.mode in ("RGB", "L"):
        return image
    if image.mode.startswith("I;16"):
        # 16-bit greyscale scans: scale to 8 bits rather than clip.
        return image.convert("I").point(lambda value: value / 256).convert("L")
    if image.mode in ("1", "I", "F"):
        return image.convert("L")
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    if has_alpha:
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, "white")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
