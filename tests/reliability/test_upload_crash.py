"""An API server killed (SIGKILL) in the middle of uploads (issue 15, item 6): what it had
spooled does not outlive it once a server runs again, and what it had stored without its
row is removed by the purge. A client that goes away mid-body leaves nothing either."""

from __future__ import annotations

import contextlib
import http.client
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from accounts.services.users import token_issue
from projects.models import Upload
from projects.services.uploads import uploads_orphaned_purge
from tests.e2e.processes import Services, wait_until
from tests.factories import UserFactory
from tests.support.pdfs import pdf_bytes
from tests.support.raw_http import RawRequest, multipart, spooled_bytes

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

BOOK_BYTES = 40 * 1024 * 1024  # large enough that parsing, checking and storing it take a while


def files_in(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file()) if folder.exists() else []


def upload_in_background(base: str, token: str, body: bytes, content_type: str) -> threading.Thread:
    """Send the whole upload from a thread of its own and wait for the answer (closing
    the connection early would abort the request); the answer is not wanted."""

    def send() -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
        request = RawRequest(base, "POST", "/v1/uploads", headers=headers, length=len(body))
        try:
            for start in range(0, len(body), 1024 * 1024):
                if not request.send(body[start : start + 1024 * 1024]):
                    return
            with contextlib.suppress(OSError, http.client.HTTPException):  # the server is killed
                request.answer(timeout=120)
        finally:
            request.close()

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def killed_when(services: Services, base: str, condition: Callable[[], object], *, token: str) -> None:
    """Upload the book to the server at `base` and SIGKILL it the moment `condition` holds."""
    body, content_type = multipart(pdf_bytes(3).ljust(BOOK_BYTES, b"\n"))
    server = services.started[-1]
    sender = upload_in_background(base, token, body, content_type)
    wait_until(condition, what="the upload to reach the moment of the kill", services=services, every=0.002)
    server.kill()
    sender.join(timeout=30)


def test_a_server_killed_mid_upload_leaves_no_temporary_file_and_no_stored_file_without_a_row(
    services: Services, tmp_path: Path, local_storage: Path
):
    spool, media = tmp_path / "spool", local_storage  # the servers store where this test's purge looks
    spool.mkdir()
    environment = {"TMPDIR": spool, "FILE_UPLOAD_TEMP_DIR": spool, "MEDIA_ROOT": media}
    token = token_issue(user=UserFactory()).token

    # Killed while the upload's named temporary file is being written and checked.
    base = services.api_server(**environment)
    killed_when(services, base, lambda: files_in(spool), token=token)
    left_by_first = files_in(spool)
    # Killed while the file is being stored (the row is written once it is).
    base = services.api_server(**environment)
    killed_when(services, base, lambda: files_in(media / "uploads"), token=token)
    stored_by_second = files_in(media / "uploads")

    base = services.api_server(**environment)  # a server starts again: it sweeps
    uploads_orphaned_purge(older_than=timedelta(0))

    assert left_by_first, "the first kill came too late to leave a temporary file"
    assert files_in(spool) == []
    assert stored_by_second, "the second kill came before anything was stored"
    stored = {str(path.relative_to(media)) for path in files_in(media)}
    assert stored == set(Upload.objects.values_list("storage_key", flat=True))


def test_a_client_gone_mid_upload_leaves_nothing_spooled(services: Services, tmp_path: Path):
    spool = tmp_path / "spool"
    spool.mkdir()
    base = services.api_server(TMPDIR=spool, FILE_UPLOAD_TEMP_DIR=spool, FILE_UPLOAD_MAX_MEMORY_SIZE=64 * 1024)
    pid = services.started[-1].process.pid
    token = token_issue(user=UserFactory()).token
    body, content_type = multipart(pdf_bytes(3).ljust(BOOK_BYTES, b"\n"))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}

    request = RawRequest(base, "POST", "/v1/uploads", headers=headers, length=len(body))
    request.send(body[: BOOK_BYTES // 2])
    wait_until(lambda: spooled_bytes(pid=pid, folder=spool) > 0, what="the body to be spooled", services=services)
    request.close()

    wait_until(lambda: spooled_bytes(pid=pid, folder=spool) == 0, what="the spool to go", services=services)
    assert files_in(spool) == []
    assert not Upload.objects.exists()


def test_a_server_has_found_its_temporary_folder_before_it_serves(tmp_path: Path):
    """Python's tempfile writes and deletes a probe file in TMPDIR the first time it is used;
    a server killed during that probe leaves the empty file behind, which no sweep can tell
    from anyone else's. With FILE_UPLOAD_TEMP_DIR set, nothing used tempfile before the first
    large request did: the server now finds its folder as it starts."""
    spool = tmp_path / "spool"
    spool.mkdir()
    environment = {**os.environ, "TMPDIR": str(spool), "FILE_UPLOAD_TEMP_DIR": str(tmp_path)}
    found = subprocess.run(
        [sys.executable, "-c", "import tempfile, config.asgi; print(tempfile.tempdir)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=environment,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert found.stdout.strip().splitlines()[-1] == str(spool)
