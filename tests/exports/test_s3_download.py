"""Downloads with S3 storage, against moto's S3 server (a real HTTP S3 endpoint): the
export is stored in the bucket, the download redirects to a pre-signed URL, and that URL
gives the file with the Content-Disposition and Content-Type the export asks for."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests
from django.utils import timezone

from exports.models import ExportFile
from tests.exports.test_export_api import run_export_queue, translated_book
from tests.support.problems import assert_problem
from tests.support.s3 import BUCKET

pytestmark = pytest.mark.django_db


def test_the_download_redirects_to_a_presigned_url_that_saves_under_the_utf8_name(
    user, auth_client, s3_bucket, s3_endpoint
):
    project = translated_book(user, name="Мастер и Маргарита")
    auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json")
    assert run_export_queue() == 1
    export = ExportFile.objects.get()
    stored = s3_bucket.get_object(Bucket=BUCKET, Key=export.storage_key)["Body"].read()
    assert b"La *vieille* maison, page 3." in stored
    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert listed["sizeBytes"] == len(stored)

    response = auth_client.get(listed["url"])
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(f"{s3_endpoint}/{BUCKET}/")
    query = parse_qs(urlsplit(location).query)
    assert "X-Amz-Signature" in query or "Signature" in query  # pre-signed, not public
    disposition = f"attachment; filename*=UTF-8''{quote(export.save_as_name)}"
    assert query["response-content-disposition"] == [disposition]

    fetched = requests.get(location, timeout=30)  # what the browser does with the redirect
    assert fetched.status_code == 200
    assert fetched.content == stored
    assert fetched.headers["Content-Disposition"] == disposition
    assert export.save_as_name.startswith("мастер-и-маргарита-")
    assert fetched.headers["Content-Type"].startswith("text/markdown")


def test_a_stale_file_is_refused_before_any_redirect(user, auth_client, s3_bucket):
    project = translated_book(user)
    auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "PlainText"}, format="json")
    run_export_queue()
    (listed,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    page = project.pages.get(index=1)
    page.translation, page.translated_at = "Changée.", timezone.now()
    page.save()
    assert_problem(auth_client.get(listed["url"]), 410, "export_outdated")
