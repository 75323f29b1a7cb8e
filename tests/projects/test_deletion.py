"""Deleting a book deletes every file of it: the source, the page images, the thumbnails
and every export, on local storage and on S3 (moto); by DELETE /v1/projects/{id} and by
the retention purge. A batch in flight ends with its hold resolved, and an export being
written while the book goes leaves no file behind."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.utils import timezone

from exports.models import ExportFile
from exports.tasks import export_render
from projects.models import Job, PageStatus, Project, ProjectStatus
from projects.services import jobs
from projects.services.projects import project_delete, retention_purge
from tests.exports.test_export_api import run_export_queue, translated_book
from tests.projects.test_intake_api import text_pdf, upload
from tests.projects.test_processing import book, credit, requeued_with_two_pages_done, run_worker
from tests.wallet.helpers import assert_wallet_invariants
from wallet.models import Hold, HoldState, Wallet

pytestmark = pytest.mark.django_db

EXPORTS_OF_ALL = 8  # six formats, the Archive, the original-layout Pdf


def exported_book(client) -> str:  # type: ignore[no-untyped-def]
    """A two-page PDF taken in through the API, translated, and exported in every format,
    the Archive and the original-layout Pdf (All includes it for a book whose source PDF is
    stored); its id."""
    key = upload(client, "book.pdf", text_pdf(2)).json()["uploadKey"]
    project_id = client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]
    assert client.post(f"/v1/projects/{project_id}/normalize").status_code == 200
    Project.objects.filter(pk=project_id).update(status=ProjectStatus.COMPLETE)
    Project.objects.get(pk=project_id).pages.update(
        status=PageStatus.APPROVED, translation="Une page traduite.", translated_at=timezone.now()
    )
    assert client.post(f"/v1/projects/{project_id}/export", {"format": "All"}, format="json").status_code == 202
    assert run_export_queue() == EXPORTS_OF_ALL
    return project_id


def test_delete_removes_the_source_the_pages_the_thumbnails_and_every_export(
    auth_client, stored_keys, django_capture_on_commit_callbacks
):
    project_id = exported_book(auth_client)
    project = Project.objects.get(pk=project_id)
    exports = list(ExportFile.objects.filter(project=project).values_list("storage_key", flat=True))
    stored = stored_keys()
    assert project.source_object_key in stored
    assert {page.image_key for page in project.pages.all()} <= set(stored)
    assert {page.thumbnail_key for page in project.pages.all()} <= set(stored)
    assert len(exports) == EXPORTS_OF_ALL
    assert set(exports) <= set(stored)
    assert all(key.startswith(f"projects/{project_id}/exports/") for key in exports)

    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.delete(f"/v1/projects/{project_id}").status_code == 204

    assert stored_keys() == []
    assert not ExportFile.objects.exists()


def test_the_retention_purge_removes_every_file_of_an_expired_book_and_keeps_the_others(
    auth_client, stored_keys, django_capture_on_commit_callbacks
):
    expired = exported_book(auth_client)
    Project.objects.filter(pk=expired).update(created_at=timezone.now() - timedelta(days=31))
    young_key = upload(auth_client, "young.pdf", text_pdf(1)).json()["uploadKey"]
    young = auth_client.post("/v1/projects", {"uploadKey": young_key}, format="json").json()["id"]
    young_source = Project.objects.get(pk=young).source_object_key

    with django_capture_on_commit_callbacks(execute=True):
        assert retention_purge() == 1

    assert stored_keys() == [young_source]
    assert list(Project.objects.values_list("pk", flat=True)) == [Project.objects.get(pk=young).pk]


def test_a_refused_delete_of_someone_elses_book_keeps_every_file(
    auth_client, other_user, jwt_client, stored_keys, django_capture_on_commit_callbacks
):
    project_id = exported_book(jwt_client(other_user))
    before = stored_keys()

    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.delete(f"/v1/projects/{project_id}").status_code == 404

    assert stored_keys() == before
    assert Project.objects.filter(pk=project_id).exists()


def test_deleting_a_book_with_a_queued_batch_releases_its_hold(user, auth_client):
    project = book(user)
    credit(user, "5")
    job_id = auth_client.post(f"/v1/projects/{project.pk}/process").json()["jobId"]
    assert Wallet.objects.get(user=user).reserved == Decimal("0.5")

    assert auth_client.delete(f"/v1/projects/{project.pk}").status_code == 204

    assert Hold.objects.get(cause_id=job_id).state == HoldState.RELEASED
    wallet = assert_wallet_invariants(Wallet.objects.get(user=user).pk)
    assert (wallet.balance, wallet.reserved) == (Decimal(5), 0)
    assert run_worker() == 0


def test_deleting_a_book_whose_batch_is_running_releases_the_hold(user, auth_client):
    project = book(user)
    credit(user, "5")
    auth_client.post(f"/v1/projects/{project.pk}/process")
    running = jobs.job_claim()
    assert running is not None

    assert auth_client.delete(f"/v1/projects/{project.pk}").status_code == 204

    assert Hold.objects.get(cause_id=str(running.pk)).state == HoldState.RELEASED
    assert not Job.objects.exists()
    assert Wallet.objects.get(user=user).reserved == 0
    assert_wallet_invariants(Wallet.objects.get(user=user).pk)


def test_deleting_a_book_charges_the_pages_its_requeued_batch_already_translated(user, auth_client, settings):
    job = requeued_with_two_pages_done(user, auth_client, settings)
    done = sum((page.cost_usd for page in job.pages.filter(status=PageStatus.APPROVED)), Decimal(0))

    assert auth_client.delete(f"/v1/projects/{job.project_id}").status_code == 204

    hold = Hold.objects.get(cause_id=str(job.pk))
    assert (hold.state, hold.settled_amount) == (HoldState.SETTLED, done)
    wallet = assert_wallet_invariants(Wallet.objects.get(user=user).pk)
    assert wallet.reserved == 0


def _lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_export_being_written_when_its_book_is_deleted_leaves_no_file(user, auth_client, local_storage):
    """The render is held on the pages table (an ACCESS EXCLUSIVE lock) until the delete
    has committed and swept the book's folder; what it writes afterwards must go too."""
    project = translated_book(user, pages=2)
    assert (
        auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json").status_code == 202
    )
    export = ExportFile.objects.get()
    locked, render_waits = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def delete_under_lock() -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("LOCK TABLE projects_page IN ACCESS EXCLUSIVE MODE")
                locked.set()
                assert render_waits.wait(timeout=30)
                project_delete(project=project)
        except BaseException as error:  # surfaced below
            results["delete"] = error
        finally:
            locked.set()
            connection.close()

    def render() -> None:
        try:
            results["render"] = export_render(str(export.pk))
        except BaseException as error:  # surfaced below
            results["render"] = error
        finally:
            connection.close()

    deleter = threading.Thread(target=delete_under_lock)
    deleter.start()
    assert locked.wait(timeout=30)
    renderer = threading.Thread(target=render)
    renderer.start()
    deadline = time.monotonic() + 30
    while _lock_waiters() == 0:
        assert time.monotonic() < deadline, "the render never waited on the lock"
        time.sleep(0.05)
    render_waits.set()
    deleter.join(timeout=60)
    renderer.join(timeout=60)

    assert "delete" not in results, results
    assert results["render"] is None
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not (local_storage / "projects" / str(project.pk)).exists()
    assert [path for path in local_storage.rglob("*") if path.is_file()] == []
