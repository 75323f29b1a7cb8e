"""The job queue: starting a batch (gate, hold, job, in one transaction), claiming the
next job, the reaper, and the ladder's next step.

Invariants:
- one Queued or Running job per project (a partial unique index; the project row is locked
  while a job is created, so concurrent calls return the same job);
- a job's hold is placed in the transaction that creates the job, under the cause
  (job, job id), and settled or released exactly once by the wallet;
- the Job table decides who runs a batch: a claim bumps `claims`, and a worker only
  commits pages and settles while its claim is the latest one; a Celery message only wakes
  a worker, and beat sends the wake-up again for jobs that waited too long (a lost message);
- a batch that ends early (a cancel, an outage during process-next-batch) is charged for
  its Approved pages (at most the hold) and the rest released, exactly once.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from decimal import Decimal
from functools import partial

from celery import signature
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Exists, F, Min, OuterRef, Q
from django.utils import timezone

from accounts.models import User
from core.errors import Conflict, ServiceError, ValidationFailed
from core.metrics import batch_undercharge_count
from core.money import exact_sum
from projects.errors import JobInFlight, PagesNotReady, ProjectNotCancellable, ProjectNotStartable
from projects.events import job_finished_publish, status_changed_publish
from projects.models import Job, JobKind, JobStatus, Page, PageStatus, Project, ProjectStatus, QueueTicket
from projects.selectors.billing import next_batch_pages, project_batch_quote, project_next_work_quote, retryable_pages
from projects.selectors.languages import project_pairs_check
from projects.selectors.projects import job_in_flight, project_get_for_owner
from wallet.errors import InsufficientCredit, SpendingCeilingReached
from wallet.models import CauseType, Hold
from wallet.selectors.pricing import BatchQuote, batch_charge_cap, batch_gate
from wallet.services.alerts import auto_top_up_for_paused_book
from wallet.services.ledger import hold_place, hold_release, hold_settle, wallet_lock

logger = logging.getLogger(__name__)

# States from which a book may be (re)started by the owner or by the ladder.
STARTABLE = (
    ProjectStatus.CALIBRATING,
    ProjectStatus.PROCESSING,
    ProjectStatus.PAUSED_NEEDS_CREDIT,
    ProjectStatus.PAUSED_NEEDS_CAPACITY,
    ProjectStatus.COMPLETED_WITH_ERRORS,
    ProjectStatus.COMPLETE,
    ProjectStatus.CANCELLED,
)
JOB_RUN_NEXT_TASK = "projects.tasks.job_run_next"
QUEUE_OF_KIND: dict[str, str] = {JobKind.PROCESS_NEXT_BATCH: "process", JobKind.RETRY_FAILED_PAGES: "retry"}


def working_status(project: Project) -> str:
    """Calibrating until the first batch is done, Processing afterwards."""
    return ProjectStatus.CALIBRATING if project.approval_count == 0 else ProjectStatus.PROCESSING


def project_status_set(project: Project, status: str) -> None:
    if project.status != status:
        project.status = status
        project.status_changed_at = timezone.now()
        project.save(update_fields=["status", "status_changed_at"])
        status_changed_publish(project_id=project.pk, owner_id=project.owner_id)


# What queueing a batch reads of its pages (a last rung can be thousands of pages: not
# their text, layout and translation).
BATCH_PAGE_FIELDS = ("id", "index", "prepared", "source_language_override")


def _engine_check(project: Project, pages: list[Page]) -> None:
    """Refuses (before any hold) a language pair the engine cannot translate."""
    project_pairs_check(
        project=project,
        target_language=project.target_language_code,
        source_override=project.source_language_override,
        pages=pages,
    )


def _job_enqueue(*, project: Project, kind: str, quote: BatchQuote, pages: list[Page], inline: bool = False) -> Job:
    """Creates the job with its hold and its pages (the caller holds the project lock).
    Inline (process-next-batch), the job is created already claimed by the caller and no
    worker is woken."""
    assert project.owner is not None
    if not inline:
        # Registered first, so that a worker is woken as soon as the transaction commits,
        # before the events it causes are composed and fanned out.
        queue = QUEUE_OF_KIND[kind]
        transaction.on_commit(lambda: job_dispatch(queue=queue))
    job_id = uuid.uuid4()
    hold = hold_place(user=project.owner, amount=quote.hold, cause_type=CauseType.JOB, cause_id=str(job_id))
    job = Job.objects.create(
        id=job_id,
        project=project,
        owner=project.owner,
        kind=kind,
        queue_position=QueueTicket.objects.create().pk,
        rung=project.approval_count,
        page_count=len(pages),
        held_usd=hold.amount,
        progress_note=f"Queued: {len(pages)} page{'s' if len(pages) != 1 else ''}.",
        **(
            {"status": JobStatus.RUNNING, "claims": 1, "started_at": timezone.now(), "heartbeat_at": timezone.now()}
            if inline
            else {}
        ),
    )
    Page.objects.filter(pk__in=[page.pk for page in pages]).update(
        status=PageStatus.IN_PROGRESS, job=job, updated_at=timezone.now()
    )
    project_status_set(project, working_status(project))
    return job


def job_dispatch(*, queue: str, countdown: float = 0) -> None:
    """Wakes one worker of the queue: it runs the lowest Queued job, whichever it is (the
    task is queued by its name: projects/tasks.py calls these services)."""
    signature(JOB_RUN_NEXT_TASK).apply_async(queue=queue, countdown=countdown)


def job_wake_if_ready(*, job_id: uuid.UUID) -> None:
    """Normalize prepared a page of a Queued batch: when it was the batch's last page still
    being prepared, a worker is woken (once the caller's transaction commits). A batch is
    only claimed once every page of it is prepared (job_claim)."""
    kind = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).values_list("kind", flat=True).first()
    if kind is None or Page.objects.filter(job_id=job_id, prepared=False).exists():
        return
    transaction.on_commit(partial(job_dispatch, queue=QUEUE_OF_KIND[kind]))


def job_stop_for_failed_source(*, project: Project, reason: str) -> None:
    """The book's file turned out unreadable while it was being prepared (the caller holds
    the project lock and fails the book): a Queued batch ends now, its hold released (and
    any page it already translated charged); a Running batch has every page prepared, so
    it finishes them and is charged for what it translated, and the book stays Failed."""
    job = job_in_flight(project=project)
    if job is not None and job.status == JobStatus.QUEUED:
        job_cancel_queued(job=job, reason=reason)


def process_start(
    *, owner: User, project_id: uuid.UUID | str, kind: str = JobKind.PROCESS_NEXT_BATCH, inline: bool = False
) -> Job:
    """POST process / retry: the job in flight if there is one; otherwise gate the next
    batch (402 when unaffordable), place its hold and queue it, all in one transaction.
    Inline (process-next-batch) the job comes back claimed by the caller, and a job already
    in flight is a 409 instead. A 402 changes nothing of the batch (no job, no hold, no
    entry) but pauses the book for credit afterwards (project_pause_for_credit), so credit
    that lands, or a raised ceiling, resumes it as it does a ladder pause."""
    try:
        return _process_start(owner=owner, project_id=project_id, kind=kind, inline=inline)
    except (InsufficientCredit, SpendingCeilingReached):
        project_pause_for_credit(owner=owner, project_id=project_id)
        raise


def _process_start(*, owner: User, project_id: uuid.UUID | str, kind: str, inline: bool) -> Job:
    with transaction.atomic():
        project = project_get_for_owner(owner=owner, project_id=project_id, for_update=True)
        existing = job_in_flight(project=project)
        if existing is not None:
            if inline:
                raise JobInFlight("A batch of this book is already queued or running.")
            return existing
        if project.status not in STARTABLE:
            raise ProjectNotStartable(f"A {project.status} book cannot be processed.")
        if kind == JobKind.RETRY_FAILED_PAGES:
            pages = list(retryable_pages(project=project).only(*BATCH_PAGE_FIELDS))
            if not pages:
                raise Conflict("No failed page has attempts left to retry.")
        else:
            pages = list(next_batch_pages(project=project).only(*BATCH_PAGE_FIELDS))
        if inline and any(not page.prepared for page in pages):
            raise PagesNotReady(
                "The pages of the next batch are still being prepared; use process, which starts the batch as "
                "soon as they are ready.",
            )
        _engine_check(project, pages)
        quote = batch_gate(project_batch_quote(project=project, page_count=len(pages)))
        return _job_enqueue(project=project, kind=kind, quote=quote, pages=pages, inline=inline)


def ladder_advance(*, project: Project) -> Job | None:
    """After a batch (or when credit lands): queue the next rung, or the retry of failed
    pages with attempts left (only those whose failure may not repeat), if the wallet
    covers it; pause for credit if not; or finish the book. The caller holds the project row
    lock. Returns the job queued, if any."""
    if job_in_flight(project=project) is not None:
        return None
    pages = list(next_batch_pages(project=project).only(*BATCH_PAGE_FIELDS))
    kind = JobKind.PROCESS_NEXT_BATCH
    if not pages:
        retry = retryable_pages(project=project, automatic=True).only(*BATCH_PAGE_FIELDS)
        pages, kind = list(retry), JobKind.RETRY_FAILED_PAGES
    if not pages:
        failed = project.pages.filter(included=True, status=PageStatus.FAILED).exists()
        project_status_set(project, ProjectStatus.COMPLETED_WITH_ERRORS if failed else ProjectStatus.COMPLETE)
        return None
    assert project.owner is not None
    wallet_lock(user=project.owner)  # credit landing now is seen here, or resumes the pause
    quote = project_batch_quote(project=project, page_count=len(pages))
    if not quote.can_start:
        _credit_pause(project, quote=quote)
        return None
    try:
        _engine_check(project, pages)
    except ServiceError as refused:
        project.failure_code, project.failure_reason = refused.code, refused.detail
        project.save(update_fields=["failure_code", "failure_reason"])
        project_status_set(project, ProjectStatus.FAILED)
        return None
    return _job_enqueue(project=project, kind=kind, quote=quote, pages=pages)


def _credit_pause(project: Project, *, quote: BatchQuote) -> None:
    """PausedNeedsCredit (the caller holds the project and wallet locks). Short of credit
    (not stopped by the spending ceiling), the owner's auto top-up starts on commit when it
    can, instead of waiting for the next debit."""
    project_status_set(project, ProjectStatus.PAUSED_NEEDS_CREDIT)
    owner_id, needed = project.owner_id, quote.spendable + quote.shortfall
    if quote.blocked_by == "credit" and owner_id is not None:
        transaction.on_commit(lambda: auto_top_up_for_paused_book(user_id=owner_id, needed=needed))


def project_pause_for_credit(*, owner: User, project_id: uuid.UUID | str) -> bool:
    """After a start refused with 402 (in its own transaction, once the refusal rolled
    back): the book pauses for credit exactly as the ladder pauses it, unless a batch is in
    flight, the book cannot be started, or its next work is affordable now (credit landed
    in between: the project, then the wallet, are locked first). Returns whether it paused."""
    with transaction.atomic():
        project = project_get_for_owner(owner=owner, project_id=project_id, for_update=True)
        if project.status not in STARTABLE or job_in_flight(project=project) is not None:
            return False
        wallet_lock(user=owner)
        quote = project_next_work_quote(project=project)
        if quote.blocked_by not in ("credit", "spending_ceiling"):
            return False
        _credit_pause(project, quote=quote)
        return True


def projects_resume_for_credit(*, user_id: uuid.UUID) -> list[Job]:
    """Credit landed, a hold freed credit, or the spending ceiling gave room: the owner's
    books paused for credit continue where they paused, in the order they paused, as far
    as the credit goes (a book whose next batch the wallet does not cover stays paused)."""
    queued = []
    paused = Project.objects.filter(owner_id=user_id, status=ProjectStatus.PAUSED_NEEDS_CREDIT)
    for project_id in paused.order_by("status_changed_at", "created_at").values_list("pk", flat=True):
        with transaction.atomic():
            project = Project.objects.select_for_update().get(pk=project_id)
            if project.status == ProjectStatus.PAUSED_NEEDS_CREDIT:
                job = ladder_advance(project=project)
                if job is not None:
                    queued.append(job)
    return queued


def _capacity_wait() -> Q:
    """Queued jobs of books paused for capacity whose CAPACITY_RETRY_SECONDS are not over:
    no worker takes them before then (other books' jobs go first meanwhile)."""
    retry_from = timezone.now() - timedelta(seconds=settings.CAPACITY_RETRY_SECONDS)
    return Q(project__status=ProjectStatus.PAUSED_NEEDS_CAPACITY, status_changed_at__gt=retry_from)


def job_claim(*, job_id: uuid.UUID | None = None) -> Job | None:
    """Claims a Queued job (the one given, or the lowest position) whose pages are all
    prepared (a batch of a book still being normalized waits for its pages, without
    holding a worker) for this worker: Running, a fresh heartbeat, claims + 1. FOR UPDATE
    SKIP LOCKED on PostgreSQL, so two workers never claim the same job; SQLite serializes
    writers (one worker). A job paused for capacity is claimable again CAPACITY_RETRY_SECONDS after it was paused."""
    with transaction.atomic():
        queued = (
            Job.objects.filter(status=JobStatus.QUEUED)
            .exclude(_capacity_wait())
            .exclude(Exists(Page.objects.filter(job=OuterRef("pk"), prepared=False)))
        )
        if job_id is not None:
            queued = queued.filter(pk=job_id)
        queued = queued.order_by("queue_position")
        if connection.features.has_select_for_update_skip_locked:
            queued = queued.select_for_update(skip_locked=True, of=("self",))
        else:
            queued = queued.select_for_update()
        job = queued.first()
        if job is None:
            return None
        now = timezone.now()
        job.status, job.claims = JobStatus.RUNNING, job.claims + 1
        job.started_at = job.started_at or now
        job.heartbeat_at = job.status_changed_at = now
        job.progress_note = "Running."
        job.save(update_fields=["status", "claims", "started_at", "heartbeat_at", "status_changed_at", "progress_note"])
        return job


def jobs_stale_requeue(
    *, stale_seconds: int | None = None, job_ids: list[uuid.UUID] | None = None, note: str | None = None
) -> int:
    """The reaper: a Running job whose heartbeat stopped (JOB_STALE_SECONDS, or
    `stale_seconds`) lost its worker; it goes back to Queued (same position, same hold, its
    committed pages kept) and a worker is woken. `job_ids` limits it to those jobs (an
    operator's requeue); a worker still on one stops at its next page, its claim superseded."""
    silence = settings.JOB_STALE_SECONDS if stale_seconds is None else stale_seconds
    stale_before = timezone.now() - timedelta(seconds=silence)
    requeued = 0
    stale = Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before)
    if job_ids is not None:
        stale = stale.filter(pk__in=job_ids)
    for job_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            job = Job.objects.select_for_update().get(pk=job_id)
            if job.status != JobStatus.RUNNING or job.heartbeat_at is None or job.heartbeat_at >= stale_before:
                continue
            job.status, job.status_changed_at = JobStatus.QUEUED, timezone.now()
            job.progress_note = note or "Requeued: its worker stopped answering."
            job.save(update_fields=["status", "status_changed_at", "progress_note"])
            transaction.on_commit(partial(job_dispatch, queue=QUEUE_OF_KIND[job.kind]))
            requeued += 1
            logger.warning("job %s requeued: no heartbeat since %s", job_id, job.heartbeat_at)
    return requeued


def job_hand_back(*, job_id: uuid.UUID, claim: int) -> bool:
    """A worker whose run stopped on a lost database connection gives its job back at once:
    Queued again (same position, same hold, its committed pages kept) and a worker woken,
    provided its claim is still the latest and the job still Running (a run whose last
    commit did land is left as it is). Returns whether the job was handed back."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id, claims=claim, status=JobStatus.RUNNING).first()
        if job is None:
            return False
        job.status, job.status_changed_at = JobStatus.QUEUED, timezone.now()
        job.progress_note = "Requeued: its worker lost the database connection."
        job.save(update_fields=["status", "status_changed_at", "progress_note"])
        transaction.on_commit(partial(job_dispatch, queue=QUEUE_OF_KIND[job.kind]))
    logger.warning("job %s handed back by its worker after a lost database connection", job_id)
    return True


def jobs_queued_redispatch(*, waited_seconds: int | None = None) -> int:
    """Beat: sends again the wake-up of every Queued job that has waited longer than
    JOB_REDISPATCH_SECONDS (or `waited_seconds`) — for a book paused for capacity, that long
    after its CAPACITY_RETRY_SECONDS are over — at most once per that period per job. A
    message lost with Redis never leaves a book stuck; a spare one is harmless, since the
    claim decides who runs and a message that finds nothing does nothing. Returns how many
    wake-ups were sent."""
    wait = settings.JOB_REDISPATCH_SECONDS if waited_seconds is None else waited_seconds
    now = timezone.now()
    paused = Q(project__status=ProjectStatus.PAUSED_NEEDS_CAPACITY)
    overdue = Job.objects.filter(
        (~paused & Q(status_changed_at__lt=now - timedelta(seconds=wait)))
        | (paused & Q(status_changed_at__lt=now - timedelta(seconds=wait + settings.CAPACITY_RETRY_SECONDS))),
        status=JobStatus.QUEUED,
    ).order_by("queue_position")
    sent = 0
    for job_id, kind in overdue.values_list("pk", "kind"):
        if not cache.add(f"projects:job-redispatched:{job_id}", True, timeout=max(wait, 1)):
            continue
        job_dispatch(queue=QUEUE_OF_KIND[kind])
        sent += 1
    if sent:
        logger.warning("sent the wake-up again for %d queued job(s) that waited over %ss", sent, wait)
    return sent


def job_hold_resolve(*, job: Job, memo: str = "") -> Decimal:
    """Ends the hold of a batch that stops early: the job's Approved pages are charged
    (their measured cost, at most the hold) and the rest released; a batch with no
    finished page is only released; the charge is capped like a finished batch's
    (batch_charge_cap). Exactly once (the wallet resolves a hold once); `memo`
    goes on the ledger entries. Returns the amount charged."""
    hold = Hold.objects.filter(cause_type=CauseType.JOB, cause_id=str(job.pk)).first()
    if hold is None:
        return Decimal(0)
    approved = job.pages.filter(status=PageStatus.APPROVED)
    if approved.exists():
        return batch_charge_settle(
            job=job, hold=hold, measured=exact_sum(approved, "cost_usd"), translated_pages=approved.count(), memo=memo
        )
    hold_release(hold=hold, memo=memo)
    return Decimal(0)


def batch_charge_settle(*, job: Job, hold: Hold, measured: Decimal, translated_pages: int, memo: str = "") -> Decimal:
    """Charges a batch for its translated pages: their measured cost, at most its hold pro
    rata (batch_charge_cap), so the customer never pays more than was held. Where the
    pages measured more than that (an engine costlier than the price table, or pages much
    costlier than the ones the hold was quoted from), the difference is not charged, and
    operators are told: a warning in the log, the metrics bts_batches_undercharged and
    bts_batch_undercharged_usd, and the job's measured_usd above its charged_usd (the
    admin's "Charged below measured" filter). The next batch is quoted from the measured
    cost (wallet.selectors.pricing.batch_quote). Sets job.measured_usd (the caller saves the job);
    returns the charge."""
    charge = batch_charge_cap(
        measured=measured, hold=hold.amount, batch_pages=job.page_count, translated_pages=translated_pages
    )
    hold_settle(hold=hold, amount=charge, memo=memo)
    job.measured_usd = measured
    charged = hold.settled_amount or Decimal(0)
    if measured > charged:
        logger.warning(
            "batch %s of project %s measured %s USD but was charged %s USD (capped at its hold of %s USD): "
            "the engine costs more than the price table allows for",
            job.pk,
            job.project_id,
            measured,
            charged,
            hold.amount,
        )
        batch_undercharge_count(engine=settings.TRANSLATION_ENGINE, usd=float(measured - charged))
    return charged


def job_cancel_queued(*, job: Job, reason: str) -> None:
    """Ends a Queued job: its pages not yet done back to Pending, its hold settled for the
    pages it already translated (a job requeued by the reaper, or paused for capacity,
    keeps them) and released for the rest, exactly once; the ledger entries carry `reason`.
    The caller holds the project lock. A job no longer Queued is left alone."""
    locked = Job.objects.select_for_update().get(pk=job.pk)
    if locked.status != JobStatus.QUEUED:
        return
    Page.objects.filter(job=locked, status=PageStatus.IN_PROGRESS).update(status=PageStatus.PENDING)
    locked.charged_usd = job_hold_resolve(job=locked, memo=reason)
    done = locked.pages.filter(status=PageStatus.APPROVED).count()
    locked.status, locked.error_text = JobStatus.FAILED, reason
    locked.progress_note = f"{reason} {done} of {locked.page_count} pages were done." if done else reason
    locked.finished_at = locked.status_changed_at = timezone.now()
    locked.save(
        update_fields=["status", "error_text", "progress_note", "charged_usd", "finished_at", "status_changed_at"]
    )
    job_finished_publish(job_id=locked.pk, project_id=locked.project_id, owner_id=locked.owner_id, ok=False)


def queue_move(*, job_id: uuid.UUID | str, before_job_id: uuid.UUID | str | None = None) -> Job:
    """Staff: moves a Queued job to the front (or just before another Queued job)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status != JobStatus.QUEUED:
            raise Conflict("Only a queued job can be moved.")
        if before_job_id is None:
            front = Job.objects.filter(status=JobStatus.QUEUED).aggregate(low=Min("queue_position"))["low"]
            job.queue_position = (front if front is not None else 0) - 1
        else:
            anchor = Job.objects.filter(pk=before_job_id, status=JobStatus.QUEUED).first()
            if anchor is None:
                raise ValidationFailed({"beforeJobId": ["Not a queued job."]})
            # Make room: everything from the anchor back moves one place.
            Job.objects.filter(Q(status=JobStatus.QUEUED) & Q(queue_position__lt=anchor.queue_position)).exclude(
                pk=job.pk
            ).update(queue_position=F("queue_position") - 1)
            job.queue_position = anchor.queue_position - 1
        job.save(update_fields=["queue_position"])
        return job


def project_cancel(*, owner: User, project_id: uuid.UUID | str, operator: User | None = None) -> Project:
    """POST cancel (and the admin's cancels, with `operator`): a queued batch ends at once —
    the pages it already translated charged (at most its hold), the rest released — and the
    book is Cancelled; a running batch makes it Cancelling until the worker stops at the
    next page boundary (finished pages charged, the rest released), then Cancelled. The
    job's error text and the ledger entries say who cancelled."""
    with transaction.atomic():
        project = project_get_for_owner(owner=owner, project_id=project_id, for_update=True)
        return _project_cancel_locked(project=project, operator=operator)


def job_cancel_by_operator(*, job_id: uuid.UUID | str, operator: User) -> Project:
    """The admin's cancel of a job: its book is cancelled as by project_cancel (the same
    settlement), the ledger entries naming the operator. 409 when the job is no longer in
    flight. Returns the book."""
    with transaction.atomic():
        project_id = Job.objects.values_list("project_id", flat=True).get(pk=job_id)
        project = Project.objects.select_for_update().get(pk=project_id)
        job = job_in_flight(project=project)
        if job is None or str(job.pk) != str(job_id):
            raise Conflict("The job is no longer queued or running.")
        return _project_cancel_locked(project=project, operator=operator)


def cancel_reason(*, operator: User | None) -> str:
    """What a cancelled job and its ledger entries say about who cancelled."""
    return f"Cancelled by operator {operator.email}." if operator is not None else "Cancelled by the owner."


def _project_cancel_locked(*, project: Project, operator: User | None) -> Project:
    if project.status in (ProjectStatus.CANCELLED, ProjectStatus.CANCELLING):
        return project
    if project.status in (ProjectStatus.COMPLETE, ProjectStatus.FAILED, ProjectStatus.CREATED):
        raise ProjectNotCancellable(f"A {project.status} book has nothing to cancel.")
    reason = cancel_reason(operator=operator)
    job = job_in_flight(project=project)
    if job is not None and job.status == JobStatus.RUNNING:
        # The worker settles at its next page boundary and reads who cancelled from here.
        Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(error_text=reason)
        project_status_set(project, ProjectStatus.CANCELLING)
        return project
    if job is not None:
        job_cancel_queued(job=job, reason=reason)
    project_status_set(project, ProjectStatus.CANCELLED)
    return project
