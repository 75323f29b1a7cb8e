"""Processing end to end with real processes: a Celery worker consuming Redis, the API
server (uvicorn) answering HTTP, both on this test's PostgreSQL database; and a worker
killed mid-batch whose job the reaper hands to another worker."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from django.db.models import Sum

from accounts.models import User
from projects.models import Job, JobStatus, PageStatus, Project, ProjectStatus
from projects.services import jobs
from tests.e2e.processes import Services, book_create, wait_until
from tests.factories import ProjectFactory, UserFactory, pages_add
from tests.support.pdfs import pdf_bytes
from tests.wallet.helpers import assert_wallet_invariants
from wallet.models import CauseType, EntryKind, Hold, HoldState, LedgerEntry, Wallet
from wallet.services.ledger import wallet_credit

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

PASSWORD = "Lantern-Orchard-47-Quietly"
PAGE_TEXT = "The quick brown fox jumps over the lazy dog. " * 20


def assert_each_job_charged_once(project: Project) -> None:
    """Every job's hold is settled (none open), by exactly one batch_charge entry that is
    the sum of the measured costs of the pages it approved."""
    for job in project.jobs.all():
        hold = Hold.objects.get(cause_type=CauseType.JOB, cause_id=str(job.pk))
        charges = LedgerEntry.objects.filter(kind=EntryKind.BATCH_CHARGE, cause_id=str(job.pk))
        measured = job.pages.filter(status=PageStatus.APPROVED).aggregate(total=Sum("cost_usd"))["total"]
        assert hold.state == HoldState.SETTLED, job
        assert [-entry.amount for entry in charges] == [measured], job
        assert hold.settled_amount == job.charged_usd == measured, job


def assert_wallet_charged_the_page_costs(project: Project, credited: Decimal) -> None:
    assert project.owner is not None
    wallet = assert_wallet_invariants(Wallet.objects.get(user=project.owner).pk)
    page_costs = project.pages.aggregate(total=Sum("cost_usd"))["total"]
    assert page_costs > 0
    assert (wallet.balance, wallet.reserved) == (credited - page_costs, 0)
    assert not Hold.objects.filter(wallet=wallet, state=HoldState.OPEN).exists()


def test_a_book_goes_from_upload_to_complete_through_the_server_and_a_worker(services: Services):
    api = httpx.Client(base_url=services.api_server(DEVELOPMENT_DEPLOYMENT="true"), timeout=30)
    services.worker("worker", ENGINE_CONCURRENCY=4)
    registered = api.post(
        "/v1/auth/register", json={"email": "reader@example.com", "password": PASSWORD, "displayName": "Ada"}
    )
    assert registered.status_code == 201, registered.text
    api.headers["Authorization"] = f"Bearer {registered.json()['token']}"
    topped_up = api.post("/v1/wallet/top-up", json={"amount": 20, "method": "manual"})
    assert topped_up.json()["status"] == "confirmed", topped_up.text
    book = pdf_bytes(8, text=lambda n: f"Chapter {n} begins here with a few words of plain text " * 5)
    project_id = book_create(api, book)
    normalized = api.post(f"/v1/projects/{project_id}/normalize")
    assert (normalized.status_code, len(normalized.json()["pages"])) == (200, 8), normalized.text

    processing = api.post(f"/v1/projects/{project_id}/process")
    assert (processing.status_code, processing.json()["status"]) == (202, "Queued"), processing.text
    seen: list[str] = []

    def complete() -> bool:
        state = api.get(f"/v1/projects/{project_id}/status").json()["state"]
        if not seen or seen[-1] != state:
            seen.append(state)
        assert state not in ("Failed", "CompletedWithErrors", "PausedNeedsCredit", "PausedNeedsCapacity"), seen
        return state == "Complete"

    wait_until(complete, what="the book to be Complete", services=services)
    status = api.get(f"/v1/projects/{project_id}/status").json()
    assert (status["phase"], status["nextAction"]) == ("done", "download")
    assert status["progress"]["translatedPages"] == status["progress"]["totalPages"] == 8

    project = Project.objects.get(pk=project_id)
    assert set(project.pages.values_list("status", "attempts")) == {(PageStatus.APPROVED, 1)}
    assert all(text.startswith("[echo → fr] Chapter") for text in project.pages.values_list("translation", flat=True))
    ladder = project.jobs.order_by("queue_position")
    assert [(job.page_count, job.status, job.claims) for job in ladder] == [
        (1, JobStatus.SUCCEEDED, 1),
        (5, JobStatus.SUCCEEDED, 1),
        (2, JobStatus.SUCCEEDED, 1),
    ]
    assert_each_job_charged_once(project)
    assert_wallet_charged_the_page_costs(project, Decimal(20))
    wallet = api.get("/v1/wallet").json()
    assert (Decimal(str(wallet["balanceUsd"])), wallet["reservedUsd"]) == (
        Decimal(20) - project.pages.aggregate(total=Sum("cost_usd"))["total"],
        0,
    )


def test_a_worker_killed_mid_batch_loses_no_page_and_the_batch_is_charged_once(services: Services, settings):
    # Slow pages (0.3 s, two at a time) so that the 25-page batch runs for seconds; a quick
    # heartbeat and reaper so that the dead worker's job is requeued within seconds.
    worker_env = {
        "ENGINE_CONCURRENCY": 2,
        "TRANSLATION_ENGINE_OPTIONS": '{"delay_seconds": 0.3}',
        "JOB_HEARTBEAT_SECONDS": 1,
        "JOB_STALE_SECONDS": 3,
    }
    settings.JOB_STALE_SECONDS = 3  # the reaper run below, from this process
    owner: User = UserFactory.create()
    wallet_credit(user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="e2e")
    project: Project = ProjectFactory.create(owner=owner)
    pages_add(project, 40, text_layer=PAGE_TEXT, has_text_layer=True)
    jobs.process_start(owner=owner, project_id=project.pk)  # a message on the process queue, on commit

    worker_a = services.worker("worker-a", **worker_env)

    def big_batch_half_done() -> Job | None:
        job = project.jobs.filter(page_count=25, status=JobStatus.RUNNING).first()
        if job is not None and job.pages.filter(status=PageStatus.APPROVED).count() >= 4:
            return job
        return None

    batch = wait_until(big_batch_half_done, what="worker A to be inside the 25-page batch", services=services)
    assert isinstance(batch, Job)
    worker_a.kill()
    committed_by_a = dict(
        batch.pages.filter(status=PageStatus.APPROVED).values_list("pk", "translated_at"),
    )
    in_flight = batch.pages.filter(status=PageStatus.IN_PROGRESS)
    assert committed_by_a, "worker A committed pages of the batch"
    assert in_flight.exists(), "the kill landed mid-batch"
    assert not in_flight.exclude(attempts=0).exists()
    assert Job.objects.get(pk=batch.pk).status == JobStatus.RUNNING  # nobody knows yet

    # Worker B idles until the reaper (beat's jobs-stale-requeue) sees the silent heartbeat
    # and queues the job again, with a message that wakes a worker.
    services.worker("worker-b", **worker_env)
    wait_until(lambda: jobs.jobs_stale_requeue() == 1, what="the reaper to requeue the job", services=services)

    def settled() -> bool:
        status = Project.objects.get(pk=project.pk).status
        return status in (ProjectStatus.COMPLETE, ProjectStatus.COMPLETED_WITH_ERRORS)

    wait_until(settled, what="worker B to finish the book", services=services)
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert set(project.pages.values_list("status", "attempts")) == {(PageStatus.APPROVED, 1)}
    # What worker A committed stayed as it was: those pages were not translated again.
    assert dict(batch.pages.filter(pk__in=committed_by_a).values_list("pk", "translated_at")) == committed_by_a
    batch.refresh_from_db()
    assert (batch.status, batch.claims) == (JobStatus.SUCCEEDED, 2)
    assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 25, 9]
    assert_each_job_charged_once(project)
    assert_wallet_charged_the_page_costs(project, Decimal(5))


def test_a_book_whose_wake_up_was_lost_is_run_after_beat_sends_it_again(services: Services, settings):
    """Redis loses the message that would wake a worker (a restart without persistence):
    the job stays Queued in the table, and beat's redispatch wakes a worker, which takes
    the book the rest of the way."""
    import redis

    owner: User = UserFactory.create()
    wallet_credit(user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="e2e")
    project: Project = ProjectFactory.create(owner=owner)
    pages_add(project, 8, text_layer=PAGE_TEXT, has_text_layer=True)
    job = jobs.process_start(owner=owner, project_id=project.pk)  # its message goes to Redis on commit
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        assert broker.llen("process") == 1
        broker.delete("process")  # lost
    finally:
        broker.close()
    services.worker("worker", ENGINE_CONCURRENCY=2)
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
    assert jobs.jobs_queued_redispatch(waited_seconds=0) == 1

    def finished() -> bool:
        return Project.objects.get(pk=project.pk).status == ProjectStatus.COMPLETE

    wait_until(finished, what="the worker to finish the book after the wake-up came again", services=services)
    assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 2]
    assert_each_job_charged_once(project)
    assert_wallet_charged_the_page_costs(project, Decimal(5))


def test_a_book_past_the_inline_limit_is_translated_while_its_pages_are_still_being_prepared(services: Services):
    """The contract's sequence on a 60-page book: normalize answers Calibrating at once,
    process right after is accepted, and the calibration page is translated (by the
    processing worker) before the intake worker has prepared the last page."""
    api = httpx.Client(base_url=services.api_server(DEVELOPMENT_DEPLOYMENT="true"), timeout=30)
    services.worker("intake", "default", NORMALIZE_TASK_PAGES=5)
    services.worker("gpu", "process,retry", ENGINE_CONCURRENCY=4)
    registered = api.post(
        "/v1/auth/register", json={"email": "long@example.com", "password": PASSWORD, "displayName": "Ada"}
    )
    api.headers["Authorization"] = f"Bearer {registered.json()['token']}"
    assert api.post("/v1/wallet/top-up", json={"amount": 50, "method": "manual"}).status_code == 200
    book = pdf_bytes(60, text=lambda n: f"Chapter {n} opens with a line about the harbour and the ships " * 4)
    project_id = book_create(api, book, file_name="long.pdf", target="de")

    normalized = api.post(f"/v1/projects/{project_id}/normalize")
    assert (normalized.status_code, normalized.json()["status"]) == (200, "Calibrating"), normalized.text
    assert len(normalized.json()["pages"]) == 60
    processing = api.post(f"/v1/projects/{project_id}/process")
    assert processing.status_code == 202, processing.text

    def complete() -> bool:
        state = api.get(f"/v1/projects/{project_id}/status").json()["state"]
        assert state not in ("Failed", "CompletedWithErrors", "PausedNeedsCredit"), state
        return state == "Complete"

    wait_until(complete, what="the book to be Complete", timeout=180, services=services)
    project = Project.objects.get(pk=project_id)
    assert project.pages.filter(status=PageStatus.APPROVED, prepared=True).count() == 60
    calibration = project.jobs.order_by("queue_position").first()
    assert calibration is not None
    assert calibration.page_count == 1
    # The last page was prepared (the normalize's last heartbeat) after page 1 was translated.
    assert project.normalize_heartbeat_at is not None
    assert calibration.finished_at is not None
    assert calibration.finished_at < project.normalize_heartbeat_at
    assert_each_job_charged_once(project)
    assert_wallet_charged_the_page_costs(project, Decimal(50))
