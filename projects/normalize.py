"""Normalize: a project's checked source becomes ordered Page rows, each with a page image,
a thumbnail and (for a PDF page that has one) its text layer.

`project_normalize` is what the API calls; `normalize_run` is what does the work, inline for
small books and on a worker (projects.tasks.normalize_project) for the rest. See
docs/intake.md, "Normalize".
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.errors import ServiceError
from core.storage import storage_delete_quietly
from projects.events import status_changed_publish
from projects.models import NormalizeState, Page, Project, ProjectStatus, SourceKind
from projects.rendering import RenderedPage, pages_render, thumbnail_make
from projects.sniffing import source_inspect

logger = logging.getLogger(__name__)

_COPY_CHUNK_BYTES = 1024 * 1024
# Normalize cannot start again once the project failed or is being (or was) cancelled.
_REFUSED = (ProjectStatus.FAILED, ProjectStatus.CANCELLING, ProjectStatus.CANCELLED)


def page_image_key(*, project_id: uuid.UUID | str, index: int) -> str:
    """Where page `index` of the project is stored (the same key on every run)."""
    return f"projects/{project_id}/pages/{index}.png"


def page_thumbnail_key(*, project_id: uuid.UUID | str, index: int) -> str:
    """Where the thumbnail of page `index` is stored (the same key on every run)."""
    return f"projects/{project_id}/thumbs/{index}.png"


def project_normalize(*, project: Project) -> Project:
    """Start turning the project's source into pages; safe to call any number of times.

    - Created, never normalized: a book of at most NORMALIZE_INLINE_MAX_PAGES pages is
      normalized before this returns (Calibrating, or Failed with the reason); a larger one
      is queued on a worker once the transaction commits and comes back Created with
      normalization state "queued".
    - Already queued or running, or already past Created (Calibrating and on): returned
      unchanged; no second task, no duplicate page.
    - Created after a normalize stopped on our side (storage, the database): normalized
      again, as above.
    - Failed, Cancelling or Cancelled: refused with 409 project_not_editable (a failed
      source stays failed: create a new project from a corrected file).
    """
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        if project.status in _REFUSED:
            detail = "This project cannot be normalized: it is " + project.status
            if project.failure_reason:
                detail += f" ({project.failure_reason})"
            raise ServiceError(detail + ".", code="project_not_editable")
        if project.status != ProjectStatus.CREATED or project.normalize_state in (
            NormalizeState.QUEUED,
            NormalizeState.RUNNING,
            NormalizeState.DONE,
        ):
            return project
        project.normalize_state = NormalizeState.QUEUED
        project.save(update_fields=["normalize_state"])
        inline = project.source_page_count <= settings.NORMALIZE_INLINE_MAX_PAGES
        if not inline:
            _task_enqueue_on_commit(project.pk)
    if inline:
        normalize_run(project_id=project.pk)
        project.refresh_from_db()
    return project


def _task_enqueue_on_commit(project_id: uuid.UUID) -> None:
    # tasks.py imports this module for normalize_run: import the task here (HackSoft's way).
    from projects.tasks import normalize_project

    transaction.on_commit(lambda: normalize_project.apply_async(args=[str(project_id)], queue="default"))


def normalize_run(*, project_id: uuid.UUID | str) -> None:
    """Normalize a queued project: the worker's (and the inline path's) entry point.

    Claims the project (queued -> running, under a row lock); any other state means another
    run has it or it is finished, and this call does nothing. Pages already stored are kept
    and skipped, so a run after a crash resumes where the last one stopped. On success the
    project is Calibrating with every page; on a content problem it is Failed with the
    reason, and on an unexpected error it is back to Created with the reason (normalize may
    be called again) and the error is re-raised; either way no page row or page file is
    left behind.
    """
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).first()
        if project is None or not _claimable(project):
            return
        project.normalize_state = NormalizeState.RUNNING
        project.normalize_pages_done = project.pages.count()
        project.normalize_heartbeat_at = timezone.now()
        project.save(update_fields=["normalize_state", "normalize_pages_done", "normalize_heartbeat_at"])
    try:
        page_count = _pages_make(project)
    except ServiceError as error:
        _normalize_fail(project, code=error.code, reason=error.detail)
        return
    except Exception:
        logger.exception("Normalizing project %s stopped on an unexpected error", project.pk)
        _normalize_fail(
            project,
            code="server_error",
            reason="Normalizing stopped on an unexpected error on our side; call normalize again.",
            retryable=True,
        )
        raise
    _normalize_finish(project, page_count=page_count)


def _stale_before() -> datetime:
    return timezone.now() - timedelta(seconds=settings.NORMALIZE_STALE_SECONDS)


def _claimable(project: Project) -> bool:
    """Queued, or running with no sign of life for NORMALIZE_STALE_SECONDS (its worker died)."""
    if project.normalize_state == NormalizeState.QUEUED:
        return True
    heartbeat = project.normalize_heartbeat_at
    return project.normalize_state == NormalizeState.RUNNING and (heartbeat is None or heartbeat < _stale_before())


def normalize_stale_requeue() -> int:
    """Queue again every normalize whose worker stopped beating (killed, lost); returns how
    many. The run that picks it up keeps the pages already stored and adds the rest."""
    stale = Project.objects.filter(normalize_state=NormalizeState.RUNNING).filter(
        Q(normalize_heartbeat_at__isnull=True) | Q(normalize_heartbeat_at__lt=_stale_before())
    )
    project_ids = list(stale.values_list("pk", flat=True))
    for project_id in project_ids:
        logger.warning("Normalize of project %s stopped beating; queueing it again", project_id)
        _task_enqueue_on_commit(project_id)
    return len(project_ids)


@contextmanager
def source_local_copy(project: Project) -> Iterator[Path]:
    """A local path to the project's source for as long as the block runs.

    A stored source (source_object_key) is used in place when the storage keeps it as a
    local file, else streamed in chunks to a temporary file (S3 and the like) that is removed after;
    a server-side source (source_path) is yielded as is.
    """
    if not project.source_object_key:
        yield Path(project.source_path)
        return
    try:
        local = Path(default_storage.path(project.source_object_key))
    except NotImplementedError:  # not on local disk (S3 and the like)
        local = None
    if local is not None and local.is_file():
        yield local
        return
    suffix = Path(project.source_file_name or project.source_object_key).suffix
    with tempfile.NamedTemporaryFile(prefix="source-", suffix=suffix) as copy:
        with default_storage.open(project.source_object_key, "rb") as stored:
            shutil.copyfileobj(stored, copy, _COPY_CHUNK_BYTES)
        copy.flush()
        yield Path(copy.name)


def _pages_make(project: Project) -> int:
    """Render and store every page not stored yet; returns the book's page count."""
    existing = set(project.pages.values_list("index", flat=True))
    start = 1
    while start in existing:
        start += 1
    highest = 0
    with source_local_copy(project) as path:
        entries: tuple[str, ...] = ()
        if project.source_kind in (SourceKind.ZIP, SourceKind.FOLDER):
            entries = source_inspect(path=path, file_name=project.source_file_name or path.name).entries
        rendered = pages_render(
            path=path,
            kind=project.source_kind,
            entries=entries,
            start_index=start,
            file_name=project.source_file_name or path.name,
        )
        with closing(rendered):
            for page in rendered:
                highest = page.index
                if page.index not in existing:
                    _page_store(project, page)
    return max(highest, start - 1, max(existing, default=0))


def _page_store(project: Project, rendered: RenderedPage) -> None:
    """Store one page's image and thumbnail, then its row and the progress, together."""
    image_key = _storage_replace(
        page_image_key(project_id=project.pk, index=rendered.index), File(rendered.png_path.open("rb"))
    )
    thumbnail_key = _storage_replace(
        page_thumbnail_key(project_id=project.pk, index=rendered.index),
        ContentFile(rendered.thumbnail if rendered.thumbnail is not None else thumbnail_make(rendered.png_path)),
    )
    words = len(rendered.text.split())
    with transaction.atomic():
        Page.objects.create(
            project=project,
            index=rendered.index,
            source_name=rendered.source_name[:255],
            image_key=image_key,
            thumbnail_key=thumbnail_key,
            width=rendered.width,
            height=rendered.height,
            text_layer=rendered.text,
            has_text_layer=words > 0,
            word_count=words,
        )
        Project.objects.filter(pk=project.pk).update(
            normalize_pages_done=F("normalize_pages_done") + 1, normalize_heartbeat_at=timezone.now()
        )


def _storage_replace(key: str, content: File) -> str:
    """Save under exactly `key`, replacing what is there (storages rename on a collision)."""
    try:
        default_storage.delete(key)
        return default_storage.save(key, content)
    finally:
        content.close()


def _normalize_finish(project: Project, *, page_count: int) -> None:
    with transaction.atomic():
        locked = Project.objects.select_for_update().filter(pk=project.pk).first()
        if locked is None:  # deleted while it ran; its deletion took the files
            return
        project = locked
        project.normalize_state = NormalizeState.DONE
        project.normalize_pages_done = project.pages.count()
        project.source_page_count = page_count
        project.failure_code = project.failure_reason = ""  # an earlier run's stop on our side
        fields = ["normalize_state", "normalize_pages_done", "source_page_count", "failure_code", "failure_reason"]
        if project.source_object_key and not project.source_path:
            # The contract's sourcePath, "filled in by normalize" for an upload: the name
            # of the original input (the file itself stays at sourceObjectKey).
            project.source_path = project.source_file_name
            fields.append("source_path")
        if project.status == ProjectStatus.CREATED:
            project.status = ProjectStatus.CALIBRATING
            project.status_changed_at = timezone.now()
            fields += ["status", "status_changed_at"]
            status_changed_publish(project_id=project.pk, owner_id=project.owner_id)
        project.save(update_fields=fields)


def _normalize_fail(project: Project, *, code: str, reason: str, retryable: bool = False) -> None:
    """Failed with the reason; every page row and page file of the project removed. A
    `retryable` failure (ours, not the file's: storage or the database failing) leaves the
    book Created, so that normalize can run again on the same project."""
    keys: list[str] = []
    with transaction.atomic():
        locked = Project.objects.select_for_update().filter(pk=project.pk).first()
        if locked is not None:
            for image_key, thumbnail_key in locked.pages.values_list("image_key", "thumbnail_key"):
                keys += [image_key, thumbnail_key]
            locked.pages.all().delete()
            if not retryable:
                locked.status = ProjectStatus.FAILED
                locked.status_changed_at = timezone.now()
                status_changed_publish(project_id=locked.pk, owner_id=locked.owner_id)
            locked.normalize_state = NormalizeState.FAILED
            locked.normalize_pages_done = 0
            locked.failure_code = code
            locked.failure_reason = reason
            locked.save(
                update_fields=[
                    "status",
                    "status_changed_at",
                    "normalize_state",
                    "normalize_pages_done",
                    "failure_code",
                    "failure_reason",
                ]
            )
    # Files stored before the failure but not yet in a row are in the same two folders.
    keys += _stored_page_files(project.pk)
    # The files go at once, not on commit: they were written outside any transaction, and
    # an outer rollback must not leave them behind.
    storage_delete_quietly(dict.fromkeys(keys))


def _stored_page_files(project_id: uuid.UUID) -> list[str]:
    keys: list[str] = []
    for folder in (f"projects/{project_id}/pages", f"projects/{project_id}/thumbs"):
        try:
            _, files = default_storage.listdir(folder)
        except FileNotFoundError:
            continue
        except Exception:  # cleanup must not mask the failure being recorded
            logger.exception("Could not list %s", folder)
            continue
        keys += [f"{folder}/{name}" for name in files]
    return keys
