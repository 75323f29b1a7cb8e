"""Whether a file is a book source we accept, decided from its content, never its name.

`source_inspect` guarantees, whatever bytes it is given:
- the type comes from the magic bytes and is confirmed by the real parser (poppler for a
  PDF, Pillow limited to PNG, JPEG, WebP and TIFF, Python's zipfile); the name's
  extension must be an accepted one and agree with the content;
- every refusal is a `ServiceError` carrying one of the intake problem codes (a 4xx),
  never a parser's own exception;
- the work is bounded: poppler runs through poppler.py (PDF_TOOL_TIMEOUT_SECONDS, no shell,
  its output bounded, the process killed and reaped past its limit); an image is
  opened by core.images, its size compared with IMAGE_MAX_PIXELS before it is decoded; a
  zip's entry count, declared sizes and compression ratios are checked before any entry is
  read, and each image entry is then read through a reader capped at its declared size, so
  a lying header is caught, never extracted;
- memory stays flat (pdftotext's output is counted as it streams, zip entries are spooled)
  and no temporary file outlives the call.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import logging
import os
import re
import stat
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from django.conf import settings
from PIL import Image

from core.errors import ServiceError
from core.images import (
    ImageEmpty,
    ImageLimits,
    ImageRefused,
    ImageTooLarge,
    ImageTooManyFrames,
    image_check,
    image_open,
    image_seek,
)
from core.uploads import extension_of
from projects.errors import (
    FileCorrupt,
    FileEmpty,
    FileTypeMismatch,
    FileTypeUnsupported,
    ImageOverPixelLimit,
    PdfEncrypted,
    PdfNoPages,
    TooManyPages,
    ZipEntryUnsupported,
    ZipNoImages,
    ZipTooLarge,
    ZipUnsafe,
)
from projects.intake.poppler import (
    PopplerFailed,
    PopplerOutputTooLarge,
    PopplerTimedOut,
    pdfinfo_read,
    pdftotext_stream,
)
from projects.intake.sources import SourceInspection
from projects.intake.word_estimate import PageOpen, WordEstimate, image_pages, image_words_estimate, pdf_pages
from projects.models import SourceKind

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff"})
_KIND_EXTENSIONS = {SourceKind.PDF: frozenset({".pdf"}), SourceKind.ZIP: frozenset({".zip"})}
_KIND_NAMES = {SourceKind.PDF: "a PDF", SourceKind.IMAGE: "an image", SourceKind.ZIP: "a zip"}
_PILLOW_FORMATS = ("PNG", "JPEG", "WEBP", "TIFF")
# PDF readers accept the header anywhere in the first kilobyte (ISO 32000-1, annex H).
_SNIFF_BYTES = 1024
_TEXT_LAYER_MIN_WORDS = 20
_READ_CHUNK_BYTES = 64 * 1024
# Zip entries up to this size are checked in memory; larger ones spill to an unnamed file.
_SPOOL_BYTES = 8 * 1024 * 1024
# Small entries may compress very well (a blank scan); the ratio limit is for bigger ones.
_RATIO_MIN_BYTES = 1024 * 1024
# zipfile holds the whole central directory in memory: bound it before it is read.
_DIRECTORY_BYTES_PER_ENTRY = 2048
_LISTED_ENTRIES_MAX = 20
_JUNK_NAMES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})
_JUNK_FOLDERS = frozenset({"__macosx"})
_DRIVE_LETTER = re.compile(r"^[A-Za-z]:")
_DIGITS = re.compile(r"([0-9]+)")
# pdfinfo's complaint about a page tree without pages (it exits without a "Pages:" line).
_NO_PAGES = re.compile(r"page count 0|last page \(0\)", re.IGNORECASE)
# pdfinfo's complaint about a page tree claiming more pages than the file has objects (it
# then reports no pages, though the file is a damaged book, not an empty one).
_COUNT_LIES = re.compile(r"page count \((\d+)\) larger than number of objects", re.IGNORECASE)
_ZIP_END = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP_ENCRYPTED_FLAGS = 0x1 | 0x40  # traditional and strong encryption

_Piece = str | tuple[int, str]
NaturalKey = tuple[tuple[tuple[tuple[_Piece, ...], str], ...], str]


def source_inspect(*, path: Path, file_name: str) -> SourceInspection:
    """Check a local file (or, for a server-path source, a folder) and describe it.

    Raises ServiceError with file_empty, file_type_unsupported, file_type_mismatch,
    file_corrupt, pdf_encrypted, pdf_no_pages, too_many_pages, image_too_large,
    zip_unsafe, zip_too_large, zip_entry_unsupported or zip_no_images.
    """
    if path.is_dir():
        return _folder_inspect(path)
    if not path.is_file():
        raise FileTypeUnsupported("The source is not a regular file.")
    with path.open("rb") as file:
        head = file.read(_SNIFF_BYTES)
    if not head:
        raise FileEmpty("The file is empty.")
    kind = _content_kind(head)
    if kind is None:
        raise FileTypeUnsupported(
            "The file is not a PDF, a PNG, JPEG, WebP or TIFF image, or a zip (judged by its content).",
        )
    _extension_check(file_name, kind)
    if kind == SourceKind.PDF:
        return _pdf_inspect(path)
    if kind == SourceKind.IMAGE:
        pages = _image_check(path, label="The image", decode=True)
        return _pages_only(SourceKind.IMAGE, pages)
    return _zip_inspect(path)


def source_words_estimate(*, path: Path, inspection: SourceInspection) -> WordEstimate:
    """The book's words: its text layer's where it has one, else estimated from the ink of
    its pages and a few of them read with Tesseract within WORD_ESTIMATE_BUDGET_SECONDS (see
    word_estimate.py).

    `inspection` is what source_inspect said of this same path; never raises for a page it
    cannot read (the words-per-page constant stands in)."""
    if inspection.has_text_layer:
        return WordEstimate(words=inspection.word_estimate, sampled_pages=0)
    if inspection.kind == SourceKind.PDF:
        pages = pdf_pages(path)
    elif inspection.kind == SourceKind.IMAGE:
        pages = image_pages(_frame_open(path))
    elif inspection.kind == SourceKind.ZIP:
        pages = image_pages(_zip_entry_open(path, inspection.entries))
    else:
        pages = image_pages(_folder_entry_open(path, inspection.entries))
    return image_words_estimate(page_count=inspection.page_count, pages=pages)


def _frame_open(path: Path) -> PageOpen:
    def open_page(index: int) -> Image.Image:
        image = image_open(path, limits=_image_limits())
        try:
            return image_seek(image, index, limits=_image_limits())
        except BaseException:
            image.close()
            raise

    return open_page


def _zip_entry_open(path: Path, entries: tuple[str, ...]) -> PageOpen:
    def open_page(index: int) -> Image.Image:
        # The entry passed the zip's checks (sizes, ratio, pixels) in source_inspect.
        with zipfile.ZipFile(path) as archive, archive.open(entries[index]) as entry:
            data = entry.read()
        return image_open(io.BytesIO(data), limits=_image_limits())

    return open_page


def _folder_entry_open(path: Path, entries: tuple[str, ...]) -> PageOpen:
    return lambda index: _frame_open(path / entries[index])(0)


def natural_key(name: str) -> NaturalKey:
    """A sort key putting `page2` before `page10`.

    A path compares folder by folder (so a folder's contents stay together), each part
    case-insensitively with runs of digits compared by value; ties fall back to the plain
    text, so the order is total.
    """
    parts = name.replace("\\", "/").split("/")
    return tuple((_part_pieces(part), part) for part in parts), name


def _part_pieces(part: str) -> tuple[_Piece, ...]:
    # re.split with a group alternates text and digits, so equal positions hold equal types.
    pieces = _DIGITS.split(part.casefold())
    key: list[_Piece] = []
    for position, piece in enumerate(pieces):
        if position % 2:
            # By length, then text: a value order with no int() (digit runs may be long).
            significant = piece.lstrip("0")
            key.append((len(significant), significant))
        else:
            key.append(piece)
    return tuple(key)


# --- Type ------------------------------------------------------------------------------------


def _content_kind(head: bytes) -> SourceKind | None:
    if head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")) or (
        head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    ):
        return SourceKind.IMAGE
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return SourceKind.ZIP
    if b"%PDF-" in head[:_SNIFF_BYTES]:
        return SourceKind.PDF
    return None


def _extension_check(file_name: str, kind: SourceKind) -> None:
    extension = extension_of(file_name)
    accepted = {accepted.lower() for accepted in settings.UPLOAD_EXTENSIONS}
    if extension not in accepted:
        named = f"named {extension}" if extension else "without an extension"
        raise FileTypeUnsupported(
            f"Files {named} are not accepted (accepted: {', '.join(sorted(accepted))}).",
        )
    if extension not in _KIND_EXTENSIONS.get(kind, IMAGE_EXTENSIONS):
        raise FileTypeMismatch(f"The name ends in {extension} but the content is {_KIND_NAMES[kind]}.")


def _pages_only(kind: SourceKind, pages: int, entries: tuple[str, ...] = ()) -> SourceInspection:
    return SourceInspection(
        kind=kind,
        page_count=pages,
        word_estimate=pages * settings.WORDS_PER_PAGE_ESTIMATE,
        has_text_layer=False,
        entries=entries,
    )


def _too_many_pages(pages: int) -> TooManyPages:
    return TooManyPages(
        f"The book has {pages} pages; at most {settings.MAX_PAGES} are allowed.",
        max_pages=settings.MAX_PAGES,
    )


# --- PDF -------------------------------------------------------------------------------------


def _pdf_inspect(path: Path) -> SourceInspection:
    try:
        info = pdfinfo_read(path)
    except PopplerTimedOut:
        raise _pdf_too_slow() from None
    except PopplerOutputTooLarge:
        raise FileCorrupt("The PDF could not be read: it is damaged or truncated.") from None
    except PopplerFailed as error:
        raise _pdfinfo_refusal(error.stderr) from None
    if info.encrypted:
        raise PdfEncrypted("The PDF is encrypted; upload an unprotected copy.")
    pages = info.pages
    if pages < 1:
        raise PdfNoPages("The PDF has no pages.")
    if pages > settings.MAX_PAGES:
        raise _too_many_pages(pages)
    words = _pdf_words_count(path)
    has_text_layer = words >= _TEXT_LAYER_MIN_WORDS
    return SourceInspection(
        kind=SourceKind.PDF,
        page_count=pages,
        word_estimate=words if has_text_layer else pages * settings.WORDS_PER_PAGE_ESTIMATE,
        has_text_layer=has_text_layer,
    )


def _pdfinfo_refusal(complaint: str) -> ServiceError:
    """The intake problem for a PDF pdfinfo could not read, from what it complained."""
    logger.info("pdfinfo refused a PDF: %s", complaint.strip()[:300])
    if "password" in complaint.lower():
        return PdfEncrypted("The PDF is password-protected.")
    lie = _COUNT_LIES.search(complaint)
    if lie:
        return FileCorrupt(
            f"The PDF's page tree is damaged: it claims {lie.group(1)} pages, more than the file holds.",
        )
    if _NO_PAGES.search(complaint):
        return PdfNoPages("The PDF has no pages.")
    return FileCorrupt("The PDF could not be read: it is damaged or truncated.")


def _pdf_too_slow() -> FileCorrupt:
    return FileCorrupt(
        f"Reading the PDF took too long (over {settings.PDF_TOOL_TIMEOUT_SECONDS} s): it is damaged or too complex.",
    )


def _pdf_words_count(path: Path) -> int:
    """Words of the text layer, counted while pdftotext streams (never the whole text)."""
    counter = _WordCounter()
    try:
        pdftotext_stream(path, counter.feed)
    except PopplerTimedOut:
        raise _pdf_too_slow() from None
    except (PopplerFailed, PopplerOutputTooLarge):
        raise FileCorrupt("The PDF's text could not be read: it is damaged.") from None
    return counter.total()


class _WordCounter:
    """Whitespace-separated tokens of a UTF-8 stream fed in chunks (a word may span two)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._count = 0
        self._inside_word = False

    def feed(self, chunk: bytes) -> None:
        self._text_count(self._decoder.decode(chunk))

    def total(self) -> int:
        self._text_count(self._decoder.decode(b"", final=True))
        return self._count

    def _text_count(self, text: str) -> None:
        if not text:
            return
        tokens = text.split()
        self._count += len(tokens)
        if self._inside_word and tokens and not text[0].isspace():
            self._count -= 1  # the first token goes on with the last one of the previous chunk
        self._inside_word = not text[-1].isspace()


# --- Images ----------------------------------------------------------------------------------


def _image_check(source: Path | IO[bytes], *, label: str, decode: bool) -> int:
    """Open an image as one of the accepted formats and return its page count (frames).

    decode=False opens and verifies it (header, size, checksums where the format has
    them); decode=True also decodes every frame, which catches truncated data.
    """
    limits = _image_limits(max_frames=settings.MAX_PAGES if decode else None)
    try:
        return image_check(source, limits=limits, decode=decode)
    except ImageRefused as refused:
        raise _image_refusal(refused, label) from None


def _image_limits(*, max_frames: int | None = None) -> ImageLimits:
    return ImageLimits(max_pixels=settings.IMAGE_MAX_PIXELS, formats=_PILLOW_FORMATS, max_frames=max_frames)


def _image_refusal(refused: ImageRefused, label: str) -> ServiceError:
    """The intake problem for an image Pillow refused (core.images)."""
    if isinstance(refused, ImageTooManyFrames):
        return _too_many_pages(refused.frames)
    if isinstance(refused, ImageTooLarge):
        if refused.width is None:
            return ImageOverPixelLimit(f"{label} has more pixels than allowed (a decompression-bomb guard).")
        return ImageOverPixelLimit(
            f"{label} is {refused.width} x {refused.height} pixels; at most {refused.max_pixels} pixels are allowed.",
        )
    if isinstance(refused, ImageEmpty):
        return FileCorrupt(f"{label} has no pixels.")
    logger.info("%s refused: %r", label, refused)
    return FileCorrupt(f"{label} could not be read: it is damaged or truncated.")


# --- Zip -------------------------------------------------------------------------------------


def _zip_inspect(path: Path) -> SourceInspection:
    with path.open("rb") as file:
        _zip_directory_check(file)
        try:
            archive = zipfile.ZipFile(file)
        except Exception as error:  # zipfile's errors for bytes that are not a readable zip
            logger.info("zip refused: %r", error)
            raise FileCorrupt("The zip could not be read: it is damaged or truncated.") from None
        with archive:
            infos = archive.infolist()
            _zip_safety_check(infos)
            _zip_size_check(infos)
            images = _zip_images_select(infos)
            _zip_images_check(archive, images)
    return _pages_only(SourceKind.ZIP, len(images), tuple(info.filename for info in images))


def _zip_directory_check(file: IO[bytes]) -> None:
    """Refuse a central directory too big for ZIP_MAX_ENTRIES before zipfile loads it.

    Reads the end record the way zipfile does (its last signature in the final 64 KiB).
    """
    file.seek(0, os.SEEK_END)
    size = file.tell()
    start = max(size - (1 << 16) - _ZIP_END.size, 0)
    file.seek(start)
    tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _ZIP_END.size:
        raise FileCorrupt("The zip could not be read: it has no directory.")
    entries, directory_bytes = _ZIP_END.unpack_from(tail, at)[4:6]
    locator_at = start + at - _ZIP64_LOCATOR.size
    if locator_at >= _ZIP64_END.size:
        file.seek(locator_at)
        locator = file.read(_ZIP64_LOCATOR.size)
        if locator[:4] == b"PK\x06\x07":
            file.seek(locator_at - _ZIP64_END.size)
            record = file.read(_ZIP64_END.size)
            if record[:4] == b"PK\x06\x06":
                entries, directory_bytes = _ZIP64_END.unpack(record)[7:9]
    limit = settings.ZIP_MAX_ENTRIES
    if entries > limit or directory_bytes > limit * _DIRECTORY_BYTES_PER_ENTRY:
        raise ZipTooLarge(f"The zip has more than {limit} entries.", max_entries=limit)
    file.seek(0)


def _zip_safety_check(infos: list[zipfile.ZipInfo]) -> None:
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        if info.flag_bits & _ZIP_ENCRYPTED_FLAGS:
            raise ZipUnsafe(f"The zip entry {name!r} is encrypted.")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ZipUnsafe(f"The zip entry {name!r} is a link.")
        key = "/".join(_zip_path_parts(name))
        if key in seen:
            raise ZipUnsafe(f"The zip holds {name!r} twice.")
        seen.add(key)


def _zip_path_parts(name: str) -> list[str]:
    """The entry's folders and name, backslashes read as separators; unsafe ones refused."""
    unified = name.replace("\\", "/")
    if unified.startswith("/") or _DRIVE_LETTER.match(unified):
        raise ZipUnsafe(f"The zip entry {name!r} has an absolute path.")
    parts = [part for part in unified.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ZipUnsafe(f"The zip entry {name!r} points outside the zip's folder.")
    return parts


def _zip_size_check(infos: list[zipfile.ZipInfo]) -> None:
    if len(infos) > settings.ZIP_MAX_ENTRIES:
        raise ZipTooLarge(
            f"The zip has {len(infos)} entries; at most {settings.ZIP_MAX_ENTRIES} are allowed.",
            max_entries=settings.ZIP_MAX_ENTRIES,
        )
    total = 0
    for info in infos:
        total += info.file_size
        if total > settings.ZIP_MAX_UNCOMPRESSED_BYTES:
            raise ZipTooLarge(
                f"The zip unpacks to more than {settings.ZIP_MAX_UNCOMPRESSED_BYTES} bytes.",
                max_uncompressed_bytes=settings.ZIP_MAX_UNCOMPRESSED_BYTES,
            )
        if info.file_size > _RATIO_MIN_BYTES and info.file_size > settings.ZIP_MAX_RATIO * info.compress_size:
            raise ZipTooLarge(
                f"The zip entry {info.filename!r} compresses more than {settings.ZIP_MAX_RATIO} to 1.",
                max_ratio=settings.ZIP_MAX_RATIO,
            )


def _is_junk(parts: list[str]) -> bool:
    """Files the OS leaves behind (and hidden ones): ignored, never pages."""
    return (
        parts[-1].casefold() in _JUNK_NAMES
        or any(part.casefold() in _JUNK_FOLDERS for part in parts)
        or any(part.startswith(".") for part in parts)
    )


def _zip_images_select(infos: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The image entries in page order; other files refused, folders and junk skipped."""
    images: list[zipfile.ZipInfo] = []
    unsupported: list[str] = []
    for info in infos:
        parts = _zip_path_parts(info.filename)
        if not parts or info.filename.replace("\\", "/").endswith("/") or _is_junk(parts):
            continue
        if extension_of(parts[-1]) in IMAGE_EXTENSIONS:
            images.append(info)
        else:
            unsupported.append(info.filename)
    _unsupported_check(unsupported, where="zip")
    _pages_check(len(images), where="zip")
    return sorted(images, key=lambda info: natural_key(info.filename))


def _unsupported_check(names: list[str], *, where: str) -> None:
    if not names:
        return
    listed = sorted(names, key=natural_key)[:_LISTED_ENTRIES_MAX]
    raise ZipEntryUnsupported(
        f"The {where} holds {len(names)} file(s) that are not PNG, JPEG, WebP or TIFF images: {', '.join(listed[:3])}"
        + ("..." if len(names) > 3 else "."),
        entries=listed,
    )


def _pages_check(images: int, *, where: str) -> None:
    if images == 0:
        raise ZipNoImages(f"The {where} holds no images.")
    if images > settings.MAX_PAGES:
        raise _too_many_pages(images)


def _zip_images_check(archive: zipfile.ZipFile, images: list[zipfile.ZipInfo]) -> None:
    """Read every image entry (capped) and check it opens as an image of its kind."""
    budget = settings.ZIP_MAX_UNCOMPRESSED_BYTES
    unsupported: list[str] = []
    for info in images:
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
            budget -= _zip_entry_copy(archive, info, spool, limit=min(info.file_size, budget))
            spool.seek(0)
            if _content_kind(spool.read(_SNIFF_BYTES)) != SourceKind.IMAGE:
                unsupported.append(info.filename)
                continue
            spool.seek(0)
            _image_check(spool, label=f"The image {info.filename!r} in the zip", decode=False)
    _unsupported_check(unsupported, where="zip")


def _zip_entry_copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: IO[bytes], *, limit: int) -> int:
    """Copy an entry's bytes, refusing more than `limit` and any mismatch with its header."""
    name = info.filename
    copied = 0
    with _zip_read_errors(name):
        stream = archive.open(info)
    with stream:
        while True:
            with _zip_read_errors(name):
                chunk = stream.read(_READ_CHUNK_BYTES)
            if not chunk:
                break
            copied += len(chunk)
            if copied > limit:
                raise ZipTooLarge(
                    f"The zip entry {name!r} unpacks to more bytes than its header declares or the limits allow.",
                )
            target.write(chunk)
    if copied != info.file_size:
        raise FileCorrupt(f"The zip entry {name!r} is shorter than its header declares.")
    return copied


@contextlib.contextmanager
def _zip_read_errors(name: str) -> Iterator[None]:
    try:
        yield
    except Exception as error:  # BadZipFile (bad CRC, header mismatch), zlib.error, EOFError, ...
        logger.info("zip entry %r refused: %r", name, error)
        raise FileCorrupt(
            f"The zip entry {name!r} could not be read or does not match its header: the zip is damaged.",
        ) from None


# --- Folder (server path) --------------------------------------------------------------------


def _folder_inspect(path: Path) -> SourceInspection:
    """The images directly in a folder, in natural order; the same checks as a zip's."""
    images: list[str] = []
    unsupported: list[str] = []
    seen = 0
    with os.scandir(path) as listing:
        for entry in listing:
            seen += 1
            if seen > settings.ZIP_MAX_ENTRIES:
                raise ZipTooLarge(
                    f"The folder has more than {settings.ZIP_MAX_ENTRIES} entries.",
                    max_entries=settings.ZIP_MAX_ENTRIES,
                )
            if _is_junk([entry.name]):
                continue
            if entry.is_symlink():
                raise ZipUnsafe(f"The folder holds a link ({entry.name!r}); links are not followed.")
            if entry.is_dir(follow_symlinks=False):
                continue
            if entry.is_file(follow_symlinks=False) and extension_of(entry.name) in IMAGE_EXTENSIONS:
                images.append(entry.name)
            else:
                unsupported.append(entry.name)
    _unsupported_check(unsupported, where="folder")
    _pages_check(len(images), where="folder")
    images.sort(key=natural_key)
    for name in images:
        with (path / name).open("rb") as file:
            if _content_kind(file.read(_SNIFF_BYTES)) != SourceKind.IMAGE:
                unsupported.append(name)
                continue
        _image_check(path / name, label=f"The image {name!r} in the folder", decode=False)
    _unsupported_check(unsupported, where="folder")
    return _pages_only(SourceKind.FOLDER, len(images), tuple(images))
