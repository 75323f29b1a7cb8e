"""Owner-scoped reads of projects and pages."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Final

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, Q, QuerySet

from accounts.models import User
from core.errors import NotFound
from core.selectors import object_get_or_not_found
from projects.models import Job, JobStatus, Page, PageStatus, Project


def project_list_for_owner(*, owner: User, status: str | None = None) -> QuerySet[Project]:
    """The owner's projects, newest first, optionally of one status."""
    projects = Project.objects.filter(owner=owner).order_by("-created_at", "-pk")
    if status:
        projects = projects.filter(status=status)
    return projects


def project_get_for_owner(*, owner: User, project_id: uuid.UUID | str, for_update: bool = False) -> Project:
    """The owner's project; someone else's is NotFound, exactly like a missing one."""
    projects = Project.objects.select_for_update() if for_update else Project.objects.all()
    return object_get_or_not_found(projects.filter(owner=owner), message="No such project.", pk=project_id)


# What a page carries that its listing never shows: loaded only when one page is read.
PAGE_BODY_FIELDS = ("layout", "text_layer", "source_text", "translation")


# What the project read shows of each page (projects.api.serializers.PageSerializer's fields
# that are columns), and what its batch in flight and its cost are read from.
PAGE_ROW_FIELDS = (
    "id",
    "index",
    "status",
    "included",
    "source_language_override",
    "source_name",
    "width",
    "height",
    "has_text_layer",
    "word_count",
    "attempts",
    "cost_usd",
    "failure_code",
    "failure_reason",
    "review_flags",
    "prepared",
)


# A page as the project read shows it: the values of PAGE_ROW_FIELDS in that order, its id
# as text and its review flags a tuple. An exact tuple of plain values, which the garbage
# collector stops tracking at its first pass (it does not for a named tuple): the rows of a
# big book live for the whole read, and tracked they would reach its oldest generation and
# set off a full collection every few reads (60-80 ms on an API process's heap).
PageRow = tuple[
    str, int, str, bool, str | None, str, int, int, bool, int, int, Decimal | None, str, str, tuple[str, ...], bool
]
# Where a row holds what the batch in flight and the book's cost are read from.
ROW_ID: Final = 0
ROW_STATUS: Final = 2
ROW_INCLUDED: Final = 3
ROW_COST: Final = 11
ROWS_FETCHED = 500


def page_rows(*, project: Project) -> list[PageRow]:
    """The book's pages in order, as rows of the columns the project read shows: one query,
    no model instance per page, and the driver's rows fetched ROWS_FETCHED at a time (never
    all alive at once), so that a 4,000-page book reads in a few tuples' time and leaves
    nothing behind (docs/performance.md, "A big book's read")."""
    fetched = project.pages.order_by("index").values_list(*PAGE_ROW_FIELDS).iterator(chunk_size=ROWS_FETCHED)
    return [(str(page_id), *columns, tuple(flags), prepared) for page_id, *columns, flags, prepared in fetched]


def project_with_pages(*, project: Project) -> Project:
    """The project with its pages' rows loaded in order (`page_rows`, one query), which its
    serializer, its batch in flight and its book cost all read."""
    project.page_rows = page_rows(project=project)  # type: ignore[attr-defined]
    return project


def page_list(*, project: Project, included: bool | None = None, status: str | None = None) -> QuerySet[Page]:
    pages = project.pages.order_by("index").defer(*PAGE_BODY_FIELDS)
    if included is not None:
        pages = pages.filter(included=included)
    if status:
        pages = pages.filter(status=status)
    return pages


def page_get(*, project: Project, page_id: uuid.UUID | str) -> Page:
    """A page of the book; NotFound for a page of another book, like a missing one."""
    return object_get_or_not_found(project.pages.all(), message="No such page.", pk=page_id)


def current_batch_page_ids(*, project: Project) -> list[uuid.UUID]:
    """The pages of the batch now in flight (empty when none)."""
    return list(project.pages.filter(status=PageStatus.IN_PROGRESS).order_by("index").values_list("pk", flat=True))


def page_counts(*, project: Project) -> dict[str, int]:
    return project.pages.aggregate(
        total=Count("pk"),
        included=Count("pk", filter=Q(included=True)),
        approved=Count("pk", filter=Q(included=True, status=PageStatus.APPROVED)),
    )


def job_in_flight(*, project: Project) -> Job | None:
    """The book's batch that is queued or running, if any (at most one)."""
    return project.jobs.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).first()


# GET /v1/jobs/{id}, which agents poll, in SQL written once: compiling the ORM's query cost
# more than running it (docs/performance.md, "The API under load").
_JOB_OF_OWNER = (
    f"SELECT * FROM {Job._meta.db_table} WHERE {Job._meta.pk.column} = %s"  # noqa: S608
    f" AND {Job._meta.get_field('owner').column} = %s"
)


def job_get_for_owner(*, owner: User, job_id: uuid.UUID | str) -> Job:
    """The owner's job, every column as `job_get` reads it; someone else's is NotFound,
    exactly like a missing one (or a malformed id)."""
    try:
        key = Job._meta.pk.get_db_prep_value(job_id, connection)
    except (ValueError, ValidationError):
        raise NotFound("No such job.") from None
    owner_key = Job._meta.get_field("owner").get_db_prep_value(owner.pk, connection)
    job = next(iter(Job.objects.raw(_JOB_OF_OWNER, [key, owner_key])), None)
    if job is None:
        raise NotFound("No such job.")
    return job


def job_get(*, job_id: uuid.UUID | str, owner: User | None = None) -> Job:
    """A job by id (of `owner` when given); NotFound otherwise."""
    jobs = Job.objects.all() if owner is None else Job.objects.filter(owner=owner)
    return object_get_or_not_found(jobs, message="No such job.", pk=job_id)
