"""The contract's sequence, literally, for a book of any size: create -> normalize (the book
is Calibrating at once, every page row made) -> process (202) -> the first batch runs as soon
as its own pages are prepared, while the rest of the book is still being rendered."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from projects.models import JobStatus, NormalizeState, Project, SourceKind
from projects.services import jobs
from projects.services.normalize import normalize_run, normalize_stale_requeue
from projects.tasks import job_run_next
from tests.projects.test_normalize import project_with_source, text_pdf
from tests.projects.test_processing import credit
from tests.support.pdfs import pdf_bytes
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

PAGES = 6


@pytest.fixture(autouse=True)
def _small_tasks(settings):
    """Books over 2 pages render on a worker, 3 pages a task, on the echo engine."""
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    settings.NORMALIZE_TASK_PAGES = 3


def created_book(client, pages: int = PAGES) -> str:
    content = pdf_bytes(pages, text=lambda n: f"Page {n}: the river ran past the mill and on to the sea.")
    upload = client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("book.pdf", content, "application/pdf")}, format="multipart"
    )
    assert upload.status_code == 200, upload.content
    created = client.post("/v1/projects", {"uploadKey": upload.json()["uploadKey"]}, format="json")
    assert created.status_code == 201, created.content
    return created.json()["id"]


def normalize_task(project_id: str) -> None:
    """What one normalize task on a worker does (NORMALIZE_TASK_PAGES pages)."""
    normalize_run(project_id=project_id, page_limit=settings.NORMALIZE_TASK_PAGES)


def test_normalize_then_process_works_on_a_book_larger_than_the_inline_limit(user, auth_client):
    credit(user, "50")
    project_id = created_book(auth_client)

    normalized = auth_client.post(f"/v1/projects/{project_id}/normalize")
    assert normalized.status_code == 200, normalized.content
    body = normalized.json()
    assert body["status"] == "Calibrating"
    assert body["normalization"] == {"state": "queued", "pagesDone": 0, "pagesTotal": PAGES}
    assert [(page["index"], page["prepared"], page["imageUrl"]) for page in body["pages"]] == [
        (index, False, None) for index in range(1, PAGES + 1)
    ]
    status = auth_client.get(f"/v1/projects/{project_id}/status").json()
    assert (status["phase"], status["title"]) == ("intake", "Preparing pages")
    assert status["intake"] == {"preparedPages": 0, "totalPages": PAGES}
    assert "normalize" not in status["detail"]

    processed = auth_client.post(f"/v1/projects/{project_id}/process")
    assert processed.status_code == 202, processed.content
    job_id = processed.json()["jobId"]
    # The calibration batch (page 1) waits for its page: no worker takes it yet.
    assert jobs.job_claim() is None
    status = auth_client.get(f"/v1/projects/{project_id}/status").json()
    assert (status["state"], status["waitingOn"], status["title"]) == ("Calibrating", "queue", "Preparing pages")
    assert status["jobId"] == job_id

    # Pages 1-3 read; page 1 prepared (a page is once the 2 after it are read, for its
    # running headers); the rest queued as another task.
    normalize_task(project_id)
    project = Project.objects.get(pk=project_id)
    assert (project.normalize_state, project.normalize_pages_done) == (NormalizeState.QUEUED, 3)

    # Page 1 is translated while pages 4-6 are not rendered yet.
    assert job_run_next() == job_id
    pages = {page["index"]: page for page in auth_client.get(f"/v1/projects/{project_id}").json()["pages"]}
    assert pages[1]["status"] == "Approved"
    assert [pages[index]["prepared"] for index in range(1, PAGES + 1)] == [True, False, False, False, False, False]
    # The ladder queued the next rung (pages 2-6); it waits for them.
    next_job = jobs.job_in_flight(project=project)
    assert next_job is not None
    assert (next_job.status, next_job.page_count) == (JobStatus.QUEUED, 5)
    assert jobs.job_claim() is None
    status = auth_client.get(f"/v1/projects/{project_id}/status").json()
    assert status["intake"] == {"preparedPages": 1, "totalPages": PAGES}
    assert status["progress"]["translatedPages"] == 1

    normalize_task(project_id)  # pages 4-6: the end of the book, every page prepared
    assert job_run_next() == str(next_job.pk)

    final = auth_client.get(f"/v1/projects/{project_id}").json()
    assert final["status"] == "Complete"
    assert final["normalization"] == {"state": "done", "pagesDone": PAGES, "pagesTotal": PAGES}
    assert all(page["status"] == "Approved" and page["prepared"] for page in final["pages"])
    assert auth_client.get(f"/v1/projects/{project_id}/status").json()["intake"] is None


def test_the_page_that_completes_a_waiting_batch_wakes_a_worker(user, auth_client, django_capture_on_commit_callbacks):
    credit(user, "50")
    project_id = created_book(auth_client)
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    auth_client.post(f"/v1/projects/{project_id}/process")

    with django_capture_on_commit_callbacks() as callbacks:
        for _ in range(2):  # a page is prepared once the 2 pages after it are read (its structure)
            normalize_task(project_id)
    woken = [callback for callback in callbacks if "_dispatch" in repr(callback)]
    assert len(woken) == 1  # page 1 completed the calibration batch; the others are in no batch


def test_a_page_still_being_prepared_is_a_409_and_process_next_batch_waits_for_nothing(user, auth_client):
    credit(user, "50")
    project_id = created_book(auth_client)
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    page = auth_client.get(f"/v1/projects/{project_id}").json()["pages"][0]

    image = auth_client.get(f"/v1/projects/{project_id}/pages/{page['id']}/image")
    assert_problem(image, 409, "pages_not_ready")
    refused = auth_client.post(f"/v1/projects/{project_id}/process-next-batch")
    assert_problem(refused, 409, "pages_not_ready")
    assert not Project.objects.get(pk=project_id).jobs.exists()

    normalize_task(project_id)
    assert auth_client.get(f"/v1/projects/{project_id}/pages/{page['id']}/image").status_code == 200
    ran = auth_client.post(f"/v1/projects/{project_id}/process-next-batch")
    assert ran.status_code == 200, ran.content


def test_a_file_found_unreadable_after_a_batch_ran_keeps_the_translated_pages(jwt_client, settings):
    settings.NORMALIZE_CHUNK_PAGES = 2
    # Page 5 of the page tree points at an object that does not exist: the upload's check
    # counts 6 pages, and only rendering pages 5-6 finds the damage.
    broken = text_pdf(6).replace(b" 12 0 R ", b" 120 0 R ")
    project = project_with_source(broken, file_name="broken.pdf", kind=SourceKind.PDF, pages=6)
    client = jwt_client(project.owner)
    credit(project.owner, "50")
    client.post(f"/v1/projects/{project.pk}/normalize")
    client.post(f"/v1/projects/{project.pk}/process")
    normalize_task(str(project.pk))  # pages 1-3 read, page 1 prepared
    job_run_next()  # page 1 translated and charged; pages 2-6 queued, waiting for them

    # Pages 4-5 (rendered together), then page 6 cannot be read: 2-5 are the last pages.
    normalize_task(str(project.pk))

    body = client.get(f"/v1/projects/{project.pk}").json()
    assert (body["status"], body["failure"]["code"]) == ("Failed", "file_corrupt")
    assert [(page["index"], page["status"]) for page in body["pages"]] == [
        (1, "Approved"),
        (2, "Pending"),
        (3, "Pending"),
        (4, "Pending"),
        (5, "Pending"),
    ]
    waiting = project.jobs.get(page_count=5)
    assert (waiting.status, waiting.charged_usd) == (JobStatus.FAILED, 0)  # its hold released whole
    assert jobs.job_in_flight(project=project) is None
    status = client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["state"], status["nextAction"], status["intake"]) == ("Failed", None, None)


def test_a_normalize_stopped_on_our_side_in_a_processing_book_resumes_by_itself(user, auth_client, settings):
    credit(user, "50")
    project_id = created_book(auth_client)
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    auth_client.post(f"/v1/projects/{project_id}/process")
    normalize_task(project_id)
    Project.objects.filter(pk=project_id).update(
        normalize_state=NormalizeState.FAILED, failure_code="server_error", failure_reason="storage was down"
    )
    settings.NORMALIZE_STALE_SECONDS = 0

    assert normalize_stale_requeue() == 1
    for _ in range(2):
        normalize_task(project_id)
    project = Project.objects.get(pk=project_id)
    assert (project.normalize_state, project.failure_code) == (NormalizeState.DONE, "")
    assert project.pages.filter(prepared=True).count() == PAGES
