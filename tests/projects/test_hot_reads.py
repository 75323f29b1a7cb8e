"""The reads agents poll, GET /v1/projects/{id}/status and GET /v1/jobs/{id}: what they
count, and how many queries they take, so that a regression in either fails here
(docs/performance.md, "The API under load")."""

from __future__ import annotations

import uuid

import pytest

from projects.models import JobStatus, PageStatus, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.projects.test_status_view import with_job

pytestmark = pytest.mark.django_db

# The credential's account; the project with its page counts and its job in flight.
STATUS_QUERIES = 2
# The credential's account, the job.
JOB_QUERIES = 2


def book_at_work(owner, job_status: str = JobStatus.RUNNING):  # type: ignore[no-untyped-def]
    """A book in Processing with pages in every state the status view counts, and a job in
    flight."""
    project = ProjectFactory.create(owner=owner, status=ProjectStatus.PROCESSING, approval_count=3)
    pages_add(project, 4, status=PageStatus.APPROVED)
    pages_add(project, 2, status=PageStatus.APPROVED, review_flags=["low OCR confidence"])
    pages_add(project, 3, status=PageStatus.FAILED)
    pages_add(project, 5)  # pending
    pages_add(project, 1, status=PageStatus.APPROVED, review_flags=["cut at the edge"], included=False)
    pages_add(project, 2, status=PageStatus.FAILED, included=False)
    with_job(project, job_status)
    return project


@pytest.mark.parametrize("job_status", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_status_read_counts_the_included_pages_and_names_the_job_in_flight(
    user, auth_client, django_assert_num_queries, job_status
):
    project = book_at_work(user, job_status)
    job = project.jobs.get()

    with django_assert_num_queries(STATUS_QUERIES):
        response = auth_client.get(f"/v1/projects/{project.pk}/status")

    assert response.status_code == 200
    body = response.json()
    assert body["jobId"] == str(job.pk)
    assert body["progress"] == {
        "translatedPages": 6,
        "totalPages": 14,
        "failedPages": 3,
        "flaggedPages": 2,
        "rung": 3,
        "nextBatchSize": body["progress"]["nextBatchSize"],
    }
    assert body["intake"] is None
    assert body["title"] == ("Translating" if job_status == JobStatus.RUNNING else "Queued")
    assert "6 of 14 pages translated (2 pages flagged for review" in body["detail"]


def test_status_read_of_a_book_with_no_job_and_no_pages(user, auth_client, django_assert_num_queries):
    project = ProjectFactory.create(owner=user, status=ProjectStatus.PROCESSING)

    with django_assert_num_queries(STATUS_QUERIES):
        body = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert body["jobId"] is None
    assert (body["progress"]["translatedPages"], body["progress"]["totalPages"]) == (0, 0)
    assert body["title"] == "Ready to process"


def test_status_read_does_not_count_another_books_pages_or_job(user, auth_client):
    book_at_work(user)
    project = ProjectFactory.create(owner=user, status=ProjectStatus.PROCESSING)
    pages_add(project, 2, status=PageStatus.APPROVED)

    body = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert body["jobId"] is None
    assert (body["progress"]["translatedPages"], body["progress"]["totalPages"]) == (2, 2)


def test_status_read_of_someone_elses_book_is_not_found_like_a_missing_one(
    user, other_user, auth_client, django_assert_num_queries
):
    project = book_at_work(other_user)

    with django_assert_num_queries(STATUS_QUERIES):
        response = auth_client.get(f"/v1/projects/{project.pk}/status")
    missing = auth_client.get(f"/v1/projects/{uuid.uuid4()}/status")

    assert response.status_code == missing.status_code == 404
    assert response.json()["code"] == missing.json()["code"] == "not_found"
    assert response.json()["detail"] == missing.json()["detail"]


def test_status_read_with_an_api_key_takes_as_many_queries(user, key_client, django_assert_num_queries):
    project = book_at_work(user)
    client = key_client(user)
    client.get(f"/v1/projects/{project.pk}/status")  # lastUsedUtc written once a minute at most

    with django_assert_num_queries(STATUS_QUERIES):
        response = client.get(f"/v1/projects/{project.pk}/status")

    assert response.status_code == 200


def test_job_read_takes_two_queries(user, auth_client, django_assert_num_queries):
    project = book_at_work(user)
    job = project.jobs.get()

    with django_assert_num_queries(JOB_QUERIES):
        response = auth_client.get(f"/v1/jobs/{job.pk}")

    assert response.status_code == 200
    assert (response.json()["id"], response.json()["status"]) == (str(job.pk), JobStatus.RUNNING)
