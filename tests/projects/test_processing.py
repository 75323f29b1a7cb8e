"""Processing over HTTP and through the worker's entry point: the job queue, the ladder,
settlement, pauses for credit and capacity, retries, cancels, crash recovery and review.

The worker is driven by calling its task (`job_run_next`), which is what a Celery worker
runs for each message; the end-to-end test with a real worker process is separate."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from core.money import exact_sum
from projects.models import Job, JobStatus, PageStatus, Project, ProjectStatus
from projects.services import jobs
from projects.services.runner import batch_execute, page_input_build, page_outcome_commit, page_translate
from projects.tasks import job_run_next, jobs_queued_redispatch
from tests.factories import ProjectFactory, UserFactory, pages_add
from tests.support.local_engine import needs_local_tools
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.problems import assert_problem
from tests.translation.test_local_engine import page_image
from tests.wallet.helpers import assert_wallet_invariants
from translation.engines import engine_get
from translation.engines.pool import page_pool
from wallet.models import EntryKind, Hold, HoldState, LedgerEntry, SavedCard, Wallet, WalletSettings
from wallet.services.ledger import wallet_credit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _echo_engine(settings):
    settings.TRANSLATION_ENGINE = "echo"
    settings.ENGINE_CONCURRENCY = 4
    settings.TRANSLATION_ENGINE_OPTIONS = {}


def credit(user, amount: str, cause: str = "seed") -> None:  # type: ignore[no-untyped-def]
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=cause)


def book(owner, pages: int = 40) -> Project:  # type: ignore[no-untyped-def]
    project = ProjectFactory(owner=owner)
    pages_add(project, pages, text_layer="The quick brown fox jumps over the lazy dog. " * 20, has_text_layer=True)
    return project


WORDS = [
    "amber",
    "birch",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "grove",
    "heath",
    "inlet",
    "juniper",
    "kestrel",
    "lagoon",
    "meadow",
    "nettle",
    "orchard",
]


def varied_book(owner, pages: int) -> Project:  # type: ignore[no-untyped-def]
    """A book whose pages differ (the completeness check refuses a page that repeats the
    end of the one before, so a real engine needs distinct pages)."""
    project = ProjectFactory(owner=owner)
    for index in range(pages):
        words = " ".join(WORDS[(index + shift) % len(WORDS)] for shift in range(0, 45, 4))
        pages_add(project, 1, text_layer=f"Chapter {index + 1}. The {words} walked home. " * 6, has_text_layer=True)
    return project


def run_worker(limit: int = 50) -> int:
    """Runs queued jobs the way a worker does until none is left; returns how many ran."""
    ran = 0
    while job_run_next() is not None:
        ran += 1
        assert ran <= limit, "the ladder did not end"
    return ran


def process_to_the_end(auth_client: APIClient, project: Project) -> dict[str, Any]:
    """Asks to process the book (accepted) and runs the worker until no job is left; reads
    the book again and returns its status view."""
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    run_worker()
    project.refresh_from_db()
    return auth_client.get(f"/v1/projects/{project.pk}/status").json()


def assert_settled_exactly(project: Project) -> None:
    """Every batch's charge is what its approved pages measured (below the hold), no hold
    is left open, and the wallet's ledger invariants hold."""
    for job in project.jobs.all():
        hold = Hold.objects.get(cause_type="job", cause_id=str(job.pk))
        assert hold.state != HoldState.OPEN
        measured = exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
        if hold.state == HoldState.SETTLED:
            assert hold.settled_amount == min(measured, hold.amount)
    assert_wallet_invariants(Wallet.objects.get(user=project.owner).pk)


def test_process_queues_one_job_and_a_repeat_returns_it(user, auth_client):
    project = book(user)
    credit(user, "5")
    first = auth_client.post(f"/v1/projects/{project.pk}/process")
    assert first.status_code == 202, first.json()
    assert first.json()["status"] == "Queued"
    again = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_IDEMPOTENCY_KEY="another-call")
    assert again.json()["jobId"] == first.json()["jobId"]
    job = auth_client.get(f"/v1/jobs/{first.json()['jobId']}").json()
    assert (job["kind"], job["status"], job["pageCount"], job["heldCreditUsd"]) == (
        "ProcessNextBatch",
        "Queued",
        1,
        0.5,
    )
    assert Wallet.objects.get(user=user).reserved == Decimal("0.5")
    assert Project.objects.get(pk=project.pk).status == ProjectStatus.CALIBRATING


def test_an_unaffordable_batch_is_refused_and_nothing_is_written(user, auth_client):
    project = book(user)
    response = auth_client.post(f"/v1/projects/{project.pk}/process")
    assert_problem(response, 402, "insufficient_credit")
    assert response.json()["shortfall"] > 0
    assert not Job.objects.exists()
    assert not Hold.objects.exists()
    assert not project.pages.exclude(status=PageStatus.PENDING).exists()


def test_the_ladder_climbs_to_complete_with_each_page_translated_and_charged_once(user, auth_client):
    project = book(user, pages=140)
    credit(user, "50")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    assert run_worker() == 5  # 1, 5, 25, 100, then the remaining 9
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert project.approval_count == 5
    assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 25, 100, 9]
    assert set(project.pages.values_list("status", "attempts")) == {(PageStatus.APPROVED, 1)}
    page = project.pages.get(index=7)
    assert page.translation.startswith("[echo → fr]")
    assert page.engine == "echo"
    assert page.prompt_tokens > 0
    assert_settled_exactly(project)
    charged = Wallet.objects.get(user=user)
    assert charged.balance == Decimal("50") - exact_sum(project.pages.all(), "cost_usd")
    assert charged.reserved == 0
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["state"], status["phase"], status["nextAction"]) == ("Complete", "done", "download")
    assert status["progress"]["translatedPages"] == status["progress"]["totalPages"] == 140


def test_a_batch_hands_the_page_pool_a_window_of_its_pages_at_a_time(user, auth_client, settings):
    """A 25-page rung with a pool of 2 pages: never more than 16 of its pages (twice the
    pool, at least 16) handed to the pool at once, the rest read when their turn comes."""
    settings.ENGINE_CONCURRENCY = 2
    settings.TRANSLATION_ENGINE_OPTIONS = {"delay_seconds": 0.01}
    project = book(user, pages=40)
    credit(user, "20")
    pool = page_pool()
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.append(pool.waiting() + pool.in_flight)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        status = process_to_the_end(auth_client, project)
    finally:
        stop.set()
        sampler.join()
    assert status["state"] == "Complete"
    assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 25, 9]
    assert 2 <= max(seen) <= 16
    assert_settled_exactly(project)


def test_a_low_wallet_pauses_the_book_and_credit_resumes_it(
    user, auth_client, settings, django_capture_on_commit_callbacks
):
    settings.DEVELOPMENT_DEPLOYMENT = True
    project = book(user, pages=40)
    credit(user, "0.01")
    status = process_to_the_end(auth_client, project)
    assert project.status == ProjectStatus.PAUSED_NEEDS_CREDIT
    assert project.approval_count == 1
    assert (status["phase"], status["blockedOn"], status["nextAction"], status["waitingOn"]) == (
        "waiting",
        "credit",
        "add_credit",
        None,
    )
    with django_capture_on_commit_callbacks(execute=True):
        auth_client.post("/v1/wallet/top-up", {"amount": 20}, format="json")
    project.refresh_from_db()
    assert project.status == ProjectStatus.PROCESSING
    assert project.jobs.filter(status=JobStatus.QUEUED, page_count=5).exists()
    run_worker()
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert_settled_exactly(project)


def test_a_book_paused_for_credit_with_auto_top_up_on_is_waiting_not_blocked(user, auth_client):
    project = book(user, pages=10)
    credit(user, "0.01")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    run_worker()
    card = SavedCard.objects.create(
        user=user, stripe_payment_method_id="pm_x", brand="visa", last4="4242", is_primary=True
    )
    WalletSettings.objects.update_or_create(
        wallet=Wallet.objects.get(user=user), defaults={"auto_top_up_threshold": 1, "auto_top_up_amount": 10}
    )
    assert card.pk
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["waitingOn"], status["blockedOn"], status["nextAction"]) == ("credit", None, None)


def test_a_page_that_keeps_failing_ends_completed_with_errors_after_three_attempts(user, auth_client, settings):
    settings.TRANSLATION_ENGINE_OPTIONS = {"fail_pages": [3], "fail_attempts": 0}  # always
    project = book(user, pages=6)
    credit(user, "5")
    process_to_the_end(auth_client, project)
    assert project.status == ProjectStatus.COMPLETED_WITH_ERRORS
    failed = project.pages.get(index=3)
    assert (failed.status, failed.attempts, failed.failure_code) == (PageStatus.FAILED, 3, "engine_error")
    assert failed.failure_reason
    assert project.jobs.filter(kind="RetryFailedPages").count() == 2
    assert_problem(auth_client.post(f"/v1/projects/{project.pk}/retry"), 409, "conflict")
    assert_settled_exactly(project)


def test_a_page_that_fails_once_is_retried_by_itself(user, auth_client, settings):
    settings.TRANSLATION_ENGINE_OPTIONS = {"fail_pages": [2], "fail_attempts": 1}
    project = book(user, pages=6)
    credit(user, "5")
    process_to_the_end(auth_client, project)
    assert project.status == ProjectStatus.COMPLETE
    assert project.pages.get(index=2).attempts == 2


def test_cancelling_a_queued_batch_releases_its_hold(user, auth_client):
    project = book(user)
    credit(user, "5")
    job_id = auth_client.post(f"/v1/projects/{project.pk}/process").json()["jobId"]
    response = auth_client.post(f"/v1/projects/{project.pk}/cancel")
    assert response.status_code == 200
    assert (response.json()["state"], response.json()["phase"]) == ("Cancelled", "cancelled")
    assert Job.objects.get(pk=job_id).status == JobStatus.FAILED
    assert Wallet.objects.get(user=user).reserved == 0
    assert not project.pages.exclude(status=PageStatus.PENDING).exists()
    assert run_worker() == 0


def test_cancelling_a_running_batch_stops_at_the_next_page_and_charges_only_finished_pages(user, auth_client, settings):
    settings.ENGINE_CONCURRENCY = 1
    settings.TRANSLATION_ENGINE_OPTIONS = {
        "delay_seconds": 0.2
    }  # so that pages are still waiting when the cancel is seen
    project = book(user, pages=40)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    job_run_next()  # calibration; the 5-page batch is queued next
    job = jobs.job_claim()
    assert job is not None
    assert auth_client.post(f"/v1/projects/{project.pk}/cancel").json()["state"] == "Cancelling"
    batch_execute(job=job)
    project.refresh_from_db()
    job.refresh_from_db()
    assert project.status == ProjectStatus.CANCELLED
    finished = job.pages.filter(status=PageStatus.APPROVED).count()
    assert 1 <= finished < 5
    assert job.charged_usd == exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
    assert project.pages.filter(status=PageStatus.PENDING).count() == 39 - finished
    assert_settled_exactly(project)


def test_a_job_whose_worker_died_is_requeued_and_finished_with_every_page_once(user, auth_client, settings):
    project = book(user, pages=40)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    job_run_next()
    dead = jobs.job_claim()  # the worker that will "die" after two pages
    assert dead is not None

    engine = engine_get()

    for page in list(dead.pages.order_by("index"))[:2]:
        result, error = page_translate(engine, page_input_build(project, page, ""))
        page_outcome_commit(job=dead, claim=dead.claims, page=page, result=result, error=error)
    Job.objects.filter(pk=dead.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 1)
    )
    assert jobs.jobs_stale_requeue() == 1
    assert Job.objects.get(pk=dead.pk).status == JobStatus.QUEUED
    run_worker()
    # The old worker wakes up and tries to commit: its claim is stale, nothing changes.
    stale_page = dead.pages.order_by("index").last()
    assert page_outcome_commit(job=dead, claim=dead.claims, page=stale_page, result=None, error="late") is False
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert set(project.pages.values_list("attempts", flat=True)) == {1}
    assert Job.objects.get(pk=dead.pk).claims == 2
    assert_settled_exactly(project)


def test_an_engine_that_is_down_pauses_the_book_until_it_is_back(user, auth_client, settings):
    project = book(user, pages=10)
    credit(user, "5")
    settings.TRANSLATION_ENGINE_OPTIONS = {"unavailable": True}
    auth_client.post(f"/v1/projects/{project.pk}/process")
    job_run_next()
    project.refresh_from_db()
    assert project.status == ProjectStatus.PAUSED_NEEDS_CAPACITY
    job = project.jobs.get()
    assert (job.status, job.held_usd) == (JobStatus.QUEUED, Decimal("0.5"))
    assert project.pages.get(index=1).attempts == 0
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["waitingOn"], status["gpu"], status["phase"]) == ("gpu_warmup", "starting", "waiting")
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    assert run_worker() == 0  # not before CAPACITY_RETRY_SECONDS
    settings.CAPACITY_RETRY_SECONDS = 0
    run_worker()
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE


def test_process_next_batch_runs_one_batch_synchronously(user, auth_client):
    project = book(user, pages=10)
    credit(user, "5")
    response = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["batchSize"], body["projectStatus"], body["failedPages"]) == (1, "Processing", [])
    assert [page["index"] for page in body["processedPages"]] == [1]
    assert body["reviews"][0]["translation"].startswith("[echo")
    assert body["totalCostUsd"] > 0
    assert not Job.objects.filter(status=JobStatus.QUEUED).exists()  # the next rung is not queued
    # Another call (not a double-submit of the first: a new Idempotency-Key).
    second = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch", HTTP_IDEMPOTENCY_KEY="2").json()
    assert second["batchSize"] == 5
    auth_client.post(f"/v1/projects/{project.pk}/process")
    third = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch", HTTP_IDEMPOTENCY_KEY="3")
    assert_problem(third, 409, "job_in_flight")


def test_the_lowest_queue_position_runs_first_and_staff_can_move_a_job(user, other_user, jwt_client, settings):
    first, second = book(user, pages=3), book(other_user, pages=3)
    credit(user, "5", "a")
    credit(other_user, "5", "b")
    job_a = jobs.process_start(owner=user, project_id=first.pk)
    job_b = jobs.process_start(owner=other_user, project_id=second.pk)
    assert job_a.queue_position < job_b.queue_position
    assert_problem(jwt_client(user).post(f"/v1/jobs/{job_b.pk}/move", {}, format="json"), 403, "forbidden")
    user.is_staff = True
    user.save()
    moved = jwt_client(user).post(f"/v1/jobs/{job_b.pk}/move", {}, format="json")
    assert moved.status_code == 200
    assert jobs.job_claim().pk == job_b.pk


def test_someone_elses_book_and_job_are_not_found(user, other_user, jwt_client):
    project = book(other_user)
    credit(other_user, "5")
    job = jobs.process_start(owner=other_user, project_id=project.pk)
    client = jwt_client(user)
    assert_problem(client.post(f"/v1/projects/{project.pk}/process"), 404, "not_found")
    assert_problem(client.get(f"/v1/projects/{project.pk}/status"), 404, "not_found")
    assert_problem(client.get(f"/v1/jobs/{job.pk}"), 404, "not_found")


def test_review_approve_and_reject_need_the_approve_scope(user, auth_client, key_client):
    project = book(user, pages=3)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    run_worker()
    page = project.pages.get(index=2)
    read = auth_client.get(f"/v1/projects/{project.pk}/pages/{page.pk}").json()
    assert read["review"]["translation"].startswith("[echo")
    assert read["review"]["costUsd"] > 0
    writer = key_client(user, scopes=["projects:write"])
    assert_problem(writer.post(f"/v1/projects/{project.pk}/pages/{page.pk}/reject"), 403, "forbidden")
    approver = key_client(user, scopes=["approve"])
    rejected = approver.post(f"/v1/projects/{project.pk}/pages/{page.pk}/reject", {"reason": "names"}, format="json")
    assert rejected.status_code == 200, rejected.json()
    assert rejected.json()["status"] == "Failed"
    project.refresh_from_db()
    assert project.jobs.filter(kind="RetryFailedPages", status=JobStatus.QUEUED).exists()
    run_worker()
    page.refresh_from_db()
    assert (page.status, page.attempts) == (PageStatus.APPROVED, 2)
    approved = approver.post(f"/v1/projects/{project.pk}/pages/{page.pk}/approve")
    assert approved.json()["status"] == "Approved"


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_process_calls_queue_exactly_one_job_and_one_hold(user):
    import threading

    project = book(user, pages=10)
    credit(user, "5")
    together = threading.Barrier(8)
    job_ids: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            together.wait(timeout=30)
            job = jobs.process_start(owner=user, project_id=project.pk)
            with lock:
                job_ids.append(str(job.pk))
        except BaseException as error:  # surfaced below
            with lock:
                errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert len(set(job_ids)) == 1
    assert Job.objects.count() == 1
    assert Hold.objects.count() == 1
    assert Wallet.objects.get(user=user).reserved == Decimal("0.5")


def test_the_books_glossary_and_the_previous_page_reach_the_vllm_engine(user, auth_client, settings):

    project = book(user, pages=3)
    credit(user, "5")
    glossary = [{"term": "Frodo", "translation": "Frodon"}, {"term": "iPhone_Pro", "translation": "iPhone_Pro"}]
    updated = auth_client.patch(f"/v1/projects/{project.pk}", {"glossary": glossary}, format="json")
    assert updated.status_code == 200, updated.json()
    assert updated.json()["glossary"] == glossary  # terms untouched by the camelCase conversion
    duplicate = auth_client.patch(f"/v1/projects/{project.pk}", {"glossary": glossary * 2}, format="json")
    assert_problem(duplicate, 400, "validation_error")
    with OpenAIServer(model="test/vl") as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL = server.url, "test/vl"
        auth_client.post(f"/v1/projects/{project.pk}/process")
        job_run_next()  # calibration: page 1
        job_run_next()  # pages 2 and 3
        prompts = [request.user_text + request.system_text for request in server.chat_requests()]
    assert len(prompts) == 3
    assert all("Frodon" in prompt and "iPhone_Pro" in prompt for prompt in prompts)
    page_1 = project.pages.get(index=1).translation
    assert page_1[-40:] in prompts[1] or page_1[-40:] in prompts[2]


def test_a_language_pair_the_engine_lacks_is_refused_before_any_hold(user, auth_client, settings):
    settings.TRANSLATION_ENGINE = "local"
    project = book(user, pages=3)
    Project.objects.filter(pk=project.pk).update(target_language_code="ja", source_language_override="en")
    credit(user, "5")
    response = auth_client.post(f"/v1/projects/{project.pk}/process")
    assert_problem(response, 400, "language_pair_unsupported")
    assert "supportedPairs" in response.json()
    assert not Job.objects.exists()
    assert not Hold.objects.exists()


# --- cancels that settle what was already done --------------------------------------------


def requeued_with_two_pages_done(user, auth_client, settings) -> Job:  # type: ignore[no-untyped-def]
    """A 40-page book whose 5-page batch lost its worker after two pages and was requeued
    by the reaper: Queued, its hold open, two of its pages Approved."""
    project = book(user, pages=40)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    job_run_next()
    job = jobs.job_claim()
    assert job is not None

    for page in list(job.pages.order_by("index"))[:2]:
        result, error = page_translate(engine_get(), page_input_build(project, page, ""))
        assert page_outcome_commit(job=job, claim=job.claims, page=page, result=result, error=error)
    Job.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 1)
    )
    assert jobs.jobs_stale_requeue() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    return job


def test_an_operator_cancelling_a_requeued_job_charges_its_done_pages_and_names_the_operator(
    user, auth_client, settings, client
):

    job = requeued_with_two_pages_done(user, auth_client, settings)
    done = exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
    assert done > 0
    balance_before = Wallet.objects.get(user=user).balance
    operator = UserFactory(is_staff=True, is_superuser=True, email="ops@example.com")
    client.force_login(operator)
    answer = client.post("/admin/projects/job/", {"action": "cancel_queued", "_selected_action": [str(job.pk)]})
    assert answer.status_code == 302
    job.refresh_from_db()
    hold = Hold.objects.get(cause_type="job", cause_id=str(job.pk))
    assert (job.status, hold.state, hold.settled_amount, job.charged_usd) == (
        JobStatus.FAILED,
        HoldState.SETTLED,
        done,
        done,
    )
    assert "ops@example.com" in job.error_text
    wallet = Wallet.objects.get(user=user)
    assert (wallet.balance, wallet.reserved) == (balance_before - done, 0)
    entries = LedgerEntry.objects.filter(cause_type="job", cause_id=str(job.pk)).exclude(kind=EntryKind.HOLD)
    assert {entry.kind for entry in entries} == {EntryKind.HOLD_RELEASE, EntryKind.BATCH_CHARGE}
    assert all("ops@example.com" in entry.memo for entry in entries)
    assert job.pages.filter(status=PageStatus.APPROVED).count() == 2
    assert job.pages.filter(status=PageStatus.PENDING).count() == 3
    assert Project.objects.get(pk=job.project_id).status == ProjectStatus.CANCELLED
    # Once only: a second cancel (API or admin) changes nothing.
    client.post("/admin/projects/job/", {"action": "cancel_queued", "_selected_action": [str(job.pk)]})
    assert auth_client.post(f"/v1/projects/{job.project_id}/cancel").json()["state"] == "Cancelled"
    assert LedgerEntry.objects.filter(cause_type="job", cause_id=str(job.pk)).count() == entries.count() + 1
    assert_settled_exactly(job.project)


def test_the_owner_cancelling_a_requeued_job_charges_only_its_done_pages(user, auth_client, settings):

    job = requeued_with_two_pages_done(user, auth_client, settings)
    done = exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
    response = auth_client.post(f"/v1/projects/{job.project_id}/cancel")
    assert response.json()["state"] == "Cancelled"
    job.refresh_from_db()
    assert job.charged_usd == done
    charge = LedgerEntry.objects.get(cause_type="job", cause_id=str(job.pk), kind=EntryKind.BATCH_CHARGE)
    assert (charge.amount, charge.memo) == (-done, "Cancelled by the owner.")
    assert Wallet.objects.get(user=user).reserved == 0
    assert run_worker() == 0
    assert_settled_exactly(job.project)


# --- a saturated engine: sustained 429s -------------------------------------------------------


@pytest.fixture
def standin(settings):
    """The OpenAI-compatible stand-in with the vllm engine on it: one page at a time, fast
    retries (VLLM_MAX_RETRIES=2)."""

    with OpenAIServer() as server:
        settings.TRANSLATION_ENGINE = "vllm"
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_API_KEY = server.url, server.model, ""
        settings.VLLM_MAX_RETRIES = 2
        settings.VLLM_RETRY_BASE_SECONDS = settings.VLLM_RETRY_MAX_SECONDS = 0.01
        settings.ENGINE_CONCURRENCY = 1
        yield server


def paused_by_429s_after_two_pages(user, auth_client, standin) -> Project:  # type: ignore[no-untyped-def]
    """A 10-page book past calibration whose 5-page batch (pages 2-6) met a saturated
    server after two pages."""
    project = varied_book(user, pages=10)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    job_run_next()  # calibration: page 1
    standin.throttle(after=2)
    job_run_next()
    project.refresh_from_db()
    return project


def test_sustained_429s_pause_the_book_for_capacity_with_no_attempt_used_and_it_resumes_by_itself(
    user, other_user, auth_client, jwt_client, standin, settings
):
    project = paused_by_429s_after_two_pages(user, auth_client, standin)
    assert project.status == ProjectStatus.PAUSED_NEEDS_CAPACITY
    job = project.jobs.get(status=JobStatus.QUEUED)
    assert (job.page_count, job.claims) == (5, 1)
    assert Hold.objects.get(cause_type="job", cause_id=str(job.pk)).state == HoldState.OPEN
    pages = {page.index: (page.status, page.attempts) for page in project.pages.filter(index__lte=6)}
    assert pages == {
        1: (PageStatus.APPROVED, 1),
        2: (PageStatus.APPROVED, 1),
        3: (PageStatus.APPROVED, 1),
        4: (PageStatus.IN_PROGRESS, 0),
        5: (PageStatus.IN_PROGRESS, 0),
        6: (PageStatus.IN_PROGRESS, 0),
    }
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["state"], status["waitingOn"], status["gpu"], status["blockedOn"]) == (
        "PausedNeedsCapacity",
        "gpu_capacity",
        "throttled",
        None,
    )
    # Another book queued meanwhile waits on capacity too, not on the queue.
    other = book(other_user, pages=3)
    credit(other_user, "5", "other")
    client = jwt_client(other_user)
    client.post(f"/v1/projects/{other.pk}/process")
    assert client.get(f"/v1/projects/{other.pk}/status").json()["waitingOn"] == "gpu_capacity"
    assert client.post(f"/v1/projects/{other.pk}/cancel").json()["state"] == "Cancelled"  # one book is enough here
    # Not before CAPACITY_RETRY_SECONDS, then by itself.
    assert job_run_next() is None
    standin.throttle(None)
    settings.CAPACITY_RETRY_SECONDS = 0
    run_worker()
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert set(project.pages.values_list("attempts", flat=True)) == {1}
    job.refresh_from_db()
    assert (job.status, job.claims) == (JobStatus.SUCCEEDED, 2)
    assert_settled_exactly(project)


def test_cancelling_a_book_paused_for_capacity_charges_the_pages_done_before_the_pause(user, auth_client, standin):

    project = paused_by_429s_after_two_pages(user, auth_client, standin)
    job = project.jobs.get(status=JobStatus.QUEUED)
    done = exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
    response = auth_client.post(f"/v1/projects/{project.pk}/cancel")
    assert response.json()["state"] == "Cancelled"
    job.refresh_from_db()
    assert (job.status, job.charged_usd) == (JobStatus.FAILED, done)
    assert job.pages.filter(status=PageStatus.PENDING).count() == 3
    assert LedgerEntry.objects.filter(cause_type="job", cause_id=str(job.pk), kind=EntryKind.BATCH_CHARGE).count() == 1
    assert Wallet.objects.get(user=user).reserved == 0
    assert job_run_next() is None
    assert_settled_exactly(project)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_book_paused_for_capacity_shows_processing_again_while_its_batch_runs(user, auth_client, standin, settings):
    import threading

    project = paused_by_429s_after_two_pages(user, auth_client, standin)
    assert project.status == ProjectStatus.PAUSED_NEEDS_CAPACITY
    standin.throttle(None)
    standin.latency = 0.3
    settings.CAPACITY_RETRY_SECONDS = 0
    before = len(standin.chat_requests())

    def work() -> None:
        try:
            job_run_next()
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    while len(standin.chat_requests()) == before and worker.is_alive():
        standin.wait(0.01)
    seen = Project.objects.get(pk=project.pk).status
    worker.join(timeout=30)
    assert seen == ProjectStatus.PROCESSING
    assert Project.objects.get(pk=project.pk).status == ProjectStatus.PROCESSING


# --- failures not worth retrying, and process-next-batch during an outage ---------------------


def test_a_page_the_engine_refuses_for_good_is_not_retried_by_the_ladder_but_can_be_by_hand(user, auth_client, standin):

    project = varied_book(user, pages=3)
    credit(user, "5")
    standin.fail_next(Fault.http(400))  # the calibration page is refused (a 4xx)
    auth_client.post(f"/v1/projects/{project.pk}/process")
    run_worker()
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETED_WITH_ERRORS
    refused = project.pages.get(index=1)
    assert (refused.status, refused.attempts, refused.failure_retryable) == (PageStatus.FAILED, 1, False)
    assert "400" in refused.failure_reason
    assert not project.jobs.filter(kind="RetryFailedPages").exists()
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["blockedOn"], status["nextAction"]) == ("retry", "retry")
    assert auth_client.post(f"/v1/projects/{project.pk}/retry").status_code == 202
    run_worker()
    project.refresh_from_db()
    refused.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert (refused.status, refused.attempts, refused.failure_retryable) == (PageStatus.APPROVED, 2, True)
    assert_settled_exactly(project)


def test_process_next_batch_during_an_outage_answers_503_and_ends_the_batch_cleanly(
    user, auth_client, standin, settings
):
    settings.CAPACITY_RETRY_SECONDS = 45
    project = varied_book(user, pages=10)
    credit(user, "5")
    assert auth_client.post(f"/v1/projects/{project.pk}/process-next-batch").status_code == 200
    standin.throttle(after=2)
    response = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch", HTTP_IDEMPOTENCY_KEY="2")
    assert_problem(response, 503, "engine_unavailable")
    assert response["Retry-After"] == "45"
    assert "2 of 5 pages" in response.json()["detail"]
    job = project.jobs.order_by("queue_position").last()
    done = exact_sum(job.pages.filter(status=PageStatus.APPROVED), "cost_usd")
    assert (job.status, job.charged_usd) == (JobStatus.FAILED, done)
    assert "unavailable" in job.error_text
    project.refresh_from_db()
    assert (project.status, project.approval_count) == (ProjectStatus.PROCESSING, 1)
    assert not project.jobs.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exists()
    assert project.pages.filter(status=PageStatus.PENDING, attempts=0).count() == 7
    assert Wallet.objects.get(user=user).reserved == 0
    assert_settled_exactly(project)
    standin.throttle(None)
    again = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch", HTTP_IDEMPOTENCY_KEY="3")
    assert again.status_code == 200
    assert [page["index"] for page in again.json()["processedPages"]] == [4, 5, 6, 7, 8]


# --- the queue: lost messages, concurrent workers, reordering ----------------------------------


def test_a_queued_job_whose_wake_up_was_lost_gets_it_again_from_beat(user, other_user, auth_client, settings):
    import json

    import redis

    assert settings.CELERY_BEAT_SCHEDULE["jobs-queued-redispatch"]["task"] == "projects.tasks.jobs_queued_redispatch"
    settings.JOB_REDISPATCH_SECONDS, settings.CAPACITY_RETRY_SECONDS = 300, 30
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    waiting = set(broker.lrange("process", 0, -1))
    project = book(user, pages=3)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")  # its wake-up never leaves the test's transaction
    job = project.jobs.get()
    paused = book(other_user, pages=3)
    credit(other_user, "5", "other")
    paused_job = jobs.process_start(owner=other_user, project_id=paused.pk)
    Project.objects.filter(pk=paused.pk).update(status=ProjectStatus.PAUSED_NEEDS_CAPACITY)
    now = timezone.now()
    try:
        assert jobs_queued_redispatch() == 0  # neither has waited long enough
        Job.objects.filter(pk=job.pk).update(status_changed_at=now - timedelta(seconds=301))
        Job.objects.filter(pk=paused_job.pk).update(status_changed_at=now - timedelta(seconds=320))
        assert jobs_queued_redispatch() == 1  # the paused one is due only after its capacity retry too
        sent = [json.loads(raw) for raw in set(broker.lrange("process", 0, -1)) - waiting]
        assert [message["headers"]["task"] for message in sent] == ["projects.tasks.job_run_next"]
        assert jobs_queued_redispatch() == 0  # once per JOB_REDISPATCH_SECONDS
        Job.objects.filter(pk=paused_job.pk).update(status_changed_at=now - timedelta(seconds=331))
        assert jobs_queued_redispatch() == 1
    finally:
        for raw in set(broker.lrange("process", 0, -1)) - waiting:
            broker.lrem("process", 1, raw)
        broker.close()
    assert job_run_next() == str(job.pk)  # what the message runs: the claim decides
    assert job_run_next() == str(paused_job.pk)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_workers_claiming_at_once_take_each_job_once_and_the_lowest_position_first(user):
    import threading

    credit(user, "50")
    queued = sorted(
        (jobs.process_start(owner=user, project_id=book(user, pages=2).pk) for _ in range(12)),
        key=lambda job: job.queue_position,
    )
    position = {job.pk: job.queue_position for job in queued}
    # A job another worker is claiming is skipped, not waited on: the next lowest is taken.
    skipped: list[Job | None] = []
    with transaction.atomic():
        Job.objects.select_for_update().get(pk=queued[0].pk)
        other = threading.Thread(target=lambda: (skipped.append(jobs.job_claim()), connection.close()))
        other.start()
        other.join(timeout=30)
    assert skipped[0] is not None
    assert skipped[0].pk == queued[1].pk
    # Four workers at once take the other eleven, each exactly once, each in position order.
    together = threading.Barrier(4)
    claimed: dict[int, list] = {}

    def worker(number: int) -> None:
        mine = []
        try:
            together.wait(timeout=30)
            while (job := jobs.job_claim()) is not None:
                mine.append(job.pk)
        finally:
            claimed[number] = mine
            connection.close()

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    everything = [job_id for mine in claimed.values() for job_id in mine]
    assert sorted(everything) == sorted(job.pk for job in queued if job.pk != queued[1].pk)
    for mine in claimed.values():
        assert [position[job_id] for job_id in mine] == sorted(position[job_id] for job_id in mine)
    assert set(Job.objects.values_list("status", "claims")) == {(JobStatus.RUNNING, 1)}


def test_staff_move_a_job_just_before_another_with_before_job_id(user, other_user, jwt_client):

    owners = [user, other_user, UserFactory()]
    queued = []
    for number, owner in enumerate(owners):
        credit(owner, "5", f"seed-{number}")
        queued.append(jobs.process_start(owner=owner, project_id=book(owner, pages=2).pk))
    first, second, third = queued
    staff = jwt_client(UserFactory(is_staff=True))
    unknown = staff.post(f"/v1/jobs/{third.pk}/move", {"beforeJobId": str(uuid.uuid4())}, format="json")
    assert_problem(unknown, 400, "validation_error")
    assert Job.objects.get(pk=third.pk).queue_position == third.queue_position
    moved = staff.post(f"/v1/jobs/{third.pk}/move", {"beforeJobId": str(second.pk)}, format="json")
    assert moved.status_code == 200, moved.json()
    assert moved.json()["queuePosition"] < second.queue_position
    assert [jobs.job_claim().pk for _ in range(3)] == [first.pk, third.pk, second.pk]


# --- the local engine, the whole way ---------------------------------------------------------


@needs_local_tools
def test_the_local_engine_takes_an_english_book_to_complete_in_spanish(user, auth_client, local_engine):
    project = ProjectFactory(owner=user, target_language_code="es", source_language_override="en")
    pages_add(project, 6, text_layer="The house is red.\n\nThe dog is big.", has_text_layer=True)
    (scanned,) = pages_add(project, 1, text_layer="", has_text_layer=False)
    default_storage.save(scanned.image_key, ContentFile(page_image("The house is red.")))
    credit(user, "5")
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    assert run_worker() == 3  # 1, 5, then the last page
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    text_page = project.pages.get(index=3)
    assert "La casa es roja." in text_page.translation
    assert (text_page.engine, text_page.model_name) == ("local", "apertium eng-spa")
    scanned.refresh_from_db()
    assert "casa" in scanned.translation.lower()
    assert "house" in scanned.source_text.lower()
    assert scanned.model_name == "tesseract+apertium eng-spa"
    assert_settled_exactly(project)
