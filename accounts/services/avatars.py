"""The account avatar: checked, normalised to a square PNG, kept in the default storage.

Whatever is uploaded, what is stored is an image we encoded ourselves: decoded by Pillow
(only PNG, JPEG and WebP, whatever the name or Content-Type says), turned upright from its
EXIF orientation, converted to sRGB, cropped to a centred square, resized to AVATAR_SIZE and
written as a PNG without metadata (no EXIF, no GPS, no ICC profile, no text chunks).
"""

from __future__ import annotations

import io
import logging
import secrets

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from PIL import Image, ImageCms, ImageOps

from accounts.errors import AvatarInvalid, AvatarTooLarge
from accounts.models import User
from core.errors import NotFound
from core.images import ImageEmpty, ImageLimits, ImageRefused, ImageTooLarge, image_errors, image_open
from core.uploads import UploadLimits, extension_of

logger = logging.getLogger(__name__)

AVATAR_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")
AVATAR_CONTENT_TYPE = "image/png"
# The decoders Pillow may use; the content decides which one, never the file name.
_PILLOW_FORMATS = ("PNG", "JPEG", "WEBP")


def avatar_limits() -> UploadLimits:
    """What PUT /v1/me/avatar accepts."""
    return UploadLimits(accepted_extensions=AVATAR_EXTENSIONS, max_file_size_bytes=settings.AVATAR_MAX_BYTES)


def avatar_size_check(*, size_bytes: int) -> None:
    """AvatarTooLarge (413) when a file of this many bytes is over the limit."""
    max_bytes = avatar_limits().max_file_size_bytes
    if size_bytes > max_bytes:
        raise AvatarTooLarge(f"The avatar is larger than {max_bytes} bytes.", max_file_size_bytes=max_bytes)


def avatar_set(*, user: User, upload: File[bytes]) -> User:
    """Replace the user's avatar with a normalised copy of `upload`.

    All or nothing: a refused or failed upload changes neither the account nor the storage.
    The previous file is deleted only once the new key is committed. Concurrent uploads
    for one account are serialised by a row lock, so no file is left unreferenced.
    """
    avatar_size_check(size_bytes=upload.size or 0)
    accepted = avatar_limits().accepted_extensions
    if extension_of(upload.name or "") not in accepted:
        raise AvatarInvalid(f"The avatar's file name must end in one of {', '.join(accepted)}.")
    encoded = _avatar_encode(upload)

    new_key = default_storage.save(f"avatars/{user.pk}/{secrets.token_hex(16)}.png", ContentFile(encoded))
    try:
        with transaction.atomic():
            locked = User.objects.select_for_update().get(pk=user.pk)
            previous_key = locked.avatar_key
            locked.avatar_key = new_key
            locked.avatar_changed_at = timezone.now()
            locked.save(update_fields=["avatar_key", "avatar_changed_at"])
            if previous_key:
                transaction.on_commit(lambda: _file_delete(previous_key), robust=True)
    except BaseException:
        _file_delete(new_key)
        raise
    user.avatar_key, user.avatar_changed_at = locked.avatar_key, locked.avatar_changed_at
    return user


def avatar_clear(*, user: User) -> User:
    """Remove the user's avatar. Idempotent: clearing twice, or with none set, is fine."""
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        previous_key = locked.avatar_key
        if previous_key or locked.avatar_changed_at is not None:
            locked.avatar_key = ""
            locked.avatar_changed_at = None
            locked.save(update_fields=["avatar_key", "avatar_changed_at"])
        if previous_key:
            transaction.on_commit(lambda: _file_delete(previous_key), robust=True)
    user.avatar_key, user.avatar_changed_at = locked.avatar_key, locked.avatar_changed_at
    return user


def avatar_open(*, user: User) -> File[bytes]:
    """The stored avatar (a PNG) opened for reading; NotFound when the user has none."""
    if not user.avatar_key:
        raise NotFound("This account has no avatar.")
    try:
        return default_storage.open(user.avatar_key, "rb")
    except FileNotFoundError:
        logger.warning("Avatar file %s of user %s is missing from storage", user.avatar_key, user.pk)
        raise NotFound("This account has no avatar.") from None


def _file_delete(key: str) -> None:
    # Also called while another error propagates: a failed delete is logged, never raised.
    try:
        default_storage.delete(key)
    except Exception:
        logger.exception("Could not delete avatar file %s", key)


def _avatar_encode(upload: File[bytes]) -> bytes:
    """The upload decoded, checked and re-encoded as a square PNG; AvatarInvalid otherwise."""
    limits = ImageLimits(max_pixels=settings.AVATAR_MAX_PIXELS, formats=_PILLOW_FORMATS)
    try:
        # verify() does not decode every format fully: loading it all catches truncated data.
        with image_open(upload, limits=limits, verify=True) as image, image_errors():
            # A big JPEG is decoded straight at a reduced scale (still at least AVATAR_SIZE).
            image.draft("RGB", (settings.AVATAR_SIZE, settings.AVATAR_SIZE))
            image.load()
            square = _square(_srgb(ImageOps.exif_transpose(image)))
    except ImageRefused as refused:
        logger.info("Avatar refused: %r", refused)
        raise AvatarInvalid(_refusal_detail(refused)) from None
    square.info.clear()  # the encoder reads ICC profile, EXIF and transparency from here
    buffer = io.BytesIO()
    square.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _refusal_detail(refused: ImageRefused) -> str:
    if isinstance(refused, ImageTooLarge):
        if refused.width is None:
            return "The avatar has too many pixels."
        return f"The avatar has too many pixels ({refused.width}x{refused.height}; at most {refused.max_pixels})."
    if isinstance(refused, ImageEmpty):
        return "The avatar has no pixels."
    return "The avatar is not a PNG, JPEG or WebP image, or it is damaged."


def _srgb(image: Image.Image) -> Image.Image:
    """RGB, or RGBA when the image has transparency, in sRGB when it carries an ICC profile."""
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    mode = "RGBA" if has_alpha else "RGB"
    icc_profile = image.info.get("icc_profile")
    if icc_profile and image.mode in ("RGB", "RGBA", "CMYK"):
        try:
            converted = ImageCms.profileToProfile(
                image,
                ImageCms.ImageCmsProfile(io.BytesIO(icc_profile)),
                ImageCms.createProfile("sRGB"),
                outputMode=mode,
            )
        except (ImageCms.PyCMSError, OSError, ValueError):
            converted = None  # a broken or mismatched profile: keep the pixel values as they are
        if converted is not None:
            return converted
    return image.convert(mode)


def _square(image: Image.Image) -> Image.Image:
    """The centred square of the image, resized to AVATAR_SIZE on each side."""
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    size = settings.AVATAR_SIZE
    return image.crop((left, top, left + side, top + side)).resize((size, size), Image.Resampling.LANCZOS)
