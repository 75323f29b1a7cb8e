"""Operators' admin for processing: the job queue (move to the front, requeue a stuck or
failed job, cancel a queued one), projects (retry their failed pages, cancel) and their
pages. Everything changes through the services the API, the reaper and the ladder use
(projects.services.jobs), so the same gates (402, 409), holds and ledger entries apply; the rows
themselves are read-only here, and each action is recorded in the object's history under
the operator's name. See docs/operations.md."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import F, QuerySet
from django.http import HttpRequest

from accounts.models import User
from core.errors import ServiceError
from projects.models import Job, JobKind, JobStatus, Page, Project
from projects.selectors.projects import job_in_flight
from projects.services import jobs


def refusal_text(error: ServiceError) -> str:
    """A service's refusal as the operator reads it: the API's status and code with its detail."""
    return f"refused ({error.status_code} {error.code}): {error.detail}"


class ChargedBelowMeasuredFilter(admin.SimpleListFilter):
    """Batches whose charge was capped at the hold below what their pages measured: the
    engine costs more than the price table allows for (docs/billing.md)."""

    title = "charge"
    parameter_name = "charge"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("below_measured", "Charged below measured cost")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if self.value() == "below_measured":
            return queryset.filter(measured_usd__gt=F("charged_usd"))
        return queryset


@admin.register(Job)
class JobAdmin(admin.ModelAdmin[Job]):
    list_display = [
        "id",
        "project",
        "owner",
        "kind",
        "status",
        "queue_position",
        "page_count",
        "held_usd",
        "charged_usd",
        "measured_usd",
    ]
    list_filter = ["status", "kind", ChargedBelowMeasuredFilter]
    search_fields = ["id", "project__name", "owner__email"]
    ordering = ["status", "queue_position"]
    actions = ["move_to_front", "requeue", "cancel_queued"]
    readonly_fields = [field.name for field in Job._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.action(description="Move to the front of the queue", permissions=["change"])
    def move_to_front(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        # The last selected ends up first: move in reverse queue order so the selection keeps its order.
        moved = 0
        for job in queryset.filter(status=JobStatus.QUEUED).order_by("-queue_position"):
            jobs.queue_move(job_id=job.pk)
            moved += 1
        self.message_user(request, f"{moved} queued job(s) moved to the front.", messages.SUCCESS)

    @admin.action(description="Requeue stuck running jobs, or start failed ones again", permissions=["change"])
    def requeue(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        """A Running job goes back to the queue through the reaper's own service (same
        position, same hold, its committed pages kept; a worker still on it stops at its
        next page). A Failed job's book gets a new batch of the same kind through the API's
        process service, which gates it against the wallet again."""
        selected = list(queryset.select_related("project", "owner"))
        running = [job.pk for job in selected if job.status == JobStatus.RUNNING]
        note = f"Requeued by operator {request.user}."
        requeued = jobs.jobs_stale_requeue(stale_seconds=0, job_ids=running, note=note) if running else 0
        for job in selected:
            if job.status == JobStatus.RUNNING:
                job.refresh_from_db()
                if job.status == JobStatus.QUEUED:
                    self.log_change(request, job, note)
                else:
                    self.message_user(request, f"{job.pk}: it ended before it could be requeued.", messages.WARNING)
            elif job.status == JobStatus.FAILED:
                requeued += self._failed_job_restart(request, job)
            else:
                refused = f"{job.pk}: a {job.status} job cannot be requeued (only Running or Failed)."
                self.message_user(request, refused, messages.ERROR)
        self.message_user(request, f"{requeued} job(s) requeued.", messages.SUCCESS)

    def _failed_job_restart(self, request: HttpRequest, job: Job) -> int:
        if job.owner is None:
            self.message_user(request, f"{job.pk}: the book has no owner to charge.", messages.ERROR)
            return 0
        if Job.objects.filter(project_id=job.project_id, enqueued_at__gt=job.enqueued_at).exists():
            refused = f"{job.pk}: a later batch of this book exists; requeue that one."
            self.message_user(request, refused, messages.ERROR)
            return 0
        try:
            started = jobs.process_start(owner=job.owner, project_id=job.project_id, kind=job.kind)
        except ServiceError as error:
            self.message_user(request, f"{job.pk}: {refusal_text(error)}", messages.ERROR)
            return 0
        self.log_change(request, started, f"Queued by operator {request.user} in place of failed job {job.pk}.")
        return 1

    @admin.action(
        description="Cancel queued jobs and their books (translated pages charged, the rest released)",
        permissions=["change"],
    )
    def cancel_queued(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        """The owner's cancel service (projects.services.jobs), the ledger entries naming the operator."""
        assert isinstance(request.user, User)
        cancelled = 0
        for job in queryset.filter(status=JobStatus.QUEUED):
            try:
                jobs.job_cancel_by_operator(job_id=job.pk, operator=request.user)
            except ServiceError as error:
                self.message_user(request, f"{job.pk}: {error.detail}", messages.ERROR)
                continue
            cancelled += 1
        self.message_user(request, f"{cancelled} queued job(s) cancelled.", messages.SUCCESS)


class PageInline(admin.TabularInline[Page, Project]):
    model = Page
    fields = ("index", "status", "included", "attempts", "cost_usd", "failure_reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class JobInline(admin.TabularInline[Job, Project]):
    model = Job
    fields = ("kind", "status", "page_count", "held_usd", "charged_usd", "progress_note", "enqueued_at")
    readonly_fields = fields
    ordering = ("-enqueued_at",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ["name", "owner", "status", "target_language_code", "approval_count", "created_at"]
    list_filter = ["status", "target_language_code"]
    search_fields = ["id", "name", "owner__email"]
    readonly_fields = [field.name for field in Project._meta.fields if field.name not in ("name", "glossary")]
    inlines = [JobInline, PageInline]
    actions = ["retry_failed_pages", "cancel"]

    @admin.action(description="Retry the failed pages (a new batch, gated and held as the API does)")
    def retry_failed_pages(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        queued = 0
        for project in queryset.select_related("owner"):
            if project.owner is None:
                self.message_user(request, f"{project.name}: the book has no owner to charge.", messages.ERROR)
                continue
            in_flight = job_in_flight(project=project)
            try:
                job = jobs.process_start(owner=project.owner, project_id=project.pk, kind=JobKind.RETRY_FAILED_PAGES)
            except ServiceError as error:
                self.message_user(request, f"{project.name}: {refusal_text(error)}", messages.ERROR)
                continue
            if in_flight is not None and job.pk == in_flight.pk:
                self.message_user(request, f"{project.name}: a batch is already queued or running.", messages.WARNING)
                continue
            self.log_change(request, project, f"Retry of {job.page_count} failed page(s) queued by {request.user}.")
            queued += 1
        self.message_user(request, f"{queued} retry batch(es) queued.", messages.SUCCESS)

    @admin.action(description="Cancel the selected books (as their owner would)")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        assert isinstance(request.user, User)  # the admin lets only signed-in staff in
        done = 0
        for project in queryset.select_related("owner"):
            if project.owner is None:
                self.message_user(request, f"{project.name}: the book has no owner.", messages.ERROR)
                continue
            try:
                cancelled = jobs.project_cancel(owner=project.owner, project_id=project.pk, operator=request.user)
            except ServiceError as error:
                self.message_user(request, f"{project.name}: {refusal_text(error)}", messages.ERROR)
                continue
            self.log_change(request, project, f"Cancelled by {request.user}: now {cancelled.status}.")
            done += 1
        self.message_user(request, f"{done} book(s) cancelled or cancelling.", messages.SUCCESS)


@admin.register(Page)
class PageAdmin(admin.ModelAdmin[Page]):
    """Every page with its status, attempts and failure reason; read-only (retry and review
    go through the book)."""

    list_display = ["project", "index", "status", "included", "attempts", "cost_usd", "updated_at"]
    list_filter = ["status", "included"]
    search_fields = ["project__id", "project__name", "project__owner__email"]
    list_select_related = ["project"]
    ordering = ["project", "index"]
    fields = readonly_fields = (
        "project",
        "index",
        "source_name",
        "status",
        "included",
        "attempts",
        "job",
        "cost_usd",
        "engine",
        "model_name",
        "prompt_tokens",
        "completion_tokens",
        "detected_source_language",
        "failure_reason",
        "translated_at",
        "updated_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
