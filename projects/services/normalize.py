"""Normalize: a project's checked source becomes ordered Page rows, each with a page image,
a thumbnail and (for a PDF page that has one) its text layer.

`project_normalize` is what the API calls; `normalize_run` is what does the work, inline for
small books and on a worker (projects.tasks.normalize_project) for the rest. See
docs/intake.md, "Normalize".
"""

from __future__ import annotations

import itertools
import logging
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from celery import signature
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from bookstructure.book import (
    STRUCTURE_GROUP_PAGES,
    STRUCTURE_LOOKAHEAD_PAGES,
    STRUCTURE_WINDOW_PAGES,
    Carried,
    pages_structure,
)
from bookstructure.words import word_list
from core.errors import ServiceError
from core.markdown import markdown_unescape
from core.storage import storage_delete_quietly
from core.uploads import owned_temporary_file
from projects.errors import ProjectNotEditable
from projects.events import status_changed_publish
from projects.intake.poppler import pdf_title
from projects.intake.rendering import RenderedPage, pages_render, thumbnail_make
from projects.intake.sniffing import source_inspect
from projects.models import NormalizeState, Page, Project, ProjectStatus, SourceKind
from projects.services.jobs import job_stop_for_failed_source, job_wake_if_ready
from translation.engines import EngineError, PageReading, engine_get
from translation.languages import language_detect

logger = logging.getLogger(__name__)

_COPY_CHUNK_BYTES = 1024 * 1024
# Page rows made in one statement when a book's rows are made up front.
PAGE_ROWS_BATCH = 500
# Normalize cannot start again once the project failed or is being (or was) cancelled.
_REFUSED = (ProjectStatus.FAILED, ProjectStatus.CANCELLING, ProjectStatus.CANCELLED)
# The failure code of a normalize stopped on our side: normalize may run again.
SERVER_ERROR = "server_error"
NORMALIZE_TASK = "projects.tasks.normalize_project"


_FIRST_HEADING = re.compile(r"^#{1,6} +(.+)$", re.MULTILINE)
_NOTE_REFERENCE = re.compile(r"(?:,?\[\^[^\]\s]+\])+")  # a title's footnotes ("title[^1],[^2]") are not its text
# A page whose image and text are stored (it is prepared once its body is read, too).
_STORED = Q(prepared=True) | ~Q(image_key="")


class _MorePages(Exception):
    """This run prepared its share of pages; the rest go to a new task."""


class _ProjectGone(Exception):
    """The project was deleted while its pages were being made (its deletion took the files)."""


def page_image_key(*, project_id: uuid.UUID | str, index: int) -> str:
    """Where page `index` of the project is stored (the same key on every run)."""
    return f"projects/{project_id}/pages/{index}.png"


def page_thumbnail_key(*, project_id: uuid.UUID | str, index: int) -> str:
    """Where the thumbnail of page `index` is stored (the same key on every run)."""
    return f"projects/{project_id}/thumbs/{index}.png"


def project_normalize(*, project: Project) -> Project:
    """Start turning the project's source into pages; safe to call any number of times.

    - Created, never normalized: every page row of the book is made at once (in order, not
      prepared yet: the page count is known from the upload's check) and the book is
      Calibrating, so `process` may follow at once; a book of at most
      NORMALIZE_INLINE_MAX_PAGES pages is also rendered before this returns (or Failed with
      the reason), unless its pages are images read with OCR (`_intake_reads`); a larger one,
      or one to read, is rendered on a worker once the transaction commits, page by page,
      and a batch whose pages are all prepared runs while the rest still render.
    - Already queued or running, or done: returned unchanged; no second task, no duplicate
      page.
    - A normalize stopped on our side (storage, the database): resumed, keeping the pages
      already prepared.
    - Failed, Cancelling or Cancelled: refused with 409 project_not_editable (a failed
      source stays failed: create a new project from a corrected file).
    """
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        if project.status in _REFUSED:
            detail = "This project cannot be normalized: it is " + project.status
            if project.failure_reason:
                detail += f" ({project.failure_reason})"
            raise ProjectNotEditable(detail + ".")
        if not _normalize_startable(project):
            return project
        _page_rows_ensure(project)
        project.normalize_state = NormalizeState.QUEUED
        project.normalize_heartbeat_at = timezone.now()
        fields = ["normalize_state", "normalize_heartbeat_at"]
        inline = project.source_page_count <= settings.NORMALIZE_INLINE_MAX_PAGES and not _intake_reads(project)
        # Rendered here, the book moves on once, when its pages are made (Calibrating, or
        # Failed); rendered on a worker, it is Calibrating now.
        if not inline and project.status == ProjectStatus.CREATED:
            project.status = ProjectStatus.CALIBRATING
            project.status_changed_at = timezone.now()
            fields += ["status", "status_changed_at"]
            status_changed_publish(project_id=project.pk, owner_id=project.owner_id)
        project.save(update_fields=fields)
        if not inline:
            _task_enqueue_on_commit(project.pk)
    if inline:
        normalize_run(project_id=project.pk)
        project.refresh_from_db()
    return project


def _intake_reads(project: Project) -> bool:
    """Whether the book's pages are read with OCR at intake: a source without a text layer,
    with the engine's OCR installed (INTAKE_OCR). Reading takes a second or more a page, so
    such a book, however short, is normalized on a worker, never inside the HTTP call."""
    return settings.INTAKE_OCR and not project.source_has_text_layer and engine_get().reads_at_intake()


def _normalize_startable(project: Project) -> bool:
    """Never normalized (Created), or stopped on our side (resumable at any status)."""
    if project.normalize_state == NormalizeState.FAILED:
        return project.failure_code == SERVER_ERROR
    return project.status == ProjectStatus.CREATED and project.normalize_state == NormalizeState.NOT_STARTED


def _page_rows_ensure(project: Project) -> None:
    """Every page row of the book, 1 to the page count found at the upload's check (the
    missing ones, not prepared yet), PAGE_ROWS_BATCH rows a statement: never the whole
    book's rows in memory at once (4,000 unsaved rows are about 8 MiB)."""
    existing = set(project.pages.values_list("index", flat=True))
    missing = (index for index in range(1, project.source_page_count + 1) if index not in existing)
    while batch := list(itertools.islice(missing, PAGE_ROWS_BATCH)):
        Page.objects.bulk_create(
            [Page(project=project, index=index, source_name="", prepared=False) for index in batch]
        )


def _task_enqueue_on_commit(project_id: uuid.UUID) -> None:
    # Queued by name: tasks.py calls this module's normalize_run.
    transaction.on_commit(lambda: signature(NORMALIZE_TASK, args=[str(project_id)]).apply_async(queue="default"))


def normalize_run(*, project_id: uuid.UUID | str, page_limit: int | None = None) -> None:
    """Normalize a queued project: the worker's (and the inline path's) entry point.

    Claims the project (queued -> running, under a row lock); any other state means another
    run has it or it is finished, and this call does nothing. Pages already prepared are
    kept and skipped, so a run after a crash resumes where the last one stopped; each page
    prepared wakes a worker for a queued batch it completes. With `page_limit` (the task's
    NORMALIZE_TASK_PAGES), the run stops after preparing that many pages and queues the rest
    as a new task, behind other books' intake. On success every page is prepared; on a
    content problem the book is Failed with the reason, and on an unexpected error
    normalize may run again (see _normalize_fail), and the error is re-raised.
    """
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).first()
        if project is None or not _claimable(project):
            return
        _page_rows_ensure(project)  # a project queued before page rows were made up front
        project.normalize_state = NormalizeState.RUNNING
        project.normalize_pages_done = project.pages.filter(_STORED).count()
        project.normalize_heartbeat_at = timezone.now()
        project.save(update_fields=["normalize_state", "normalize_pages_done", "normalize_heartbeat_at"])
    try:
        page_count = _pages_make(project, page_limit=page_limit)
    except _MorePages:
        _normalize_continue(project)
        return
    except _ProjectGone:
        return
    except ServiceError as error:
        _normalize_fail(project, code=error.code, reason=error.detail)
        return
    except Exception:
        logger.exception("Normalizing project %s stopped on an unexpected error", project.pk)
        _normalize_fail(
            project,
            code=SERVER_ERROR,
            reason="Preparing the pages stopped on an unexpected error on our side; call normalize again.",
            retryable=True,
        )
        raise
    if project.pages.filter(prepared=False).exists():
        # Rows the file has no page for: it has fewer pages than its check counted.
        reason = f"The file has {page_count} pages, not the {project.source_page_count} it was checked to have."
        _normalize_fail(project, code="file_corrupt", reason=reason)
        return
    _normalize_finish(project, page_count=page_count)


def _normalize_continue(project: Project) -> None:
    """Queue the rest of the book as a new task, unless this run lost its claim meanwhile."""
    with transaction.atomic():
        if Project.objects.filter(pk=project.pk, normalize_state=NormalizeState.RUNNING).update(
            normalize_state=NormalizeState.QUEUED, normalize_heartbeat_at=timezone.now()
        ):
            _task_enqueue_on_commit(project.pk)


def _stale_before() -> datetime:
    return timezone.now() - timedelta(seconds=settings.NORMALIZE_STALE_SECONDS)


def _claimable(project: Project) -> bool:
    """Queued, or running with no sign of life for NORMALIZE_STALE_SECONDS (its worker died)."""
    if project.normalize_state == NormalizeState.QUEUED:
        return True
    heartbeat = project.normalize_heartbeat_at
    return project.normalize_state == NormalizeState.RUNNING and (heartbeat is None or heartbeat < _stale_before())


def normalize_stale_requeue() -> int:
    """Beat: queue again every normalize that should be making pages and is not, at most
    once per NORMALIZE_STALE_SECONDS each; returns how many. That is a run whose worker
    stopped beating (killed, lost), a queued one whose message was lost, and one stopped on
    our side in a book already processing (its batches wait for the pages, so nobody is
    left to call normalize again). The run that picks it up keeps the pages already
    prepared and adds the rest."""
    silent = Q(normalize_heartbeat_at__isnull=True) | Q(normalize_heartbeat_at__lt=_stale_before())
    stopped_on_our_side = Q(normalize_state=NormalizeState.FAILED, failure_code=SERVER_ERROR) & ~Q(
        status=ProjectStatus.CREATED
    )
    stale = Project.objects.filter(silent).filter(
        Q(normalize_state__in=(NormalizeState.QUEUED, NormalizeState.RUNNING)) | stopped_on_our_side
    )
    requeued = 0
    for project_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            # The same conditions again, in the statement: a run may have moved on since.
            updated = stale.filter(pk=project_id).update(
                normalize_state=NormalizeState.QUEUED, normalize_heartbeat_at=timezone.now()
            )
            if updated:
                logger.warning("Normalize of project %s is not making pages; queueing it again", project_id)
                _task_enqueue_on_commit(project_id)
                requeued += updated
    return requeued


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
    with owned_temporary_file(suffix=suffix) as copy:  # a worker killed meanwhile: swept
        with default_storage.open(project.source_object_key, "rb") as stored:
            shutil.copyfileobj(stored, copy, _COPY_CHUNK_BYTES)
        copy.flush()
        yield Path(copy.name)


def _pages_make(project: Project, *, page_limit: int | None = None) -> int:
    """Render and store every page not prepared yet (at most `page_limit` of them, then
    _MorePages); returns the book's page count."""
    prepared = set(project.pages.filter(_STORED).values_list("index", flat=True))
    start = 1
    while start in prepared:
        start += 1
    highest = 0
    with source_local_copy(project) as path:
        if project.source_kind == SourceKind.PDF and not project.book_title:
            _book_title_set(project, pdf_title(path))
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
            stored = 0
            try:
                for page in rendered:
                    highest = page.index
                    if page.index in prepared:
                        continue
                    if page_limit is not None and stored >= page_limit:
                        raise _MorePages
                    # OCR on a worker only: the HTTP call never waits for it (_intake_reads).
                    _page_store(project, page, read_image=page_limit is not None and settings.INTAKE_OCR)
                    pages_structure_advance(project, through=page.index, complete=False)
                    stored += 1
            except ServiceError:
                # The file gives no page after these: the pages read are the book's, as they are.
                pages_structure_advance(project, through=max(highest, start - 1), complete=True)
                raise
    page_count = max(highest, start - 1, max(prepared, default=0))
    pages_structure_advance(project, through=page_count, complete=True)
    return page_count


def _page_store(project: Project, rendered: RenderedPage, *, read_image: bool = False) -> None:
    """Store one page's image and thumbnail, then fill its row and count the progress,
    together. With `read_image`, a page without a text layer is read by the engine's OCR
    (`_page_image_read`): its layout and review flags are stored with it."""
    image_key = _storage_replace(
        page_image_key(project_id=project.pk, index=rendered.index), File(rendered.png_path.open("rb"))
    )
    thumbnail_key = _storage_replace(
        page_thumbnail_key(project_id=project.pk, index=rendered.index),
        ContentFile(rendered.thumbnail if rendered.thumbnail is not None else thumbnail_make(rendered.png_path)),
    )
    words = len(rendered.text.split())
    layout, flags = rendered.layout, []
    if read_image and not rendered.text.strip() and not (rendered.layout or {}).get("blocks"):
        reading = _page_image_read(project, rendered.png_path)
        if reading is not None:
            layout, flags = reading.layout, list(reading.warnings)
    # Prepared (ready to translate) once its body is read with its neighbours' (pages_structure_advance).
    fields = {
        "source_name": rendered.source_name[:255],
        "image_key": image_key,
        "thumbnail_key": thumbnail_key,
        "width": rendered.width,
        "height": rendered.height,
        "text_layer": rendered.text,
        "layout": layout,
        "review_flags": flags,
        "has_text_layer": words > 0,
        "word_count": words,
        "updated_at": timezone.now(),
    }
    with transaction.atomic():
        if not Project.objects.filter(pk=project.pk).update(
            normalize_pages_done=F("normalize_pages_done") + 1, normalize_heartbeat_at=timezone.now()
        ):
            storage_delete_quietly([image_key, thumbnail_key])
            raise _ProjectGone
        Page.objects.update_or_create(project=project, index=rendered.index, defaults=fields)


def _page_image_read(project: Project, png_path: Path) -> PageReading | None:
    """The page image read by the engine's OCR (None from an engine that reads images itself
    when it translates, or when the OCR cannot run: the page is then read when translated)."""
    try:
        return engine_get().page_read(png_path.read_bytes(), language=project.source_language_override or None)
    except EngineError:
        logger.warning("Project %s: a page image could not be read at intake", project.pk, exc_info=True)
        return None


def pages_structure_advance(project: Project, *, through: int, complete: bool) -> None:
    """Read the body of every stored page that can be decided now (`bookstructure.book`):
    pages 1 to `through` are stored; `complete`: they are the whole book. Each decided page
    gets its Markdown, furniture and word count and is prepared, and a batch waiting for it
    is woken when it was the batch's last page."""
    undecided = project.pages.filter(prepared=False, index__lte=through).order_by("index")
    start = undecided.values_list("index", flat=True).first()
    ready_through = through if complete else through - STRUCTURE_LOOKAHEAD_PAGES
    if start is None or ready_through < start:
        return
    if not complete and start > 1 and ready_through - start + 1 < STRUCTURE_GROUP_PAGES:
        return  # decided a few pages at a time (each time reads the window again); page 1 at once
    first_index = max(1, start - STRUCTURE_WINDOW_PAGES)
    rows = list(
        project.pages.filter(index__gte=first_index, index__lte=through)
        .order_by("index")
        .values_list("index", "layout", "carried_from", "text_layer", "carried_lines", "prepared", "structured")
    )
    carried_in = {
        index: Carried(page=index, origin=origin, lines=tuple((block, line) for block, line in lines))
        for index, _, origin, _, lines, *_ in rows
        if origin is not None and index >= start
    }
    language = project.source_language_override or language_detect(" ".join(row[3] for row in rows[:20])) or "en"
    bodies = pages_structure(
        # An OCR layout stored when its page was translated (read then, not at intake) is no context.
        [
            {} if not layout or (layout.get("source") == "ocr" and prepared and not structured) else layout
            for _, layout, _, _, _, prepared, structured in rows
        ],
        first_index=first_index,
        start=start,
        ready_through=ready_through,
        carried_in=carried_in,
        words=word_list(language),
    )
    with transaction.atomic():
        for body in bodies:
            changes: dict[str, object] = {"prepared": True, "structured": body.structured, "updated_at": timezone.now()}
            if body.structured:
                changes.update(
                    source_markdown=body.markdown,
                    furniture=list(body.furniture),
                    carried_from=body.carried_from,
                    word_count=body.words,
                )
            Page.objects.filter(project=project, index=body.index).update(**changes)
            for carried in body.carries_into:
                Page.objects.filter(project=project, index=carried.page).update(
                    carried_from=carried.origin, carried_lines=[list(line) for line in carried.lines]
                )
        if bodies and bodies[0].index == 1 and not project.book_title:
            heading = _FIRST_HEADING.search(bodies[0].markdown)
            title = _NOTE_REFERENCE.sub("", heading.group(1)).replace("`", "") if heading else ""
            _book_title_set(project, markdown_unescape(title).strip())
        waiting = project.pages.filter(index__in=[body.index for body in bodies], job__isnull=False)
        for job_id in set(waiting.values_list("job_id", flat=True)):
            job_wake_if_ready(job_id=job_id)


def _book_title_set(project: Project, title: str) -> None:
    """The book's own title, once: its PDF's metadata, else its first page's first heading."""
    title = " ".join(title.split())[: Project._meta.get_field("book_title").max_length]
    if title:
        Project.objects.filter(pk=project.pk, book_title="").update(book_title=title)
        project.book_title = title


def _storage_replace(key: str, content: File[bytes]) -> str:
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
        if project.status == ProjectStatus.CREATED:  # normalized inline, or a row an older release left Created
            project.status = ProjectStatus.CALIBRATING
            project.status_changed_at = timezone.now()
            fields += ["status", "status_changed_at"]
            status_changed_publish(project_id=project.pk, owner_id=project.owner_id)
        project.save(update_fields=fields)


def _normalize_fail(project: Project, *, code: str, reason: str, retryable: bool = False) -> None:
    """Records why normalize stopped, keeping a book's paid work and never half a book.

    - A book never processed (no batch was ever made of it) loses every page row and page
      file: Failed with the reason when the file is at fault; back to Created when the
      fault is ours (storage, the database), so that normalize can run again.
    - A book already processing keeps its pages: the fault ours, normalize resumes where it
      stopped (called again, or by beat after NORMALIZE_STALE_SECONDS); the file at fault,
      the book is Failed, its queued batch ends with its hold released (a running batch
      finishes and is charged for what it translated), the pages never prepared are removed
      and the prepared ones stay with their translations.
    """
    keys: list[str] = []
    with transaction.atomic():
        locked = Project.objects.select_for_update().filter(pk=project.pk).first()
        if locked is None:
            return
        processed = locked.jobs.exists()
        if processed:
            doomed = locked.pages.filter(prepared=False) if not retryable else locked.pages.none()
        else:
            doomed = locked.pages.all()
        for image_key, thumbnail_key in doomed.values_list("image_key", "thumbnail_key"):
            keys += [key for key in (image_key, thumbnail_key) if key]
        doomed.delete()
        before = locked.status
        fields = ["normalize_state", "normalize_pages_done", "failure_code", "failure_reason"]
        if not retryable:
            if processed:
                job_stop_for_failed_source(project=locked, reason=f"The source could not be read: {reason}")
            locked.status = ProjectStatus.FAILED
        elif not processed:
            locked.status = ProjectStatus.CREATED
        if locked.status != before:
            locked.status_changed_at = timezone.now()
            fields += ["status", "status_changed_at"]
            status_changed_publish(project_id=locked.pk, owner_id=locked.owner_id)
        locked.normalize_state = NormalizeState.FAILED
        locked.normalize_pages_done = locked.pages.filter(prepared=True).count()
        locked.failure_code = code
        locked.failure_reason = reason
        locked.save(update_fields=fields)
    if processed:
        storage_delete_quietly(dict.fromkeys(keys))
        return
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
