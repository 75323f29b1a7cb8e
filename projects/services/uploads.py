"""Receiving files: checked, stored through django-storages, and adopted by a project.

An upload is inspected (`sniffing.source_inspect`: magic bytes, then the real parser) and
its words estimated (the text layer, else a few pages read with Tesseract) before anything
is stored, and streamed to storage from the request's temporary file: a
500 MiB book is never held in memory. The client gets an opaque key; only its SHA-256 is
kept, so a leaked database row cannot be used to adopt someone's upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import secrets
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from django.utils.text import get_valid_filename

from accounts.models import User
from core.storage import (
    storage_delete_on_commit,
    storage_delete_quietly,
    storage_files_under,
    storage_tree_delete_quietly,
)
from core.uploads import UploadLimits, extension_of, owned_temporary_file
from projects.errors import UploadAlreadyUsed, UploadKeyUnknown, UploadTooLarge
from projects.intake.sniffing import source_inspect, source_words_estimate
from projects.models import Project, Upload

OWNER_KEY_PREFIX = "upl_"
ANONYMOUS_KEY_PREFIX = "anon_"
_MAX_NAME_LENGTH = 150
UPLOADS_FOLDER = "uploads"
# A file is stored a moment before its row is written: one younger than this is never an
# orphan yet (a 500 MiB file takes minutes to reach S3, and is dated when it arrives).
ORPHAN_GRACE = timedelta(hours=1)
_ROWS_PER_QUERY = 1000


def upload_limits() -> UploadLimits:
    """What POST /v1/uploads and the anonymous estimate accept."""
    return UploadLimits(
        accepted_extensions=tuple(settings.UPLOAD_EXTENSIONS), max_file_size_bytes=settings.UPLOAD_MAX_BYTES
    )


class SizeLimitedUploadHandler(FileUploadHandler):
    """Stops reading a multipart body as soon as a file passes the limit, so an oversized
    (or chunked, length-less) upload is refused without filling the disk."""

    def __init__(self, request: HttpRequest | None = None, *, max_bytes: int) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > self.max_bytes:
            raise RequestDataTooBig(f"The file is larger than {self.max_bytes} bytes.")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def file_name_sanitize(name: str) -> str:
    """A safe display and storage name: no folders, no odd characters, a bounded length."""
    base = os.path.basename(name.replace("\\", "/")).strip()
    stem, extension = os.path.splitext(base)
    try:
        clean_stem = get_valid_filename(stem)
    except Exception:  # Django refuses names that clean to nothing ("..", "")
        clean_stem = ""
    clean_stem = clean_stem[: _MAX_NAME_LENGTH - len(extension)] or "upload"
    return f"{clean_stem}{extension.lower()}"


@contextlib.contextmanager
def _local_path(upload: UploadedFile[bytes]) -> Iterator[Path]:
    """A local path holding the upload's bytes (the request's temporary file if it has one)."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        yield Path(temporary())
        return
    with owned_temporary_file(suffix=extension_of(upload.name or "")) as copy:
        for chunk in upload.chunks():
            copy.write(chunk)
        copy.flush()
        yield Path(copy.name)


def upload_receive(*, owner: User | None, upload: UploadedFile[bytes]) -> tuple[Upload, str]:
    """Check and store a file; returns the Upload row and the raw key (shown once).

    owner None makes an anonymous upload (an estimate), adoptable for
    ANONYMOUS_UPLOAD_HOURS. Nothing is stored when the file is refused.
    """
    limit = settings.UPLOAD_MAX_BYTES
    if (upload.size or 0) > limit:
        raise UploadTooLarge(f"The file is larger than {limit} bytes.", max_file_size_bytes=limit)
    file_name = file_name_sanitize(upload.name or "upload")
    with _local_path(upload) as path:
        inspection = source_inspect(path=path, file_name=file_name)
        words = source_words_estimate(path=path, inspection=inspection)
        raw_key = (ANONYMOUS_KEY_PREFIX if owner is None else OWNER_KEY_PREFIX) + secrets.token_urlsafe(24)
        folder = f"{UPLOADS_FOLDER}/{owner.pk if owner else 'anonymous'}/{secrets.token_hex(8)}"
        size_bytes = path.stat().st_size
        with path.open("rb") as source:
            storage_key = default_storage.save(f"{folder}/{file_name}", source)
    now = timezone.now()
    hours = settings.UPLOAD_UNADOPTED_HOURS if owner else settings.ANONYMOUS_UPLOAD_HOURS
    try:
        record = Upload.objects.create(
            key=key_hash(raw_key),
            owner=owner,
            storage_key=storage_key,
            file_name=file_name,
            size_bytes=size_bytes,
            kind=inspection.kind,
            page_count=inspection.page_count,
            word_estimate=words.words,
            has_text_layer=inspection.has_text_layer,
            created_at=now,
            expires_at=now + timedelta(hours=hours),
        )
    except BaseException:
        storage_delete_quietly([storage_key])
        raise
    return record, raw_key


def upload_claim(*, owner: User, raw_key: str, anonymous: bool) -> Upload:
    """Lock and mark an upload as adopted by this owner; call inside a transaction.

    An owner's upload is found only for that owner, an anonymous one for anyone holding its
    key, within its window. Unknown or expired keys are `upload_key_unknown`; a key already
    adopted is `upload_already_used`.
    """
    field = "anonymousUploadKey" if anonymous else "uploadKey"
    unknown = UploadKeyUnknown("No upload with this key exists for you, or it expired.", field=field)
    prefix = ANONYMOUS_KEY_PREFIX if anonymous else OWNER_KEY_PREFIX
    if not raw_key.startswith(prefix):
        raise unknown
    candidates = Upload.objects.select_for_update().filter(key=key_hash(raw_key))
    if not anonymous:  # an anonymous key (prefix anon_) is good for anyone who holds it
        candidates = candidates.filter(owner=owner)
    upload = candidates.first()
    if upload is None:
        raise unknown
    if upload.adopted_at is not None:
        raise UploadAlreadyUsed(field=field)
    if upload.expires_at <= timezone.now():
        raise unknown
    upload.owner = owner
    upload.adopted_at = timezone.now()
    upload.save(update_fields=["owner", "adopted_at"])
    return upload


def uploads_expired_purge() -> int:
    """Delete unadopted uploads past their window, with their files. Returns how many."""
    purged = 0
    expired = Upload.objects.filter(adopted_at__isnull=True, expires_at__lte=timezone.now())
    for upload_id in expired.values_list("pk", flat=True).iterator():
        with transaction.atomic():
            locked = (
                Upload.objects.select_for_update(skip_locked=True).filter(pk=upload_id, adopted_at__isnull=True).first()
            )
            if locked is None:  # adopted meanwhile, or another purge has it
                continue
            storage_delete_on_commit([locked.storage_key])
            locked.delete()
        purged += 1
    return purged


def uploads_orphaned_purge(*, older_than: timedelta = ORPHAN_GRACE) -> int:
    """Delete the stored upload files that no Upload row and no project names, once older
    than `older_than`: what a server killed between storing a file and writing its row left
    behind. Returns how many files."""
    cutoff = timezone.now() - older_than
    stored = storage_files_under(UPLOADS_FOLDER)
    named: set[str] = set()
    for start in range(0, len(stored), _ROWS_PER_QUERY):
        chunk = stored[start : start + _ROWS_PER_QUERY]
        named.update(Upload.objects.filter(storage_key__in=chunk).values_list("storage_key", flat=True))
        sources = Project.objects.filter(source_object_key__in=chunk).values_list("source_object_key", flat=True)
        named.update(key for key in sources if key)
    by_folder: dict[str, list[str]] = defaultdict(list)
    for key in stored:
        by_folder[posixpath.dirname(key)].append(key)
    purged = 0
    for folder, keys in by_folder.items():
        orphans = [key for key in keys if key not in named and _stored_before(key, cutoff)]
        if not orphans:
            continue
        if len(orphans) == len(keys) and folder != UPLOADS_FOLDER:
            storage_tree_delete_quietly(folder)  # the upload's own folder, emptied: gone too
        else:
            storage_delete_quietly(orphans)
        purged += len(orphans)
    return purged


def _stored_before(key: str, cutoff: datetime) -> bool:
    try:
        return default_storage.get_modified_time(key) < cutoff
    except FileNotFoundError:  # deleted meanwhile
        return False
