"""What the next batch of a book is and what it costs: the ladder meets the price table.

The ladder is BATCH_LADDER (1, 5, 25, 100) read at the book's approval count, then every
remaining included page. The first batch of a book is its calibration; afterwards the
pages already measured give the book's cost per page.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from core.money import exact_sum
from projects.models import Page, PageStatus, Project
from wallet.pricing import BatchQuote, batch_gate, batch_quote


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
    return batch_quote(
        owner=project.owner,
        page_count=next_batch_pages(project=project).count() if page_count is None else page_count,
        measured_pages=measured.count(),
        measured_cost=exact_sum(measured, "cost_usd"),
        target_language=project.target_language_code,
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
