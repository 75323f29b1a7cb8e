"""The project status view: composed on every read from the project, its job in flight,
the owner's wallet and the engine's status; never stored.

Waiting means the book resumes by itself (the queue, the GPU warming up or at capacity, an
auto top-up on its way); blocked means the caller must act (add credit, retry).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.utils import timezone

from accounts.models import User
from core.errors import NotFound
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
_JOB_COLUMNS = ("job_id", "job_status", "job_page_count")
# The page counts of a book (its id the one parameter) and its job in flight, as columns
# named status_<name>. Written in SQL: agents poll the status, and the ORM spent about ten
# times the query's own time compiling six filtered counts on every read
# (docs/performance.md, "The API under load"). COUNT(*) FILTER and a JSON column compared
# with '[]' mean the same on PostgreSQL and SQLite.
_COUNTS_AND_JOB = f"""
    (
        SELECT COUNT(*) AS status_pages,
            COUNT(*) FILTER (WHERE prepared) AS status_prepared,
            COUNT(*) FILTER (WHERE included) AS status_total,
            COUNT(*) FILTER (WHERE included AND status = '{PageStatus.APPROVED.value}') AS status_approved,
            COUNT(*) FILTER (WHERE included AND status = '{PageStatus.FAILED.value}') AS status_failed,
            COUNT(*) FILTER (
                WHERE included AND status = '{PageStatus.APPROVED.value}' AND review_flags <> '[]'
            ) AS status_flagged
        FROM {Page._meta.db_table} WHERE project_id = %s
    ) AS counts
    LEFT JOIN {Job._meta.db_table} AS job
        ON job.project_id = %s AND job.status IN ('{JobStatus.QUEUED.value}', '{JobStatus.RUNNING.value}')
"""  # noqa: S608  (names and enum values from the models; the id a parameter)
_COUNTS_AND_JOB_COLUMNS = ", ".join(
    [f"counts.status_{name}" for name in _PAGE_COUNTS]
    + ["job.id AS status_job_id", "job.status AS status_job_status", "job.page_count AS status_job_page_count"]
)


def _counts_and_job(row: Any) -> tuple[dict[str, int], _JobInFlight | None]:
    """The page counts and the job in flight from a row of _COUNTS_AND_JOB's columns (an
    object with them as attributes)."""
    counts = {name: getattr(row, f"status_{name}") for name in _PAGE_COUNTS}
    job_id, job_status, job_pages = (getattr(row, f"status_{name}") for name in _JOB_COLUMNS)
    job = None if job_id is None else _JobInFlight(pk=uuid.UUID(str(job_id)), status=job_status, page_count=job_pages)
    return counts, job


def status_view_get(*, owner: User, project_id: uuid.UUID | str) -> StatusView:
    """The status view of the owner's book, in one query on a book at work (the project, its
    page counts and its job in flight) and the engine's status from the cache. Someone
    else's book is NotFound, exactly like a missing one."""
    project_key = Page._meta.get_field("project").get_db_prep_value(project_id, connection)
    owner_key = Project._meta.get_field("owner").get_db_prep_value(owner.pk, connection)
    sql = f"""
        SELECT project.*, {_COUNTS_AND_JOB_COLUMNS}
        FROM {Project._meta.db_table} AS project CROSS JOIN {_COUNTS_AND_JOB}
        WHERE project.id = %s AND project.owner_id = %s
    """  # noqa: S608  (names from the models; every value a parameter)
    project = next(iter(Project.objects.raw(sql, [project_key, project_key, project_key, owner_key])), None)
    if project is None:
        raise NotFound("No such project.")
    return _status_view_compose(project, *_counts_and_job(project))


def status_view_for(*, project: Project) -> StatusView:
    """The book's status view: one query on a book at work (its page counts with its job in
    flight) and the engine's status from the cache; a few more queries only when it is paused
    for credit, complete or still being prepared."""
    project_key = Page._meta.get_field("project").get_db_prep_value(project.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_COUNTS_AND_JOB_COLUMNS} FROM {_COUNTS_AND_JOB}", [project_key, project_key])  # noqa: S608
        row = cursor.fetchone()
    columns = [f"status_{name}" for name in (*_PAGE_COUNTS, *_JOB_COLUMNS)]
    return _status_view_compose(project, *_counts_and_job(SimpleNamespace(**dict(zip(columns, row, strict=True)))))


def _status_view_compose(project: Project, counts: dict[str, int], job: _JobInFlight | None) -> StatusView:
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
    elif state == ProjectStatus.CREATED and intake is not None:
        # normalize was called and renders a short book inside its request: never "call normalize".
        title = "Preparing pages"
        detail = (
            f"{intake.prepared_pages} of {intake.total_pages} pages prepared from the file; Calibrating once all are."
        )
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
