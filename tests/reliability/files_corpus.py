"""A corpus of hostile files, every one generated here byte by byte (nothing downloaded).

Each `Hostile` names what the service must do with it: refuse it at upload with a problem
code, or accept it and then either normalize it into a known number of clean pages or fail
the project with a problem code. The families:

- intake: the cases the intake's own tests check, now sent through the API;
- polyglot: files that are two formats at once, or whose name lies about the content;
- dimensions: headers claiming huge sizes, real decompression bombs, frame-count bombs;
- zip: nested zips, many entries, unsafe names, links, bombs by ratio and by overlap,
  lying directories;
- pdf: malformed PDFs (truncated xref, broken objects, wrong lengths, encryption, no
  pages, page tree loops, huge page counts, huge pages, recursive forms, stream bombs).

`pdf_mutants()` is the hypothesis strategy for the generated PDFs: a valid PDF from
tests/support/pdfs.py with bytes truncated, overwritten, inserted, deleted or with
structural tokens replaced.
"""

from __future__ import annotations

import io
import re
import stat
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from hypothesis import strategies as st
from PIL import Image

from tests.support.pdfs import encrypted_pdf_bytes, pdf_assemble, pdf_bytes
from tests.support.zips import central_header_at, encrypted_flag_set


@dataclass(frozen=True)
class Hostile:
    """One hostile file and what must become of it.

    `refused`: the problem code of the 4xx at upload (None when the upload is accepted).
    `pages`: the pages an accepted file normalizes into; `failure`: the problem code of
    the Failed project instead. `avatar`: whether PUT /v1/me/avatar accepts it.
    `absent`: bytes that must not survive into any stored page image (a polyglot's payload).
    """

    family: str
    id: str
    file_name: str
    build: Callable[[], bytes]
    refused: str | None = None
    pages: int | None = None
    failure: str | None = None
    avatar: bool = False
    absent: tuple[bytes, ...] = field(default=())

    def content(self) -> bytes:
        return _built(self.build)


@cache
def _built(build: Callable[[], bytes]) -> bytes:
    return build()


# --- Building blocks -------------------------------------------------------------------------


def image(fmt: str = "PNG", size: tuple[int, int] = (40, 60), color: str = "white", **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt, **options)
    return buffer.getvalue()


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_of(width: int, height: int, idat: bytes, *, depth: int = 8, color: int = 2, extra: bytes = b"") -> bytes:
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + extra + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")
    )


def png_claiming(width: int, height: int) -> bytes:
    """A PNG header announcing a huge size, with a few bytes of pixel data."""
    return png_of(width, height, zlib.compress(b"\0" * 64))


def png_bomb(side: int) -> bytes:
    """A real 1-bit PNG of side x side pixels, all white: a few hundred kilobytes that
    decode to side * side pixels (every row, filter byte and all, is in the stream)."""
    row = b"\0" + b"\xff" * ((side + 7) // 8)
    squeeze = zlib.compressobj(9)
    parts = [squeeze.compress(row * 1000) for _ in range(side // 1000)]
    parts += [squeeze.compress(row * (side % 1000)), squeeze.flush()]
    return png_of(side, side, b"".join(parts), depth=1, color=0)


def png_with_text_bomb() -> bytes:
    """A 40 x 60 PNG whose compressed text chunk unpacks to 64 MiB."""
    text = b"Comment\0\0" + zlib.compress(b"A" * (64 * 1024 * 1024), 9)
    real = image("PNG")
    return real[:33] + png_chunk(b"zTXt", text) + real[33:]


def apng_claiming_frames(frames: int) -> bytes:
    """A one-frame PNG whose animation control chunk announces `frames` frames."""
    real = image("PNG")
    control = png_chunk(b"acTL", struct.pack(">II", frames, 0))
    frame = png_chunk(b"fcTL", struct.pack(">IIIIIHHBB", 0, 40, 60, 0, 0, 1, 1, 0, 0))
    return real[:33] + control + frame + real[33:]


def tiff_claiming(width: int, height: int, *, next_ifd_self: bool = False) -> bytes:
    """A little-endian TIFF header of one 8-bit grey strip of 64 bytes claiming width x height.

    next_ifd_self: the directory's "next directory" offset points at itself (a loop)."""
    entries = [
        (256, 4, 1, width),  # ImageWidth, LONG
        (257, 4, 1, height),  # ImageLength
        (258, 3, 1, 8),  # BitsPerSample
        (259, 3, 1, 1),  # Compression: none
        (262, 3, 1, 1),  # Photometric: black is zero
        (273, 4, 1, 0),  # StripOffsets (filled below)
        (277, 3, 1, 1),  # SamplesPerPixel
        (278, 4, 1, height),  # RowsPerStrip
        (279, 4, 1, 64),  # StripByteCounts
    ]
    ifd_at = 8
    ifd_size = 2 + 12 * len(entries) + 4
    data_at = ifd_at + ifd_size
    out = bytearray(b"II*\x00" + struct.pack("<I", ifd_at) + struct.pack("<H", len(entries)))
    for tag, kind, count, value in entries:
        value = data_at if tag == 273 else value
        packed = struct.pack("<I", value) if kind == 4 else struct.pack("<HH", value, 0)
        out += struct.pack("<HHI", tag, kind, count) + packed
    out += struct.pack("<I", ifd_at if next_ifd_self else 0)
    out += b"\x80" * 64
    return bytes(out)


def tiff_frames(frames: int) -> bytes:
    """A TIFF of `frames` directories, each a 1 x 1 grey image (its pixel inside the entry)."""
    entries = [(256, 1), (257, 1), (258, 8), (259, 1), (262, 1), (273, 0), (277, 1), (278, 1), (279, 1)]
    ifd_size = 2 + 12 * len(entries) + 4
    out = bytearray(b"II*\x00" + struct.pack("<I", 8))
    for number in range(frames):
        at = len(out)
        out += struct.pack("<H", len(entries))
        for tag, value in entries:
            # A one-byte strip sits in the value field of StripOffsets' own entry.
            value = at + 2 + 12 * 5 + 8 if tag == 273 else value
            out += struct.pack("<HHII", tag, 4 if tag in (256, 257, 273, 278, 279) else 3, 1, value)
        out += struct.pack("<I", at + ifd_size if number + 1 < frames else 0)
    return bytes(out)


def webp_claiming(width: int, height: int) -> bytes:
    """A WebP extended header (VP8X) announcing a canvas of width x height, then a tiny image."""
    real = image("WEBP", lossless=True)
    body = real[12:]  # the VP8L chunk of a 40 x 60 image
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + (width - 1).to_bytes(3, "little")
    vp8x += (height - 1).to_bytes(3, "little")
    payload = b"WEBP" + vp8x + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def jpeg_claiming(width: int, height: int) -> bytes:
    """A real small JPEG whose frame header (SOF0) is edited to claim width x height."""
    data = bytearray(image("JPEG", size=(16, 16)))
    at = data.index(b"\xff\xc0")
    struct.pack_into(">HH", data, at + 5, height, width)
    return bytes(data)


def jpeg_with_comment(comment: bytes) -> bytes:
    """A valid JPEG carrying `comment` in a COM segment right after its start marker."""
    real = image("JPEG", size=(64, 48), color="navy")
    return real[:2] + b"\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment + real[2:]


def png_with_text(keyword: bytes, text: bytes) -> bytes:
    real = image("PNG")
    return real[:33] + png_chunk(b"tEXt", keyword + b"\0" + text) + real[33:]


def zip_of(
    entries: list[tuple[str | zipfile.ZipInfo, bytes]], compression: int = zipfile.ZIP_DEFLATED, comment: bytes = b""
) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name"
        with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
            for name, content in entries:
                archive.writestr(name, content)
            archive.comment = comment
    return buffer.getvalue()


def nested_zip(depth: int) -> bytes:
    content = zip_of([("page1.png", image())])
    for level in range(depth):
        content = zip_of([(f"level{level}.zip", content)])
    return content


def symlink_entry(name: str) -> zipfile.ZipInfo:
    link = zipfile.ZipInfo(name)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    return link


def zip_edit_central(data: bytes, name: str, offset: int, fmt: str, value: int) -> bytes:
    edited = bytearray(data)
    struct.pack_into(fmt, edited, central_header_at(data, name) + offset, value)
    return bytes(edited)


def zip_edit_end(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    edited = bytearray(data)
    struct.pack_into(fmt, edited, data.rindex(b"PK\x05\x06") + offset, *values)
    return bytes(edited)


def zip_method(data: bytes, name: str, method: int) -> bytes:
    """The entry marked as compressed with `method` (local and central headers)."""
    edited = bytearray(data)
    central = central_header_at(data, name)
    local = struct.unpack_from("<I", data, central + 42)[0]
    struct.pack_into("<H", edited, central + 10, method)
    struct.pack_into("<H", edited, local + 8, method)
    return bytes(edited)


def zip_overlapping(entries: int, kernel_bytes: int) -> bytes:
    """A non-recursive zip bomb: `entries` central directory records all pointing at one
    deflated kernel (each record names its own file, the local header names the first)."""
    data = zlib.compressobj(9, zlib.DEFLATED, -15)
    kernel = data.compress(b"\0" * kernel_bytes) + data.flush()
    crc = zlib.crc32(b"\0" * kernel_bytes)
    first = b"page0.png"
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(kernel), kernel_bytes, len(first), 0)
    body = local + first + kernel
    directory = bytearray()
    for number in range(entries):
        name = f"page{number}.png".encode()
        directory += struct.pack(
            "<4s6H3L5H2L",
            b"PK\x01\x02",
            20,
            20,
            0,
            8,
            0,
            0,
            crc,
            len(kernel),
            kernel_bytes,
            len(name),
            0,
            0,
            0,
            0,
            0,
            0,
        )
        directory += name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, len(directory), len(body), 0)
    return body + bytes(directory) + end


def zip64_claiming_entries(entries: int) -> bytes:
    """A small zip whose zip64 end record claims `entries` entries."""
    data = zip_of([("page1.png", image())])
    end_at = data.rindex(b"PK\x05\x06")
    directory_size, directory_at = struct.unpack_from("<2L", data, end_at + 12)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, directory_size, directory_at)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, end_at, 1)
    end = zip_edit_end(data, 8, "<HH", 0xFFFF, 0xFFFF)[end_at:]
    return data[:end_at] + record + locator + end


def zip_bomb(unpacked_bytes: int, name: str = "page1.png") -> bytes:
    """One deflated entry of zeros: the ratio is about 1000 to 1."""
    return zip_of([(name, b"\0" * unpacked_bytes)])


# --- PDFs ------------------------------------------------------------------------------------


def pdf_of(objects: dict[int, bytes], root: int = 1, extra_trailer: bytes = b"") -> bytes:
    """A PDF of these objects (numbers may be missing) with a correct cross-reference table."""
    return pdf_assemble(objects, b"/Root %d 0 R " % root + extra_trailer)


def _stream(content: bytes, *, flate: bool = False, dictionary: bytes = b"") -> bytes:
    data = zlib.compress(content, 9) if flate else content
    filters = b" /Filter /FlateDecode" if flate else b""
    return b"<< /Length %d%s %s>>\nstream\n" % (len(data), filters, dictionary) + data + b"\nendstream"


_CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
_PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"
_DRAWING = b"0.5 w 72 72 m 300 72 l 300 300 l 72 300 l h S"


def pdf_page_tree(kids: bytes, count: int, page: bytes = _PAGE, contents: bytes = _DRAWING) -> bytes:
    return pdf_of(
        {
            1: _CATALOG,
            2: b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count,
            3: page,
            4: _stream(contents),
        }
    )


def pdf_truncated_xref() -> bytes:
    data = pdf_bytes(3, text=lambda n: f"Page {n} of a book")
    return data[: data.index(b"xref") + 40]


def pdf_xref_offsets_wrong() -> bytes:
    data = pdf_bytes(2)
    xref = data.index(b"xref")
    return data[:xref] + re.sub(rb"\d{10} 00000 n", b"0000000001 00000 n", data[xref:])


def pdf_broken_objects() -> bytes:
    data = pdf_bytes(3)
    return data.replace(b" 0 obj", b" 0 jbo").replace(b"endobj", b"enboj")


def pdf_wrong_length(length: int) -> bytes:
    return re.sub(rb"/Length \d+", b"/Length %d" % length, pdf_bytes(2, text=lambda n: f"Page {n}"))


def pdf_page_tree_loop() -> bytes:
    """The page tree's node lists itself as its own kid."""
    return pdf_page_tree(b"2 0 R", 1)


def pdf_two_node_loop() -> bytes:
    """Two page tree nodes, each the other's kid."""
    return pdf_of(
        {
            1: _CATALOG,
            2: b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
            3: _PAGE,
            4: _stream(_DRAWING),
            5: b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 3 0 R] /Count 1 >>",
        }
    )


def pdf_count_lies(count: int) -> bytes:
    """One page, and a page tree claiming `count`."""
    return pdf_page_tree(b"3 0 R", count)


def pdf_same_page_repeated(times: int, padding: int = 0) -> bytes:
    """A small file listing one page object `times` times: a page-count bomb. `padding`
    null objects make the file hold as many objects as it claims pages (poppler refuses
    a page count larger than the number of objects)."""
    objects = {
        1: _CATALOG,
        2: b"<< /Type /Pages /Kids [" + b" ".join([b"3 0 R"] * times) + b"] /Count %d >>" % times,
        3: _PAGE,
        4: _stream(_DRAWING),
    }
    objects.update({number: b"null" for number in range(5, 5 + padding)})
    return pdf_of(objects)


def pdf_huge_page(width: int, height: int) -> bytes:
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R >>" % (width, height)
    return pdf_page_tree(b"3 0 R", 1, page=page)


def pdf_empty_mediabox() -> bytes:
    return pdf_page_tree(b"3 0 R", 1, page=b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 0 0] /Contents 4 0 R >>")


def pdf_recursive_form() -> bytes:
    """A page drawing a form XObject that draws itself."""
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /XObject << /X 5 0 R >> >> >>"
    )
    form = _stream(b"/X Do", dictionary=b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources 6 0 R ")
    return pdf_of(
        {
            1: _CATALOG,
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: page,
            4: _stream(b"/X Do"),
            5: form,
            6: b"<< /XObject << /X 5 0 R >> >>",
        }
    )


def pdf_stream_bomb(unpacked_bytes: int) -> bytes:
    """A page whose content stream inflates from a few hundred KB to `unpacked_bytes` of spaces."""
    page_objects = {
        1: _CATALOG,
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: _PAGE,
        4: _stream(b" " * unpacked_bytes + _DRAWING, flate=True),
    }
    return pdf_of(page_objects)


def pdf_image_bomb(side: int) -> bytes:
    """A normal page drawing a side x side grey image that deflates from a few hundred KB."""
    squeeze = zlib.compressobj(9)
    row = b"\xff" * side
    data = b"".join([squeeze.compress(row * 1000) for _ in range(side // 1000)]) + squeeze.flush()
    picture = b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 " % (
        side,
        side,
    )
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /XObject << /Im 5 0 R >> >> >>"
    )
    return pdf_of(
        {
            1: _CATALOG,
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: page,
            4: _stream(b"612 0 0 792 0 0 cm /Im Do"),
            5: b"<< %s/Filter /FlateDecode /Length %d >>\nstream\n" % (picture, len(data)) + data + b"\nendstream",
        }
    )


def animated_webp(frames: int) -> bytes:
    buffer = io.BytesIO()
    colors = ["white", "red", "blue", "green", "black"]
    pictures = [Image.new("RGB", (30, 40), colors[number % len(colors)]) for number in range(frames)]
    pictures[0].save(buffer, format="WEBP", save_all=True, append_images=pictures[1:], lossless=True)
    return buffer.getvalue()


def pdf_deep_nesting(depth: int) -> bytes:
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Deep "
        + (b"[" * depth + b"]" * depth)
        + b" >>"
    )
    return pdf_page_tree(b"3 0 R", 1, page=page)


def pdf_active_content() -> bytes:
    """A valid page with a JavaScript open action and an embedded executable: harmless to us."""
    return pdf_of(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R /OpenAction 5 0 R /Names << /EmbeddedFiles << /Names "
            b"[(setup.exe) 6 0 R] >> >> >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: _PAGE,
            4: _stream(_DRAWING),
            5: b"<< /S /JavaScript /JS (app.alert\\('hello'\\);) >>",
            6: b"<< /Type /Filespec /F (setup.exe) /EF << /F 7 0 R >> >>",
            7: _stream(b"MZ\x90\x00" + b"\0" * 60, dictionary=b"/Type /EmbeddedFile "),
        }
    )


def pdf_catalog_missing() -> bytes:
    return pdf_of({1: b"<< /Type /Pages /Kids [] /Count 0 >>", 2: _stream(_DRAWING)}, root=9)


def pdf_and_zip() -> bytes:
    """A valid PDF with a zip (a page image) appended: PDF readers and zip readers both open it."""
    return pdf_bytes(1) + zip_of([("page1.png", image())])


def zip_starting_with_pdf() -> bytes:
    """A zip whose first stored entry is a PDF, so `%PDF-` sits in its first kilobyte."""
    return zip_of([("a.pdf", pdf_bytes(1)), ("page1.png", image())], compression=zipfile.ZIP_STORED)


def png_and_zip() -> bytes:
    return image("PNG") + zip_of([("evil.sh", b"#!/bin/sh\nrm -rf /\n")], compression=zipfile.ZIP_STORED)


_SCRIPT = b"<html><body><script>alert(document.cookie)</script></body></html>"


# --- The corpus ------------------------------------------------------------------------------


def _refused(family: str, id: str, name: str, build: Callable[[], bytes], code: str) -> Hostile:
    return Hostile(family, id, name, build, refused=code)


def corpus() -> list[Hostile]:
    """Every hostile file, each with its fate; ids are unique."""
    found = _intake() + _polyglots() + _dimensions() + _zips() + _pdfs()
    ids = [case.id for case in found]
    assert len(ids) == len(set(ids)), "hostile file ids must be unique"
    return found


def _intake() -> list[Hostile]:
    def truncated_pdf() -> bytes:
        content = pdf_bytes(3, text=lambda n: "some words")
        return content[: len(content) // 2]

    def truncated_jpeg() -> bytes:
        content = image("JPEG", size=(300, 300), color="red")
        return content[: len(content) // 2]

    def damaged_png_in_zip() -> bytes:
        png = bytearray(image("PNG", size=(100, 100)))
        png[45:60] = b"\xff" * 15
        return zip_of([("page1.png", image()), ("page2.png", bytes(png))])

    def zip_declaring(delta: int) -> bytes:
        png = image("PNG", size=(200, 200))
        content = zip_of([("page1.png", png)], compression=zipfile.ZIP_STORED)
        return zip_edit_central(content, "page1.png", 24, "<I", len(png) + delta)

    def zip_lying_bomb() -> bytes:
        return zip_edit_central(zip_bomb(20 * 1024 * 1024), "page1.png", 24, "<I", 4096)

    r = _refused
    i = "intake"
    return [
        r(i, "empty-file", "book.pdf", lambda: b"", "file_empty"),
        r(i, "plain-text-named-pdf", "book.pdf", lambda: b"Once upon a time.\n" * 20, "file_type_unsupported"),
        r(i, "pdf-header-after-1k", "book.pdf", lambda: b" " * 1024 + pdf_bytes(1), "file_type_unsupported"),
        r(i, "pdf-named-png", "page.png", lambda: pdf_bytes(1), "file_type_mismatch"),
        r(i, "png-named-pdf", "scan.pdf", lambda: image("PNG"), "file_type_mismatch"),
        r(i, "png-named-bmp", "page.bmp", lambda: image("PNG"), "file_type_unsupported"),
        r(i, "png-without-extension", "page", lambda: image("PNG"), "file_type_unsupported"),
        r(i, "truncated-pdf", "book.pdf", truncated_pdf, "file_corrupt"),
        r(i, "garbage-after-pdf-header", "book.pdf", lambda: b"%PDF-1.7\n" + bytes(range(256)) * 16, "file_corrupt"),
        r(i, "pdf-user-password", "book.pdf", lambda: encrypted_pdf_bytes(2), "pdf_encrypted"),
        r(
            i,
            "pdf-owner-password-only",
            "book.pdf",
            lambda: encrypted_pdf_bytes(2, text=lambda n: "readable", user_password=""),
            "pdf_encrypted",
        ),
        r(i, "pdf-zero-pages", "book.pdf", lambda: pdf_bytes(0), "pdf_no_pages"),
        r(i, "png-signature-then-garbage", "page.png", lambda: b"\x89PNG\r\n\x1a\n" + b"\x07" * 500, "file_corrupt"),
        r(i, "truncated-jpeg", "page.jpg", truncated_jpeg, "file_corrupt"),
        r(i, "damaged-zip", "book.zip", lambda: b"PK\x03\x04" + bytes(range(256)), "file_corrupt"),
        r(i, "empty-zip", "book.zip", lambda: zip_of([]), "zip_no_images"),
        r(
            i,
            "zip-of-os-junk",
            "book.zip",
            lambda: zip_of([("__MACOSX/._a.png", b"x"), (".DS_Store", b"x"), ("Thumbs.db", b"x"), ("pages/", b"")]),
            "zip_no_images",
        ),
        r(
            i,
            "zip-with-text-file",
            "book.zip",
            lambda: zip_of([("page1.png", image()), ("notes.txt", b"hello")]),
            "zip_entry_unsupported",
        ),
        r(
            i,
            "zip-encrypted-entry",
            "book.zip",
            lambda: encrypted_flag_set(zip_of([("page1.png", image()), ("page2.png", image())]), "page2.png"),
            "zip_unsafe",
        ),
        r(
            i,
            "zip-duplicate-names",
            "book.zip",
            lambda: zip_of([("page1.png", image()), ("page1.png", image(color="black"))]),
            "zip_unsafe",
        ),
        r(i, "zip-entry-declares-fewer-bytes", "book.zip", lambda: zip_declaring(-500), "file_corrupt"),
        r(i, "zip-entry-declares-more-bytes", "book.zip", lambda: zip_declaring(10), "file_corrupt"),
        r(i, "zip-bomb-lying-size", "book.zip", zip_lying_bomb, "file_corrupt"),
        r(i, "zip-damaged-image", "book.zip", damaged_png_in_zip, "file_corrupt"),
        r(
            i,
            "zip-pdf-named-jpg",
            "book.zip",
            lambda: zip_of([("page1.png", image()), ("page2.jpg", pdf_bytes(1))]),
            "zip_entry_unsupported",
        ),
        r(i, "gif-named-png", "page.png", lambda: image("GIF"), "file_type_unsupported"),
        r(i, "bmp-named-png", "page.png", lambda: image("BMP"), "file_type_unsupported"),
        r(
            i,
            "svg-with-script-named-png",
            "page.png",
            lambda: b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
            "file_type_unsupported",
        ),
        r(i, "html-named-pdf", "book.pdf", lambda: _SCRIPT, "file_type_unsupported"),
        r(i, "executable-named-pdf", "book.pdf", lambda: b"MZ\x90\x00" + b"\0" * 4000, "file_type_unsupported"),
        r(i, "elf-named-zip", "book.zip", lambda: b"\x7fELF\x02\x01\x01" + b"\0" * 4000, "file_type_unsupported"),
    ]


def _polyglots() -> list[Hostile]:
    p = "polyglot"
    r = _refused
    return [
        Hostile(p, "pdf-that-is-also-a-zip", "book.pdf", pdf_and_zip, pages=1, absent=(b"PK\x03\x04",)),
        r(p, "pdf-zip-named-zip", "book.zip", pdf_and_zip, "file_type_mismatch"),
        r(p, "zip-with-pdf-first-named-pdf", "book.pdf", zip_starting_with_pdf, "file_type_mismatch"),
        r(p, "zip-with-pdf-first-named-zip", "book.zip", zip_starting_with_pdf, "zip_entry_unsupported"),
        Hostile(p, "png-with-zip-appended", "page.png", png_and_zip, pages=1, avatar=True, absent=(b"PK\x03\x04",)),
        r(p, "png-zip-named-zip", "book.zip", png_and_zip, "file_type_mismatch"),
        Hostile(
            p,
            "jpeg-html-polyglot",
            "page.jpg",
            lambda: jpeg_with_comment(_SCRIPT),
            pages=1,
            avatar=True,
            absent=(b"<script",),
        ),
        r(p, "html-then-jpeg", "page.jpg", lambda: _SCRIPT + image("JPEG"), "file_type_unsupported"),
        r(
            p,
            "jpeg-carrying-pdf-named-pdf",
            "book.pdf",
            lambda: jpeg_with_comment(pdf_bytes(1)[:400]),
            "file_type_mismatch",
        ),
        Hostile(
            p,
            "png-carrying-pdf-header",
            "page.png",
            lambda: png_with_text(b"Comment", b"%PDF-1.4 " + _SCRIPT),
            pages=1,
            avatar=True,
            absent=(b"%PDF-", b"<script"),
        ),
        r(
            p,
            "png-carrying-pdf-named-pdf",
            "book.pdf",
            lambda: png_with_text(b"Comment", b"%PDF-1.4"),
            "file_type_mismatch",
        ),
        r(p, "zip-named-jpg", "page.jpg", lambda: zip_of([("page1.png", image())]), "file_type_mismatch"),
        r(p, "pdf-named-tif", "page.tif", lambda: pdf_bytes(1), "file_type_mismatch"),
        Hostile(p, "jpeg-named-png", "page.png", lambda: image("JPEG"), pages=1, avatar=True),
        Hostile(p, "webp-named-jpeg", "page.jpeg", lambda: image("WEBP"), pages=1, avatar=True),
        Hostile(p, "tiff-named-png", "page.png", lambda: image("TIFF"), pages=1),
        r(p, "double-extension-exe", "book.pdf.exe", lambda: pdf_bytes(1), "file_type_unsupported"),
        r(p, "png-named-png-dot-pdf", "page.png.pdf", lambda: image("PNG"), "file_type_mismatch"),
        r(p, "right-to-left-override-name", "page\u202egnp.pdf", lambda: image("PNG"), "file_type_mismatch"),
        Hostile(p, "traversal-in-file-name", "../../../etc/passwd.png", lambda: image("PNG"), pages=1, avatar=True),
        Hostile(p, "very-long-file-name", "b" * 5000 + ".pdf", lambda: pdf_bytes(1), pages=1),
        Hostile(p, "control-characters-in-name", "bo\x00o\x01k\t.pdf", lambda: pdf_bytes(1), pages=1),
        # A line break ends the part's header line: the name loses its extension.
        r(p, "line-break-in-name", "book\r\n.pdf", lambda: pdf_bytes(1), "file_type_unsupported"),
    ]


def _dimensions() -> list[Hostile]:
    d = "dimensions"
    r = _refused

    def zip_with_claiming_png() -> bytes:
        return zip_of([("page1.png", image()), ("page2.png", png_claiming(100_000, 100_000))])

    return [
        r(d, "png-claiming-100000-square", "bomb.png", lambda: png_claiming(100_000, 100_000), "image_too_large"),
        r(d, "webp-claiming-100000-square", "bomb.webp", lambda: webp_claiming(100_000, 100_000), "image_too_large"),
        r(d, "tiff-claiming-100000-square", "bomb.tif", lambda: tiff_claiming(100_000, 100_000), "image_too_large"),
        r(d, "jpeg-claiming-65000-square", "bomb.jpg", lambda: jpeg_claiming(65_000, 65_000), "image_too_large"),
        r(d, "png-claiming-zero-width", "page.png", lambda: png_claiming(0, 100), "file_corrupt"),
        r(d, "png-decompression-bomb", "bomb.png", lambda: png_bomb(20_000), "image_too_large"),
        r(d, "png-text-chunk-bomb", "page.png", png_with_text_bomb, "file_corrupt"),
        # The avatar decodes the first frame only: a lying frame count does not matter there.
        Hostile(
            d,
            "apng-claiming-many-frames",
            "page.png",
            lambda: apng_claiming_frames(2_000_000_000),
            refused="too_many_pages",
            avatar=True,
        ),
        Hostile(
            d,
            "apng-missing-its-frames",
            "page.png",
            lambda: apng_claiming_frames(3),
            refused="file_corrupt",
            avatar=True,
        ),
        Hostile(d, "tiff-directory-loop", "page.tif", lambda: tiff_claiming(8, 8, next_ifd_self=True), pages=1),
        r(d, "tiff-more-frames-than-pages", "book.tif", lambda: tiff_frames(5_001), "too_many_pages"),
        r(d, "zip-holding-claiming-png", "book.zip", zip_with_claiming_png, "image_too_large"),
        r(
            d,
            "zip-holding-png-bomb",
            "book.zip",
            lambda: zip_of([("page1.png", png_bomb(20_000))], compression=zipfile.ZIP_STORED),
            "image_too_large",
        ),
        # Under the page limit (100 Mpx) but over the avatar's (40 Mpx): a page, never an avatar.
        Hostile(d, "png-bomb-49-megapixels", "page.png", lambda: png_bomb(7_000), pages=1),
        # A few hundred bytes of JPEG that libjpeg pads out to 81 Mpx: within the page limit.
        Hostile(d, "jpeg-81-megapixels-from-631-bytes", "page.jpg", lambda: jpeg_claiming(9_000, 9_000), pages=1),
        Hostile(d, "pdf-image-bomb-400-megapixels", "book.pdf", lambda: pdf_image_bomb(20_000), pages=1),
        Hostile(d, "animated-webp-3-frames", "book.webp", lambda: animated_webp(3), pages=3, avatar=True),
        Hostile(
            d,
            "pdf-page-200-inches-square",
            "book.pdf",
            lambda: pdf_huge_page(14_400, 14_400),
            failure="image_too_large",
        ),
        Hostile(
            d, "pdf-page-a-billion-points", "book.pdf", lambda: pdf_huge_page(10**9, 10**9), failure="image_too_large"
        ),
    ]


def _zips() -> list[Hostile]:
    z = "zip"
    r = _refused

    def many(count: int, name: str = "e{}.png", content: bytes = b"") -> Callable[[], bytes]:
        return lambda: zip_of([(name.format(n), content) for n in range(count)], compression=zipfile.ZIP_STORED)

    def traversal(name: str) -> Callable[[], bytes]:
        return lambda: zip_of([("page1.png", image()), (name, image())])

    def understated_count() -> bytes:
        return zip_edit_end(many(10_001)(), 8, "<HH", 1, 1)

    def directory_beyond_end() -> bytes:
        return zip_edit_end(zip_of([("page1.png", image())]), 16, "<L", 0x7FFF_FFFF)

    cases = [
        r(z, "zip-in-zip-depth-2", "book.zip", lambda: nested_zip(2), "zip_entry_unsupported"),
        r(z, "zip-in-zip-depth-20", "book.zip", lambda: nested_zip(20), "zip_entry_unsupported"),
        r(
            z,
            "zip-in-zip-named-png",
            "book.zip",
            lambda: zip_of([("page1.png", image()), ("page2.png", nested_zip(3))]),
            "zip_entry_unsupported",
        ),
        r(z, "zip-of-10001-tiny-entries", "book.zip", many(10_001), "zip_too_large"),
        r(z, "zip-understating-its-10001-entries", "book.zip", understated_count, "zip_too_large"),
        r(z, "zip-of-5001-tiny-images", "book.zip", many(5_001, content=image(size=(1, 1))), "too_many_pages"),
        r(z, "zip64-claiming-2-to-40-entries", "book.zip", lambda: zip64_claiming_entries(2**40), "zip_too_large"),
        r(
            z,
            "zip-symlink-entry",
            "book.zip",
            lambda: zip_of([("page1.png", image()), (symlink_entry("page2.png"), b"/etc/passwd")]),
            "zip_unsafe",
        ),
        r(
            z,
            "zip-symlink-to-folder",
            "book.zip",
            lambda: zip_of([(symlink_entry("pages"), b"/"), ("page1.png", image())]),
            "zip_unsafe",
        ),
        r(z, "zip-bomb-by-ratio", "book.zip", lambda: zip_bomb(50 * 1024 * 1024), "zip_too_large"),
        r(
            z,
            "zip-bomb-overlapping-entries",
            "book.zip",
            lambda: zip_overlapping(1_000, 2 * 1024 * 1024),
            "zip_too_large",
        ),
        r(z, "zip-overlapping-small-entries", "book.zip", lambda: zip_overlapping(50, 64 * 1024), "file_corrupt"),
        r(z, "zip-directory-beyond-end", "book.zip", directory_beyond_end, "file_corrupt"),
        r(
            z,
            "zip-unknown-compression-method",
            "book.zip",
            lambda: zip_method(zip_of([("page1.png", image())]), "page1.png", 99),
            "file_corrupt",
        ),
        r(
            z,
            "zip-deflate64-entry",
            "book.zip",
            lambda: zip_method(zip_of([("page1.png", image())]), "page1.png", 9),
            "file_corrupt",
        ),
        Hostile(
            z,
            "zip-entry-name-of-5000-characters",
            "book.zip",
            lambda: zip_of([("p" * 5000 + ".png", image())]),
            pages=1,
        ),
        Hostile(
            z,
            "zip-entry-names-with-control-characters",
            "book.zip",
            lambda: zip_of([("page\x01\x7f\u202e1.png", image()), ("page\t2.png", image())]),
            pages=2,
        ),
        r(z, "zip-only-a-folder-named-png", "book.zip", lambda: zip_of([("page1.png/", b"")]), "zip_no_images"),
        r(
            z,
            "zip-junk-folder-hiding-traversal",
            "book.zip",
            lambda: zip_of([("page1.png", image()), ("__MACOSX/../../evil.png", image())]),
            "zip_unsafe",
        ),
        r(
            z,
            "zip-fake-end-record-in-comment",
            "book.zip",
            lambda: zip_of([("page1.png", image())], comment=b"PK\x05\x06" + b"\0" * 60_000),
            "zip_no_images",
        ),
    ]
    for label, name in [
        ("parent", "../evil.png"),
        ("deep-parent", "pages/../../../../evil.png"),
        ("absolute", "/etc/evil.png"),
        ("drive-letter", "C:/Windows/evil.png"),
        ("backslash-parent", "..\\..\\evil.png"),
        ("unc-path", "\\\\server\\share\\evil.png"),
    ]:
        cases.append(r(z, f"zip-traversal-{label}", "book.zip", traversal(name), "zip_unsafe"))
    return cases


def _pdfs() -> list[Hostile]:
    f = "pdf"
    r = _refused
    return [
        r(f, "pdf-truncated-xref", "book.pdf", pdf_truncated_xref, "file_corrupt"),
        Hostile(f, "pdf-xref-offsets-wrong", "book.pdf", pdf_xref_offsets_wrong, pages=2),
        r(f, "pdf-broken-objects", "book.pdf", pdf_broken_objects, "file_corrupt"),
        Hostile(f, "pdf-length-too-small", "book.pdf", lambda: pdf_wrong_length(1), pages=2),
        Hostile(f, "pdf-length-too-large", "book.pdf", lambda: pdf_wrong_length(10**9), pages=2),
        r(f, "pdf-encrypted-rc4", "book.pdf", lambda: encrypted_pdf_bytes(1, user_password="x"), "pdf_encrypted"),
        Hostile(f, "pdf-page-tree-self-loop", "book.pdf", pdf_page_tree_loop, failure="file_corrupt"),
        Hostile(f, "pdf-page-tree-two-node-loop", "book.pdf", pdf_two_node_loop, pages=1),
        r(f, "pdf-count-claims-a-billion", "book.pdf", lambda: pdf_count_lies(10**9), "file_corrupt"),
        r(f, "pdf-one-page-listed-100000-times", "book.pdf", lambda: pdf_same_page_repeated(100_000), "file_corrupt"),
        r(
            f,
            "pdf-one-page-listed-6000-times-padded",
            "book.pdf",
            lambda: pdf_same_page_repeated(6_000, padding=6_000),
            "too_many_pages",
        ),
        Hostile(f, "pdf-one-page-listed-3-times", "book.pdf", lambda: pdf_same_page_repeated(3), pages=3),
        r(f, "pdf-catalog-missing", "book.pdf", pdf_catalog_missing, "file_corrupt"),
        Hostile(f, "pdf-empty-mediabox", "book.pdf", pdf_empty_mediabox, pages=1),
        Hostile(f, "pdf-recursive-form", "book.pdf", pdf_recursive_form, pages=1),
        Hostile(f, "pdf-content-stream-bomb", "book.pdf", lambda: pdf_stream_bomb(64 * 1024 * 1024), pages=1),
        Hostile(f, "pdf-nested-100000-deep", "book.pdf", lambda: pdf_deep_nesting(100_000), pages=1),
        Hostile(f, "pdf-javascript-and-embedded-exe", "book.pdf", pdf_active_content, pages=1),
    ]


# --- Generated PDFs --------------------------------------------------------------------------

# Tokens whose replacement breaks a PDF's structure in the ways real damage does.
_TOKENS: list[tuple[bytes, bytes]] = [
    (b"/Count ", b"/Count 99999999"),
    (b"/Count ", b"/Count -1"),
    (b"/Length ", b"/Length 0 "),
    (b"/Length ", b"/Length 999999999 "),
    (b"/Kids [", b"/Kids [2 0 R "),
    (b"/Parent 2 0 R", b"/Parent 3 0 R"),
    (b"/MediaBox [0 0 ", b"/MediaBox [0 0 99999999 "),
    (b"/MediaBox [0 0 ", b"/MediaBox [0 0 -"),
    (b"endobj", b""),
    (b"endstream", b""),
    (b"xref", b"xerf"),
    (b"startxref", b"startxerf"),
    (b"/Root 1 0 R", b"/Root 4 0 R"),
    (b"/Type /Pages", b"/Type /Page"),
    (b"/Type /Page ", b"/Type /Pages "),
    (b" 0 R", b" 0 R 0 R"),
    (b"trailer", b""),
    (b"%%EOF", b""),
]


_HEADER_BYTES = len(b"%PDF-1.4\n")


def _mutate(
    draw: st.DrawFn,
    data: bytearray,
    *,
    keep: int,
    overwrite_most: int,
    inserts: st.SearchStrategy[bytes],
    delete_most: int,
    other: Callable[[bytearray, int], None],
) -> None:
    """Damages the data in place 1 to 4 times, never in its first `keep` bytes: each time at a
    drawn offset, it is cut there, overwritten (up to `overwrite_most` bytes), given drawn
    bytes, has up to `delete_most` bytes deleted, or is changed by `other(data, offset)`."""
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "overwrite", "insert", "delete", "other"]))
        at = draw(st.integers(keep, max(keep, len(data) - 1)))
        if kind == "truncate":
            del data[at:]
        elif kind == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=overwrite_most))
            data[at : at + len(chunk)] = chunk
        elif kind == "insert":
            data[at:at] = draw(inserts)
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, delete_most))]
        else:
            other(data, at)


@st.composite
def pdf_mutants(draw: st.DrawFn) -> bytes:
    """A small valid PDF (text or drawings, 1 to 4 pages) damaged by 1 to 4 mutations."""
    pages = draw(st.integers(1, 4))
    with_text = draw(st.booleans())
    data = bytearray(pdf_bytes(pages, text=(lambda n: f"Page {n} of the mutant book") if with_text else None))

    def token_swapped(data: bytearray, at: int) -> None:
        old, new = draw(st.sampled_from(_TOKENS))
        found = [match.start() for match in re.finditer(re.escape(old), bytes(data))]
        if found:
            start = draw(st.sampled_from(found))
            data[start : start + len(old)] = new

    # The header line stays: without it the file is simply not a PDF (a case of its own).
    _mutate(
        draw,
        data,
        keep=_HEADER_BYTES,
        overwrite_most=16,
        inserts=st.binary(min_size=1, max_size=64) | st.sampled_from([b"[" * 500, b"<<" * 500, b"("]),
        delete_most=64,
        other=token_swapped,
    )
    return bytes(data)


@cache
def _image_with_exif(fmt: str) -> bytes:
    picture = Image.new("RGBA" if fmt in ("PNG", "WEBP") else "RGB", (48, 32), "teal")
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees
    exif[0x010E] = "A scanned page"  # ImageDescription
    buffer = io.BytesIO()
    if fmt == "TIFF":
        pictures = [picture, Image.new("RGB", (20, 30), "olive")]
        pictures[0].save(buffer, format="TIFF", save_all=True, append_images=pictures[1:], exif=exif)
    else:
        picture.save(buffer, format=fmt, exif=exif)
    return buffer.getvalue()


_IMAGE_NAMES = {"PNG": "page.png", "JPEG": "page.jpg", "WEBP": "page.webp", "TIFF": "page.tif"}


@st.composite
def image_mutants(draw: st.DrawFn) -> tuple[str, bytes]:
    """A small image with EXIF (PNG, JPEG, WebP, or a two-frame TIFF) damaged by 1 to 4
    mutations after its signature; returns (file name, bytes)."""
    fmt = draw(st.sampled_from(sorted(_IMAGE_NAMES)))
    data = bytearray(_image_with_exif(fmt))

    def number_set(data: bytearray, at: int) -> None:
        """A length, an offset, a count or a size set to an extreme."""
        data[at : at + 4] = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff"]))

    # The signature (and WebP's RIFF header) stays: the content is still "an image".
    _mutate(
        draw,
        data,
        keep=12,
        overwrite_most=8,
        inserts=st.binary(min_size=1, max_size=32),
        delete_most=32,
        other=number_set,
    )
    if fmt == "PNG" and draw(st.booleans()):
        data = bytearray(png_checksums_fixed(bytes(data)))  # past the CRCs, into the decoder
    return _IMAGE_NAMES[fmt], bytes(data)


def png_checksums_fixed(data: bytes) -> bytes:
    """The PNG with every whole chunk's CRC recomputed (a damaged tail is left as it is)."""
    out = bytearray(data)
    at = 8
    while at + 12 <= len(out):
        length = struct.unpack_from(">I", out, at)[0]
        end = at + 8 + length
        if end + 4 > len(out):
            break
        struct.pack_into(">I", out, end, zlib.crc32(bytes(out[at + 4 : end])))
        at = end + 4
    return bytes(out)
