"""The processing admin: the job queue through its pages as an operator."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry

from projects.models import Job, JobKind, JobStatus, PageStatus, Project, ProjectStatus
from projects.services import jobs
from tests.factories import ProjectFactory, UserFactory, pages_add
from wallet.models import CauseType, EntryKind, Hold, HoldState, LedgerEntry, Wallet
from wallet.services.ledger import hold_place, wallet_credit

pytestmark = pytest.mark.django_db

JOBS_URL = "/admin/projects/job/"
PROJECTS_URL = "/admin/projects/project/"
PAGES_URL = "/admin/projects/page/"


@pytest.fixture
def two_queued_jobs(settings):
    settings.TRANSLATION_ENGINE = "echo"
    queued = []
    for number in range(2):
        owner = UserFactory()
        wallet_credit(
            user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=str(number)
        )
        project = ProjectFactory(owner=owner)
        pages_add(project, 3, text_layer="Some words to translate here.", has_text_layer=True)
        queued.append(jobs.process_start(owner=owner, project_id=project.pk))
    return queued


def test_the_queue_lists_jobs_and_an_operator_moves_one_to_the_front(staff_client, two_queued_jobs):
    _first, second = two_queued_jobs
    listing = staff_client.get(JOBS_URL)
    assert listing.status_code == 200
    assert str(second.pk) in listing.content.decode()
    response = staff_client.post(JOBS_URL, {"action": "move_to_front", "_selected_action": [str(second.pk)]})
    assert response.status_code == 302
    assert jobs.job_claim().pk == second.pk


def test_an_operator_cancels_a_queued_job_and_its_hold_is_released(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    staff_client.post(JOBS_URL, {"action": "cancel_queued", "_selected_action": [str(job.pk)]})
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "operator" in job.error_text
    assert Wallet.objects.get(user=job.owner).reserved == 0
    assert not job.project.pages.exclude(status=PageStatus.PENDING).exists()


def test_job_rows_cannot_be_edited_or_added(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    assert staff_client.get(f"{JOBS_URL}add/").status_code == 403
    staff_client.post(f"{JOBS_URL}{job.pk}/change/", {"status": "Succeeded", "queue_position": 0})
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_non_staff_cannot_reach_the_queue(client):
    client.force_login(UserFactory())
    assert client.get(JOBS_URL).status_code == 302  # to the admin login


# --- Requeue (the reaper's service; the API's for a failed job) ---------------------------------


def admin_messages(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(message) for message in response.context["messages"]]


def open_hold(job: Job) -> Hold | None:
    return Hold.objects.filter(cause_type=CauseType.JOB, cause_id=str(job.pk), state=HoldState.OPEN).first()


def test_an_operator_requeues_a_stuck_running_job_keeping_its_place_and_hold(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    claimed = jobs.job_claim(job_id=job.pk)
    assert claimed is not None
    assert claimed.status == JobStatus.RUNNING
    response = staff_client.post(JOBS_URL, {"action": "requeue", "_selected_action": [str(job.pk)]}, follow=True)
    assert "1 job(s) requeued." in admin_messages(response)
    requeued = Job.objects.get(pk=job.pk)
    assert (requeued.status, requeued.queue_position, requeued.claims) == (JobStatus.QUEUED, job.queue_position, 1)
    assert "operator" in requeued.progress_note
    assert open_hold(job) is not None
    assert open_hold(job).amount == job.held_usd
    assert LogEntry.objects.filter(object_id=str(job.pk), change_message__contains="Requeued by operator").exists()
    # The worker that held it is superseded: the next claim is a new one.
    reclaimed = jobs.job_claim(job_id=job.pk)
    assert reclaimed is not None
    assert reclaimed.claims == 2


def test_requeueing_a_failed_job_starts_its_book_again_through_the_process_service(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    jobs.project_cancel(owner=job.owner, project_id=job.project_id)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert open_hold(job) is None
    response = staff_client.post(JOBS_URL, {"action": "requeue", "_selected_action": [str(job.pk)]}, follow=True)
    assert "1 job(s) requeued." in admin_messages(response)
    [fresh] = Job.objects.filter(project_id=job.project_id).exclude(pk=job.pk)
    assert (fresh.status, fresh.kind, fresh.page_count) == (JobStatus.QUEUED, job.kind, job.page_count)
    assert open_hold(fresh) is not None
    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED
    # The old one again: its book has a later batch now, so nothing more is queued.
    again = staff_client.post(JOBS_URL, {"action": "requeue", "_selected_action": [str(job.pk)]}, follow=True)
    assert any("a later batch of this book exists" in message for message in admin_messages(again))
    assert Job.objects.filter(project_id=job.project_id).count() == 2


def test_a_failed_job_whose_owner_cannot_pay_is_refused_with_the_402(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    jobs.project_cancel(owner=job.owner, project_id=job.project_id)
    wallet = Wallet.objects.get(user=job.owner)
    credit_reserved_elsewhere(wallet)
    entries = LedgerEntry.objects.filter(wallet=wallet).count()
    response = staff_client.post(JOBS_URL, {"action": "requeue", "_selected_action": [str(job.pk)]}, follow=True)
    assert any("refused (402 insufficient_credit)" in message for message in admin_messages(response))
    assert Job.objects.filter(project_id=job.project_id).count() == 1
    assert LedgerEntry.objects.filter(wallet=wallet).count() == entries


def test_queued_jobs_are_not_requeued(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    response = staff_client.post(JOBS_URL, {"action": "requeue", "_selected_action": [str(job.pk)]}, follow=True)
    assert any("a Queued job cannot be requeued" in message for message in admin_messages(response))
    after = Job.objects.get(pk=job.pk)
    assert (after.status, after.claims, after.queue_position) == (JobStatus.QUEUED, 0, job.queue_position)


# --- Projects: retry failed pages, cancel, pages ---------------------------------------------------


def credit_reserved_elsewhere(wallet: Wallet) -> None:
    """The owner's whole spendable credit held by another batch (a hold under its own cause)."""
    wallet.refresh_from_db()
    hold_place(user=wallet.user, amount=wallet.balance - wallet.reserved, cause_type=CauseType.JOB, cause_id="other")


@pytest.fixture
def book_with_failed_pages(settings):
    """A book whose first batch ended with two failed pages (attempts left); its owner has credit."""
    settings.TRANSLATION_ENGINE = "echo"
    owner = UserFactory()
    wallet_credit(user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")
    project = ProjectFactory(owner=owner, status=ProjectStatus.COMPLETED_WITH_ERRORS, approval_count=1)
    text = {"text_layer": "Some words to translate here.", "has_text_layer": True}
    pages_add(project, 1, status=PageStatus.APPROVED, attempts=1, cost_usd=Decimal("0.001"), **text)
    pages_add(project, 2, status=PageStatus.FAILED, attempts=1, failure_reason="The engine timed out.", **text)
    return project


def test_an_operator_retries_a_books_failed_pages_with_a_hold_like_the_api(staff_client, book_with_failed_pages):
    project = book_with_failed_pages
    response = staff_client.post(
        PROJECTS_URL, {"action": "retry_failed_pages", "_selected_action": [str(project.pk)]}, follow=True
    )
    assert "1 retry batch(es) queued." in admin_messages(response)
    [job] = project.jobs.all()
    assert (job.kind, job.status, job.page_count) == (JobKind.RETRY_FAILED_PAGES, JobStatus.QUEUED, 2)
    assert set(project.pages.filter(job=job).values_list("status", flat=True)) == {PageStatus.IN_PROGRESS}
    hold = open_hold(job)
    assert hold is not None
    assert hold.amount == job.held_usd > 0
    wallet = Wallet.objects.get(user=project.owner)
    assert wallet.reserved == job.held_usd
    assert LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.HOLD, cause_id=str(job.pk)).count() == 1
    assert LogEntry.objects.filter(object_id=str(project.pk), change_message__contains="Retry of 2 failed").exists()


def test_a_retry_the_owner_cannot_pay_for_is_refused_with_the_402_and_nothing_changes(
    staff_client, book_with_failed_pages
):
    project = book_with_failed_pages
    wallet = Wallet.objects.get(user=project.owner)
    credit_reserved_elsewhere(wallet)
    wallet.refresh_from_db()
    entries = LedgerEntry.objects.filter(wallet=wallet).count()
    response = staff_client.post(
        PROJECTS_URL, {"action": "retry_failed_pages", "_selected_action": [str(project.pk)]}, follow=True
    )
    assert any("refused (402 insufficient_credit)" in message for message in admin_messages(response))
    assert "0 retry batch(es) queued." in admin_messages(response)
    assert not project.jobs.exists()
    assert project.pages.filter(status=PageStatus.FAILED).count() == 2
    assert LedgerEntry.objects.filter(wallet=wallet).count() == entries
    assert Wallet.objects.get(pk=wallet.pk).reserved == wallet.reserved


def test_a_retry_without_failed_pages_is_refused_with_the_409(staff_client, book_with_failed_pages):
    project = book_with_failed_pages
    project.pages.filter(status=PageStatus.FAILED).update(attempts=3)  # no attempts left
    response = staff_client.post(
        PROJECTS_URL, {"action": "retry_failed_pages", "_selected_action": [str(project.pk)]}, follow=True
    )
    assert any("refused (409" in message and "No failed page" in message for message in admin_messages(response))
    assert not project.jobs.exists()
    assert Wallet.objects.get(user=project.owner).reserved == 0


def test_an_operator_cancels_a_queued_book_and_its_hold_is_released(staff_client, operator, two_queued_jobs):
    job = two_queued_jobs[0]
    response = staff_client.post(
        PROJECTS_URL, {"action": "cancel", "_selected_action": [str(job.project_id)]}, follow=True
    )
    assert "1 book(s) cancelled or cancelling." in admin_messages(response)
    assert Project.objects.get(pk=job.project_id).status == ProjectStatus.CANCELLED
    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED
    wallet = Wallet.objects.get(user=job.owner)
    assert wallet.reserved == 0
    [release] = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.HOLD_RELEASE, cause_id=str(job.pk))
    assert f"operator {operator.email}" in release.memo  # the ledger names who cancelled
    assert f"operator {operator.email}" in Job.objects.get(pk=job.pk).error_text
    assert LogEntry.objects.filter(object_id=str(job.project_id), change_message__contains="Cancelled by").exists()
    # The other owner's book is untouched.
    other = two_queued_jobs[1]
    assert Job.objects.get(pk=other.pk).status == JobStatus.QUEUED


def test_cancelling_a_running_book_leaves_it_cancelling_for_its_worker(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    jobs.job_claim(job_id=job.pk)
    staff_client.post(PROJECTS_URL, {"action": "cancel", "_selected_action": [str(job.project_id)]})
    assert Project.objects.get(pk=job.project_id).status == ProjectStatus.CANCELLING
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
    assert open_hold(job) is not None  # the worker settles it at the page boundary


def test_a_complete_book_cannot_be_cancelled_and_says_why(staff_client):
    project = ProjectFactory(status=ProjectStatus.COMPLETE)
    response = staff_client.post(PROJECTS_URL, {"action": "cancel", "_selected_action": [str(project.pk)]}, follow=True)
    assert any("refused (409 project_not_cancellable)" in message for message in admin_messages(response))
    assert Project.objects.get(pk=project.pk).status == ProjectStatus.COMPLETE
    assert not LogEntry.objects.filter(object_id=str(project.pk)).exists()


def test_a_books_page_shows_its_pages_and_jobs_with_their_status(staff_client, book_with_failed_pages):
    project = book_with_failed_pages
    page = staff_client.get(f"{PROJECTS_URL}{project.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "The engine timed out." in html
    assert html.count(">Failed<") >= 2
    assert ">Approved<" in html
    failed = staff_client.get(f"{PAGES_URL}?status__exact=Failed&q={project.pk}")
    assert failed.status_code == 200
    assert failed.context["cl"].result_count == 2
    assert staff_client.get(f"{PAGES_URL}add/").status_code == 403
