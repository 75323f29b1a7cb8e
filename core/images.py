"""Opening untrusted images: one opener, its limits passed in, Pillow's errors mapped once.

Every image that comes from outside (an avatar, a page image of an upload, an entry of a
zip) is opened here, never with a bare `Image.open`:
- only the formats the caller names are tried, whatever the name says (Pillow's `formats=`);
- the size is compared with the caller's `max_pixels` from the header, before any pixel is
  decoded, and again for every frame; nothing sets Pillow's process-wide
  `Image.MAX_IMAGE_PIXELS`. Its decompression-bomb warning is silenced while we open and
  decode (our own check stands in for it); its hard error, at twice its default limit
  (about 179 megapixels), stays a ceiling above any limit passed in;
- whatever Pillow raises on hostile bytes (`UnidentifiedImageError`, `OSError` for truncated
  data, `SyntaxError`, `ValueError`, `struct.error`, ...; Django's `ImageField` treats them the
  same way) becomes one of four `ImageRefused` errors: `ImageTooLarge`, `ImageTooManyFrames`,
  `ImageUnsupported`, `ImageDamaged` (`ImageEmpty` for no pixels).

The refusals carry facts, not problem codes: each caller names the problem its API shows
(an avatar says `avatar_invalid`, a book's page `image_too_large` or `file_corrupt`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from PIL import Image, UnidentifiedImageError

from core.errors import ServiceError

ImageSource = Path | IO[bytes]


@dataclass(frozen=True)
class ImageLimits:
    """What a caller accepts: at most `max_pixels` per frame, at most `max_frames` frames
    (None: any number), decoded only by the Pillow plugins named in `formats`."""

    max_pixels: int
    formats: tuple[str, ...]
    max_frames: int | None = None


class ImageRefused(Exception):
    """Untrusted bytes that are not an image within the caller's limits."""


class ImageTooLarge(ImageRefused):
    """More pixels than allowed; width and height are None when Pillow's own guard refused
    before the size was known to us."""

    def __init__(self, *, width: int | None, height: int | None, max_pixels: int) -> None:
        self.width, self.height, self.max_pixels = width, height, max_pixels
        size = f"{width} x {height} pixels" if width is not None else "more pixels than Pillow allows"
        super().__init__(f"The image is {size}; at most {max_pixels} pixels are allowed.")


class ImageTooManyFrames(ImageRefused):
    def __init__(self, *, frames: int, max_frames: int) -> None:
        self.frames, self.max_frames = frames, max_frames
        super().__init__(f"The image has {frames} frames; at most {max_frames} are allowed.")


class ImageUnsupported(ImageRefused):
    """Not an image in one of the accepted formats (another format, or not an image at all)."""


class ImageDamaged(ImageRefused):
    """An accepted format whose data is truncated or malformed."""


class ImageEmpty(ImageDamaged):
    """A header announcing no pixels."""


def image_open(source: ImageSource, *, limits: ImageLimits, verify: bool = False) -> Image.Image:
    """The image opened lazily (nothing decoded yet) as one of `limits.formats`, its first
    frame's size and its frame count checked; the caller closes it.

    verify=True first runs Pillow's `verify()` on a separate open (the header and, where the
    format has them, the checksums of the whole file). Raises an ImageRefused subclass.
    """
    with image_errors():
        if verify:
            with Image.open(_rewound(source), formats=limits.formats) as probe:
                _size_check(probe.size, limits)
                probe.verify()
        image = Image.open(_rewound(source), formats=limits.formats)
        try:
            _size_check(image.size, limits)
            if limits.max_frames is not None:
                frames = getattr(image, "n_frames", 1)
                if frames > limits.max_frames:
                    raise ImageTooManyFrames(frames=frames, max_frames=limits.max_frames)
        except BaseException:
            image.close()
            raise
    return image


def image_frames(image: Image.Image, *, limits: ImageLimits) -> Iterator[Image.Image]:
    """Each frame of an opened image in turn (the same object, moved to the frame), its
    size checked before the caller decodes it. Raises an ImageRefused subclass."""
    for frame in range(getattr(image, "n_frames", 1)):
        yield image_seek(image, frame, limits=limits)


def image_seek(image: Image.Image, frame: int, *, limits: ImageLimits) -> Image.Image:
    """The opened image moved to `frame` (0-based), that frame's size checked. Raises an
    ImageRefused subclass."""
    with image_errors():
        image.seek(frame)
        _size_check(image.size, limits)
    return image


def image_check(source: ImageSource, *, limits: ImageLimits, decode: bool) -> int:
    """Whether untrusted bytes are an image within `limits`; its frame count.

    decode=False opens and verifies it (header, size, checksums where the format has them);
    decode=True also decodes every frame (a JPEG at an eighth of its scale: the whole stream
    is still read), which catches truncated data. Raises an ImageRefused subclass.
    """
    with image_open(source, limits=limits, verify=True) as image:
        if not decode:
            return 1
        frames = 0
        for frame in image_frames(image, limits=limits):
            with image_errors():
                if frame.format == "JPEG":
                    frame.draft("RGB", (max(1, frame.width // 8), max(1, frame.height // 8)))
                frame.load()
            frames += 1
        return frames


@contextlib.contextmanager
def image_errors() -> Iterator[None]:
    """Pillow's errors raised while an opened image is decoded (`load`, `convert`,
    `exif_transpose`, ...) as ImageRefused subclasses; never wrap a `yield` in it."""
    try:
        with warnings.catch_warnings():
            # Our own size check stands in for Pillow's warning (see the module docstring).
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            yield
    except (ImageRefused, ServiceError):
        raise  # ours, or the caller's own refusal from inside the block
    except Image.DecompressionBombError:
        raise ImageTooLarge(width=None, height=None, max_pixels=_pillow_ceiling()) from None
    except UnidentifiedImageError as error:
        raise ImageUnsupported(str(error)) from None
    except Exception as error:  # any parser error on hostile bytes is a refusal
        raise ImageDamaged(repr(error)) from None


def _size_check(size: tuple[int, int], limits: ImageLimits) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise ImageEmpty("The image has no pixels.")
    if width * height > limits.max_pixels:
        raise ImageTooLarge(width=width, height=height, max_pixels=limits.max_pixels)


def _rewound(source: ImageSource) -> ImageSource:
    if not isinstance(source, Path):
        source.seek(0)
    return source


def _pillow_ceiling() -> int:
    return 2 * (Image.MAX_IMAGE_PIXELS or 0)
