"""source_inspect on hostile and ordinary files: every file is generated here.

Each refusal is a ServiceError with its problem code (a 400); no test may leave a
temporary file behind (see `fresh_tempdir`).
"""

from __future__ import annotations

import io
import itertools
import os
import stat
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from core.errors import ServiceError
from projects.intake.sniffing import natural_key, source_inspect
from projects.models import SourceKind
from tests.support.pdfs import encrypted_pdf_bytes, pdf_bytes
from tests.support.zips import central_header_at, encrypted_flag_set

# Temporary files go to a folder of their own, which must be empty afterwards.
pytestmark = pytest.mark.usefixtures("fresh_tempdir")


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, bytes], Path]:
    """Write bytes to a file in its own folder (under a neutral name: only file_name counts)."""
    folder = tmp_path / "files"
    folder.mkdir()
    counter = iter(range(1_000_000))

    def make(name: str, content: bytes) -> Path:
        path = folder / f"source-{next(counter)}"
        path.write_bytes(content)
        return path

    return make


def assert_refused(path: Path, file_name: str, code: str) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        source_inspect(path=path, file_name=file_name)
    assert caught.value.code == code, caught.value.detail
    assert caught.value.status_code == 400
    return caught.value


# --- Generators ------------------------------------------------------------------------------


def image_bytes(fmt: str = "PNG", size: tuple[int, int] = (40, 60), color: str = "white") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def noise_png(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)).save(buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def tiff_frames(frames: int) -> bytes:
    buffer = io.BytesIO()
    pages = [Image.new("RGB", (30, 40), color) for color in ("white", "red", "blue", "green")[:frames]]
    pages[0].save(buffer, format="TIFF", save_all=True, append_images=pages[1:])
    return buffer.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """Only a PNG header: a decompression bomb announces its size before any pixel data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def zip_bytes(entries: list[tuple[str | zipfile.ZipInfo, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name" warning
        with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
            for name, content in entries:
                archive.writestr(name, content)
    return buffer.getvalue()


def central_uncompressed_size_set(data: bytes, name: str, size: int) -> bytes:
    """The zip with `name`'s central directory entry claiming another uncompressed size."""
    edited = bytearray(data)
    struct.pack_into("<I", edited, central_header_at(data, name) + 24, size)
    return bytes(edited)


def end_record_count_set(data: bytes, count: int) -> bytes:
    """The zip with its end record understating the number of entries."""
    edited = bytearray(data)
    at = data.rindex(b"PK\x05\x06")
    struct.pack_into("<HH", edited, at + 8, count, count)
    return bytes(edited)


# --- Type and name ---------------------------------------------------------------------------


def test_a_zero_byte_file_is_empty(write):
    assert_refused(write("book.pdf", b""), "book.pdf", "file_empty")


def test_a_text_file_named_pdf_is_unsupported(write):
    assert_refused(write("book.pdf", b"Once upon a time, in plain text.\n"), "book.pdf", "file_type_unsupported")


def test_a_pdf_header_after_the_first_kilobyte_is_not_a_pdf(write):
    assert_refused(write("book.pdf", b" " * 1024 + pdf_bytes(1)), "book.pdf", "file_type_unsupported")


def test_a_pdf_header_within_the_first_kilobyte_is_accepted(write):
    inspection = source_inspect(path=write("book.pdf", b"junk" * 200 + pdf_bytes(2)), file_name="book.pdf")
    assert (inspection.kind, inspection.page_count) == (SourceKind.PDF, 2)


def test_a_pdf_named_png_is_a_mismatch_naming_both(write):
    error = assert_refused(write("page.png", pdf_bytes(1)), "page.png", "file_type_mismatch")
    assert ".png" in error.detail
    assert "PDF" in error.detail


@pytest.mark.parametrize(
    ("content", "name"),
    [(image_bytes("PNG"), "scan.pdf"), (image_bytes("PNG"), "scan.zip"), (zip_bytes([("a.png", b"")]), "a.pdf")],
)
def test_content_and_name_of_different_families_are_a_mismatch(write, content, name):
    assert_refused(write(name, content), name, "file_type_mismatch")


@pytest.mark.parametrize("name", ["page.txt", "page", "page.bmp"])
def test_an_image_with_an_extension_not_accepted_is_unsupported(write, name):
    assert_refused(write(name, image_bytes("PNG")), name, "file_type_unsupported")


def test_an_extension_removed_from_the_settings_is_unsupported(write, settings):
    settings.UPLOAD_EXTENSIONS = [".pdf", ".zip"]
    assert_refused(write("page.png", image_bytes("PNG")), "page.png", "file_type_unsupported")


def test_a_png_named_jpg_is_accepted_the_content_decides(write):
    inspection = source_inspect(path=write("page.jpg", image_bytes("PNG")), file_name="Page.JPG")
    assert inspection.kind == SourceKind.IMAGE
    assert inspection.page_count == 1


# --- PDF -------------------------------------------------------------------------------------


def test_a_text_pdf_has_a_text_layer_and_its_words_counted(write):
    content = pdf_bytes(3, text=lambda n: " ".join(f"word{n}x{i}" for i in range(30)))
    inspection = source_inspect(path=write("book.pdf", content), file_name="book.pdf")
    assert inspection.kind == SourceKind.PDF
    assert inspection.page_count == 3
    assert inspection.has_text_layer is True
    assert inspection.word_estimate == 90
    assert inspection.entries == ()


def test_words_are_counted_exactly_across_read_chunks(write):
    content = pdf_bytes(200, text=lambda n: " ".join(f"word{n}x{i}" for i in range(60)))  # about 120 KB of text
    inspection = source_inspect(path=write("book.pdf", content), file_name="book.pdf")
    assert inspection.word_estimate == 12_000


def test_an_image_only_pdf_estimates_words_from_its_pages(write, settings):
    settings.WORDS_PER_PAGE_ESTIMATE = 300
    inspection = source_inspect(path=write("scans.pdf", pdf_bytes(4)), file_name="scans.pdf")
    assert (inspection.page_count, inspection.has_text_layer, inspection.word_estimate) == (4, False, 1200)


def test_a_few_stray_words_are_not_a_text_layer(write, settings):
    settings.WORDS_PER_PAGE_ESTIMATE = 250
    content = pdf_bytes(2, text=lambda n: f"Scan {n}")
    inspection = source_inspect(path=write("scans.pdf", content), file_name="scans.pdf")
    assert (inspection.has_text_layer, inspection.word_estimate) == (False, 500)


def test_a_truncated_pdf_is_corrupt(write):
    content = pdf_bytes(3, text=lambda n: "some words")
    assert_refused(write("book.pdf", content[: len(content) // 2]), "book.pdf", "file_corrupt")


def test_garbage_after_the_pdf_header_is_corrupt(write):
    assert_refused(write("book.pdf", b"%PDF-1.7\n" + os.urandom(4096)), "book.pdf", "file_corrupt")


def test_a_pdf_needing_a_password_is_refused(write):
    assert_refused(write("book.pdf", encrypted_pdf_bytes(2)), "book.pdf", "pdf_encrypted")


def test_a_pdf_encrypted_with_only_an_owner_password_is_refused(write):
    content = encrypted_pdf_bytes(2, text=lambda n: "readable", user_password="")
    assert_refused(write("book.pdf", content), "book.pdf", "pdf_encrypted")


def test_a_pdf_without_pages_is_refused(write):
    assert_refused(write("book.pdf", pdf_bytes(0)), "book.pdf", "pdf_no_pages")


def test_a_pdf_over_the_page_cap_is_refused_with_the_cap(write, settings):
    settings.MAX_PAGES = 2
    error = assert_refused(write("book.pdf", pdf_bytes(3)), "book.pdf", "too_many_pages")
    assert error.extra["max_pages"] == 2
    assert source_inspect(path=write("book.pdf", pdf_bytes(2)), file_name="book.pdf").page_count == 2


def test_a_pdf_tool_running_past_its_timeout_is_refused(write, settings):
    settings.PDF_TOOL_TIMEOUT_SECONDS = 0
    error = assert_refused(write("book.pdf", pdf_bytes(1)), "book.pdf", "file_corrupt")
    assert "too long" in error.detail


# --- Images ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "name"), [("PNG", "p.png"), ("JPEG", "p.jpeg"), ("WEBP", "p.webp"), ("TIFF", "p.tif")])
def test_each_accepted_image_format_is_one_page(write, settings, fmt, name):
    settings.WORDS_PER_PAGE_ESTIMATE = 250
    inspection = source_inspect(path=write(name, image_bytes(fmt)), file_name=name)
    assert inspection.kind == SourceKind.IMAGE
    assert (inspection.page_count, inspection.word_estimate, inspection.has_text_layer) == (1, 250, False)


def test_a_multi_frame_tiff_counts_each_frame_as_a_page(write, settings):
    inspection = source_inspect(path=write("book.tiff", tiff_frames(3)), file_name="book.tiff")
    assert inspection.page_count == 3
    settings.MAX_PAGES = 2
    assert_refused(write("book.tiff", tiff_frames(3)), "book.tiff", "too_many_pages")


def test_a_png_header_claiming_huge_dimensions_is_refused_before_decoding(write):
    assert_refused(write("bomb.png", png_claiming(100_000, 100_000)), "bomb.png", "image_too_large")


def test_pillows_own_bomb_guard_is_a_refusal(write, settings):
    # Past twice its own default limit (about 179 megapixels) Pillow refuses by itself,
    # whatever limit core.images is given.
    settings.IMAGE_MAX_PIXELS = 10**10
    assert_refused(write("bomb.png", png_claiming(20_000, 20_000)), "bomb.png", "image_too_large")


def test_a_real_image_over_the_pixel_limit_is_refused(write, settings):
    settings.IMAGE_MAX_PIXELS = 5_000
    assert_refused(write("page.png", image_bytes("PNG", size=(100, 100))), "page.png", "image_too_large")
    assert source_inspect(path=write("page.png", image_bytes("PNG", size=(50, 100))), file_name="page.png")


def test_a_truncated_jpeg_is_corrupt(write):
    content = image_bytes("JPEG", size=(300, 300), color="red")
    assert_refused(write("page.jpg", content[: len(content) // 2]), "page.jpg", "file_corrupt")


def test_a_png_signature_followed_by_garbage_is_corrupt(write):
    assert_refused(write("page.png", b"\x89PNG\r\n\x1a\n" + os.urandom(500)), "page.png", "file_corrupt")


# --- Zip -------------------------------------------------------------------------------------


def test_a_zip_of_images_lists_them_in_natural_order_without_junk(write, settings):
    settings.WORDS_PER_PAGE_ESTIMATE = 100
    png = image_bytes("PNG")
    content = zip_bytes(
        [
            ("page10.png", png),
            ("Page2.png", png),
            ("page1.jpg", image_bytes("JPEG")),
            ("ch10/p1.png", png),
            ("ch2/p1.webp", image_bytes("WEBP")),
            ("ch2/", b""),
            ("__MACOSX/._page1.jpg", b"\0\5\26\7junk"),
            (".DS_Store", b"\0\0\0\1Bud1"),
            ("ch2/Thumbs.db", b"junk"),
            ("desktop.ini", b"[.ShellClassInfo]"),
            (".hidden/notes.txt", b"hidden"),
        ]
    )
    inspection = source_inspect(path=write("book.zip", content), file_name="book.zip")
    assert inspection.kind == SourceKind.ZIP
    assert inspection.entries == ("ch2/p1.webp", "ch10/p1.png", "page1.jpg", "Page2.png", "page10.png")
    assert (inspection.page_count, inspection.word_estimate, inspection.has_text_layer) == (5, 500, False)


def test_an_empty_zip_has_no_images(write):
    assert_refused(write("book.zip", zip_bytes([])), "book.zip", "zip_no_images")


def test_a_zip_of_only_os_junk_has_no_images(write):
    content = zip_bytes([("__MACOSX/._a.png", b"x"), (".DS_Store", b"x"), ("Thumbs.db", b"x"), ("pages/", b"")])
    assert_refused(write("book.zip", content), "book.zip", "zip_no_images")


def test_a_damaged_zip_is_corrupt(write):
    assert_refused(write("book.zip", b"PK\x03\x04" + os.urandom(300)), "book.zip", "file_corrupt")


@pytest.mark.parametrize(
    "name", ["../evil.png", "pages/../../evil.png", "/etc/evil.png", "C:/evil.png", "..\\..\\evil.png", "\\evil.png"]
)
def test_a_zip_entry_outside_its_folder_is_unsafe(write, name):
    content = zip_bytes([("page1.png", image_bytes()), (name, image_bytes())])
    assert_refused(write("book.zip", content), "book.zip", "zip_unsafe")


def test_a_zip_entry_that_is_a_symlink_is_unsafe(write):
    link = zipfile.ZipInfo("page2.png")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    content = zip_bytes([("page1.png", image_bytes()), (link, b"/etc/passwd")])
    assert_refused(write("book.zip", content), "book.zip", "zip_unsafe")


def test_an_encrypted_zip_entry_is_unsafe(write):
    content = zip_bytes([("page1.png", image_bytes()), ("page2.png", image_bytes())])
    assert_refused(write("book.zip", encrypted_flag_set(content, "page2.png")), "book.zip", "zip_unsafe")


def test_a_zip_holding_the_same_name_twice_is_unsafe(write):
    content = zip_bytes([("page1.png", image_bytes()), ("page1.png", image_bytes("PNG", color="black"))])
    assert_refused(write("book.zip", content), "book.zip", "zip_unsafe")


def test_a_highly_compressible_big_entry_is_a_zip_bomb(write):
    content = zip_bytes([("page1.png", image_bytes()), ("page2.png", b"\0" * (5 * 1024 * 1024))])
    assert len(content) < 50_000
    assert_refused(write("book.zip", content), "book.zip", "zip_too_large")


def test_a_zip_over_the_uncompressed_total_is_refused(write, settings):
    content = zip_bytes([(f"page{n}.png", noise_png((30, 30))) for n in range(3)], compression=zipfile.ZIP_STORED)
    settings.ZIP_MAX_UNCOMPRESSED_BYTES = 2 * len(noise_png((30, 30)))
    assert_refused(write("book.zip", content), "book.zip", "zip_too_large")


def test_a_zip_with_too_many_entries_is_refused(write, settings):
    settings.ZIP_MAX_ENTRIES = 3
    content = zip_bytes([(f"page{n}.png", image_bytes()) for n in range(4)])
    assert_refused(write("book.zip", content), "book.zip", "zip_too_large")


def test_a_zip_understating_its_entry_count_is_still_refused(write, settings):
    settings.ZIP_MAX_ENTRIES = 3
    content = end_record_count_set(zip_bytes([(f"page{n}.png", image_bytes()) for n in range(4)]), 1)
    assert_refused(write("book.zip", content), "book.zip", "zip_too_large")


def test_an_entry_declaring_fewer_bytes_than_it_holds_is_refused(write):
    png = image_bytes("PNG", size=(200, 200))
    content = zip_bytes([("page1.png", png)], compression=zipfile.ZIP_STORED)
    assert_refused(
        write("book.zip", central_uncompressed_size_set(content, "page1.png", len(png) // 2)),
        "book.zip",
        "file_corrupt",
    )


def test_a_bomb_whose_header_claims_a_small_size_is_refused(write):
    content = zip_bytes([("page1.png", b"\0" * (20 * 1024 * 1024))])
    lying = central_uncompressed_size_set(content, "page1.png", 4096)  # passes the ratio check
    assert_refused(write("book.zip", lying), "book.zip", "file_corrupt")


def test_an_entry_declaring_more_bytes_than_it_holds_is_refused(write):
    png = image_bytes("PNG")
    content = zip_bytes([("page1.png", png)], compression=zipfile.ZIP_STORED)
    assert_refused(
        write("book.zip", central_uncompressed_size_set(content, "page1.png", len(png) + 10)),
        "book.zip",
        "file_corrupt",
    )


def test_non_image_files_in_a_zip_are_named(write):
    content = zip_bytes([("page1.png", image_bytes()), ("notes.txt", b"hello"), ("cover.pdf", pdf_bytes(1))])
    error = assert_refused(write("book.zip", content), "book.zip", "zip_entry_unsupported")
    assert error.extra["entries"] == ["cover.pdf", "notes.txt"]


def test_at_most_twenty_unsupported_entries_are_named(write):
    content = zip_bytes([(f"note{n}.txt", b"x") for n in range(30)])
    error = assert_refused(write("book.zip", content), "book.zip", "zip_entry_unsupported")
    assert len(error.extra["entries"]) == 20
    assert error.extra["entries"][:3] == ["note0.txt", "note1.txt", "note2.txt"]


def test_a_nested_zip_is_an_unsupported_entry(write):
    inner = zip_bytes([("page1.png", image_bytes())])
    content = zip_bytes([("page1.png", image_bytes()), ("more.zip", inner)])
    error = assert_refused(write("book.zip", content), "book.zip", "zip_entry_unsupported")
    assert error.extra["entries"] == ["more.zip"]


def test_a_zip_or_pdf_named_as_an_image_inside_a_zip_is_unsupported(write):
    inner = zip_bytes([("page1.png", image_bytes())])
    content = zip_bytes([("page1.png", image_bytes()), ("page2.png", inner), ("page3.jpg", pdf_bytes(1))])
    error = assert_refused(write("book.zip", content), "book.zip", "zip_entry_unsupported")
    assert error.extra["entries"] == ["page2.png", "page3.jpg"]


def test_a_damaged_image_in_a_zip_is_corrupt(write):
    png = bytearray(image_bytes("PNG", size=(100, 100)))
    png[45:60] = b"\xff" * 15  # inside the IDAT chunk: its checksum no longer matches
    content = zip_bytes([("page1.png", image_bytes()), ("page2.png", bytes(png))])
    assert_refused(write("book.zip", content), "book.zip", "file_corrupt")


def test_an_image_in_a_zip_over_the_pixel_limit_is_refused(write, settings):
    content = zip_bytes([("page1.png", image_bytes()), ("page2.png", png_claiming(100_000, 100_000))])
    assert_refused(write("book.zip", content), "book.zip", "image_too_large")
    settings.IMAGE_MAX_PIXELS = 1_000
    assert_refused(write("book.zip", zip_bytes([("page1.png", image_bytes())])), "book.zip", "image_too_large")


def test_a_zip_with_more_images_than_pages_allowed_is_refused(write, settings):
    settings.MAX_PAGES = 2
    content = zip_bytes([(f"page{n}.png", image_bytes()) for n in range(3)])
    error = assert_refused(write("book.zip", content), "book.zip", "too_many_pages")
    assert error.extra["max_pages"] == 2


def test_a_big_image_entry_is_checked_without_leaving_a_file(write, fresh_tempdir):
    big = noise_png((1800, 1800))  # over the in-memory spool size: it goes to a file
    assert len(big) > 8 * 1024 * 1024
    content = zip_bytes([("page1.png", big), ("page2.png", image_bytes())], compression=zipfile.ZIP_STORED)
    inspection = source_inspect(path=write("book.zip", content), file_name="book.zip")
    assert inspection.entries == ("page1.png", "page2.png")
    assert os.listdir(fresh_tempdir) == []


# --- Folder (server path) --------------------------------------------------------------------


def test_a_folder_lists_its_images_in_natural_order(tmp_path):
    folder = tmp_path / "book"
    (folder / "extras").mkdir(parents=True)
    for name in ("page10.png", "page2.png", "Page1.tif"):
        (folder / name).write_bytes(image_bytes("TIFF" if name.endswith(".tif") else "PNG"))
    (folder / ".DS_Store").write_bytes(b"junk")
    (folder / "Thumbs.db").write_bytes(b"junk")
    (folder / "extras" / "notes.txt").write_bytes(b"not looked at")
    inspection = source_inspect(path=folder, file_name="book")
    assert inspection.kind == SourceKind.FOLDER
    assert inspection.entries == ("Page1.tif", "page2.png", "page10.png")
    assert inspection.page_count == 3


def test_a_folder_with_other_files_is_refused(tmp_path):
    (tmp_path / "page1.png").write_bytes(image_bytes())
    (tmp_path / "notes.txt").write_bytes(b"hello")
    (tmp_path / "page2.png").write_bytes(pdf_bytes(1))
    error = assert_refused(tmp_path, "book", "zip_entry_unsupported")
    assert error.extra["entries"] == ["notes.txt"]
    (tmp_path / "notes.txt").unlink()
    error = assert_refused(tmp_path, "book", "zip_entry_unsupported")
    assert error.extra["entries"] == ["page2.png"]


def test_a_folder_holding_a_link_is_unsafe(tmp_path):
    outside = tmp_path / "outside.png"
    outside.write_bytes(image_bytes())
    folder = tmp_path / "book"
    folder.mkdir()
    (folder / "page1.png").symlink_to(outside)
    assert_refused(folder, "book", "zip_unsafe")


def test_an_empty_folder_has_no_images(tmp_path):
    folder = tmp_path / "book"
    folder.mkdir()
    assert_refused(folder, "book", "zip_no_images")


def test_a_damaged_image_in_a_folder_is_corrupt(tmp_path):
    (tmp_path / "page1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    assert_refused(tmp_path, "book", "file_corrupt")


# --- Natural sort ----------------------------------------------------------------------------

_NO_DIGITS = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Nd"), blacklist_characters="/\\"))


def test_natural_key_puts_page2_before_page10():
    names = ["page10.png", "page2.png", "Page1.png", "page1.png", "page02.png", "a/page3.png", "page"]
    assert sorted(names, key=natural_key) == [
        "a/page3.png",
        "page",
        "Page1.png",
        "page1.png",
        "page02.png",
        "page2.png",
        "page10.png",
    ]


@given(prefix=_NO_DIGITS, suffix=_NO_DIGITS, first=st.integers(0, 10**30), second=st.integers(0, 10**30))
def test_natural_key_orders_numeric_runs_by_value(prefix, suffix, first, second):
    a, b = f"{prefix}{first}{suffix}", f"{prefix}{second}{suffix}"
    assert (natural_key(a) < natural_key(b)) == (first < second)


@given(names=st.lists(_NO_DIGITS))
def test_natural_key_without_digits_is_the_case_insensitive_plain_sort(names):
    assert sorted(names, key=natural_key) == sorted(names, key=lambda name: (name.casefold(), name))


@given(names=st.lists(st.text(), max_size=30))
def test_natural_key_is_a_total_order(names):
    ordered = sorted(names, key=natural_key)  # mixed digits and text never fail to compare
    for earlier, later in itertools.pairwise(ordered):
        assert natural_key(earlier) <= natural_key(later)
        assert (natural_key(earlier) == natural_key(later)) == (earlier == later)


@given(
    paths=st.lists(
        st.lists(st.text(alphabet="ab01.", min_size=1, max_size=4), min_size=1, max_size=3).map("/".join),
        max_size=20,
    )
)
def test_natural_key_keeps_a_folders_contents_together(paths):
    ordered = sorted(paths, key=natural_key)
    folders = [path.split("/")[0] for path in ordered if "/" in path]
    for folder in set(folders):
        positions = [i for i, path in enumerate(ordered) if path.startswith(folder + "/")]
        assert positions == list(range(positions[0], positions[-1] + 1))
