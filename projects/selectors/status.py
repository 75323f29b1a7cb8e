"""The project status view: composed on every read from the project, its job in flight,
the owner's wallet and the engine's status; never stored.

Waiting means the book resumes by itself (the queue, the GPU warming up or at capacity, an
auto top-up on its way); blocked means the caller must act (add credit, retry).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.utils import timezone

from projects.models import Job, JobStatus, NormalizeState, Page, PageStatus, Project, ProjectStatus
from projects.selectors.billing import ladder_rung_size, project_next_work_quote
from projects.selectors.languages import failed_pages_outlook
from translation.engines import model_status
from wallet.selectors.wallet import auto_top_up_coming

PHASE = {
    ProjectStatus.CREATED: "intake",
    ProjectStatus.CALIBRATING: "working",
    ProjectStatus.PROCESSING: "working",
    ProjectStatus.PAUSED_NEEDS_CREDIT: "waiting",
    ProjectStatus.PAUSED_NEEDS_CAPACITY: "waiting",
    ProjectStatus.COMPLETE: "done",
    ProjectStatus.COMPLETED_WITH_ERRORS: "done",
    ProjectStatus.FAILED: "error",
    ProjectStatus.CANCELLING: "cancelled",
    ProjectStatus.CANCELLED: "cancelled",
}


@dataclass(frozen=True)
class Progress:
    translated_pages: int
    total_pages: int
    failed_pages: int
    flagged_pages: int  # Approved pages with review flags (docs/book-structure.md, OCR)
    rung: int
    next_batch_size: int | None


@dataclass(frozen=True)
class Intake:
    prepared_pages: int
    total_pages: int


@dataclass(frozen=True)
class StatusView:
    project_id: str
    state: str
    phase: str
    waiting_on: str | None
    blocked_on: str | None
    next_action: str | None
    gpu: str
    title: str
    detail: str
    progress: Progress
    intake: Intake | None
    job_id: str | None
    timestamp: datetime


def _paused_for_credit(project: Project, done: str) -> tuple[str | None, str | None, str | None, str, str]:
    """(waitingOn, blockedOn, nextAction, title, detail) of a book paused for credit. Stopped
    by the monthly spending ceiling, more credit does not help: blocked on credit (the enum
    is closed) with no next action, the detail naming the ceiling. Otherwise it waits only
    when an auto top-up is pending or can start now; else the owner must add credit."""
    quote = project_next_work_quote(project=project)
    if quote.blocked_by == "spending_ceiling":
        return (
            None,
            "credit",
            None,
            "Paused: monthly spending ceiling reached",
            f"{quote.explanation} The book resumes by itself when the month ends or you raise or remove the "
            f"ceiling. {done}.",
        )
    assert project.owner is not None
    if auto_top_up_coming(user=project.owner):
        return (
            "credit",
            None,
            None,
            "Waiting for an automatic top-up",
            f"The next batch needs more credit; an automatic top-up is on its way and the book resumes when it "
            f"lands. {done}.",
        )
    return (
        None,
        "credit",
        "add_credit",
        "Paused: add credit",
        f"The next batch costs more than your spendable credit; top up and it resumes by itself. {done}.",
    )


def _pages(count: int) -> str:
    return "1 page" if count == 1 else f"{count} pages"


def _job_waits_for_pages(job_id: uuid.UUID) -> bool:
    return Page.objects.filter(job_id=job_id, prepared=False).exists()


@dataclass(frozen=True)
class _JobInFlight:
    pk: uuid.UUID
    status: str
    page_count: int


_PAGE_COUNTS = ("pages", "prepared", "total", "approved", "failed", "flagged")


def _counts_and_job_in_flight(project: Project) -> tuple[dict[str, int], _JobInFlight | None]:
    """The book's page counts and its job in flight (at most one, a database constraint), in
    one query. Written in SQL: agents poll the status, and the ORM spent about ten times the
    query's own time compiling six filtered counts on every read (docs/performance.md, "The
    API under load"). COUNT(*) FILTER and a JSON column compared with '[]' mean the same on
    PostgreSQL and SQLite."""
    project_id = Page._meta.get_field("project").get_db_prep_value(project.pk, connection)
    sql = f"""
        SELECT counts.*, job.id, job.status, job.page_count
        FROM (
            SELECT COUNT(*),
                COUNT(*) FILTER (WHERE prepared),
                COUNT(*) FILTER (WHERE included),
                COUNT(*) FILTER (WHERE included AND status = %s),
                COUNT(*) FILTER (WHERE included AND status = %s),
                COUNT(*) FILTER (WHERE included AND status = %s AND review_flags <> '[]')
            FROM {Page._meta.db_table} WHERE project_id = %s
        ) AS counts
        LEFT JOIN {Job._meta.db_table} AS job ON job.project_id = %s AND job.status IN (%s, %s)
    """  # noqa: S608  (table names from the models; every value a parameter)
    approved, failed = PageStatus.APPROVED.value, PageStatus.FAILED.value
    params = [approved, failed, approved, project_id, project_id, JobStatus.QUEUED.value, JobStatus.RUNNING.value]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    counts = dict(zip(_PAGE_COUNTS, row[: len(_PAGE_COUNTS)], strict=True))
    job_id, job_status, job_pages = row[len(_PAGE_COUNTS) :]
    job = None if job_id is None else _JobInFlight(pk=uuid.UUID(str(job_id)), status=job_status, page_count=job_pages)
    return counts, job


def status_view_for(*, project: Project) -> StatusView:
    """The book's status view: one query on a book at work (its page counts with its job in
    flight) and the engine's status from the cache; a few more queries only when it is paused
    for credit, complete or still being prepared."""
    counts, job = _counts_and_job_in_flight(project)
    progress = Progress(
        translated_pages=counts["approved"],
        total_pages=counts["total"],
        failed_pages=counts["failed"],
        flagged_pages=counts["flagged"],
        rung=project.approval_count,
        next_batch_size=ladder_rung_size(approval_count=project.approval_count),
    )
    gpu = model_status().state
    state = project.status
    waiting_on = blocked_on = next_action = None
    done = f"{progress.translated_pages} of {progress.total_pages} pages translated" + (
        f" ({_pages(progress.flagged_pages)} flagged for review: read from a scan that reads poorly)"
        if progress.flagged_pages
        else ""
    )

    preparing = project.normalize_state in (NormalizeState.QUEUED, NormalizeState.RUNNING)
    stopped = project.normalize_state == NormalizeState.FAILED and state != ProjectStatus.FAILED
    intake = Intake(prepared_pages=counts["prepared"], total_pages=counts["pages"]) if preparing or stopped else None
    phase = PHASE[ProjectStatus(state)]

    if state == ProjectStatus.CREATED and stopped:
        title, detail = "Preparing the book stopped", project.failure_reason
    elif state == ProjectStatus.CREATED:
        title, detail = "Not prepared yet", "Call normalize to turn the file into pages, then process."
    elif state in (ProjectStatus.CALIBRATING, ProjectStatus.PROCESSING):
        ready = (
            f"{intake.prepared_pages} of {intake.total_pages} pages prepared from the file ("
            + ("it resumes by itself" if stopped else "the rest are being prepared")
            + ")"
            if intake is not None
            else ""
        )
        if job is not None and job.status == JobStatus.QUEUED:
            waiting_on = {"starting": "gpu_warmup", "throttled": "gpu_capacity"}.get(gpu, "queue")
            title = "Queued" if waiting_on == "queue" else "Waiting for the translation engine"
            detail = f"The next batch of {_pages(job.page_count)} waits its turn; {done}."
            if intake is not None and _job_waits_for_pages(job.pk):
                waiting_on, title = "queue", "Preparing pages"
                detail = f"The next batch of {_pages(job.page_count)} starts when its pages are ready; {ready}; {done}."
        elif job is not None:
            title = "Calibrating" if state == ProjectStatus.CALIBRATING else "Translating"
            detail = f"A batch of {_pages(job.page_count)} is running; {done}." + (f" {ready}." if ready else "")
        elif intake is not None:
            phase, title = "intake", "Preparing pages"
            detail = f"{ready}; process may be called now: the first batch starts as soon as its pages are ready."
        else:
            title, detail = "Ready to process", f"{done}; start the next batch with process."
    elif state == ProjectStatus.PAUSED_NEEDS_CAPACITY:
        waiting_on = "gpu_warmup" if gpu == "starting" else "gpu_capacity"
        title = "Waiting for the translation engine"
        detail = f"The engine is {gpu}; the book resumes by itself. {done}."
    elif state == ProjectStatus.PAUSED_NEEDS_CREDIT:
        waiting_on, blocked_on, next_action, title, detail = _paused_for_credit(project, done)
    elif state in (ProjectStatus.COMPLETE, ProjectStatus.COMPLETED_WITH_ERRORS):
        next_action = "download"
        title = "Complete" if state == ProjectStatus.COMPLETE else "Complete, with pages that failed"
        detail = done + (
            f"; {_pages(progress.failed_pages)} failed after every attempt." if progress.failed_pages else "."
        )
        language_note, retry_helps = failed_pages_outlook(project=project)
        detail += language_note
        if job is None and retry_helps:
            blocked_on, next_action = "retry", "retry"
            detail += " Some failed pages can still be retried."
    elif state == ProjectStatus.FAILED:
        title, detail = "Failed", project.failure_reason or "The book could not be processed."
    elif state == ProjectStatus.CANCELLING:
        title, detail = "Cancelling", f"Stopping after the pages already at the engine; {done}."
    else:
        title, detail = "Cancelled", f"{done}; only translated pages were charged."
    return StatusView(
        project_id=str(project.pk),
        state=state,
        phase=phase,
        waiting_on=waiting_on,
        blocked_on=blocked_on,
        next_action=next_action,
        gpu=gpu,
        title=title,
        detail=detail,
        progress=progress,
        intake=intake,
        job_id=str(job.pk) if job else None,
        timestamp=timezone.now(),
    )
