"""Exports over HTTP: asking, the export queue's task, listing, downloading, freshness,
idempotency, partial books, the Archive."""

from __future__ import annotations

import io
import json
import zipfile
from urllib.parse import unquote

import pytest
import redis
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework.test import APIClient

from exports.models import ExportFile, ExportStatus
from exports.tasks import export_render
from projects.models import PageStatus, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

ENTRY_FIELDS = {
    "format",
    "mimeType",
    "saveAsName",
    "fileName",
    "sizeBytes",
    "url",
    "status",
    "bilingual",
    "layout",
    "isPartial",
    "createdUtc",
}


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):
    return local_storage


def translated_book(owner, pages: int = 4, *, status: str = ProjectStatus.COMPLETE, name: str = "Le Petit Livre"):  # type: ignore[no-untyped-def]
    project = ProjectFactory(owner=owner, status=status, name=name)
    for page in pages_add(project, pages, text_layer="Source words of the page.", has_text_layer=True):
        default_storage.save(page.image_key, ContentFile(b"\x89PNG fake image " + str(page.index).encode()))
    project.pages.update(
        status=PageStatus.APPROVED,
        translated_at=timezone.now(),
        engine="echo",
        detected_source_language="en",
    )
    for page in project.pages.all():
        page.translation = f"# Chapitre {page.index}\n\nLa *vieille* maison, page {page.index}."
        page.save(update_fields=["translation"])
    return project


def run_export_queue() -> int:
    """Runs the pending exports the way an export worker does."""
    ran = 0
    for export_id in ExportFile.objects.filter(status=ExportStatus.PENDING).values_list("pk", flat=True):
        export_render(str(export_id))
        ran += 1
    return ran


def the_exported_text(auth_client: APIClient, project: Project) -> str:
    """Runs the export queue; the text of the book's one listed export, downloaded."""
    run_export_queue()
    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    return b"".join(auth_client.get(listed["url"]).streaming_content).decode()


def test_a_format_is_made_on_the_export_queue_listed_and_downloaded(user, auth_client):
    project = translated_book(user)
    response = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json")
    assert response.status_code == 202, response.json()
    (entry,) = response.json()
    assert set(entry) == ENTRY_FIELDS
    assert (entry["format"], entry["status"], entry["sizeBytes"]) == ("Markdown", "pending", None)
    assert auth_client.get(f"/v1/projects/{project.pk}/exports").json() == []  # only what is made
    assert run_export_queue() == 1

    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert listed["status"] == "ready"
    assert listed["mimeType"].startswith("text/markdown")
    assert listed["url"] == f"/v1/projects/{project.pk}/exports/{listed['fileName']}"
    assert listed["saveAsName"].startswith("le-petit-livre-")
    assert listed["saveAsName"].endswith("-markdown.md")
    download = auth_client.get(listed["url"])
    assert download.status_code == 200
    assert download["Content-Type"].startswith("text/markdown")
    assert "attachment" in download["Content-Disposition"]
    body = b"".join(download.streaming_content).decode()
    assert len(body.encode()) == listed["sizeBytes"]
    assert "La *vieille* maison, page 3." in body
    assert body.index("page 1.") < body.index("page 2.") < body.index("page 4.")


def test_a_non_ascii_title_is_saved_under_a_utf8_name(user, auth_client):
    project = translated_book(user, name="Мастер и Маргарита")
    auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "PlainText"}, format="json")
    run_export_queue()
    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    disposition = auth_client.get(listed["url"])["Content-Disposition"]
    assert "filename*=utf-8''" in disposition.lower()
    assert "мастер-и-маргарита" in unquote(disposition.split("''", 1)[1])


def test_asking_again_does_not_render_twice_but_a_changed_book_gets_a_new_file(user, auth_client):
    project = translated_book(user)
    first = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json").json()
    again = auth_client.post(
        f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json", HTTP_IDEMPOTENCY_KEY="later"
    ).json()
    assert first[0]["fileName"] == again[0]["fileName"]
    assert run_export_queue() == 1
    assert ExportFile.objects.count() == 1

    page = project.pages.get(index=2)
    page.translation, page.translated_at, page.updated_at = "Une nouvelle traduction.", timezone.now(), timezone.now()
    page.save()
    assert auth_client.get(f"/v1/projects/{project.pk}/exports").json() == []  # the old file is stale
    newer = auth_client.post(
        f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json", HTTP_IDEMPOTENCY_KEY="newer"
    ).json()
    assert newer[0]["fileName"] != first[0]["fileName"]
    assert "Une nouvelle traduction." in the_exported_text(auth_client, project)


def test_a_book_in_progress_needs_allow_partial_and_marks_what_is_missing(user, auth_client):
    project = translated_book(user, status=ProjectStatus.PROCESSING)
    project.pages.filter(index=3).update(status=PageStatus.PENDING, translation="")
    refused = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json")
    assert_problem(refused, 409, "export_not_ready")
    accepted = auth_client.post(
        f"/v1/projects/{project.pk}/export", {"format": "Markdown", "allowPartial": True}, format="json"
    )
    assert accepted.status_code == 202
    assert accepted.json()[0]["isPartial"] is True
    body = the_exported_text(auth_client, project)
    assert "La page 3 n’est pas encore traduite." in body  # in the book's language (French)


def test_failed_pages_are_marked_in_the_text_not_dropped(user, auth_client):
    project = translated_book(user, status=ProjectStatus.COMPLETED_WITH_ERRORS)
    project.pages.filter(index=2).update(
        status=PageStatus.FAILED,
        translation="",
        failure_code="language_unsupported",
        failure_reason="the page is in pl, and the engine has no pl->fr pair",
    )
    auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "PlainText"}, format="json")
    body = the_exported_text(auth_client, project)
    # In the book's language (French), the reason from the failure code; the engine's
    # own (English, operator's) words stay out of the book.
    assert (
        "La page 2 n’a pas pu être traduite\u00a0: elle est écrite dans une langue qui ne peut pas être traduite "
        "dans la langue de ce livre." in body
    )
    assert "pl->fr" not in body


@pytest.mark.parametrize("export_format", ["Markdown", "PlainText", "Html"])
def test_a_failed_page_keeps_its_original_text_and_a_blank_page_stays_blank(user, auth_client, export_format):
    project = translated_book(user, status=ProjectStatus.COMPLETED_WITH_ERRORS)
    original = "The original words of the second page, which the engine could not translate."
    project.pages.filter(index=2).update(
        status=PageStatus.FAILED, translation="", source_text="", text_layer=original, failure_reason="timed out"
    )
    project.pages.filter(index=3).update(status=PageStatus.APPROVED, translation="", text_layer="")  # an empty page
    auth_client.post(f"/v1/projects/{project.pk}/export", {"format": export_format}, format="json")
    body = the_exported_text(auth_client, project)
    assert (
        "La page 2 n’a pas pu être traduite\u00a0: le moteur de traduction a échoué. Son texte original suit, "
        "non traduit." in body
    )
    assert original in body
    assert "La page 3" not in body  # no "not translated yet" for a page with nothing on it
    assert "pas encore traduite" not in body


def test_a_book_never_translated_cannot_be_exported_even_partially(user, auth_client):
    project = ProjectFactory(owner=user)
    pages_add(project, 2)
    response = auth_client.post(
        f"/v1/projects/{project.pk}/export", {"format": "Markdown", "allowPartial": True}, format="json"
    )
    assert_problem(response, 409, "export_not_ready")
    assert not ExportFile.objects.exists()


def test_bad_requests_are_refused_and_create_nothing(user, auth_client):
    project = translated_book(user)
    for body in ({"format": "Rtf"}, {}, {"format": "Pdf", "pagesPerChapter": 0}):
        response = auth_client.post(f"/v1/projects/{project.pk}/export", body, format="json")
        assert_problem(response, 400, "validation_error")
    assert not ExportFile.objects.exists()


def test_someone_elses_book_and_files_are_not_found(user, other_user, auth_client, jwt_client):
    project = translated_book(other_user)
    jwt_client(other_user).post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json")
    run_export_queue()
    name = ExportFile.objects.get().file_name
    assert_problem(auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}), 404, "not_found")
    assert_problem(auth_client.get(f"/v1/projects/{project.pk}/exports"), 404, "not_found")
    assert_problem(auth_client.get(f"/v1/projects/{project.pk}/exports/{name}"), 404, "not_found")
    mine = translated_book(user)
    assert_problem(auth_client.get(f"/v1/projects/{mine.pk}/exports/{name}"), 404, "not_found")


def test_all_makes_every_format_and_an_archive_with_images_and_a_manifest(user, auth_client):
    project = translated_book(user, pages=3)
    response = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "All"}, format="json")
    assert [entry["format"] for entry in response.json()] == [
        "Markdown",
        "PlainText",
        "Html",
        "Epub",
        "Docx",
        "Pdf",
        "Archive",
    ]
    assert run_export_queue() == 7
    listed = {entry["format"]: entry for entry in auth_client.get(f"/v1/projects/{project.pk}/exports").json()}
    assert set(listed) == {"Markdown", "PlainText", "Html", "Epub", "Docx", "Pdf", "Archive"}
    archive = zipfile.ZipFile(io.BytesIO(b"".join(auth_client.get(listed["Archive"]["url"]).streaming_content)))
    names = set(archive.namelist())
    assert {"book.md", "book.txt", "book.html", "book.epub", "book.docx", "book.pdf", "manifest.json"} <= names
    assert {"images/page-00001.png", "images/page-00003.png"} <= names
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["pageCount"] == 3
    assert [page["index"] for page in manifest["pages"]] == [1, 2, 3]
    assert archive.read("book.pdf").startswith(b"%PDF")


def test_a_file_of_a_book_that_changed_since_is_not_served_but_answered_410(user, auth_client):
    project = translated_book(user)
    auth_client.post(
        f"/v1/projects/{project.pk}/export", {"format": "Html", "bilingual": True, "pageMarkers": True}, format="json"
    )
    run_export_queue()
    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert auth_client.get(listed["url"]).status_code == 200

    page = project.pages.get(index=3)
    page.translation, page.translated_at, page.updated_at = "Retraduite.", timezone.now(), timezone.now()
    page.save()
    stale = auth_client.get(listed["url"])
    assert_problem(stale, 410, "export_outdated")
    body = stale.json()
    assert body["format"] == "Html"
    assert body["exportRequest"] == {
        "format": "Html",
        "bilingual": True,
        "pageMarkers": True,
        "allowPartial": False,
        "pagesPerChapter": 20,
        "layout": "reflow",
    }
    assert ExportFile.objects.get().status == ExportStatus.READY  # nothing changed by the refusal

    # the request the problem names makes the fresh file, and only that one is served
    again = auth_client.post(
        f"/v1/projects/{project.pk}/export", body["exportRequest"], format="json", HTTP_IDEMPOTENCY_KEY="again"
    ).json()
    assert again[0]["fileName"] != listed["fileName"]
    run_export_queue()
    (fresh,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert fresh["fileName"] == again[0]["fileName"]
    assert "Retraduite." in b"".join(auth_client.get(fresh["url"]).streaming_content).decode()
    assert_problem(auth_client.get(listed["url"]), 410, "export_outdated")


def test_asking_puts_the_render_on_the_export_queue(user, auth_client, settings, django_capture_on_commit_callbacks):
    """The message goes through the real broker (Redis) to the `export` queue, the one the
    CPU workers consume for renders, and to no other queue."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queues = ("export", "default", "process", "retry")
    waiting = {queue: set(broker.lrange(queue, 0, -1)) for queue in queues}
    project = translated_book(user)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Docx"}, format="json")
        assert response.status_code == 202
        export_id = str(ExportFile.objects.get().pk)
        sent = {queue: set(broker.lrange(queue, 0, -1)) - waiting[queue] for queue in queues}
        (message,) = [json.loads(raw) for raw in sent["export"]]
        assert message["headers"]["task"] == "exports.tasks.export_render"
        assert export_id in message["headers"]["argsrepr"]
        assert message["properties"]["delivery_info"]["routing_key"] == "export"
        assert not any(sent[queue] for queue in queues if queue != "export")
    finally:
        for queue in queues:
            for raw in set(broker.lrange(queue, 0, -1)) - waiting[queue]:
                broker.lrem(queue, 1, raw)
        broker.close()
