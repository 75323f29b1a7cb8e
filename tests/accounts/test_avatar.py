"""The account avatar: GET /v1/me/avatar/limits, and PUT, GET, DELETE /v1/me/avatar."""

from __future__ import annotations

import io
import os
import struct
import zlib
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import ExifTags, Image, ImageCms

from accounts.models import User
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

AVATAR_URL = "/v1/me/avatar"
LIMITS_URL = "/v1/me/avatar/limits"
RED, BLUE = (255, 0, 0), (0, 0, 255)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    """Each test stores files in its own folder; the default storage reads OPTIONS, not MEDIA_ROOT."""
    root = tmp_path / "media"
    settings.MEDIA_ROOT = str(root)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(root)}},
    }
    assert Path(default_storage.location) == root
    return root


# --- helpers ------------------------------------------------------------------------------


def image_bytes(image_format: str, size: tuple[int, int] = (300, 200), color=RED, mode="RGB", **options) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, color).save(buffer, format=image_format, **options)
    return buffer.getvalue()


def noisy_png(size: tuple[int, int] = (128, 128)) -> bytes:
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)).save(buffer, format="PNG")
    return buffer.getvalue()


def png_claiming_size(width: int, height: int) -> bytes:
    """A 1x1 PNG whose header claims another size: tiny on the wire, huge once decoded."""
    data = bytearray(image_bytes("PNG", size=(1, 1)))
    ihdr_start = 8 + 4 + 4  # signature, chunk length, chunk type
    data[ihdr_start : ihdr_start + 8] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[12 : ihdr_start + 13]))
    data[ihdr_start + 13 : ihdr_start + 17] = struct.pack(">I", crc)
    return bytes(data)


def png_chunk_types(data: bytes) -> list[str]:
    types, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        types.append(data[offset + 4 : offset + 8].decode("ascii"))
        offset += 12 + length
    return types


def put_avatar(client, content: bytes, name: str, content_type: str = "application/octet-stream"):
    upload = SimpleUploadedFile(name, content, content_type=content_type)
    return client.put(AVATAR_URL, {"file": upload}, format="multipart")


def stored_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file()) if root.exists() else []


def stored_avatar(user: User, root: Path) -> Image.Image:
    user.refresh_from_db()
    return Image.open(root / user.avatar_key)


def dominant(pixel: tuple[int, ...]) -> str:
    red, _, blue = pixel[:3]
    return "red" if red > blue else "blue"


# --- limits -------------------------------------------------------------------------------


def test_the_limits_list_the_accepted_extensions_and_the_size_in_bytes(auth_client, settings):
    response = auth_client.get(LIMITS_URL)

    assert response.status_code == 200
    assert response.json() == {
        "acceptedExtensions": [".png", ".jpg", ".jpeg", ".webp"],
        "maxFileSizeBytes": settings.AVATAR_MAX_BYTES,
    }


# --- upload -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image_format", "name"),
    [("PNG", "me.png"), ("JPEG", "me.jpg"), ("JPEG", "me.JPEG"), ("WEBP", "me.webp")],
)
def test_png_jpeg_and_webp_are_stored_as_a_square_png_of_avatar_size(
    auth_client, user, media_root, settings, image_format, name
):
    response = put_avatar(auth_client, image_bytes(image_format, size=(300, 200)), name)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["hasAvatar"] is True
    assert body["avatarChangedUtc"] is not None
    stored = stored_avatar(user, media_root)
    assert stored.format == "PNG"
    assert stored.size == (settings.AVATAR_SIZE, settings.AVATAR_SIZE)
    assert stored.mode == "RGB"
    assert user.avatar_key.startswith(f"avatars/{user.pk}/")
    assert user.avatar_key.endswith(".png")
    assert stored_files(media_root) == [media_root / user.avatar_key]


def test_the_content_decides_the_type_so_a_png_named_jpg_is_accepted(auth_client, user, media_root):
    response = put_avatar(auth_client, image_bytes("PNG"), "photo.jpg", content_type="image/jpeg")

    assert response.status_code == 200, response.content
    assert stored_avatar(user, media_root).format == "PNG"


def test_a_small_image_is_scaled_up_and_a_transparent_one_keeps_its_alpha(auth_client, user, media_root, settings):
    response = put_avatar(auth_client, image_bytes("PNG", size=(40, 60), color=(0, 0, 0, 0), mode="RGBA"), "me.png")

    assert response.status_code == 200, response.content
    stored = stored_avatar(user, media_root)
    assert stored.size == (settings.AVATAR_SIZE, settings.AVATAR_SIZE)
    assert stored.mode == "RGBA"
    assert stored.getpixel((10, 10))[3] == 0


def test_exif_gps_and_icc_metadata_are_stripped_and_the_exif_orientation_is_applied(auth_client, user, media_root):
    # Left half red, right half blue; orientation 6 means "rotate 90 degrees clockwise to view".
    photo = Image.new("RGB", (200, 100), BLUE)
    photo.paste(RED, (0, 0, 100, 100))
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = 6
    exif[ExifTags.Base.Make] = "SecretCam"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = (48.0, 51.0, 24.0)
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    buffer = io.BytesIO()
    photo.save(buffer, format="JPEG", quality=95, exif=exif, icc_profile=icc)
    source = buffer.getvalue()
    assert Image.open(io.BytesIO(source)).getexif().get_ifd(ExifTags.IFD.GPSInfo)  # the upload does carry GPS

    response = put_avatar(auth_client, source, "holiday.jpg")

    assert response.status_code == 200, response.content
    stored = stored_avatar(user, media_root)
    stored_bytes = (media_root / user.avatar_key).read_bytes()
    assert set(png_chunk_types(stored_bytes)) == {"IHDR", "IDAT", "IEND"}  # no eXIf, iCCP, tEXt ...
    assert not stored.getexif()
    assert "icc_profile" not in stored.info
    assert b"SecretCam" not in stored_bytes
    # Upright: the red half is now on top.
    assert dominant(stored.getpixel((256, 60))) == "red"
    assert dominant(stored.getpixel((256, 450))) == "blue"


def test_a_replacement_deletes_the_previous_file_once_committed(
    auth_client, user, media_root, django_capture_on_commit_callbacks
):
    put_avatar(auth_client, image_bytes("PNG"), "first.png")
    user.refresh_from_db()
    first_key, first_changed = user.avatar_key, user.avatar_changed_at

    with django_capture_on_commit_callbacks(execute=True):
        response = put_avatar(auth_client, image_bytes("WEBP", color=BLUE), "second.webp")

    assert response.status_code == 200, response.content
    user.refresh_from_db()
    assert user.avatar_key != first_key
    assert user.avatar_changed_at > first_changed
    assert stored_files(media_root) == [media_root / user.avatar_key]


def _truncated(data: bytes) -> bytes:
    return data[: len(data) * 2 // 3]


@pytest.mark.parametrize(
    ("content", "name"),
    [
        pytest.param(b"just some text, not an image\n", "notes.png", id="text-named-png"),
        pytest.param(_truncated(noisy_png()), "cut.png", id="truncated-png"),
        pytest.param(
            _truncated(image_bytes("JPEG", size=(256, 256), color=(10, 200, 30), quality=95)),
            "cut.jpg",
            id="truncated-jpeg",
        ),
        pytest.param(image_bytes("GIF"), "anim.gif", id="gif"),
        pytest.param(image_bytes("GIF"), "anim.png", id="gif-named-png"),
        pytest.param(
            b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>',
            "logo.svg",
            id="svg",
        ),
        pytest.param(b'<svg xmlns="http://www.w3.org/2000/svg"/>', "logo.png", id="svg-named-png"),
        pytest.param(image_bytes("PNG"), "avatar", id="png-without-extension"),
        pytest.param(image_bytes("BMP"), "old.bmp", id="bmp"),
    ],
)
def test_a_file_that_is_not_a_png_jpeg_or_webp_is_refused_and_changes_nothing(
    auth_client, user, media_root, django_capture_on_commit_callbacks, content, name
):
    put_avatar(auth_client, image_bytes("PNG"), "current.png")
    user.refresh_from_db()
    before = (user.avatar_key, user.avatar_changed_at)

    with django_capture_on_commit_callbacks(execute=True):
        response = put_avatar(auth_client, content, name)

    assert_problem(response, 400, "avatar_invalid")
    user.refresh_from_db()
    assert (user.avatar_key, user.avatar_changed_at) == before
    assert stored_files(media_root) == [media_root / user.avatar_key]


@pytest.mark.parametrize(
    ("width", "height"),
    [
        pytest.param(100_000, 100_000, id="past-pillows-bomb-error"),
        pytest.param(10_000, 10_000, id="past-pillows-bomb-warning"),
        pytest.param(7_000, 7_000, id="past-avatar-max-pixels"),
    ],
)
def test_a_decompression_bomb_is_refused_before_it_is_decoded(auth_client, user, media_root, width, height):
    response = put_avatar(auth_client, png_claiming_size(width, height), "bomb.png")

    assert_problem(response, 400, "avatar_invalid")
    user.refresh_from_db()
    assert user.avatar_key == ""
    assert stored_files(media_root) == []


def test_an_image_over_avatar_max_pixels_is_refused(auth_client, user, media_root, settings):
    settings.AVATAR_MAX_PIXELS = 64 * 64 - 1

    response = put_avatar(auth_client, image_bytes("PNG", size=(64, 64)), "me.png")

    assert "pixels" in assert_problem(response, 400, "avatar_invalid")["detail"]
    assert stored_files(media_root) == []


@pytest.mark.parametrize("excess_bytes", [1, 1024 * 1024], ids=["one-byte-over", "a-mebibyte-over"])
def test_a_file_over_the_size_limit_is_request_too_large_and_changes_nothing(
    auth_client, user, media_root, settings, excess_bytes
):
    oversized = noisy_png(size=(16, 16)).ljust(settings.AVATAR_MAX_BYTES + excess_bytes, b"\0")

    response = put_avatar(auth_client, oversized, "big.png")

    body = assert_problem(response, 413, "request_too_large")
    assert body["maxFileSizeBytes"] == settings.AVATAR_MAX_BYTES
    user.refresh_from_db()
    assert user.avatar_key == ""
    assert stored_files(media_root) == []


def test_an_upload_without_a_file_part_is_a_validation_error(auth_client, media_root):
    response = auth_client.put(AVATAR_URL, {}, format="multipart")

    assert "file" in assert_problem(response, 400, "validation_error")["errors"]
    assert stored_files(media_root) == []


def test_an_upload_with_a_part_it_does_not_take_is_refused_by_its_name(auth_client, media_root):
    upload = SimpleUploadedFile("me.png", image_bytes("PNG"), content_type="image/png")

    response = auth_client.put(AVATAR_URL, {"file": upload, "other_part": "value"}, format="multipart")

    assert assert_problem(response, 400, "validation_error")["unknownFields"] == ["other_part"]
    assert stored_files(media_root) == []


def test_an_upload_sent_as_json_is_an_unsupported_media_type(auth_client):
    response = auth_client.put(AVATAR_URL, {"file": "aGVsbG8="}, format="json")

    assert_problem(response, 415, "unsupported_media_type")


# --- the profile, download, delete ----------------------------------------------------------


def test_the_profile_shows_the_avatar_once_uploaded(auth_client, user):
    put_avatar(auth_client, image_bytes("PNG"), "me.png")

    body = auth_client.get("/v1/me").json()

    user.refresh_from_db()
    assert body["hasAvatar"] is True
    assert body["avatarChangedUtc"].startswith(str(user.avatar_changed_at.year))


@pytest.mark.parametrize("accept", [None, "image/png", "application/json"])
def test_the_download_is_the_stored_png(auth_client, user, media_root, accept):
    put_avatar(auth_client, image_bytes("JPEG"), "me.jpg")
    user.refresh_from_db()
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = auth_client.get(AVATAR_URL, **headers)

    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert "private" in response["Cache-Control"]
    assert b"".join(response.streaming_content) == (media_root / user.avatar_key).read_bytes()


@pytest.mark.parametrize("accept", [None, "image/png"])
def test_the_download_without_an_avatar_is_not_found(auth_client, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = auth_client.get(AVATAR_URL, **headers)

    assert_problem(response, 404, "not_found")


def test_delete_removes_the_file_and_clears_the_profile_and_can_be_repeated(
    auth_client, user, media_root, django_capture_on_commit_callbacks
):
    put_avatar(auth_client, image_bytes("PNG"), "me.png")
    assert len(stored_files(media_root)) == 1

    with django_capture_on_commit_callbacks(execute=True):
        first = auth_client.delete(AVATAR_URL)
    again = auth_client.delete(AVATAR_URL)

    assert first.status_code == 204
    assert again.status_code == 204
    assert stored_files(media_root) == []
    profile = auth_client.get("/v1/me").json()
    assert profile["hasAvatar"] is False
    assert profile["avatarChangedUtc"] is None
    assert_problem(auth_client.get(AVATAR_URL), 404, "not_found")


# --- credentials ------------------------------------------------------------------------------


def test_a_read_only_key_can_read_the_limits_and_the_avatar_but_not_change_it(key_client, user, media_root):
    client = key_client(user, ["projects:read"])

    limits = client.get(LIMITS_URL)
    download = client.get(AVATAR_URL)
    upload = put_avatar(client, image_bytes("PNG"), "me.png")
    removal = client.delete(AVATAR_URL)

    assert limits.status_code == 200
    assert_problem(download, 404, "not_found")
    assert_problem(upload, 403, "forbidden")
    assert_problem(removal, 403, "forbidden")
    assert stored_files(media_root) == []


def test_a_write_key_can_upload(key_client, user, media_root):
    response = put_avatar(key_client(user, ["projects:write"]), image_bytes("PNG"), "me.png")

    assert response.status_code == 200, response.content
    assert len(stored_files(media_root)) == 1


@pytest.mark.parametrize(
    ("method", "url"),
    [("get", LIMITS_URL), ("get", AVATAR_URL), ("put", AVATAR_URL), ("delete", AVATAR_URL)],
)
def test_anonymous_callers_are_not_authenticated(api_client, method, url):
    response = getattr(api_client, method)(url)

    assert_problem(response, 401, "not_authenticated")
