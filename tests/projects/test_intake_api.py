"""Intake end to end over HTTP: upload (or estimate), create, normalize, pages, delete."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from PIL import Image

from core.models import IdempotencyRecord
from projects.models import Page, Project, Upload
from projects.services.uploads import uploads_expired_purge
from tests.factories import UserFactory
from tests.support.pdfs import pdf_bytes
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db


def stored_files(root) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def png(color: str = "white", size: tuple[int, int] = (400, 600)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def images_zip(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, png())
    return buffer.getvalue()


def text_pdf(pages: int) -> bytes:
    return pdf_bytes(pages, text=lambda n: f"Chapter {n} begins here with a few words of plain text " * 5)


def upload(client, name: str, content: bytes, url: str = "/v1/uploads"):
    return client.post(url, {"file": SimpleUploadedFile(name, content)}, format="multipart")


def test_a_pdf_goes_from_upload_to_ordered_pages(auth_client, user, local_storage):
    uploaded = upload(auth_client, "My Book (final).pdf", text_pdf(3))
    assert uploaded.status_code == 200, uploaded.content
    body = uploaded.json()
    assert body["uploadKey"].startswith("upl_")
    assert body["fileName"] == "My_Book_final.pdf"
    assert body["pageCount"] == 3
    assert body["kind"] == "pdf"

    created = auth_client.post("/v1/projects", {"uploadKey": body["uploadKey"], "name": "Le livre"}, format="json")
    assert created.status_code == 201, created.content
    project = created.json()
    assert project["status"] == "Created"
    assert project["name"] == "Le livre"
    assert project["ownerId"] == str(user.pk)
    assert project["targetLanguageCode"] == "en"
    assert project["approvalCount"] == 0
    assert project["pages"] == []
    assert project["currentBatchPageIds"] == []
    assert project["sourceObjectKey"]
    assert project["sourcePath"] == ""
    assert project["sourceSizeBytes"] == body["sizeBytes"]
    assert project["retentionDays"] == 7

    normalized = auth_client.post(f"/v1/projects/{project['id']}/normalize")
    assert normalized.status_code == 200, normalized.content
    result = normalized.json()
    assert result["status"] == "Calibrating"
    assert result["retentionDays"] == 30
    assert result["sourcePath"] == "My_Book_final.pdf"
    assert [page["index"] for page in result["pages"]] == [1, 2, 3]
    assert all(page["hasTextLayer"] and page["status"] == "Pending" and page["included"] for page in result["pages"])

    again = auth_client.post(f"/v1/projects/{project['id']}/normalize")
    assert again.status_code == 200
    assert Page.objects.filter(project_id=project["id"]).count() == 3

    image = auth_client.get(result["pages"][0]["thumbnailUrl"])
    assert image.status_code == 200
    assert image["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(b"".join(image.streaming_content))).size[0] <= 320


def test_a_zip_of_screenshots_comes_out_in_natural_order(auth_client):
    key = upload(auth_client, "shots.zip", images_zip(["page10.png", "page2.png", "page1.png"])).json()["uploadKey"]
    project = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()

    result = auth_client.post(f"/v1/projects/{project['id']}/normalize").json()

    assert project["name"] == "shots"
    assert [page["sourceName"] for page in result["pages"]] == ["page1.png", "page2.png", "page10.png"]


def test_an_anonymous_estimate_is_adopted_without_re_uploading(api_client, auth_client, user):
    estimate = upload(api_client, "book.pdf", text_pdf(2), url="/v1/anonymous-estimate")
    assert estimate.status_code == 200, estimate.content
    body = estimate.json()
    assert body["pageCount"] == 2
    assert body["hasTextLayer"] is True
    assert body["wordEstimate"] > 20
    assert body["anonymousUploadKey"].startswith("anon_")

    created = auth_client.post("/v1/projects", {"anonymousUploadKey": body["anonymousUploadKey"]}, format="json")
    second = UserFactory()
    from accounts.services.users import token_issue

    reused = api_client.post(
        "/v1/projects",
        {"anonymousUploadKey": body["anonymousUploadKey"]},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {token_issue(user=second).token}",
    )

    assert created.status_code == 201
    assert Upload.objects.get().owner == user
    assert_problem(reused, 409, "upload_already_used")
    assert Project.objects.count() == 1


def test_an_upload_key_of_another_owner_is_unknown(auth_client, other_user, jwt_client):
    key = upload(jwt_client(other_user), "book.pdf", text_pdf(1)).json()["uploadKey"]

    response = auth_client.post("/v1/projects", {"uploadKey": key}, format="json")

    assert_problem(response, 400, "upload_key_unknown")
    assert not Project.objects.exists()
    assert Upload.objects.get().adopted_at is None


@pytest.mark.parametrize(
    "body",
    [{}, {"uploadKey": "upl_x", "anonymousUploadKey": "anon_y"}, {"uploadKey": "upl_x", "sourcePath": "/tmp"}],
)
def test_a_project_needs_exactly_one_source(auth_client, body):
    assert_problem(auth_client.post("/v1/projects", body, format="json"), 400, "source_conflict")
    assert not Project.objects.exists()


def test_a_server_path_is_for_staff_inside_the_allowed_folders(auth_client, user, jwt_client, settings, tmp_path):
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "book.pdf").write_bytes(text_pdf(1))
    settings.SOURCE_PATH_ROOTS = [str(folder)]
    staff = UserFactory(is_staff=True)

    by_user = auth_client.post("/v1/projects", {"sourcePath": str(folder / "book.pdf")}, format="json")
    outside = jwt_client(staff).post("/v1/projects", {"sourcePath": "/etc/passwd"}, format="json")
    escape = jwt_client(staff).post("/v1/projects", {"sourcePath": str(folder / ".." / "books" / "..")}, format="json")
    allowed = jwt_client(staff).post("/v1/projects", {"sourcePath": str(folder / "book.pdf")}, format="json")

    assert_problem(by_user, 403, "source_path_forbidden")
    assert_problem(outside, 403, "source_path_forbidden")
    assert_problem(escape, 403, "source_path_forbidden")
    assert allowed.status_code == 201
    assert allowed.json()["sourcePath"] == str(folder / "book.pdf")
    assert allowed.json()["sourceObjectKey"] is None


def test_the_target_language_defaults_to_the_account_preference(auth_client, user):
    user.default_target_language = "ja"
    user.save()
    key = upload(auth_client, "book.pdf", text_pdf(1)).json()["uploadKey"]

    project = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()

    assert project["targetLanguageCode"] == "ja"


def test_an_unsupported_target_language_is_refused(auth_client):
    key = upload(auth_client, "book.pdf", text_pdf(1)).json()["uploadKey"]

    response = auth_client.post("/v1/projects", {"uploadKey": key, "targetLanguageCode": "xx"}, format="json")

    assert "targetLanguageCode" in assert_problem(response, 400, "validation_error")["errors"]
    assert Upload.objects.get().adopted_at is None


def test_a_double_submitted_create_makes_one_project(auth_client):
    key = upload(auth_client, "book.pdf", text_pdf(1)).json()["uploadKey"]

    first = auth_client.post("/v1/projects", {"uploadKey": key}, format="json")
    second = auth_client.post("/v1/projects", {"uploadKey": key}, format="json")

    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert second["Idempotent-Replayed"] == "true"
    assert Project.objects.count() == 1


def test_an_idempotency_key_replays_and_refuses_another_body(auth_client):
    key = upload(auth_client, "book.pdf", text_pdf(1)).json()["uploadKey"]
    headers = {"HTTP_IDEMPOTENCY_KEY": "create-book-1"}

    first = auth_client.post("/v1/projects", {"uploadKey": key, "name": "A"}, format="json", **headers)
    replay = auth_client.post("/v1/projects", {"name": "A", "uploadKey": key}, format="json", **headers)
    other = auth_client.post("/v1/projects", {"uploadKey": key, "name": "B"}, format="json", **headers)

    assert replay.json() == first.json()
    assert_problem(other, 422, "idempotency_key_reused")
    assert Project.objects.count() == 1


def test_a_refused_create_keeps_no_idempotency_record(auth_client):
    headers = {"HTTP_IDEMPOTENCY_KEY": "bad-1"}

    assert auth_client.post("/v1/projects", {}, format="json", **headers).status_code == 400
    assert not IdempotencyRecord.objects.exists()


def test_projects_are_listed_newest_first_paginated_by_preference_and_filtered(auth_client, user):
    user.projects_page_size = 2
    user.save()
    ids = []
    for number in range(3):
        key = upload(auth_client, f"b{number}.pdf", text_pdf(1)).json()["uploadKey"]
        created = auth_client.post("/v1/projects", {"uploadKey": key, "name": f"Book {number}"}, format="json")
        ids.append(created.json()["id"])
    auth_client.post(f"/v1/projects/{ids[0]}/normalize")

    first_page = auth_client.get("/v1/projects").json()
    calibrating = auth_client.get("/v1/projects?status=Calibrating").json()
    bad_filter = auth_client.get("/v1/projects?status=Sleeping")

    assert first_page["count"] == 3
    assert [item["id"] for item in first_page["results"]] == [ids[2], ids[1]]
    assert "pages" not in first_page["results"][0]
    assert [item["id"] for item in calibrating["results"]] == [ids[0]]
    assert_problem(bad_filter, 400, "validation_error")


def test_another_owners_project_is_not_found_everywhere(auth_client, other_user, jwt_client):
    key = upload(jwt_client(other_user), "book.pdf", text_pdf(1)).json()["uploadKey"]
    theirs = jwt_client(other_user).post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]

    for method, url in [
        ("get", f"/v1/projects/{theirs}"),
        ("patch", f"/v1/projects/{theirs}"),
        ("delete", f"/v1/projects/{theirs}"),
        ("post", f"/v1/projects/{theirs}/normalize"),
        ("get", f"/v1/projects/{theirs}/pages"),
    ]:
        assert_problem(getattr(auth_client, method)(url, {}, format="json"), 404, "not_found")
    assert Project.objects.filter(pk=theirs, status="Created").exists()


def test_rename_and_language_override_then_delete_removes_every_file(
    auth_client, local_storage, django_capture_on_commit_callbacks
):
    key = upload(auth_client, "book.pdf", text_pdf(2)).json()["uploadKey"]
    project_id = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]
    auth_client.post(f"/v1/projects/{project_id}/normalize")
    assert stored_files(local_storage)

    renamed = auth_client.patch(
        f"/v1/projects/{project_id}", {"name": "Renamed", "sourceLanguageOverride": "de"}, format="json"
    ).json()
    cleared = auth_client.patch(f"/v1/projects/{project_id}", {"sourceLanguageOverride": None}, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        deleted = auth_client.delete(f"/v1/projects/{project_id}")

    assert renamed["name"] == "Renamed"
    assert renamed["sourceLanguageOverride"] == "de"
    assert cleared["sourceLanguageOverride"] is None
    assert cleared["name"] == "Renamed"
    assert deleted.status_code == 204
    assert not Project.objects.exists()
    assert not Page.objects.exists()
    assert stored_files(local_storage) == []


def test_pages_can_be_excluded_and_given_a_source_language(auth_client):
    key = upload(auth_client, "book.pdf", text_pdf(4)).json()["uploadKey"]
    project_id = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]
    pages = auth_client.post(f"/v1/projects/{project_id}/normalize").json()["pages"]

    excluded = auth_client.post(
        f"/v1/projects/{project_id}/pages/selection", {"included": False, "indexes": [1, 2]}, format="json"
    )
    override = auth_client.patch(
        f"/v1/projects/{project_id}/pages/{pages[3]['id']}", {"sourceLanguageOverride": "fr"}, format="json"
    )
    unknown = auth_client.post(
        f"/v1/projects/{project_id}/pages/selection", {"included": False, "indexes": [99]}, format="json"
    )
    listing = auth_client.get(f"/v1/projects/{project_id}/pages").json()["results"]

    assert excluded.json() == {"updated": 2}
    assert override.json()["sourceLanguageOverride"] == "fr"
    assert_problem(unknown, 400, "validation_error")
    assert [page["included"] for page in listing] == [False, False, True, True]


def test_uploads_over_the_size_limit_are_refused_and_leave_nothing(auth_client, settings, local_storage):
    settings.UPLOAD_MAX_BYTES = 1000

    response = upload(auth_client, "book.pdf", text_pdf(5) + b" " * 2000)

    assert_problem(response, 413, "request_too_large")
    assert not Upload.objects.exists()
    assert stored_files(local_storage) == []


def test_a_refused_file_leaves_nothing_behind(auth_client, local_storage):
    response = upload(auth_client, "book.pdf", b"%PDF-1.7 this is not really a pdf")

    assert_problem(response, 400, "file_corrupt")
    assert not Upload.objects.exists()
    assert stored_files(local_storage) == []


def test_upload_limits_are_the_configured_ones(auth_client, settings):
    settings.UPLOAD_MAX_BYTES = 12345

    body = auth_client.get("/v1/uploads/limits").json()

    assert body == {"acceptedExtensions": settings.UPLOAD_EXTENSIONS, "maxFileSizeBytes": 12345}


def test_unadopted_uploads_expire_with_their_files(auth_client, local_storage, django_capture_on_commit_callbacks):
    adopted = upload(auth_client, "a.pdf", text_pdf(1)).json()["uploadKey"]
    upload(auth_client, "b.pdf", text_pdf(1))
    auth_client.post("/v1/projects", {"uploadKey": adopted}, format="json")
    Upload.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    with django_capture_on_commit_callbacks(execute=True):
        purged = uploads_expired_purge()

    assert purged == 1
    assert Upload.objects.count() == 1
    assert [path for path in stored_files(local_storage) if path.endswith("b.pdf")] == []
    assert default_storage.exists(Project.objects.get().source_object_key)


def test_the_anonymous_estimate_is_rate_limited(api_client, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "estimate": "1/min"}

    upload(api_client, "a.png", png(), url="/v1/anonymous-estimate")

    assert_problem(upload(api_client, "a.png", png(), url="/v1/anonymous-estimate"), 429, "rate_limited")


def test_reading_a_project_costs_the_same_queries_whatever_its_page_count(auth_client):
    def read_cost(pages: int) -> int:
        key = upload(auth_client, f"book{pages}.pdf", text_pdf(pages)).json()["uploadKey"]
        project_id = auth_client.post("/v1/projects", {"uploadKey": key}, format="json").json()["id"]
        auth_client.post(f"/v1/projects/{project_id}/normalize")
        with CaptureQueriesContext(connection) as queries:
            assert auth_client.get(f"/v1/projects/{project_id}").status_code == 200
        return len(queries.captured_queries)

    assert read_cost(2) == read_cost(9) <= 4
