"""Every write to projects and pages: create (adopting an upload or a server path),
update, delete with files, page selection and overrides, retention."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User
from core.errors import ValidationFailed
from core.storage import storage_delete_on_commit
from projects.errors import ProjectNotEditable, SourceConflict, SourcePathForbidden
from projects.intake.sniffing import source_inspect
from projects.models import Page, Project, ProjectStatus, Upload
from projects.selectors.languages import language_pair_check, project_pairs_check
from projects.selectors.projects import job_in_flight
from projects.services.jobs import job_hold_resolve
from projects.services.uploads import upload_claim

# Statuses in which the book's pages and target may still change: nothing has run yet.
_NOT_STARTED = (ProjectStatus.CREATED, ProjectStatus.CALIBRATING)


def target_language_resolve(*, owner: User, requested: str | None) -> str:
    """The requested code, else the account's default, else en."""
    return requested or owner.default_target_language or "en"


def project_create(
    *,
    owner: User,
    name: str | None = None,
    upload_key: str | None = None,
    anonymous_upload_key: str | None = None,
    source_path: str | None = None,
    target_language_code: str | None = None,
    source_language_override: str | None = None,
    source_size_bytes: int | None = None,
) -> Project:
    """A new project (Created) on exactly one source; the upload is adopted in the same
    transaction, so an upload becomes the source of one project only. Languages the engine
    cannot translate are refused first (400 language_pair_unsupported), adopting nothing."""
    sources = [value for value in (upload_key, anonymous_upload_key, source_path) if value]
    if len(sources) != 1:
        raise SourceConflict("Give exactly one of uploadKey, anonymousUploadKey and sourcePath.")
    target = target_language_resolve(owner=owner, requested=target_language_code)
    language_pair_check(source_language=source_language_override or None, target_language=target)
    with transaction.atomic():
        project = Project(
            owner=owner,
            target_language_code=target,
            source_language_override=source_language_override or None,
        )
        if source_path:
            _source_from_path(project, owner=owner, source_path=source_path)
        else:
            upload = upload_claim(
                owner=owner, raw_key=upload_key or anonymous_upload_key or "", anonymous=bool(anonymous_upload_key)
            )
            _source_from_upload(project, upload)
        project.name = (name or "").strip() or Path(project.source_file_name).stem or "Untitled book"
        if source_size_bytes is not None and project.source_size_bytes is None:
            project.source_size_bytes = source_size_bytes
        project.save()
    return project


def _source_from_upload(project: Project, upload: Upload) -> None:
    project.source_kind = upload.kind
    project.source_object_key = upload.storage_key
    project.source_file_name = upload.file_name
    project.source_size_bytes = upload.size_bytes
    project.source_page_count = upload.page_count
    project.source_has_text_layer = upload.has_text_layer


def _source_from_path(project: Project, *, owner: User, source_path: str) -> None:
    resolved = source_path_resolve(owner=owner, source_path=source_path)
    inspection = source_inspect(path=resolved, file_name=resolved.name)
    project.source_kind = inspection.kind
    project.source_path = str(resolved)
    project.source_file_name = resolved.name
    project.source_size_bytes = resolved.stat().st_size if resolved.is_file() else None
    project.source_page_count = inspection.page_count
    project.source_has_text_layer = inspection.has_text_layer


def source_path_resolve(*, owner: User, source_path: str) -> Path:
    """The real path of a staff member's sourcePath inside SOURCE_PATH_ROOTS, else refused.

    Links are resolved first, so no link can lead outside the allowed folders.
    """
    forbidden = SourcePathForbidden("A server path is for staff, and only inside the configured folders.")
    if not owner.is_staff or not settings.SOURCE_PATH_ROOTS:
        raise forbidden
    resolved = Path(os.path.realpath(source_path))
    roots = [Path(os.path.realpath(root)) for root in settings.SOURCE_PATH_ROOTS]
    if not any(resolved == root or root in resolved.parents for root in roots):
        raise forbidden
    if not resolved.exists():
        raise ValidationFailed({"sourcePath": ["No such file or folder."]})
    return resolved


def project_update(
    *,
    project: Project,
    name: str | None = None,
    target_language_code: str | None = None,
    source_language_override: str | None = None,
    clear_source_language_override: bool = False,
    glossary: dict[str, str] | None = None,
) -> Project:
    """Rename, change the languages, or replace the glossary. The target can change only
    before any batch ran; the glossary applies to the pages translated from then on.
    Languages the engine cannot translate (the new target from the book's or a page's
    source override, or the new override into the target) are refused, changing nothing."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        fields: list[str] = []
        if name is not None:
            project.name = name.strip()
            fields.append("name")
        if target_language_code is not None and target_language_code != project.target_language_code:
            if project.status not in _NOT_STARTED or project.approval_count:
                raise ProjectNotEditable("The target language cannot change once translation has started.")
            project.target_language_code = target_language_code
            fields.append("target_language_code")
        if clear_source_language_override or source_language_override is not None:
            project.source_language_override = None if clear_source_language_override else source_language_override
            fields.append("source_language_override")
        if "target_language_code" in fields:
            project_pairs_check(
                project=project,
                target_language=project.target_language_code,
                source_override=project.source_language_override,
            )
        elif "source_language_override" in fields:
            language_pair_check(
                source_language=project.source_language_override, target_language=project.target_language_code
            )
        if glossary is not None:
            project.glossary = glossary
            fields.append("glossary")
        if fields:
            project.save(update_fields=fields)
    return project


def project_files_prefix(*, project_id: uuid.UUID | str) -> str:
    """The storage folder of every file the service makes for a book: page images,
    thumbnails, exports. (The source stays where its upload put it, tracked by
    `source_object_key`.)"""
    return f"projects/{project_id}"


def project_delete(*, project: Project) -> None:
    """Delete the project, its pages, its exports and every file of it, once the
    transaction commits: the adopted upload (the source), and everything under its
    storage folder, whether a row names it or not (a page or an export being written
    meanwhile). A batch in flight ends first: its hold is settled for the pages it already
    translated and released for the rest, exactly once. A server-path source (staff) is
    never touched."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        job = job_in_flight(project=project)
        if job is not None:
            job_hold_resolve(job=job, memo="The project was deleted.")
        folder = project_files_prefix(project_id=project.pk)
        keys = [project.source_object_key or ""]
        keys += project.exports.exclude(storage_key="").values_list("storage_key", flat=True)
        for image_key, thumbnail_key in project.pages.values_list("image_key", "thumbnail_key"):
            keys += [image_key, thumbnail_key]
        if project.source_object_key:
            Upload.objects.filter(storage_key=project.source_object_key).delete()
        project.delete()
        storage_delete_on_commit(keys, trees=[folder])


def owner_projects_delete(*, owner: User) -> int:
    """Every project of the owner deleted as `project_delete` deletes one (batches in flight
    with their holds resolved, every file once the transaction commits), and the owner's
    uploads not adopted by any, with their files. For the deletion of an account; returns
    how many projects."""
    deleted = 0
    for project in Project.objects.filter(owner=owner).only("pk").order_by("created_at"):
        project_delete(project=project)
        deleted += 1
    uploads = Upload.objects.filter(owner=owner)
    storage_delete_on_commit(list(uploads.values_list("storage_key", flat=True)))
    uploads.delete()
    return deleted


def pages_select(
    *,
    project: Project,
    included: bool,
    page_ids: Iterable[uuid.UUID] = (),
    indexes: Iterable[int] = (),
) -> int:
    """Include or exclude pages (by id and/or 1-based index); returns how many matched.

    Only pages not yet translated or in flight change; unknown ids are refused as a whole.
    """
    ids, numbers = set(page_ids), set(indexes)
    pages = project.pages.filter(Q(pk__in=ids) | Q(index__in=numbers))
    found_ids = set(pages.values_list("pk", flat=True))
    found_numbers = set(pages.values_list("index", flat=True))
    missing = [str(i) for i in ids - found_ids] + [str(n) for n in sorted(numbers - found_numbers)]
    if missing:
        raise ValidationFailed({"pages": [f"No such page in this project: {', '.join(missing[:20])}."]})
    return pages.update(included=included, updated_at=timezone.now())


def page_update(
    *,
    page: Page,
    included: bool | None = None,
    source_language_override: str | None = None,
    clear_source_language_override: bool = False,
) -> Page:
    """Include/exclude one page, or set (or clear) its source language override; an
    override the engine cannot translate into the book's target (or, cleared, the book's
    own source language) is refused, changing nothing."""
    fields: list[str] = []
    if included is not None:
        page.included = included
        fields.append("included")
    if clear_source_language_override or source_language_override is not None:
        page.source_language_override = None if clear_source_language_override else source_language_override
        fields.append("source_language_override")
        project = page.project
        language_pair_check(
            source_language=page.source_language_override or project.source_language_override,
            target_language=project.target_language_code,
        )
    if fields:
        page.updated_at = timezone.now()
        page.save(update_fields=[*fields, "updated_at"])
    return page


def retention_expired() -> Q:
    """Projects past their retention window (a never-started draft's is shorter)."""
    now = timezone.now()
    draft_cutoff = now - timedelta(days=settings.RETENTION_DRAFT_DAYS)
    cutoff = now - timedelta(days=settings.RETENTION_DAYS)
    return Q(status=ProjectStatus.CREATED, created_at__lte=draft_cutoff) | (
        ~Q(status=ProjectStatus.CREATED) & Q(created_at__lte=cutoff)
    )


def retention_purge() -> int:
    """Delete every expired project with its pages and files. Returns how many."""
    purged = 0
    for project in Project.objects.filter(retention_expired()).only("pk").iterator():
        project_delete(project=project)
        purged += 1
    return purged
