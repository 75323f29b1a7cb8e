"""Operators' admin for processing: the job queue (move to the front, requeue a stalled
job, cancel a queued one), projects and their pages. Jobs change state only through the
services the API uses; their rows are read-only here."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ServiceError
from projects import jobs
from projects.models import Job, JobStatus, Page, Project


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "owner", "kind", "status", "queue_position", "page_count", "held_usd"]
    list_filter = ["status", "kind"]
    search_fields = ["id", "project__name", "owner__email"]
    ordering = ["status", "queue_position"]
    actions = ["move_to_front", "cancel_queued"]
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

    @admin.action(description="Cancel queued jobs (release their holds)", permissions=["change"])
    def cancel_queued(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        cancelled = 0
        for job in queryset.filter(status=JobStatus.QUEUED):
            try:
                with transaction.atomic():
                    Project.objects.select_for_update().get(pk=job.project_id)
                    jobs.job_cancel_queued(job=job, reason=f"Cancelled by operator {request.user}.")
            except ServiceError as error:
                self.message_user(request, f"{job.pk}: {error.detail}", messages.ERROR)
                continue
            cancelled += 1
        self.message_user(request, f"{cancelled} queued job(s) cancelled.", messages.SUCCESS)


class PageInline(admin.TabularInline):
    model = Page
    fields = ("index", "status", "included", "attempts", "cost_usd", "failure_reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "status", "target_language_code", "approval_count", "created_at"]
    list_filter = ["status", "target_language_code"]
    search_fields = ["id", "name", "owner__email"]
    readonly_fields = [field.name for field in Project._meta.fields if field.name not in ("name", "glossary")]
    inlines = [PageInline]
