"""A book's languages against the configured engine: the checks that refuse, at create,
PATCH and in the batch quote, a pair the engine cannot translate (so that process is never
the first to say so), and the read of the pages that failed because they turned out to be
in a language the engine cannot translate (the status view explains them and does not
invite a retry that would fail the same way)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from projects.models import Page, PageStatus, Project
from projects.selectors.billing import next_batch_pages, project_batch_quote, retryable_pages
from translation.engines import PageLanguageUnsupported, UnsupportedLanguagePair, engine_get
from translation.languages import language_name
from wallet.selectors.pricing import BatchQuote

BLOCKED_BY_LANGUAGE = "language_pair_unsupported"


def language_pair_check(*, source_language: str | None, target_language: str) -> None:
    """Refuses with 400 language_pair_unsupported (listing what the engine translates) a
    source (None: detect each page) -> target pair the configured engine cannot do."""
    engine_get().capabilities().check(source_language=source_language, target_language=target_language)


def project_pairs_check(
    *, project: Project, target_language: str, source_override: str | None, pages: Iterable[Page] | None = None
) -> None:
    """Refuses the book's languages as they would be: its project-wide source override (None:
    detect) into the target, and each page's own override into the target. `pages` defaults
    to the book's included pages not translated yet."""
    if pages is None:
        pages = project.pages.filter(included=True).exclude(status=PageStatus.APPROVED)
    sources = {source_override} | {page.source_language_override for page in pages if page.source_language_override}
    for source in sorted(sources, key=lambda code: code or ""):
        language_pair_check(source_language=source, target_language=target_language)


def project_batch_quote_read(*, project: Project) -> BatchQuote:
    """GET batch-quote: the next batch's quote, with canStart false (blockedOn
    language_pair_unsupported, the engine's reason as the explanation) when the engine
    cannot translate the book's languages, whatever the wallet says."""
    quote = project_batch_quote(project=project)
    try:
        project_pairs_check(
            project=project,
            target_language=project.target_language_code,
            source_override=project.source_language_override,
            pages=next_batch_pages(project=project),
        )
    except UnsupportedLanguagePair as refused:
        return replace(quote, can_start=False, blocked_by=BLOCKED_BY_LANGUAGE, explanation=refused.detail)
    return quote


@dataclass(frozen=True)
class LanguageBlock:
    """Failed pages detected in `source`, which the engine cannot translate into `target`."""

    source: str
    target: str
    page_ids: tuple[str, ...]

    @property
    def explanation(self) -> str:
        pages = "1 page is" if len(self.page_ids) == 1 else f"{len(self.page_ids)} pages are"
        return (
            f"{pages} in {language_name(self.source)}, and the {engine_get().name} engine cannot translate "
            f"{self.source} -> {self.target}."
        )


def language_blocks(*, project: Project) -> list[LanguageBlock]:
    """The book's included Failed pages whose failure was their language, grouped by it,
    that a retry cannot fix as things are now: neither the engine (its pairs may have been
    installed since) nor a source language set on the page or the book since would let the
    pair through."""
    failed = project.pages.filter(
        included=True, status=PageStatus.FAILED, failure_code=PageLanguageUnsupported.code
    ).only("pk", "detected_source_language", "source_language_override")
    capabilities = engine_get().capabilities()
    target = project.target_language_code
    grouped: dict[tuple[str, str], list[str]] = {}
    for page in failed.order_by("index"):
        source = page.source_language_override or project.source_language_override or page.detected_source_language
        if source and not capabilities.translates(source_language=source, target_language=target):
            grouped.setdefault((source, target), []).append(str(page.pk))
    return [LanguageBlock(source=pair[0], target=pair[1], page_ids=tuple(ids)) for pair, ids in grouped.items()]


def failed_pages_outlook(*, project: Project) -> tuple[str, bool]:
    """For a finished book's status: a sentence on the pages that failed for their language
    ("" when none), and whether a retry could help some failed page (one with attempts
    left that did not fail for a language the engine still cannot translate)."""
    blocks = language_blocks(project=project)
    blocked_ids = [page_id for block in blocks for page_id in block.page_ids]
    retry_helps = retryable_pages(project=project).exclude(pk__in=blocked_ids).exists()
    if not blocks:
        return "", retry_helps
    note = " ".join(block.explanation for block in blocks)
    return (
        f" {note} Retrying cannot help: set the source language of pages that were misread, or translate the "
        "book into a target the engine can produce (GET /v1/languages).",
        retry_helps,
    )
