"""What the fault-injection tests share: the invariants every book must keep after a fault
(one helper, used after every fault), a Redis server of the test's own that it may stop
and start, and the messages beat would send, to a broker of the test's choosing."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

from celery import Celery
from django.conf import settings
from django.db.models import Sum
from kombu import Exchange, Queue

from config.celery_app import WORK_QUEUES
from projects.models import Job, JobStatus, PageStatus, Project, ProjectStatus
from tests.e2e.processes import Service, Services, wait_until
from tests.wallet.helpers import assert_wallet_invariants
from wallet.models import CauseType, EntryKind, Hold, HoldState, LedgerEntry, Wallet

AT_REST = (
    ProjectStatus.COMPLETE,
    ProjectStatus.COMPLETED_WITH_ERRORS,
    ProjectStatus.PAUSED_NEEDS_CREDIT,
    ProjectStatus.PAUSED_NEEDS_CAPACITY,
)
IN_FLIGHT = (JobStatus.QUEUED, JobStatus.RUNNING)


def assert_book_invariants(project: Project, *, credited: Decimal, attempts: int | None = None) -> Project:
    """After a fault, the book is at rest and nothing was lost or doubled:

    - its status is Complete, CompletedWithErrors or PausedNeeds*, and says why;
    - every included page is Approved (translated, costed, committed `attempts` times when
      given) or Failed with its reason; Complete means every one is Approved; a page is
      in flight only in the queued job of a book paused for capacity;
    - every job has exactly one hold; a finished job's hold is settled or released
      (never open) and its charge is its Approved pages' measured cost, at most the hold,
      on one batch_charge entry; only a job still in flight keeps its hold open;
    - the wallet's own invariants hold (ledger sums are the balance, reserved is the open
      holds, nothing charged, held or released twice), and its balance is what was
      credited less what the jobs were charged."""
    project.refresh_from_db()
    assert project.status in AT_REST, f"the book ended {project.status}"
    pages = project.pages.filter(included=True)
    jobs = list(project.jobs.all())
    in_flight = [job for job in jobs if job.status in IN_FLIGHT]
    if project.status == ProjectStatus.PAUSED_NEEDS_CAPACITY:
        assert [job.status for job in in_flight] == [JobStatus.QUEUED], in_flight
        assert in_flight[0].progress_note.startswith("Waiting for the translation engine:"), in_flight[0].progress_note
    else:
        assert not in_flight, f"a {project.status} book has a job in flight: {in_flight}"
    if project.status == ProjectStatus.COMPLETE:
        assert not pages.exclude(status=PageStatus.APPROVED).exists()
    if project.status == ProjectStatus.COMPLETED_WITH_ERRORS:
        assert pages.filter(status=PageStatus.FAILED).exists()
        assert not pages.exclude(status__in=(PageStatus.APPROVED, PageStatus.FAILED)).exists()
    stray = pages.filter(status=PageStatus.IN_PROGRESS).exclude(job__in=in_flight)
    assert not stray.exists(), f"pages left in progress: {list(stray.values_list('index', flat=True))}"
    for page in pages.filter(status=PageStatus.APPROVED):
        assert page.translation.strip(), page
        assert page.translated_at is not None, page
        assert page.cost_usd > 0, page
        assert page.job_id is not None, page
        assert not page.failure_reason, page
        if attempts is not None:
            assert page.attempts == attempts, (page.index, page.attempts)
    for page in pages.filter(status=PageStatus.FAILED):
        assert page.failure_reason.strip(), f"page {page.index} failed without a reason"
        assert 1 <= page.attempts <= settings.PAGE_MAX_ATTEMPTS, (page.index, page.attempts)
    charged = _assert_each_hold_resolved_once(jobs)
    assert project.owner is not None
    wallet = assert_wallet_invariants(Wallet.objects.get(user=project.owner).pk)
    _assert_wallet_is_credit_less_charges(wallet, credited=credited, charged=charged, in_flight=in_flight)
    return project


def _assert_each_hold_resolved_once(jobs: Iterable[Job]) -> Decimal:
    """One hold per job, resolved exactly once when the job is done; returns what was charged."""
    total = Decimal(0)
    for job in jobs:
        holds = list(Hold.objects.filter(cause_type=CauseType.JOB, cause_id=str(job.pk)))
        assert len(holds) == 1, f"job {job.pk} has {len(holds)} holds"
        hold = holds[0]
        assert hold.amount == job.held_usd, job
        charges = list(LedgerEntry.objects.filter(kind=EntryKind.BATCH_CHARGE, cause_id=str(job.pk)))
        measured = job.pages.filter(status=PageStatus.APPROVED).aggregate(total=Sum("cost_usd"))["total"]
        if job.status in IN_FLIGHT:
            assert hold.state == HoldState.OPEN, job
            assert not charges, job
            continue
        assert hold.state in (HoldState.SETTLED, HoldState.RELEASED), f"job {job.pk} ({job.status}) left its hold open"
        expected = min(measured or Decimal(0), hold.amount)
        assert (job.charged_usd or Decimal(0)) == expected, (job.pk, job.charged_usd, expected)
        assert sum((-entry.amount for entry in charges), Decimal(0)) == expected, job
        assert len(charges) == (1 if expected else 0), job
        total += expected
    return total


def _assert_wallet_is_credit_less_charges(
    wallet: Wallet, *, credited: Decimal, charged: Decimal, in_flight: list[Job]
) -> None:
    assert wallet.balance == credited - charged, (wallet.balance, credited, charged)
    open_holds = Hold.objects.filter(wallet=wallet, state=HoldState.OPEN)
    assert set(open_holds.values_list("cause_id", flat=True)) == {str(job.pk) for job in in_flight}
    assert wallet.reserved == sum((job.held_usd for job in in_flight), Decimal(0))


# --- A Redis of the test's own ---------------------------------------------------------------


class OwnRedis:
    """A redis-server on `port`, without persistence (a restart loses every message), that
    the test stops and starts; never the shared one."""

    def __init__(self, services: Services, port: int, folder: Path) -> None:
        self.services, self.port, self.folder = services, port, folder
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: Service | None = None
        self.starts = 0

    def start(self) -> OwnRedis:
        import redis

        self.starts += 1
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.folder)]
        self.process = self.services._start(f"redis-{self.starts}", argv, {"PATH": "/usr/bin:/bin"})

        def answers() -> bool:
            client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False
            finally:
                client.close()

        wait_until(answers, what="the test's own Redis", services=self.services, timeout=30)
        return self

    def stop(self) -> None:
        assert self.process is not None
        self.process.kill()

    def env(self) -> dict[str, str]:
        """A worker's environment pointing its broker, cache and channel layer here."""
        names = ("REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL", "CHANNELS_REDIS_URL")
        return dict.fromkeys(names, self.url)


def beat_send(broker_url: str, task_name: str, *, queue: str = "default") -> None:
    """Sends what beat (or a wake-up) sends: a message naming the task, on `queue` of the
    broker at `broker_url`, with the queues the service declares."""
    sender = Celery("faults-beat", broker=broker_url, set_as_current=False)
    sender.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in WORK_QUEUES]
    try:
        sender.send_task(task_name, queue=queue)
    finally:
        sender.close()
