"""Background work of projects: thin Celery tasks that call the services.

Normalize runs here for books over NORMALIZE_INLINE_MAX_PAGES. The periodic purges named in
CELERY_BEAT_SCHEDULE (`projects.tasks.retention_purge`, `projects.tasks.uploads_expired_purge`)
belong in this module too.
"""

from __future__ import annotations

from celery import shared_task

from projects.normalize import normalize_run


@shared_task(name="projects.tasks.normalize_project")
def normalize_project(project_id: str) -> None:
    """Normalize one queued project; a message for a project already claimed does nothing."""
    normalize_run(project_id=project_id)
