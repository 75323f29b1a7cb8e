"""Retention: expiresAtUtc follows the status, and expired projects go with their files."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from projects.models import Page, Project, ProjectStatus, SourceKind
from projects.services.projects import retention_purge

pytestmark = pytest.mark.django_db


def project_made(owner, *, status: str, age_days: float) -> Project:
    source = default_storage.save(f"uploads/{owner.pk}/book.pdf", ContentFile(b"%PDF-1.4"))
    project = Project.objects.create(
        owner=owner,
        name="Book",
        status=status,
        target_language_code="fr",
        source_kind=SourceKind.PDF,
        source_object_key=source,
        created_at=timezone.now() - timedelta(days=age_days),
    )
    image = default_storage.save(f"projects/{project.pk}/pages/1.png", ContentFile(b"png"))
    thumb = default_storage.save(f"projects/{project.pk}/thumbs/1.png", ContentFile(b"png"))
    Page.objects.create(
        project=project, index=1, source_name="p1", image_key=image, thumbnail_key=thumb, width=10, height=10
    )
    return project


def test_a_never_started_draft_has_the_shorter_window(user, settings):
    draft = project_made(user, status=ProjectStatus.CREATED, age_days=0)
    started = project_made(user, status=ProjectStatus.PROCESSING, age_days=0)

    assert draft.retention_days == settings.RETENTION_DRAFT_DAYS == 7
    assert started.retention_days == settings.RETENTION_DAYS == 30
    assert draft.expires_at == draft.created_at + timedelta(days=7)
    assert started.expires_at == started.created_at + timedelta(days=30)


def test_expired_projects_are_deleted_with_pages_and_files(user, local_storage, django_capture_on_commit_callbacks):
    old_draft = project_made(user, status=ProjectStatus.CREATED, age_days=8)
    young_draft = project_made(user, status=ProjectStatus.CREATED, age_days=6)
    old_book = project_made(user, status=ProjectStatus.COMPLETE, age_days=31)
    young_book = project_made(user, status=ProjectStatus.COMPLETE, age_days=29)
    doomed_keys = [old_draft.source_object_key, old_book.source_object_key]
    doomed_keys += list(Page.objects.filter(project__in=[old_draft, old_book]).values_list("image_key", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        purged = retention_purge()

    assert purged == 2
    assert set(Project.objects.values_list("pk", flat=True)) == {young_draft.pk, young_book.pk}
    assert Page.objects.count() == 2
    assert not any(default_storage.exists(key) for key in doomed_keys)
    assert default_storage.exists(young_book.source_object_key)


def test_the_periodic_tasks_are_scheduled_and_registered(settings):
    from config.celery_app import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}

    assert {
        "projects.tasks.retention_purge",
        "projects.tasks.uploads_expired_purge",
        "projects.tasks.uploads_orphaned_purge",
        "projects.tasks.normalize_stale_requeue",
        "core.tasks.idempotency_records_purge",
        "core.tasks.upload_temporary_files_sweep",
    } <= scheduled
    assert scheduled <= set(app.tasks)
