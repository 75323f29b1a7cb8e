"""Faults injected into a running service, one test each, with real processes (Celery
workers, Redis, PostgreSQL, the OpenAI-compatible stand-in, a webhook receiver): a worker
killed mid-batch again and again, Redis restarted during processing, PostgreSQL connections
dropped, the engine timing out or answering garbage, storage failing on write, a webhook
receiver that hangs. After each, `assert_book_invariants`: no page lost or translated twice,
no charge lost or doubled, no hold left open, the book at rest in a state that says why.

Every wait is bounded (`wait_until`'s deadline is a hang guard, not a timing check)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection

from accounts.models import User
from exports.book import ExportOptions
from exports.models import ExportFile, ExportStatus
from exports.services import export_request
from projects.models import Job, JobKind, JobStatus, PageStatus, Project, ProjectStatus, SourceKind
from projects.services import jobs
from projects.services.normalize import project_normalize
from tests.e2e.processes import Service, Services, free_port, wait_until
from tests.factories import ProjectFactory, UserFactory, pages_add, project_from_path
from tests.projects.test_normalize import assert_normalize_stops_on_a_storage_error
from tests.reliability.faults_support import OwnRedis, assert_book_invariants, beat_send
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.pdfs import pdf_bytes
from tests.webhooks.receiver import Answer, running_receiver
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit
from webhooks.addresses import MAX_ADDRESSES_TRIED
from webhooks.models import DeliveryAttempt, DeliveryStatus, WebhookDelivery
from webhooks.services.deliveries import delivery_test_send
from webhooks.services.subscriptions import subscription_create
from webhooks.tasks import delivery_attempt as delivery_attempt_task

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

PAGE_TEXT = "The quick brown fox jumps over the lazy dog near the old river bank. " * 4
CREDIT = Decimal(5)
# Slow pages (0.3 s, two at a time) so a batch runs long enough to be hit; a quick heartbeat.
SLOW_WORKER = {
    "ENGINE_CONCURRENCY": 2,
    "TRANSLATION_ENGINE_OPTIONS": '{"delay_seconds": 0.3}',
    "JOB_HEARTBEAT_SECONDS": 1,
}
DEADLINE = 90.0


def book(pages: int, **page_fields: object) -> Project:
    """A normalized book of text pages whose owner has CREDIT, started (its first batch
    queued, the wake-up sent on commit to the shared broker)."""
    owner: User = UserFactory.create()
    wallet_credit(user=owner, amount=CREDIT, kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="faults")
    project: Project = ProjectFactory.create(owner=owner)
    for page in pages_add(project, pages, has_text_layer=True, **page_fields):
        # Each page ends its own way: the engine's continuity context is the end of the page before.
        page.text_layer = f"{PAGE_TEXT}This is the end of page number {page.index}."
        page.save(update_fields=["text_layer"])
    return project


def running_batch(project: Project, *, size: int, approved: int) -> Job | None:
    """The book's running batch of `size` pages once at least `approved` of them are done."""
    job = project.jobs.filter(page_count=size, status=JobStatus.RUNNING).first()
    if job is not None and job.pages.filter(status=PageStatus.APPROVED).count() >= approved:
        return job
    return None


def at_rest(project: Project) -> bool:
    status = Project.objects.get(pk=project.pk).status
    return status in (ProjectStatus.COMPLETE, ProjectStatus.COMPLETED_WITH_ERRORS)


# --- 1. A worker killed mid-batch, three times ----------------------------------------------


def test_workers_killed_three_times_mid_batch_lose_and_double_nothing(services: Services, settings):
    settings.JOB_STALE_SECONDS = 2  # the reaper, run below from this process as beat would
    project = book(40)  # the ladder: 1, 5, 25, 9
    jobs.process_start(owner=project.owner, project_id=project.pk)
    kills = [(5, 2), (25, 5), (25, 15)]  # (batch, pages of it done): the 25-page one is hit twice
    committed: dict[object, object] = {}
    for number, (size, approved) in enumerate(kills, start=1):
        worker = services.worker(f"worker-{number}", **SLOW_WORKER)
        batch = wait_until(
            lambda size=size, approved=approved: running_batch(project, size=size, approved=approved),
            what=f"worker {number} inside the {size}-page batch",
            services=services,
            timeout=DEADLINE,
        )
        assert isinstance(batch, Job)
        worker.kill()
        in_flight = batch.pages.filter(status=PageStatus.IN_PROGRESS)
        assert in_flight.exists(), "the kill landed mid-batch"
        assert not in_flight.exclude(attempts=0).exists()
        committed.update(project.pages.filter(status=PageStatus.APPROVED).values_list("pk", "translated_at"))
        # Nobody knows yet; the reaper sees the silent heartbeat and queues the job again.
        wait_until(
            lambda batch=batch: jobs.jobs_stale_requeue(job_ids=[batch.pk]) == 1,
            what="the reaper to requeue the dead worker's job",
            services=services,
            timeout=DEADLINE,
        )
    services.worker("worker-4", **SLOW_WORKER)
    wait_until(lambda: at_rest(project), what="the book to finish", services=services, timeout=DEADLINE)

    assert_book_invariants(project, credited=CREDIT, attempts=1)
    assert project.status == ProjectStatus.COMPLETE
    # What dead workers committed stayed as it was: no page was translated twice.
    kept = dict(project.pages.filter(pk__in=committed).values_list("pk", "translated_at"))
    assert kept == committed
    ladder = list(project.jobs.order_by("queue_position").values_list("page_count", "status", "claims"))
    assert ladder == [
        (1, JobStatus.SUCCEEDED, 1),
        (5, JobStatus.SUCCEEDED, 2),
        (25, JobStatus.SUCCEEDED, 3),
        (9, JobStatus.SUCCEEDED, 1),
    ]


# --- 2. Redis restarted during processing ---------------------------------------------------


def test_redis_restarted_mid_batch_loses_no_page_and_the_book_completes(services: Services, tmp_path):
    own = OwnRedis(services, free_port(), tmp_path).start()
    worker_env = {**SLOW_WORKER, **own.env(), "JOB_REDISPATCH_SECONDS": 1, "JOB_STALE_SECONDS": 3}
    project = book(40)
    jobs.process_start(owner=project.owner, project_id=project.pk)  # its wake-up went to the shared broker
    worker = services.worker("worker", **worker_env)
    beat_send(own.url, "projects.tasks.job_run_next", queue="process")  # the wake-up, on the worker's broker

    wait_until(
        lambda: running_batch(project, size=25, approved=4),
        what="the worker inside the 25-page batch",
        services=services,
        timeout=DEADLINE,
    )
    own.stop()  # every message, the cache and the channel layer gone with it
    # Without Redis the batch goes on (pages and the heartbeat are in PostgreSQL) and is
    # settled; the wake-up of the next batch (9 pages) cannot be sent.
    wait_until(
        lambda: project.jobs.filter(page_count=25, status=JobStatus.SUCCEEDED).exists(),
        what="the batch to be settled while Redis is down",
        services=services,
        timeout=DEADLINE,
    )
    # The worker sees its broker gone once the batch's task is over (it could not send the
    # next batch's wake-up, or sent it to a Redis that is gone).
    wait_until(
        lambda: "Connection to broker lost" in worker.log.read_text(errors="replace"),
        what="the worker to lose its broker",
        services=services,
        timeout=DEADLINE,
    )
    own.start()
    # Beat's jobs-queued-redispatch (and the reaper, should the worker have stopped beating)
    # wake the worker again, once it has its broker back.

    def finished() -> bool:
        beat_send(own.url, "projects.tasks.jobs_stale_requeue")
        beat_send(own.url, "projects.tasks.jobs_queued_redispatch")
        return at_rest(project)

    wait_until(finished, what="the book to finish after Redis came back", services=services, timeout=DEADLINE, every=1)
    assert_book_invariants(project, credited=CREDIT, attempts=1)
    assert project.status == ProjectStatus.COMPLETE
    assert list(project.jobs.order_by("queue_position").values_list("page_count", "status")) == [
        (1, JobStatus.SUCCEEDED),
        (5, JobStatus.SUCCEEDED),
        (25, JobStatus.SUCCEEDED),
        (9, JobStatus.SUCCEEDED),
    ]


# --- 3. PostgreSQL connections dropped ------------------------------------------------------


def terminate_worker_backends() -> int:
    """pg_terminate_backend on the workers' sessions of this test's database (named by
    Services.worker), not on this test process's own pooled connections."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name LIKE %s",
            ["worker-%"],
        )
        return int(cursor.fetchone()[0])


def test_postgresql_connections_dropped_mid_batch_the_worker_recovers(services: Services):
    """The worker hands its job back at once on a fresh connection and takes it again; the
    reaper (JOB_STALE_SECONDS, 120 s here) is not what brings the book back."""
    project = book(40)
    jobs.process_start(owner=project.owner, project_id=project.pk)
    worker: Service = services.worker("worker", **SLOW_WORKER)
    for approved in (4, 14):
        wait_until(
            lambda approved=approved: running_batch(project, size=25, approved=approved),
            what=f"the worker {approved} pages into the 25-page batch",
            services=services,
            timeout=DEADLINE,
        )
        assert terminate_worker_backends() >= 1

    wait_until(lambda: at_rest(project), what="the book to finish", services=services, timeout=DEADLINE)
    assert worker.process.poll() is None, "the worker survived"
    assert_book_invariants(project, credited=CREDIT, attempts=1)
    assert project.status == ProjectStatus.COMPLETE
    ladder = list(project.jobs.order_by("queue_position").values_list("page_count", "status", "claims"))
    assert ladder == [
        (1, JobStatus.SUCCEEDED, 1),
        (5, JobStatus.SUCCEEDED, 1),
        (25, JobStatus.SUCCEEDED, 3),  # handed back twice, taken again twice
        (9, JobStatus.SUCCEEDED, 1),
    ]


# --- 4. The engine timing out or answering garbage ------------------------------------------


def vllm_worker_env(server: OpenAIServer) -> dict[str, object]:
    """The vllm engine against the stand-in: one page at a time (so each fault meets the
    page it is meant for), one quick retry of a 5xx, a 1 s answer deadline."""
    return {
        "TRANSLATION_ENGINE": "vllm",
        "VLLM_BASE_URL": server.url,
        "VLLM_MODEL": server.model,
        "VLLM_MAX_RETRIES": 1,
        "VLLM_RETRY_BASE_SECONDS": 0.01,
        "VLLM_RETRY_MAX_SECONDS": 0.05,
        "VLLM_TIMEOUT_SECONDS": 1,
        "ENGINE_CONCURRENCY": 1,
        "CAPACITY_RETRY_SECONDS": 1,
        "MODEL_STATUS_CACHE_SECONDS": 0,
    }


def test_an_engine_answering_garbage_fails_pages_with_reasons_and_the_retry_completes(services: Services):
    project = book(6)  # the ladder: 1, then 5, then the retry of the failed pages
    with OpenAIServer() as server:
        server.fail_next(
            Fault.reply(""),  # page 1: an empty translation
            Fault.reply(f"{PAGE_TEXT}This is the end of page number 2."),  # page 2: the source handed back
            Fault.garbage(),  # page 3: an HTTP 200 whose body is not JSON
            Fault.timeout(3),  # page 4: no answer within VLLM_TIMEOUT_SECONDS
            Fault.http(500),  # page 5: a 500, and another on the retry
            Fault.http(500),
        )
        jobs.process_start(owner=project.owner, project_id=project.pk)
        # Batches only at first: the retry the ladder queues waits for a worker of its queue.
        services.worker("worker", queues="process", **vllm_worker_env(server))
        retry = wait_until(
            lambda: project.jobs.filter(kind=JobKind.RETRY_FAILED_PAGES, status=JobStatus.QUEUED).first(),
            what="the ladder to queue the retry of the failed pages",
            services=services,
            timeout=DEADLINE,
        )
        assert isinstance(retry, Job)
        failures = dict(retry.pages.values_list("index", "failure_reason"))  # kept until translated
        assert set(retry.pages.values_list("attempts", "failure_retryable")) == {(1, True)}
        services.worker("retrier", queues="retry", **vllm_worker_env(server))
        wait_until(lambda: at_rest(project), what="the retry to finish the book", services=services, timeout=DEADLINE)
        chat = server.chat_requests()

    assert_book_invariants(project, credited=CREDIT)
    assert project.status == ProjectStatus.COMPLETE
    # Each fault failed its page with its reason (one attempt used, retryable), and the
    # ladder's retry, the engine well again, translated them; page 6 went through at once.
    assert failures.keys() == {1, 2, 3, 4, 5}, failures
    assert "empty" in failures[1]
    assert "untranslated" in failures[2]
    assert "not JSON" in failures[3]
    assert "did not answer within 1 seconds" in failures[4]
    assert "HTTP 500" in failures[5]
    assert dict(project.pages.values_list("index", "attempts")) == {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1}
    # Six pages, one retry of the 500 inside the engine, five pages again: nothing more.
    assert len(chat) == 6 + 1 + 5
    retry.refresh_from_db()
    assert (retry.status, retry.page_count) == (JobStatus.SUCCEEDED, 5)


def test_a_500_storm_pauses_the_book_without_using_attempts_and_it_resumes(services: Services):
    """A dead engine core: every completion and /health answer 500. The book waits for
    capacity (no page attempt spent, the hold kept) and completes once the server is well."""
    project = book(3)  # the ladder: 1, then 2
    with OpenAIServer() as server:
        server.failing = True
        jobs.process_start(owner=project.owner, project_id=project.pk)
        # Paused for 3 s between rounds: long enough that the checks below see the pause,
        # not the next round's claim (during which the book shows Calibrating).
        services.worker("worker", **{**vllm_worker_env(server), "CAPACITY_RETRY_SECONDS": 3})

        def paused_after_a_few_rounds() -> bool:
            paused = Project.objects.get(pk=project.pk).status == ProjectStatus.PAUSED_NEEDS_CAPACITY
            return paused and len(server.chat_requests()) >= 6

        wait_until(paused_after_a_few_rounds, what="a few paused rounds", services=services, timeout=DEADLINE)
        assert_book_invariants(project, credited=CREDIT)
        assert set(project.pages.values_list("status", "attempts")) == {
            (PageStatus.IN_PROGRESS, 0),  # the calibration page, its job waiting
            (PageStatus.PENDING, 0),
        }

        server.failing = False
        wait_until(lambda: at_rest(project), what="the book to resume and finish", services=services, timeout=DEADLINE)
    project.refresh_from_db()
    pages = list(project.pages.values_list("index", "status", "attempts", "failure_reason"))
    assert project.status == ProjectStatus.COMPLETE, pages
    assert_book_invariants(project, credited=CREDIT, attempts=1)


# --- 5. Storage failing on write -------------------------------------------------------------


def blocked(folder: Path) -> Path:
    """Storage cannot write under `folder`: a plain file stands where the folder must be
    (the tests run as root, for whom a read-only folder is still writable)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_bytes(b"")
    return folder


def files_under(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file()) if root.exists() else []


def test_storage_failing_during_normalize_stops_cleanly_and_normalize_again_works(local_storage: Path, tmp_path):
    source = tmp_path / "book.pdf"
    source.write_bytes(pdf_bytes(3, text=lambda n: f"Page {n} of a short book, with a few words on it."))
    owner: User = UserFactory.create()

    def created() -> Project:
        return project_from_path(source, kind=SourceKind.PDF, file_name="book.pdf", pages=3, owner=owner)

    project = created()
    blocker = blocked(local_storage / "projects" / str(project.pk) / "thumbs")
    # A clear stop on our side: the book is back to Created with the reason, and no page
    # row or page file is left behind.
    assert_normalize_stops_on_a_storage_error(project)
    assert project.failure_reason
    assert files_under(local_storage) == [blocker]

    blocker.unlink()  # storage fixed: normalize again, the same book normalizes in full
    again = project_normalize(project=project)
    assert (again.status, again.pages.count(), again.failure_code) == (ProjectStatus.CALIBRATING, 3, "")
    assert len(files_under(local_storage / "projects" / str(again.pk))) == 6  # three images, three thumbnails


def export_reaching(export: ExportFile, status: ExportStatus, services: Services) -> ExportFile:
    """The export once the workers have taken it to the status."""
    reached = wait_until(
        lambda: ExportFile.objects.filter(pk=export.pk, status=status).first(),
        what=f"the export to be {status}",
        services=services,
        timeout=DEADLINE,
    )
    assert isinstance(reached, ExportFile)
    return reached


def test_storage_failing_during_export_fails_the_file_cleanly_and_asking_again_makes_it(services: Services):
    project = book(3, status=PageStatus.APPROVED, translation="Une page traduite.", cost_usd=Decimal("0.001"))
    Project.objects.filter(pk=project.pk).update(status=ProjectStatus.COMPLETE)
    project.refresh_from_db()
    media = services.var_dir / "media"
    exports = media / "projects" / str(project.pk) / "exports"  # a book's exports live in its folder
    blocker = blocked(exports)
    services.worker("exporter", queues="export")
    (export,) = export_request(project=project, export_format="Markdown", options=ExportOptions())

    failed = export_reaching(export, ExportStatus.FAILED, services)
    assert failed.error_text
    assert not failed.storage_key
    assert files_under(exports.parent) == [blocker]  # no half-written file

    blocker.unlink()  # storage fixed: asking again makes the file
    (again,) = export_request(project=project, export_format="Markdown", options=ExportOptions())
    ready = export_reaching(again, ExportStatus.READY, services)
    assert files_under(exports.parent) == [media / ready.storage_key]
    assert ExportFile.objects.filter(project=project).count() == 1


# --- 6. A webhook receiver that hangs -------------------------------------------------------


def test_a_hanging_webhook_receiver_neither_blocks_the_book_nor_loses_its_events(services: Services, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_env = {"WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true", "WEBHOOK_TIMEOUT_SECONDS": 1}
    project = book(8)  # the ladder: 1, 5, 2
    with running_receiver() as receiver:
        receiver.default = Answer(hang=True)  # accepts, reads the request, never answers
        subscription, receiver.secret = subscription_create(owner=project.owner, url=receiver.url())
        jobs.process_start(owner=project.owner, project_id=project.pk)
        # Processing and deliveries on workers of their own, as in production (GPU and CPU).
        services.worker("gpu", queues="process,retry", **webhook_env)
        services.worker(
            "cpu", queues="default,webhooks", WEBHOOK_RETRY_SCHEDULE_SECONDS="1,1,1,1,1,1,1,1", **webhook_env
        )

        wait_until(lambda: at_rest(project), what="the book to finish", services=services, timeout=DEADLINE)
        deliveries = WebhookDelivery.objects.filter(subscription=subscription)
        assert not deliveries.filter(status=DeliveryStatus.SUCCEEDED).exists()  # the book did not wait for them
        wait_until(
            lambda: DeliveryAttempt.objects.filter(delivery__subscription=subscription).count() >= 2,
            what="deliveries to time out",
            services=services,
            timeout=DEADLINE,
        )
        timed_out = DeliveryAttempt.objects.filter(delivery__subscription=subscription)
        assert set(timed_out.values_list("status_code", "error")) == {(None, "No answer within 1 s.")}

        receiver.default = Answer(status=204)  # the receiver recovers: the retries land
        wait_until(
            lambda: deliveries.exists() and not deliveries.exclude(status=DeliveryStatus.SUCCEEDED).exists(),
            what="every delivery to succeed on a retry",
            services=services,
            timeout=DEADLINE,
        )
    assert_book_invariants(project, credited=CREDIT, attempts=1)
    assert project.status == ProjectStatus.COMPLETE
    events = [request.payload["type"] for request in receiver.received if request.verified and request.payload]
    assert events.count("job.succeeded") >= 3  # every job's event arrived (some more than once: hung attempts)
    assert set(deliveries.values_list("event_type", flat=True)) >= {"job.succeeded", "project.status_changed"}
    assert deliveries.filter(event_type="job.succeeded").count() == 3


def test_a_receiver_answering_a_byte_at_a_time_cannot_hold_a_delivery_past_its_limit(services: Services, settings):
    """Each read is quick, so the per-read timeout never fires; the delivery task's soft
    time limit (WEBHOOK_TIMEOUT_SECONDS per address it may try) ends the attempt, which is
    logged as failed and retried; the worker goes on to the next delivery."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    with running_receiver() as receiver:
        receiver.answers = [Answer(trickle=True)]  # the first attempt; then 204s
        subscription, receiver.secret = subscription_create(owner=UserFactory(), url=receiver.url())
        delivery = delivery_test_send(subscription=subscription)  # queued on commit: none here
        services.worker(
            "cpu",
            queues="webhooks",
            pool="prefork",
            WEBHOOK_ALLOW_PRIVATE_ADDRESSES="true",
            WEBHOOK_TIMEOUT_SECONDS=1,
            WEBHOOK_RETRY_SCHEDULE_SECONDS="1",
        )
        delivery_attempt_task.apply_async(args=[str(delivery.pk)], queue="webhooks")
        wait_until(
            lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED,
            what="the delivery to succeed on its retry",
            services=services,
            timeout=DEADLINE,
        )
    attempts = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("attempted_at"))
    assert [(attempt.status_code, attempt.error) for attempt in attempts] == [
        (None, f"No complete answer within {1 * MAX_ADDRESSES_TRIED:g} s."),
        (204, ""),
    ]
