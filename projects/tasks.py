"""Background work of projects: thin Celery tasks that call the services.

Normalize runs here for books over NORMALIZE_INLINE_MAX_PAGES; beat runs the periodic ones
(CELERY_BEAT_SCHEDULE): the stale-normalize requeue, the reaper, the wake-up of jobs whose
message was lost, and the three purges.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from projects.services import jobs, uploads
from projects.services import projects as services
from projects.services.normalize import normalize_run, normalize_stale_requeue
from projects.services.runner import batch_run


@shared_task(name="projects.tasks.normalize_project")
def normalize_project(project_id: str) -> None:
    """Prepare the next NORMALIZE_TASK_PAGES pages of a queued project (the rest in a new
    task); a message for a project already claimed does nothing."""
    normalize_run(project_id=project_id, page_limit=settings.NORMALIZE_TASK_PAGES)


@shared_task(name="projects.tasks.normalize_stale_requeue")
def normalize_stale_requeue_task() -> int:
    """Periodic: queue again the normalizes whose worker died."""
    return normalize_stale_requeue()


@shared_task(name="projects.tasks.retention_purge")
def retention_purge() -> int:
    """Periodic: delete projects past their retention window, with their files."""
    return services.retention_purge()


@shared_task(name="projects.tasks.uploads_expired_purge")
def uploads_expired_purge() -> int:
    """Periodic: delete unadopted uploads past their window, with their files."""
    return uploads.uploads_expired_purge()


@shared_task(name="projects.tasks.uploads_orphaned_purge")
def uploads_orphaned_purge() -> int:
    """Periodic: delete stored upload files that no row names (a server killed mid-upload)."""
    return uploads.uploads_orphaned_purge()


@shared_task(name="projects.tasks.job_run_next")
def job_run_next() -> str | None:
    """Claim the Queued job with the lowest position (whichever it is) and run its batch.
    A message that finds nothing queued does nothing (the Job table decides, not Celery)."""
    job = jobs.job_claim()
    if job is None:
        return None
    batch_run(job=job)
    return str(job.pk)


@shared_task(name="projects.tasks.jobs_stale_requeue")
def jobs_stale_requeue() -> int:
    """Periodic (the reaper): queue again the running jobs whose worker stopped beating."""
    return jobs.jobs_stale_requeue()


@shared_task(name="projects.tasks.jobs_queued_redispatch")
def jobs_queued_redispatch() -> int:
    """Periodic: send again the wake-up of queued jobs that waited too long (a lost message)."""
    return jobs.jobs_queued_redispatch()
