"""core.images: the one opener of untrusted images, its limits and its refusals."""

from __future__ import annotations

import io
import warnings

import pytest
from PIL import Image

from core.errors import Conflict, ServiceError
from core.images import (
    ImageDamaged,
    ImageLimits,
    ImageTooLarge,
    ImageTooManyFrames,
    ImageUnsupported,
    image_check,
    image_errors,
    image_open,
)
from tests.reliability.files_corpus import image, jpeg_claiming, png_bomb, png_claiming, tiff_frames

PAGES = ImageLimits(max_pixels=10_000_000, formats=("PNG", "JPEG", "WEBP", "TIFF"))


def test_a_good_image_opens_lazily_with_its_size_and_format():
    with image_open(io.BytesIO(image("WEBP", size=(40, 60))), limits=PAGES) as opened:
        assert (opened.format, opened.size) == ("WEBP", (40, 60))
    assert image_check(io.BytesIO(image("JPEG", size=(300, 200))), limits=PAGES, decode=True) == 1


def test_every_frame_of_a_tiff_is_decoded_and_counted():
    assert image_check(io.BytesIO(tiff_frames(3)), limits=PAGES, decode=True) == 3


def test_more_frames_than_allowed_are_refused_before_any_is_decoded():
    limits = ImageLimits(max_pixels=100, formats=("TIFF",), max_frames=2)

    with pytest.raises(ImageTooManyFrames) as refused:
        image_open(io.BytesIO(tiff_frames(3)), limits=limits)

    assert (refused.value.frames, refused.value.max_frames) == (3, 2)


def test_a_decompression_bomb_is_refused_from_its_header():
    # 49 megapixels that a few hundred kilobytes decode to: refused before any pixel is.
    with pytest.raises(ImageTooLarge) as refused:
        image_check(io.BytesIO(png_bomb(7_000)), limits=PAGES, decode=True)

    assert (refused.value.width, refused.value.height, refused.value.max_pixels) == (7_000, 7_000, 10_000_000)


def test_an_image_one_pixel_over_the_limit_is_refused_and_one_at_it_opens():
    limits = ImageLimits(max_pixels=40 * 60, formats=("PNG",))
    assert image_check(io.BytesIO(image("PNG", size=(40, 60))), limits=limits, decode=True) == 1

    with pytest.raises(ImageTooLarge):
        image_check(io.BytesIO(image("PNG", size=(41, 60))), limits=limits, decode=True)


def test_a_size_past_pillows_own_ceiling_is_too_large_whatever_limit_is_passed():
    generous = ImageLimits(max_pixels=10**12, formats=("PNG",))

    with pytest.raises(ImageTooLarge) as refused:
        image_open(io.BytesIO(png_claiming(100_000, 100_000)), limits=generous)

    assert refused.value.width is None


def test_the_limit_passed_in_decides_not_a_process_wide_setting():
    # 81 megapixels: past the limit here, within it there, in the same process.
    claimed = jpeg_claiming(9_000, 9_000)
    pillow_limit, filters = Image.MAX_IMAGE_PIXELS, list(warnings.filters)

    with pytest.raises(ImageTooLarge):
        image_open(io.BytesIO(claimed), limits=PAGES)
    with image_open(io.BytesIO(claimed), limits=ImageLimits(max_pixels=100_000_000, formats=("JPEG",))) as opened:
        assert opened.size == (9_000, 9_000)

    assert (Image.MAX_IMAGE_PIXELS, warnings.filters) == (pillow_limit, filters)


def test_pillows_bomb_warning_is_no_refusal_within_the_limit_passed_in():
    # 100 megapixels: past Pillow's default warning (89.5), within ours; pytest makes any
    # RuntimeWarning (Pillow's warning is one) an error, so a leaked warning fails here.
    limits = ImageLimits(max_pixels=100_000_000, formats=("PNG",))

    with image_open(io.BytesIO(png_claiming(10_000, 10_000)), limits=limits) as opened:
        assert opened.size == (10_000, 10_000)


def test_a_truncated_image_is_damaged():
    content = image("JPEG", size=(300, 300), color="red")

    with pytest.raises(ImageDamaged):
        image_check(io.BytesIO(content[: len(content) // 2]), limits=PAGES, decode=True)


def test_a_damaged_png_is_refused_by_its_checksums_without_decoding():
    content = bytearray(image("PNG", size=(100, 100)))
    content[45:60] = b"\xff" * 15  # inside the IDAT chunk

    with pytest.raises(ImageDamaged):
        image_check(io.BytesIO(bytes(content)), limits=PAGES, decode=False)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"%PDF-1.7 not an image at all", id="not-an-image"),
        pytest.param(image("GIF"), id="a-format-not-accepted"),
        pytest.param(b"\x89PNG\r\n\x1a\n", id="a-signature-only"),
        pytest.param(png_claiming(0, 10), id="a-header-announcing-no-pixels"),
    ],
)
def test_bytes_that_are_not_an_accepted_image_are_unsupported_or_damaged(content):
    with pytest.raises((ImageUnsupported, ImageDamaged)) as refused:
        image_check(io.BytesIO(content), limits=PAGES, decode=True)

    assert not isinstance(refused.value, ImageTooLarge)


def test_an_image_of_another_format_is_unsupported_even_when_pillow_could_read_it():
    with pytest.raises(ImageUnsupported):
        image_open(io.BytesIO(image("GIF")), limits=PAGES)
    with pytest.raises(ImageUnsupported):
        image_open(io.BytesIO(image("PNG")), limits=ImageLimits(max_pixels=10_000, formats=("JPEG",)))


def test_decoding_errors_inside_image_errors_are_refusals_and_a_callers_own_pass_through():
    content = image("PNG", size=(300, 300))
    with image_open(io.BytesIO(content[:200]), limits=PAGES) as opened, pytest.raises(ImageDamaged), image_errors():
        opened.load()

    with pytest.raises(ServiceError, match="the caller's"), image_errors():
        raise Conflict("the caller's")
