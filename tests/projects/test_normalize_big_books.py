"""A big book normalizes in the footprint of a small one: the page rows made up front (the
whole book's, before its pages render) are made a batch at a time, never all in memory."""

from __future__ import annotations

import tracemalloc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects.models import NormalizeState, SourceKind
from projects.services.normalize import PAGE_ROWS_BATCH, project_normalize
from tests.projects.test_normalize import project_with_source, text_pdf

pytestmark = pytest.mark.django_db


def test_a_big_books_page_rows_are_made_a_batch_at_a_time(settings, django_capture_on_commit_callbacks):
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    pages = 3 * PAGE_ROWS_BATCH
    project = project_with_source(text_pdf(1), file_name="long.pdf", kind=SourceKind.PDF, pages=pages)

    tracemalloc.start()
    try:
        with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks():
            queued = project_normalize(project=project)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert queued.normalize_state == NormalizeState.QUEUED
    assert list(queued.pages.order_by("index").values_list("index", flat=True)) == list(range(1, pages + 1))
    inserts = [query for query in queries.captured_queries if query["sql"].startswith('INSERT INTO "projects_page"')]
    assert len(inserts) == 3
    # A batch of unsaved rows is about 1 MiB; the book's 1,500 rows at once took 4.5 MiB.
    assert peak < 2.5 * 2**20, peak
