"""GET /v1/projects/{id}: the project of the contract with every page, in the bytes
ProjectSerializer's plain answer has, written from the pages' rows in one query and
streamed once its pages take more than one chunk (projects/api/project_read.py)."""

from __future__ import annotations

import gc
import json
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext
from djangorestframework_camel_case.render import CamelCaseJSONRenderer
from djangorestframework_camel_case.util import camelize

from accounts.models import User
from accounts.services.users import token_issue
from projects.api.project_read import PAGE_CHUNK
from projects.api.serializers import PageSerializer, ProjectSummarySerializer
from projects.models import Page, PageStatus, Project, ProjectStatus
from projects.selectors.billing import project_book_cost
from projects.selectors.projects import current_batch_page_ids, page_rows
from tests.factories import ProjectFactory, pages_add
from wallet.api.serializers import BookCostSerializer

pytestmark = pytest.mark.django_db

STREAMED_PAGES = 2 * PAGE_CHUNK + 37


def varied_book(owner: User, pages: int) -> Project:
    """A book whose pages differ in every field the read shows: some not prepared yet, some
    translated and measured (a few flagged), failed, in the batch in flight, left out or with
    their own source language; a glossary, and text that JSON must escape."""
    project = ProjectFactory.create(
        owner=owner,
        name="Moby-Dick — Kapitel ü",
        status=ProjectStatus.PROCESSING,
        approval_count=2,
        glossary={"Ishmael": "Ismaël", "Pequod": "Péquod"},
    )
    rows = pages_add(project, pages, has_text_layer=True, word_count=250)
    for number, page in enumerate(rows):
        page.prepared = number % 7 != 0
        if number % 5 == 1:
            page.status, page.cost_usd, page.attempts = PageStatus.APPROVED, Decimal("0.001234"), 1
            page.review_flags = ["Low OCR confidence: 41%."] if number % 10 == 1 else []
        elif number % 5 == 2:
            page.status, page.attempts = PageStatus.FAILED, 3
            page.failure_code, page.failure_reason = "engine_error", 'The engine said \u2028no "twice".'
        elif number % 5 == 3:
            page.status = PageStatus.IN_PROGRESS
        if number % 11 == 4:
            page.included, page.source_language_override = False, "de"
    Page.objects.bulk_update(
        rows,
        [
            "prepared",
            "status",
            "cost_usd",
            "attempts",
            "review_flags",
            "failure_code",
            "failure_reason",
            "included",
            "source_language_override",
        ],
    )
    return Project.objects.get(pk=project.pk)


def contract_document(project: Project) -> bytes:
    """The project as its serializers write it from model instances, each part from its own
    query, rendered by the API's renderer: what the read answered before it was written from
    rows, and the bytes it must still answer."""
    project = Project.objects.get(pk=project.pk)
    document = dict(ProjectSummarySerializer(project).data)
    document["pages"] = PageSerializer(project.pages.order_by("index"), many=True).data
    document["current_batch_page_ids"] = [str(page_id) for page_id in current_batch_page_ids(project=project)]
    document["glossary"] = [{"term": term, "translation": text} for term, text in project.glossary.items()]
    document["book_cost"] = BookCostSerializer(project_book_cost(project=project)).data
    return CamelCaseJSONRenderer().render(document, "application/json")


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_book_that_fits_one_chunk_is_answered_whole_in_the_serializers_bytes(user, auth_client):
    project = varied_book(user, 40)

    response = auth_client.get(f"/v1/projects/{project.pk}")

    assert response.status_code == 200
    assert not response.streaming
    assert response["Content-Type"] == "application/json"
    assert response.content == contract_document(project)


def test_a_book_of_several_chunks_is_streamed_in_the_serializers_bytes(user, auth_client):
    project = varied_book(user, STREAMED_PAGES)

    response = auth_client.get(f"/v1/projects/{project.pk}")

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/json"
    chunks = list(response.streaming_content)
    assert len(chunks) == 2 + 3  # the project's fields before and after its pages, and 3 chunks of pages
    assert b"".join(chunks) == contract_document(project)


def test_every_page_is_there_in_order_with_every_field(user, auth_client):
    project = varied_book(user, STREAMED_PAGES)

    pages = json.loads(body(auth_client.get(f"/v1/projects/{project.pk}")))["pages"]

    assert [page["index"] for page in pages] == list(range(1, STREAMED_PAGES + 1))
    fields = list(camelize(dict.fromkeys(PageSerializer.Meta.fields)))
    assert all(list(page) == fields for page in pages)
    assert pages[0]["imageUrl"] is None
    assert pages[1]["imageUrl"] == f"/v1/projects/{project.pk}/pages/{pages[1]['id']}/image?variant=full"
    assert pages[1]["costUsd"] == 0.001234
    assert pages[2]["failureReason"] == 'The engine said \u2028no "twice".'


def test_the_read_takes_as_many_queries_for_a_big_book_as_for_a_small_one(user, auth_client, django_assert_num_queries):
    small, medium, big = varied_book(user, 10), varied_book(user, 60), varied_book(user, STREAMED_PAGES)
    with CaptureQueriesContext(connection) as small_read:
        assert len(body(auth_client.get(f"/v1/projects/{small.pk}"))) > 0

    with django_assert_num_queries(len(small_read.captured_queries)):
        assert len(body(auth_client.get(f"/v1/projects/{medium.pk}"))) > 0
    with django_assert_num_queries(len(small_read.captured_queries)):
        assert len(body(auth_client.get(f"/v1/projects/{big.pk}"))) > 0
    page_reads = [query for query in small_read.captured_queries if '"projects_page"' in query["sql"]]
    assert len(page_reads) == 1


def test_the_rows_of_a_read_are_not_kept_track_of_by_the_garbage_collector(user):
    """Tracked, the rows of a big book, alive for the whole read, would reach the collector's
    oldest generation and set off a full collection of the process's heap every few reads."""
    rows = page_rows(project=varied_book(user, 60))
    gc.collect()
    gc.collect()  # a row with review flags is let go once its tuple of flags is

    assert len(rows) == 60
    assert not any(gc.is_tracked(row) for row in rows)


def test_an_indented_read_is_the_same_document(user, auth_client):
    project = varied_book(user, STREAMED_PAGES)

    indented = auth_client.get(f"/v1/projects/{project.pk}", HTTP_ACCEPT="application/json; indent=2")

    assert indented.status_code == 200
    assert not indented.streaming
    assert indented.content.startswith(b'{\n  "id"')
    assert json.loads(indented.content) == json.loads(contract_document(project))


def test_rename_and_normalize_answer_the_document_the_read_answers(user, auth_client):
    project = varied_book(user, STREAMED_PAGES)

    renamed = auth_client.patch(f"/v1/projects/{project.pk}", {"name": "Renamed"}, format="json")
    normalized = auth_client.post(f"/v1/projects/{project.pk}/normalize")

    read = contract_document(project)
    assert json.loads(read)["name"] == "Renamed"
    assert renamed.status_code == 200
    assert renamed.streaming
    assert body(renamed) == read
    assert normalized.status_code == 200
    assert normalized.streaming
    assert body(normalized) == read


def test_under_asgi_the_stream_is_asynchronous_and_the_same_bytes(user):
    """The ASGI server gathers a synchronous stream whole before sending it; the read gives it
    an asynchronous one."""
    project = varied_book(user, STREAMED_PAGES)
    credentials = {"Authorization": f"Bearer {token_issue(user=user).token}"}

    async def read() -> tuple[bool, bytes]:
        response = await AsyncClient().get(f"/v1/projects/{project.pk}", headers=credentials)
        assert response.status_code == 200
        return response.is_async, b"".join([chunk async for chunk in response.streaming_content])

    is_async, streamed = async_to_sync(read)()

    assert is_async
    assert streamed == contract_document(project)
