"""A start refused for credit (402 on process, process-next-batch and retry) over HTTP:
nothing of the batch is written, the book's status view says it is blocked on credit, and
credit that lands resumes it by itself. The monthly spending ceiling: its own 402, a status
that does not ask for credit, and a raised or removed ceiling, or a new month, resuming
the book. A 402 is never kept for an Idempotency-Key or a double-submit."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from projects.models import Job, JobKind, JobStatus, PageStatus, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem
from tests.wallet.helpers import assert_wallet_invariants
from wallet import tasks
from wallet.models import EntryKind, Hold, LedgerEntry, Wallet
from wallet.selectors.wallet import month_start
from wallet.services.ledger import hold_place, hold_settle, wallet_credit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _echo_engine(settings, local_storage):  # type: ignore[no-untyped-def]
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    settings.DEVELOPMENT_DEPLOYMENT = True


def book(owner, pages: int = 10) -> Project:  # type: ignore[no-untyped-def]
    project = ProjectFactory(owner=owner)
    pages_add(project, pages, text_layer="A page of text. " * 20, has_text_layer=True)
    return project


def calibrated(owner, *, pages: int = 10, cost_per_page: str = "0.01") -> Project:  # type: ignore[no-untyped-def]
    """A book whose first page is translated and measured (the next batch is 5 pages)."""
    project = book(owner, pages)
    project.pages.filter(index=1).update(status=PageStatus.APPROVED, cost_usd=Decimal(cost_per_page))
    Project.objects.filter(pk=project.pk).update(approval_count=1, status=ProjectStatus.PROCESSING)
    project.refresh_from_db()
    return project


def credit(user, amount: str, cause: str = "seed") -> None:  # type: ignore[no-untyped-def]
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=cause)


def charge(user, amount: str, job: str) -> None:  # type: ignore[no-untyped-def]
    """A settled batch charge of `amount` (spending this month)."""
    hold_settle(
        hold=hold_place(user=user, amount=Decimal(amount), cause_type="job", cause_id=job), amount=Decimal(amount)
    )


def status_of(client, project: Project) -> dict:  # type: ignore[no-untyped-def]
    return client.get(f"/v1/projects/{project.pk}/status").json()


def assert_blocked_on_credit(client, project: Project) -> dict:  # type: ignore[no-untyped-def]
    status = status_of(client, project)
    assert (status["state"], status["phase"], status["waitingOn"], status["blockedOn"], status["nextAction"]) == (
        "PausedNeedsCredit",
        "waiting",
        None,
        "credit",
        "add_credit",
    )
    return status


def assert_no_batch_written(user, project: Project, *, entries_before: int = 0) -> None:  # type: ignore[no-untyped-def]
    assert not Job.objects.filter(project=project).exists()
    assert not Hold.objects.filter(wallet__user=user, cause_type="job").exclude(state="settled").exists()
    assert LedgerEntry.objects.filter(wallet__user=user).count() == entries_before
    assert not project.pages.filter(status=PageStatus.IN_PROGRESS).exists()


# --- 402 insufficient_credit ---------------------------------------------------------------


def test_a_process_refused_for_credit_blocks_the_book_on_credit_and_credit_resumes_it(
    user, auth_client, django_capture_on_commit_callbacks
):
    project = book(user)

    response = auth_client.post(f"/v1/projects/{project.pk}/process")

    assert_problem(response, 402, "insufficient_credit")
    assert_no_batch_written(user, project)
    assert_blocked_on_credit(auth_client, project)

    with django_capture_on_commit_callbacks(execute=True):
        top_up = auth_client.post("/v1/wallet/top-up", {"amount": 5}, format="json")
    assert top_up.status_code == 200, top_up.json()
    job = Job.objects.get(project=project)
    assert (job.status, job.kind, job.page_count) == (JobStatus.QUEUED, JobKind.PROCESS_NEXT_BATCH, 1)
    assert status_of(auth_client, project)["state"] == "Calibrating"
    assert_wallet_invariants(Wallet.objects.get(user=user).pk)


def test_a_process_next_batch_refused_for_credit_writes_nothing_and_blocks_the_book(user, auth_client):
    project = calibrated(user)
    credit(user, "0.02")  # 5 pages at the first tier's ceiling rate cost more

    response = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch")

    assert_problem(response, 402, "insufficient_credit")
    assert response.json()["shortfall"] > 0
    assert_no_batch_written(user, project, entries_before=1)
    assert Wallet.objects.get(user=user).spendable == Decimal("0.02")
    assert_blocked_on_credit(auth_client, project)


def test_a_retry_refused_for_credit_writes_nothing_and_blocks_the_book(user, auth_client):
    project = calibrated(user, pages=3)
    project.pages.filter(index__in=(2, 3)).update(status=PageStatus.FAILED, attempts=1)
    Project.objects.filter(pk=project.pk).update(status=ProjectStatus.COMPLETED_WITH_ERRORS)

    response = auth_client.post(f"/v1/projects/{project.pk}/retry")

    assert_problem(response, 402, "insufficient_credit")
    assert_no_batch_written(user, project)
    assert set(project.pages.filter(index__in=(2, 3)).values_list("status", "attempts")) == {(PageStatus.FAILED, 1)}
    assert_blocked_on_credit(auth_client, project)


# --- A 402 is not kept by idempotency ----------------------------------------------------


def test_a_402_is_not_replayed_to_the_same_idempotency_key_after_a_top_up(user, auth_client):
    project = book(user)
    refused = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_IDEMPOTENCY_KEY="start-1")
    assert_problem(refused, 402, "insufficient_credit")
    credit(user, "5")

    again = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_IDEMPOTENCY_KEY="start-1")

    assert again.status_code == 202, again.json()
    assert "Idempotent-Replayed" not in again.headers
    replayed = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_IDEMPOTENCY_KEY="start-1")
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json()["jobId"] == again.json()["jobId"]
    assert Job.objects.filter(project=project).count() == 1


def test_a_402_is_not_replayed_as_a_double_submit_after_a_top_up(user, auth_client):
    project = book(user)
    assert_problem(auth_client.post(f"/v1/projects/{project.pk}/process"), 402, "insufficient_credit")
    credit(user, "5")

    again = auth_client.post(f"/v1/projects/{project.pk}/process")

    assert again.status_code == 202, again.json()
    assert Job.objects.filter(project=project).count() == 1


# --- The monthly spending ceiling --------------------------------------------------------


def ceiling_set(client, ceiling: float | None):  # type: ignore[no-untyped-def]
    response = client.put("/v1/wallet/spending-ceiling", {"ceiling": ceiling}, format="json")
    assert response.status_code == 200, response.json()
    return response


def assert_stopped_by_the_ceiling(client, project: Project, ceiling: str = "5") -> None:  # type: ignore[no-untyped-def]
    status = status_of(client, project)
    assert (status["state"], status["waitingOn"], status["blockedOn"], status["nextAction"]) == (
        "PausedNeedsCredit",
        None,
        "credit",
        None,
    )
    assert "spending ceiling" in status["title"]
    assert f"monthly spending ceiling of {ceiling}.000000 USD" in status["detail"]
    assert "add credit" not in status["detail"].lower()


def ceiling_reached(client, user) -> Project:  # type: ignore[no-untyped-def]
    """A book refused by a ceiling of 5 USD that this month's charges reached."""
    credit(user, "50")
    charge(user, "5", "earlier-batch")
    ceiling_set(client, 5)
    project = book(user)
    entries = LedgerEntry.objects.filter(wallet__user=user).count()
    response = client.post(f"/v1/projects/{project.pk}/process")
    assert_problem(response, 402, "spending_ceiling_reached")
    assert response.json()["ceilingUsd"] == 5
    assert response.json()["spentThisMonthUsd"] == 5
    assert_no_batch_written(user, project, entries_before=entries)
    return project


def test_a_book_stopped_by_the_ceiling_does_not_ask_for_credit_and_a_raised_ceiling_resumes_it(
    user, auth_client, django_capture_on_commit_callbacks
):
    project = ceiling_reached(auth_client, user)
    assert_stopped_by_the_ceiling(auth_client, project)

    with django_capture_on_commit_callbacks(execute=True):
        ceiling_set(auth_client, 4)  # lowered: still stopped
    assert_stopped_by_the_ceiling(auth_client, project, "4")
    assert not Job.objects.filter(project=project).exists()

    with django_capture_on_commit_callbacks(execute=True):
        ceiling_set(auth_client, 6)
    job = Job.objects.get(project=project)
    assert job.status == JobStatus.QUEUED
    assert status_of(auth_client, project)["state"] == "Calibrating"
    assert_wallet_invariants(Wallet.objects.get(user=user).pk)


def test_removing_the_ceiling_resumes_the_book(user, auth_client, django_capture_on_commit_callbacks):
    project = ceiling_reached(auth_client, user)

    with django_capture_on_commit_callbacks(execute=True):
        ceiling_set(auth_client, None)

    assert Job.objects.get(project=project).status == JobStatus.QUEUED


def test_a_new_month_resumes_a_book_stopped_by_the_ceiling(user, auth_client, django_capture_on_commit_callbacks):
    project = ceiling_reached(auth_client, user)
    assert tasks.spending_month_begin() == 1  # still this month: nothing can start
    assert not Job.objects.filter(project=project).exists()

    last_month = month_start() - timedelta(days=3)
    LedgerEntry.objects.filter(wallet__user=user).update(created_at=last_month)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.spending_month_begin() == 1

    assert Job.objects.get(project=project).status == JobStatus.QUEUED
    assert status_of(auth_client, project)["state"] == "Calibrating"


def test_the_new_month_task_is_on_beat_at_the_start_of_each_month(settings):
    (entry,) = (e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "wallet.tasks.spending_month_begin")
    schedule = entry["schedule"]
    assert (schedule.day_of_month, schedule.hour, schedule.minute) == ({1}, {0}, {1})
