"""What a server killed mid-upload leaves, and how it goes (issue 15, item 6): a stored
upload file with no row is removed by the purge once past its grace, never one a row or a
project names; an upload temporary file goes when the process that wrote it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from core.uploads import TEMPORARY_FILE_PREFIX, owned_temporary_file, upload_temporary_files_sweep
from projects.models import Project, ProjectStatus, SourceKind, Upload
from projects.services.uploads import uploads_orphaned_purge
from projects.tasks import uploads_orphaned_purge as uploads_orphaned_purge_task
from tests.support.pdfs import pdf_bytes

pytestmark = pytest.mark.django_db


def test_the_purge_removes_a_stored_upload_without_a_row_and_keeps_every_named_one(
    auth_client, user, stored_keys: Callable[[], list[str]]
):
    uploaded = auth_client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("kept.pdf", pdf_bytes(1))}, format="multipart"
    )
    assert uploaded.status_code == 200, uploaded.content
    adopted = auth_client.post(
        "/v1/uploads", {"file": SimpleUploadedFile("adopted.pdf", pdf_bytes(1))}, format="multipart"
    ).json()["uploadKey"]
    assert (
        auth_client.post(
            "/v1/projects", {"name": "Book", "uploadKey": adopted, "targetLanguageCode": "es"}, format="json"
        ).status_code
        == 201
    )
    # A source no Upload row names any more (a staff import, an older deployment).
    source = default_storage.save(f"uploads/{user.pk}/0000/source.pdf", ContentFile(b"%PDF-1.4"))
    Project.objects.create(
        owner=user,
        name="Old",
        status=ProjectStatus.CREATED,
        target_language_code="es",
        source_kind=SourceKind.PDF,
        source_object_key=source,
        created_at=timezone.now(),
    )
    # What a server killed between storing a file and writing its row leaves.
    orphan = default_storage.save(f"uploads/{user.pk}/1111/book.pdf", ContentFile(b"%PDF-1.4 orphan"))
    named = sorted({*Upload.objects.values_list("storage_key", flat=True), source})

    assert uploads_orphaned_purge_task() == 0  # younger than the grace: it may be a row being written
    assert stored_keys() == sorted([*named, orphan])

    assert uploads_orphaned_purge(older_than=timedelta(0)) == 1

    assert stored_keys() == named


def test_the_purge_removes_an_orphan_past_the_grace(local_storage: Path, user):
    orphan = default_storage.save(f"uploads/{user.pk}/2222/book.pdf", ContentFile(b"%PDF-1.4"))
    two_hours_ago = (timezone.now() - timedelta(hours=2)).timestamp()
    path = local_storage / orphan
    os.utime(path, (two_hours_ago, two_hours_ago))

    assert uploads_orphaned_purge_task() == 1

    assert not path.exists()
    assert not path.parent.exists()  # its folder goes with it


def ended_process_tag() -> str:
    """The <pid>.<start> of a process that ran and ended."""
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; print(os.getpid(), open(f'/proc/{os.getpid()}/stat').read().rsplit(')', 1)[1].split()[19])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    pid, start = child.stdout.split()
    return f"{pid}.{start}"


def test_the_sweep_removes_the_temporary_files_of_ended_processes_only(settings, tmp_path: Path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    dead = tmp_path / f"{TEMPORARY_FILE_PREFIX}{ended_process_tag()}-abcd.upload.pdf"
    dead.write_bytes(b"x" * 1000)
    reused_pid = tmp_path / f"{TEMPORARY_FILE_PREFIX}{os.getpid()}.1-abcd.upload.pdf"  # this pid, another start
    reused_pid.write_bytes(b"x")
    other = tmp_path / "someone-elses.tmp"
    other.write_bytes(b"x")

    with owned_temporary_file(suffix=".upload.pdf") as alive:
        alive.write(b"being written")
        removed = upload_temporary_files_sweep()

        assert removed == 2
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted([Path(alive.name).name, other.name])
