"""Intake on S3: the same flow against moto's S3 server (a real HTTP S3 endpoint)."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from projects.models import Page, Project
from tests.support.pdfs import pdf_bytes
from tests.support.s3 import BUCKET

pytestmark = pytest.mark.django_db


def objects(client) -> list[str]:
    return sorted(item["Key"] for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_intake_stores_sources_and_pages_in_s3_and_deletes_them(
    auth_client, s3_bucket, django_capture_on_commit_callbacks
):
    book = pdf_bytes(2, text=lambda n: f"Page {n} of a book stored in object storage, with words enough.")

    uploaded = auth_client.post("/v1/uploads", {"file": SimpleUploadedFile("book.pdf", book)}, format="multipart")
    project_id = auth_client.post("/v1/projects", {"uploadKey": uploaded.json()["uploadKey"]}, format="json").json()[
        "id"
    ]
    result = auth_client.post(f"/v1/projects/{project_id}/normalize").json()

    keys = objects(s3_bucket)
    project = Project.objects.get()
    assert project.source_object_key in keys
    assert s3_bucket.get_object(Bucket=BUCKET, Key=project.source_object_key)["Body"].read() == book
    for page in Page.objects.all():
        assert page.image_key in keys
        assert page.thumbnail_key in keys
    image = auth_client.get(result["pages"][1]["imageUrl"])
    assert image.status_code == 200
    assert Image.open(io.BytesIO(b"".join(image.streaming_content))).format == "PNG"

    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.delete(f"/v1/projects/{project_id}").status_code == 204

    assert objects(s3_bucket) == []


def test_a_refused_upload_leaves_nothing_in_s3(auth_client, s3_bucket):
    response = auth_client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("book.pdf", b"%PDF-1.4 broken")}, format="multipart"
    )

    assert response.status_code == 400
    assert objects(s3_bucket) == []
