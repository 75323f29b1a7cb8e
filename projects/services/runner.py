"""Running one claimed batch: pages to the engine concurrently, each committed as it
finishes, then settlement and the ladder's next step.

- Pages go to the engine through the process's page pool (translation.engines.pool):
  ENGINE_CONCURRENCY pages at once drawn from every batch the process runs, the job with
  the lowest queue position first, so a model server's continuous batching stays full
  whether it serves one big batch or many small ones. A batch hands the pool a window of
  its pages at a time. Each result is committed on its own (Approved with its review
  package and measured cost, or Failed with the reason, one attempt used, and whether the
  ladder may retry it by itself), so a worker that dies mid-batch loses no finished page.
- The worker commits only while its claim is the job's latest (`Job.claims`): a worker
  the reaper gave up on cannot commit pages or settle after another took over.
- Cancelling stops at the next page boundary: pages not started go back to Pending; the
  finished ones are charged, the rest of the hold released.
- An engine that is down, warming up or saturated (EngineUnavailable, EngineSaturated:
  429s or 503s after its own retries) stops the batch at the page boundary and pauses the
  book (PausedNeedsCapacity) with the job Queued again, its committed pages and its hold
  kept and no attempt used; it is claimable again after CAPACITY_RETRY_SECONDS, and the
  book shows Calibrating or Processing again once a worker has it. Run inline
  (process-next-batch), the batch ends instead: its finished pages charged, the rest
  released, the caller answered 503 engine_unavailable.
- Settlement: charge = min(sum of the measured costs of the batch's Approved pages, the
  hold pro rata of the pages Approved), exactly once (the wallet's hold resolves once): a
  page is never charged more than the rate its hold was placed at, which is what makes a
  book's never-exceed cost (`wallet.selectors.pricing.book_cost`) a bound.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connection, transaction
from django.db.models import Count, F
from django.utils import timezone

from accounts.models import User
from core.metrics import engine_translate_observed, page_outcome_count
from core.money import exact_sum
from projects.events import job_finished_publish
from projects.models import Job, JobKind, JobStatus, Page, PageStatus, Project, ProjectStatus
from projects.selectors.billing import next_batch_pages, retryable_pages
from projects.services.jobs import (
    QUEUE_OF_KIND,
    batch_charge_settle,
    cancel_reason,
    job_dispatch,
    job_hand_back,
    ladder_advance,
    process_start,
    project_status_set,
    working_status,
)
from translation.engines import (
    Engine,
    EngineError,
    EngineUnavailable,
    PageInput,
    PageLanguageUnsupported,
    PageResult,
    completeness_problem,
    engine_get,
    model_status_forget,
)
from translation.engines.markup import prose_of
from translation.engines.pool import page_pool
from translation.errors import BatchEngineUnavailable
from translation.languages import language_detect
from wallet.models import CauseType, Hold

logger = logging.getLogger(__name__)

CONTEXT_CHARS = 600
BOOK_LANGUAGE_PAGES = 40
BOOK_LANGUAGE_CHARS = 20_000
BOOK_LANGUAGES_KEPT = 4_096
# A batch hands the pool at most this many pages at a time (and twice the pool's size when
# that is more: one batch alone still fills it); the rest wait unread in the database.
BATCH_WINDOW_MIN = 16
# What a page's engine input and its commit read of it.
PAGE_INPUT_FIELDS = (
    "id",
    "index",
    "structured",
    "source_markdown",
    "text_layer",
    "image_key",
    "source_language_override",
)
_book_languages: dict[tuple[uuid.UUID, int, int], str | None] = {}
# A failed page's failureCode, beside the engines' own (EngineError.code).
FAILURE_ENGINE = "engine_error"
FAILURE_INCOMPLETE = "translation_incomplete"  # the completeness check refused the translation
FAILURE_CRASH = "internal_error"


@dataclass
class BatchOutcome:
    """What one run of a batch did (the Batch run result is built from it)."""

    job: Job
    # Its pages, read only for a batch run inline (a worker's batch settles from counts).
    processed: list[Page] = field(default_factory=list)
    failed: list[Page] = field(default_factory=list)
    measured_usd: Decimal = Decimal(0)
    cancelled: bool = False
    unavailable: str = ""
    superseded: bool = False
    reason: str = ""  # why a batch ended early (goes on the job and the ledger entries)


@dataclass(frozen=True)
class BatchRunResult:
    """A batch run at once, in the request (POST process-next-batch)."""

    job: Job
    processed: list[Page]
    failed: list[Page]
    measured_usd: Decimal
    project_status: str


def batch_run_now(*, owner: User, project_id: uuid.UUID | str) -> BatchRunResult:
    """Starts the book's next batch and runs it in this process, to the end (manual and
    admin use; the next rung is not queued). An engine outage that stopped it raises
    BatchEngineUnavailable once the batch has ended: the pages it finished are kept and
    charged, the rest of the hold released."""
    job = process_start(owner=owner, project_id=project_id, inline=True)
    outcome = batch_execute(job=job, advance=False)
    if outcome.unavailable and not outcome.cancelled:
        error = BatchEngineUnavailable(
            f"The translation engine is not available ({outcome.unavailable}); "
            f"{len(outcome.processed)} of {outcome.job.page_count} pages were translated before it stopped."
        )
        error.retry_after_seconds = max(1, int(settings.CAPACITY_RETRY_SECONDS + 0.999))
        raise error
    return BatchRunResult(
        job=outcome.job,
        processed=outcome.processed,
        failed=outcome.failed,
        measured_usd=outcome.measured_usd,
        project_status=Project.objects.values_list("status", flat=True).get(pk=outcome.job.project_id),
    )


class _Heartbeat:
    """Writes the job's heartbeat every JOB_HEARTBEAT_SECONDS from a side thread while a
    page is slow, so the reaper only takes jobs whose worker is really gone."""

    def __init__(self, job: Job, claim: int) -> None:
        self.job_id, self.claim = job.pk, claim
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{job.pk}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self.stop.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    Job.objects.filter(pk=self.job_id, claims=self.claim, status=JobStatus.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except DatabaseError:  # a dropped connection: the next beat takes a new one
                    logger.warning("job %s: a heartbeat could not be written", self.job_id, exc_info=True)
                connection_release()
        finally:
            connection_release()

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def connection_release() -> None:
    """Gives this thread's database connection back (to PostgreSQL's pool) between beats:
    a worker runs many batches at once, and their heartbeats share a few connections
    instead of holding one each (the batch keeps its own: a connection dropped under it is
    what hands the job back at once). Not inside a transaction, which keeps its connection."""
    if not connection.in_atomic_block:
        try:
            connection.close()
        except DatabaseError:  # a connection already broken is gone either way
            logger.warning("a database connection could not be closed cleanly", exc_info=True)


def _still_mine(job: Job, claim: int) -> bool:
    return Job.objects.filter(pk=job.pk, claims=claim, status=JobStatus.RUNNING).exists()


def _image_loader(key: str) -> Callable[[], bytes]:
    def load() -> bytes:
        with default_storage.open(key, "rb") as handle:
            content: bytes = handle.read()
        return content

    return load


def page_source(page: Page) -> str:
    """What is translated of a page: its body as Markdown when it was read with its layout
    (furniture left out, a paragraph carried over the page break whole, headings, code),
    else its text layer ("" for a page read from its image)."""
    return page.source_markdown if page.structured else page.text_layer


def book_language(project: Project) -> str | None:
    """The language of the book's text (its source language when set), told from the prose
    of its first BOOK_LANGUAGE_PAGES pages read so far (prepared or not: a title page is
    translated while the pages after it are still being prepared): what a page too short,
    or too full of code, to tell its own language is read in."""
    if project.source_language_override:
        return project.source_language_override
    sample = project.pages.exclude(text_layer="").order_by("index")[:BOOK_LANGUAGE_PAGES]
    texts = list(sample.values_list("structured", "source_markdown", "text_layer"))
    # Told once per sample: a book's batches (and the many books a worker runs at once) do
    # not detect the same text again; a sample that grew (pages read since) is told afresh.
    key = (project.pk, len(texts), sum(len(markdown) + len(text) for _, markdown, text in texts))
    if key in _book_languages:
        return _book_languages[key]
    prose = " ".join(prose_of(markdown) if structured else text for structured, markdown, text in texts)
    language = language_detect(prose[:BOOK_LANGUAGE_CHARS])
    if len(_book_languages) >= BOOK_LANGUAGES_KEPT:
        _book_languages.clear()
    _book_languages[key] = language
    return language


def page_input_build(project: Project, page: Page, previous: str, language: str | None = None) -> PageInput:
    """What the engine is given for one page: its text (or image), languages, glossary and
    the end of the page before it (`previous`)."""
    return PageInput(
        page_id=str(page.pk),
        index=page.index,
        text=page_source(page),
        image=None if page.structured or page.text_layer.strip() else _image_loader(page.image_key),
        source_language=page.source_language_override or project.source_language_override,
        target_language=project.target_language_code,
        previous_context=previous[-CONTEXT_CHARS:],
        glossary=dict(project.glossary or {}),
        structured=page.structured,
        book_language=language,
    )


def _batch_inputs(
    project: Project, page_ids: list[uuid.UUID], language: str | None, *, chunk: int
) -> Iterator[tuple[Page, PageInput]]:
    """The batch's pages with what the engine is given for each, in book order, read
    `chunk` rows at a time (only the fields a page's input and its commit need): a last rung
    of thousands of pages is not held in memory whole."""
    for start in range(0, len(page_ids), chunk):
        rows = Page.objects.filter(pk__in=page_ids[start : start + chunk]).only(*PAGE_INPUT_FIELDS).order_by("index")
        pages = list(rows)
        previous = _previous_pages_context(project, pages)
        for page in pages:
            yield page, page_input_build(project, page, previous[page.index], language)


def _previous_pages_context(project: Project, pages: list[Page]) -> dict[int, str]:
    """For each page, the end of the page before it (one query for the batch): its
    translation when it has one; else its source text, since in a batch running
    concurrently the previous page is usually translated at the same time."""
    before = project.pages.filter(index__in=[page.index - 1 for page in pages]).only(
        "index", "status", "translation", "text_layer", "source_markdown", "structured"
    )
    context = {
        page.index + 1: page.translation
        if page.status == PageStatus.APPROVED and page.translation
        else page_source(page)
        for page in before
    }
    return {page.index: context.get(page.index, "") for page in pages}


def page_outcome_commit(
    *,
    job: Job,
    claim: int,
    page: Page,
    result: PageResult | None,
    error: str,
    done: int | None = None,
    retryable: bool = True,
    failure_code: str = "",
    detected_language: str = "",
) -> bool:
    """Commits one page's outcome under the worker's `claim` on the job, unless the page
    or the job is no longer this worker's (then nothing is written and it returns False).
    Two statements: the job's row (the claim check, the heartbeat and the progress note,
    which also locks it against the reaper until the commit), then the page's row, only
    if it is still in flight for this job."""
    now = timezone.now()
    note = {"progress_note": f"{done} of {job.page_count} pages done."} if done is not None else {}
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, claims=claim, status=JobStatus.RUNNING).update(heartbeat_at=now, **note):
            return False
        changes: dict[str, object] = {"attempts": F("attempts") + 1, "updated_at": now}
        if result is not None:
            changes.update(
                source_text=result.source_text,
                translation=result.translation,
                detected_source_language=result.detected_source_language or "",
                engine=result.engine,
                model_name=result.model,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
            )
            # A page the engine read (OCR) gets the reading's layout and flags; a structured page
            # keeps its own (read at intake).
            if not page.structured:
                changes["review_flags"] = list(result.warnings)
            if result.layout and not page.structured:
                changes["layout"] = dict(result.layout)
        if result is not None and not error:
            changes.update(
                status=PageStatus.APPROVED,
                cost_usd=result.cost_usd,
                translated_at=now,
                failure_reason="",
                failure_code="",
                failure_retryable=True,
            )
        else:
            changes.update(
                status=PageStatus.FAILED,
                failure_reason=error[:2000],
                failure_code=failure_code or FAILURE_ENGINE,
                failure_retryable=retryable,
            )
            if detected_language:
                changes["detected_source_language"] = detected_language
        return bool(Page.objects.filter(pk=page.pk, job=job, status=PageStatus.IN_PROGRESS).update(**changes))


def page_translate(engine: Engine, page_input: PageInput) -> tuple[PageResult | None, str]:
    """The engine's result and "" when it passes the completeness check; else the reason."""
    result = engine_translate_observed(engine, page_input)
    problem = completeness_problem(page_input, result)
    page_outcome_count(engine=engine.name, problem=problem)
    return result, problem or ""


def _cancelling(project_id: uuid.UUID) -> bool:
    return Project.objects.filter(pk=project_id, status=ProjectStatus.CANCELLING).exists()


@dataclass(frozen=True)
class _Collected:
    """One page's outcome at the engine: a result, an error (and whether it may go away on
    another attempt), or an outage, which is not the page's fault."""

    result: PageResult | None = None
    error: str = ""
    retryable: bool = True
    outage: str = ""
    failure_code: str = ""
    detected_language: str = ""


def _collected(future: Future[tuple[PageResult | None, str]]) -> _Collected:
    try:
        result, error = future.result()
        return _Collected(result=result, error=error, failure_code=FAILURE_INCOMPLETE if error else "")
    except EngineUnavailable as down:
        return _Collected(outage=str(down) or "The translation engine is not available.")
    except PageLanguageUnsupported as foreign:
        return _Collected(
            error=str(foreign), retryable=False, failure_code=foreign.code, detected_language=foreign.source_language
        )
    except EngineError as failed:
        return _Collected(
            error=str(failed) or "The engine failed on this page.", retryable=failed.retryable, failure_code=failed.code
        )
    except Exception as crash:
        logger.exception("a page crashed the engine")
        reason = f"Internal error while translating: {type(crash).__name__}."
        return _Collected(error=reason, failure_code=FAILURE_CRASH)


def batch_run(*, job: Job) -> BatchOutcome:
    """A worker's run of the job it claimed (batch_execute). When the database connection
    drops under it (OperationalError, InterfaceError: PostgreSQL restarted, a failover, a
    terminated session), the job is handed back at once (job_hand_back: Queued again,
    committed pages kept, another wake-up sent) on a fresh connection, instead of waiting
    JOB_STALE_SECONDS for the reaper; the error is raised again for the task's log."""
    claim = job.claims
    try:
        return batch_execute(job=job)
    except (OperationalError, InterfaceError):
        close_old_connections()
        try:
            job_hand_back(job_id=job.pk, claim=claim)
        except DatabaseError:  # the database is still away: the reaper requeues the job later
            logger.warning("job %s could not be handed back; the reaper will requeue it", job.pk, exc_info=True)
        raise


def batch_execute(*, job: Job, advance: bool = True) -> BatchOutcome:
    """Runs a job this worker has just claimed, to the end (or to a cancel, or to an
    engine outage), then settles it and, when `advance`, queues the next rung."""
    claim = job.claims
    project = _project_working(job, claim)
    engine = engine_get()
    outcome = BatchOutcome(job=job)
    page_ids = list(job.pages.filter(status=PageStatus.IN_PROGRESS).order_by("index").values_list("pk", flat=True))
    language = book_language(project)
    window = max(BATCH_WINDOW_MIN, 2 * settings.ENGINE_CONCURRENCY)
    waiting = _batch_inputs(project, page_ids, language, chunk=window)
    done = job.page_count - len(page_ids)

    def handle(page: Page, future: Future[tuple[PageResult | None, str]]) -> None:
        nonlocal done
        collected = _collected(future)
        if collected.outage:
            outcome.unavailable = collected.outage
            return
        if page_outcome_commit(
            job=job,
            claim=claim,
            page=page,
            result=collected.result,
            error=collected.error,
            done=done + 1,
            retryable=collected.retryable,
            failure_code=collected.failure_code,
            detected_language=collected.detected_language,
        ):
            done += 1
        elif not _still_mine(job, claim):
            outcome.superseded = True

    pool = page_pool()
    running: dict[Future[tuple[PageResult | None, str]], Page] = {}

    def top_up() -> None:  # the batch's next pages into the pool, `window` of them at most
        for page, page_input in itertools.islice(waiting, window - len(running)):
            running[pool.submit(job.queue_position, page_translate, engine, page_input)] = page

    with _Heartbeat(job, claim):
        top_up()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                handle(running.pop(future), future)
            if outcome.superseded or outcome.unavailable or _cancelling(project.pk):
                outcome.cancelled = not (outcome.superseded or outcome.unavailable)
                for future in running:
                    future.cancel()
                for future, page in running.items():  # pages already at the engine finish and count
                    if not future.cancelled():
                        handle(page, future)
                running.clear()
            else:
                top_up()
    if not (outcome.superseded or outcome.unavailable or outcome.cancelled) and _cancelling(project.pk):
        outcome.cancelled = True
    if outcome.superseded:
        logger.warning("job %s: another worker took it over; this run stops", job.pk)
        return outcome
    return batch_finish(outcome=outcome, claim=claim, advance=advance)


def _project_working(job: Job, claim: int) -> Project:
    """A book paused for capacity is Calibrating or Processing again while its batch runs."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=job.project_id)
        if project.status == ProjectStatus.PAUSED_NEEDS_CAPACITY and _still_mine(job, claim):
            project_status_set(project, working_status(project))
        return project


def batch_finish(*, outcome: BatchOutcome, claim: int, advance: bool) -> BatchOutcome:
    """Settles the batch exactly once and moves the book on."""
    job = outcome.job
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=job.project_id)
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.status != JobStatus.RUNNING or locked.claims != claim:
            outcome.superseded = True
            return outcome
        now = timezone.now()
        if project.status == ProjectStatus.CANCELLING:  # a cancel wins over an outage
            outcome.cancelled = True
        if outcome.unavailable:
            model_status_forget()  # the overlay shows the engine's new state at once
        if outcome.unavailable and advance and not outcome.cancelled:
            locked.status, locked.status_changed_at = JobStatus.QUEUED, now
            locked.progress_note = f"Waiting for the translation engine: {outcome.unavailable}"[:500]
            locked.save(update_fields=["status", "status_changed_at", "progress_note"])
            project_status_set(project, ProjectStatus.PAUSED_NEEDS_CAPACITY)
            queue = QUEUE_OF_KIND[locked.kind]
            transaction.on_commit(lambda: job_dispatch(queue=queue, countdown=settings.CAPACITY_RETRY_SECONDS))
            outcome.job = locked
            return outcome
        stopped = outcome.cancelled or bool(outcome.unavailable)
        if outcome.cancelled:
            outcome.reason = locked.error_text or cancel_reason(operator=None)
        elif outcome.unavailable:
            outcome.reason = f"Stopped: the translation engine is unavailable ({outcome.unavailable})"[:500]
        if stopped:
            Page.objects.filter(job=locked, status=PageStatus.IN_PROGRESS).update(status=PageStatus.PENDING)
        counts = dict(locked.pages.order_by().values_list("status").annotate(pages=Count("pk")))
        approved, failed = counts.get(PageStatus.APPROVED, 0), counts.get(PageStatus.FAILED, 0)
        if not advance:  # run inline, the batch answers with its pages (BatchRunResult)
            batch_pages = list(locked.pages.order_by("index"))
            outcome.processed = [page for page in batch_pages if page.status == PageStatus.APPROVED]
            outcome.failed = [page for page in batch_pages if page.status == PageStatus.FAILED]
        outcome.measured_usd = exact_sum(locked.pages.filter(status=PageStatus.APPROVED), "cost_usd")
        hold = Hold.objects.get(cause_type=CauseType.JOB, cause_id=str(locked.pk))
        locked.charged_usd = batch_charge_settle(
            job=locked,
            hold=hold,
            measured=outcome.measured_usd,
            translated_pages=approved,
            memo=outcome.reason,
        )
        locked.finished_at = locked.status_changed_at = now
        if stopped:
            locked.status, locked.error_text = JobStatus.FAILED, outcome.reason
            verb = "Cancelled" if outcome.cancelled else "Stopped by an engine outage"
            locked.progress_note = f"{verb} after {approved} of {locked.page_count} pages."
        else:
            locked.status = JobStatus.SUCCEEDED
            locked.progress_note = f"{approved} of {locked.page_count} pages translated" + (
                f", {failed} failed." if failed else "."
            )
        locked.save()
        outcome.job = locked
        job_finished_publish(job_id=locked.pk, project_id=locked.project_id, owner_id=locked.owner_id, ok=not stopped)
        if project.status == ProjectStatus.FAILED:  # its file turned out unreadable while the batch ran
            return outcome
        if outcome.cancelled:
            project_status_set(project, ProjectStatus.CANCELLED)
            return outcome
        if stopped:
            project_status_set(project, working_status(project))
            return outcome
        if locked.kind == JobKind.PROCESS_NEXT_BATCH:
            project.approval_count += 1
            project.save(update_fields=["approval_count"])
        project_status_set(project, working_status(project))
        if advance:
            ladder_advance(project=project)
        else:
            _status_after_manual_batch(project)
    return outcome


def _status_after_manual_batch(project: Project) -> None:
    """process-next-batch does not queue the next rung; the book's status still says where
    it stands (Complete or CompletedWithErrors when nothing is left)."""
    if next_batch_pages(project=project).exists() or retryable_pages(project=project, automatic=True).exists():
        return
    failed = project.pages.filter(included=True, status=PageStatus.FAILED).exists()
    project_status_set(project, ProjectStatus.COMPLETED_WITH_ERRORS if failed else ProjectStatus.COMPLETE)
