"""What the next batch of a book is and what it costs: the ladder meets the price table.

The ladder is BATCH_LADDER (1, 5, 25, 100) read at the book's approval count, then every
remaining included page. The first batch of a book is its calibration; afterwards the
pages already measured give the book's cost per page. Before that, a book's cost per page
is predicted from its words per page (the upload's word estimate) at the engine's rates,
so that the whole book's cost (`BookCost`) can be shown before anyone signs up.
"""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

from django.conf import settings
from django.db.models import Q, QuerySet

from core.money import exact_sum, round_estimate_up
from projects.models import NormalizeState, Page, PageStatus, Project, Upload
from projects.selectors.projects import ROW_COST, ROW_INCLUDED, PageRow
from translation.engines import cost_usd
from translation.engines.base import TOKENS_PER_WORD
from wallet.selectors.pricing import BatchQuote, BookCost, batch_gate, batch_quote, book_cost


def ladder_rung_size(*, approval_count: int) -> int | None:
    """Pages the batch at this rung takes; None for the final rung (every remaining page)."""
    ladder = settings.BATCH_LADDER
    return ladder[approval_count] if approval_count < len(ladder) else None


def next_batch_pages(*, project: Project) -> QuerySet[Page]:
    """The included pages still waiting, in book order, as many as the rung takes."""
    pending = project.pages.filter(included=True, status=PageStatus.PENDING).order_by("index")
    size = ladder_rung_size(approval_count=project.approval_count)
    return pending if size is None else pending[:size]


def retryable_pages(*, project: Project, automatic: bool = False) -> QuerySet[Page]:
    """Included Failed pages with attempts left, in book order. `automatic` (the ladder's
    own retry) leaves out the pages whose failure would repeat (the engine said so: a 4xx
    from the server, the reply cut at max tokens, a language it cannot translate); the owner
    may still retry those by hand."""
    pages = project.pages.filter(included=True, status=PageStatus.FAILED, attempts__lt=settings.PAGE_MAX_ATTEMPTS)
    if automatic:
        pages = pages.filter(failure_retryable=True)
    return pages.order_by("index")


def project_batch_quote(*, project: Project, page_count: int | None = None) -> BatchQuote:
    """The Batch quote of the project's next batch (or of `page_count` pages, for a retry),
    for its owner's wallet as it is now."""
    if project.owner is None:
        raise ValueError("a project without an owner has no wallet to quote against")
    measured = project.pages.filter(cost_usd__isnull=False)
    quote = batch_quote(
        owner=project.owner,
        page_count=next_batch_pages(project=project).count() if page_count is None else page_count,
        measured_pages=measured.count(),
        measured_cost=exact_sum(measured, "cost_usd"),
        target_language=project.target_language_code,
    )
    if quote.blocked_by == "nothing_pending" and project.normalize_state != NormalizeState.DONE:
        quote = replace(quote, explanation=_NOT_SPLIT_YET[project.normalize_state])
    return replace(quote, book_cost=project_book_cost(project=project))


# Why a book that normalize has not split into pages has nothing to quote yet.
_NOT_SPLIT_YET: dict[str, str] = {
    NormalizeState.NOT_STARTED: "The book is not split into pages yet: normalize it first "
    "(POST /v1/projects/{id}/normalize); its next batch can be quoted once it has pages.",
    NormalizeState.QUEUED: "The book is waiting to be split into pages; its next batch can be quoted once it has "
    "pages.",
    NormalizeState.RUNNING: "The book is being split into pages; its next batch can be quoted once it has pages.",
    NormalizeState.FAILED: "The book could not be split into pages (its status says why): there is nothing to "
    "translate.",
}


def page_cost_predict(*, words_per_page: float) -> Decimal:
    """What the engine is expected to measure for a page of this many words: the page's
    text and the previous page's (context) in, its translation out, at the engine's rates
    per token (TOKENS_PER_WORD tokens a word)."""
    tokens = math.ceil(words_per_page * TOKENS_PER_WORD)
    return cost_usd(prompt_tokens=2 * tokens, completion_tokens=tokens)


def upload_book_cost(*, upload: Upload) -> BookCost:
    """The whole book's cost, from an upload alone (the anonymous estimate's)."""
    words_per_page = upload.word_estimate / upload.page_count if upload.page_count else 0
    return book_cost(
        page_count=upload.page_count, cost_per_page=page_cost_predict(words_per_page=words_per_page), measured=False
    )


def project_book_cost(*, project: Project) -> BookCost:
    """The whole book's cost: its included pages (and any already charged) at the measured
    cost per page once a page is measured, else at the cost predicted from its upload's
    word estimate; the source's page count stands in before normalize made pages. Reads the
    pages' rows when the caller loaded them (selectors.projects.project_with_pages)."""
    rows: list[PageRow] | None = getattr(project, "page_rows", None)
    if rows is not None:
        costs = [row[ROW_COST] for row in rows if row[ROW_COST] is not None]
        page_count = sum(1 for row in rows if row[ROW_INCLUDED] or row[ROW_COST] is not None)
        measured_pages, measured_cost, has_pages = len(costs), sum(costs, Decimal(0)), bool(rows)
    else:
        measured = project.pages.filter(cost_usd__isnull=False)
        measured_pages, measured_cost = measured.count(), exact_sum(measured, "cost_usd")
        page_count = _book_pages(project).count()
        has_pages = page_count > 0 or project.pages.exists()
    return _project_book_cost(
        project=project,
        page_count=page_count if has_pages else project.source_page_count,
        measured_pages=measured_pages,
        measured_cost=measured_cost,
    )


def _book_pages(project: Project) -> QuerySet[Page]:
    """The pages a book's cost covers: those included, and those already charged."""
    return project.pages.filter(Q(included=True) | Q(cost_usd__isnull=False))


def _project_book_cost(*, project: Project, page_count: int, measured_pages: int, measured_cost: Decimal) -> BookCost:
    if measured_pages:
        cost_per_page = round_estimate_up(measured_cost / measured_pages)
        return book_cost(page_count=page_count, cost_per_page=cost_per_page, measured=True)
    upload = (
        Upload.objects.filter(storage_key=project.source_object_key).only("word_estimate", "page_count").first()
        if project.source_object_key
        else None
    )
    if upload is not None and upload.page_count:
        words_per_page = upload.word_estimate / upload.page_count
    else:
        words_per_page = settings.WORDS_PER_PAGE_ESTIMATE
    return book_cost(
        page_count=page_count, cost_per_page=page_cost_predict(words_per_page=words_per_page), measured=False
    )


def project_next_work_quote(*, project: Project) -> BatchQuote:
    """The quote of what the ladder runs next: the next rung's pages, else the retry of the
    failed pages with attempts left. What a book paused for credit waits to afford, and what
    its status view explains."""
    page_count = next_batch_pages(project=project).count() or retryable_pages(project=project, automatic=True).count()
    return project_batch_quote(project=project, page_count=page_count)


def project_batch_gate(*, project: Project) -> BatchQuote:
    """The affordability gate for the project's next batch (process, process-next-batch):
    its quote when it may start, else 402 insufficient_credit with the shortfall, 402
    spending_ceiling_reached, or 409 nothing_to_process."""
    return batch_gate(project_batch_quote(project=project))
