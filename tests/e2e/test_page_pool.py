"""The GPU node's layout end to end: one worker process running many batches at once
(Celery's threads pool), their pages drawn into one page pool of ENGINE_CONCURRENCY pages
at the model server (the OpenAI-compatible stand-in, a real HTTP server); and that worker
killed while several batches run, their books finished by another worker with nothing lost
or charged twice."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from accounts.models import User
from projects.models import Job, JobStatus, Page, PageStatus, Project, ProjectStatus
from projects.services import jobs
from tests.e2e.processes import Services, wait_until
from tests.e2e.test_worker_process import assert_each_job_charged_once, assert_wallet_charged_the_page_costs
from tests.factories import ProjectFactory, UserFactory, pages_add
from tests.support.openai_server import OpenAIServer
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

CREDIT = Decimal(10)
WORDS = [
    *("harbour", "lantern", "orchard", "river", "morning", "letter", "garden", "window", "evening", "mountain"),
    *("silence", "journey", "promise", "kingdom", "the", "of", "and", "to", "in", "a", "is", "that", "for", "it"),
]


def books_started(count: int, pages: int) -> list[Project]:
    """`count` books of `pages` pages, each of its own reader, all started at once (their
    first batches queued in this order)."""
    books = []
    for _ in range(count):
        owner: User = UserFactory.create()
        wallet_credit(
            user=owner, amount=CREDIT, kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=f"e2e-{owner.pk}"
        )
        project: Project = ProjectFactory.create(owner=owner)
        rows = pages_add(project, pages, has_text_layer=True)
        for row in rows:  # each page its own words: none repeats the end of the page before it
            row.text_layer = " ".join(random.Random(row.index).sample(WORDS, len(WORDS)))
        Page.objects.bulk_update(rows, ["text_layer"])
        books.append(project)
    for project in books:
        assert project.owner is not None
        jobs.process_start(owner=project.owner, project_id=project.pk)
    return books


def all_complete(books: list[Project]) -> bool:
    statuses = set(Project.objects.filter(pk__in=[book.pk for book in books]).values_list("status", flat=True))
    failed = Page.objects.filter(project__in=books, status=PageStatus.FAILED).values_list("failure_reason", flat=True)
    assert not statuses & {ProjectStatus.FAILED, ProjectStatus.COMPLETED_WITH_ERRORS}, (statuses, set(failed))
    return statuses == {ProjectStatus.COMPLETE}


def assert_translated_once_and_charged_once(books: list[Project]) -> None:
    for project in books:
        project.refresh_from_db()
        assert set(project.pages.values_list("status", "attempts")) == {(PageStatus.APPROVED, 1)}
        assert_each_job_charged_once(project)
        assert_wallet_charged_the_page_costs(project, CREDIT)


def test_books_on_their_first_rungs_fill_the_model_servers_slots_together(services: Services):
    """Eight books of six pages (batches of 1 and 5 pages) on one worker whose pool has 6
    pages: the model server has 6 pages in flight, never more, from batches of different
    books (no single batch has 6 pages)."""
    with OpenAIServer(capacity=64, latency=1.0) as server:
        books = books_started(8, pages=6)
        services.worker(
            "gpu",
            "process,retry",
            pool="threads",
            concurrency=8,
            TRANSLATION_ENGINE="vllm",
            VLLM_BASE_URL=server.url,
            VLLM_MODEL=server.model,
            ENGINE_CONCURRENCY=6,
        )
        wait_until(lambda: all_complete(books), what="the eight books to be Complete", services=services, timeout=120)

    assert server.max_in_flight == 6
    assert len(server.chat_requests()) == 8 * 6
    for project in books:
        assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5]
    assert_translated_once_and_charged_once(books)


def test_a_worker_killed_with_several_batches_running_loses_no_page_and_charges_each_once(services: Services, settings):
    worker_env = {
        "ENGINE_CONCURRENCY": 3,
        "TRANSLATION_ENGINE_OPTIONS": '{"delay_seconds": 0.3}',
        "JOB_HEARTBEAT_SECONDS": 1,
        "JOB_STALE_SECONDS": 3,
    }
    settings.JOB_STALE_SECONDS = 3  # the reaper run below, from this process
    books = books_started(3, pages=30)
    worker_a = services.worker("worker-a", pool="threads", concurrency=4, **worker_env)

    def several_batches_under_way() -> list[Job] | None:
        """The three 24-page batches claimed (their pages share the pool, the first queued
        first), one of them with pages committed."""
        running = list(Job.objects.filter(status=JobStatus.RUNNING, page_count=24))
        started = [job for job in running if job.pages.filter(status=PageStatus.APPROVED).exists()]
        return running if len(running) == 3 and started else None

    caught = wait_until(several_batches_under_way, what="the 24-page batches under way", services=services)
    assert isinstance(caught, list)
    worker_a.kill()
    running = list(Job.objects.filter(status=JobStatus.RUNNING))
    assert len(running) == 3
    committed_by_a = dict(
        Page.objects.filter(job__in=running, status=PageStatus.APPROVED).values_list("pk", "translated_at")
    )
    assert committed_by_a

    services.worker("worker-b", pool="threads", concurrency=4, **worker_env)
    requeued: list[int] = []

    def all_requeued() -> bool:  # the reaper takes each job once its own heartbeat is stale
        requeued.append(jobs.jobs_stale_requeue())
        return sum(requeued) == len(running)

    wait_until(all_requeued, what="the reaper to requeue the jobs", services=services)
    wait_until(lambda: all_complete(books), what="worker B to finish the books", services=services)

    for job in running:
        job.refresh_from_db()
        assert (job.status, job.claims) == (JobStatus.SUCCEEDED, 2)
    # What worker A committed stayed as it was: those pages were not translated again.
    assert dict(Page.objects.filter(pk__in=committed_by_a).values_list("pk", "translated_at")) == committed_by_a
    for project in books:
        assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 24]
    assert_translated_once_and_charged_once(books)
