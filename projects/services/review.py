"""Reviewing translated pages: approve (keep) or reject (send back for another attempt)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from projects.errors import PageNotReviewable
from projects.models import Page, PageStatus, Project, ProjectStatus
from projects.services.jobs import ladder_advance

# A rejected page of a book in one of these states is retried by the ladder at once; a
# paused or cancelled book keeps it until it runs again.
RESUMABLE_AFTER_REJECT = (
    ProjectStatus.CALIBRATING,
    ProjectStatus.PROCESSING,
    ProjectStatus.COMPLETE,
    ProjectStatus.COMPLETED_WITH_ERRORS,
)


def page_approve(*, project: Project, page: Page) -> Page:
    """Keeps a page's translation: an Approved page stays so; a Failed page that has a
    translation (it failed the completeness check) becomes Approved, uncharged. Either way
    its review flags are cleared: someone looked at the page and kept it, so it no longer
    counts as flagged for review."""
    with transaction.atomic():
        locked = Page.objects.select_for_update().get(pk=page.pk, project=project)
        if locked.status == PageStatus.APPROVED:
            if locked.review_flags:
                locked.review_flags, locked.updated_at = [], timezone.now()
                locked.save(update_fields=["review_flags", "updated_at"])
            return locked
        if locked.status != PageStatus.FAILED or not locked.translation:
            raise PageNotReviewable("Only a translated page can be approved.")
        locked.status, locked.failure_reason, locked.updated_at = PageStatus.APPROVED, "", timezone.now()
        locked.review_flags = []
        locked.save(update_fields=["status", "failure_reason", "review_flags", "updated_at"])
        return locked


def page_reject(*, project: Project, page: Page, reason: str = "") -> Page:
    """Sends an Approved page back for another attempt (at least one attempt is left to
    it); the ladder retries it at once if the wallet covers it."""
    with transaction.atomic():
        locked_project = Project.objects.select_for_update().get(pk=project.pk)
        locked = Page.objects.select_for_update().get(pk=page.pk, project=project)
        if locked.status != PageStatus.APPROVED:
            raise PageNotReviewable("Only an approved page can be rejected.")
        locked.status = PageStatus.FAILED
        locked.failure_reason = f"Rejected in review{': ' + reason if reason else '.'}"[:2000]
        locked.attempts = min(locked.attempts, settings.PAGE_MAX_ATTEMPTS - 1)
        locked.updated_at = timezone.now()
        locked.save(update_fields=["status", "failure_reason", "attempts", "updated_at"])
        if locked_project.status in RESUMABLE_AFTER_REJECT:
            ladder_advance(project=locked_project)
        return locked
