"""A client generated from the live /v1/schema with openapi-python-client (pinned in
requirements/dev.txt, configured by docs/clients/openapi-python-client.yaml) drives a whole
book through the real API server and a worker, with no hand patches: register, top up,
upload, create, normalize, process, poll, export, download; then deletes the account."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.processes import REPO_ROOT, Services, wait_until
from tests.support.pdfs import pdf_bytes

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
GENERATOR_CONFIG = REPO_ROOT / "docs" / "clients" / "openapi-python-client.yaml"
PACKAGE = "bts_client"
# More pages than NORMALIZE_INLINE_MAX_PAGES (10): normalize answers Calibrating at once and
# the worker renders the pages while process is already accepted (docs/intake.md).
BOOK_PAGES = 14
PASSWORD = "Lantern-Orchard-47-Quietly"


def page_text(number: int) -> str:
    return f"Chapter {number} begins here with a few words of plain text."


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    """A function that generates the client of the server at a base URL into tmp_path and
    imports it whole (every module must import); unloaded again afterwards."""

    def generate(base_url: str) -> Any:
        result = subprocess.run(
            [
                str(GENERATOR),
                "generate",
                "--url",
                f"{base_url}/v1/schema",
                "--config",
                str(GENERATOR_CONFIG),
                "--meta",
                "none",
                "--output-path",
                str(tmp_path / PACKAGE),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            # It formats what it wrote with the ruff beside it (a dependency of the generator).
            env={**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "Warning" not in output, output  # nothing left out of the client
        package = importlib.import_module(PACKAGE)
        for module in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
            importlib.import_module(module.name)
        return package

    sys.path.insert(0, str(tmp_path))
    try:
        yield generate
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_a_client_generated_from_the_schema_runs_a_whole_book(
    services: Services, generated: Callable[[str], Any]
) -> None:
    base_url = services.api_server(DEVELOPMENT_DEPLOYMENT="true")
    services.worker("worker", queues="process,retry,default,export", ENGINE_CONCURRENCY=4)
    bts = generated(base_url)
    api, models = bts.api, bts.models

    anonymous = bts.Client(base_url=base_url, raise_on_unexpected_status=True)
    session = api.auth.register.sync(
        client=anonymous,
        body=models.RegisterInputRequest(email="reader@example.com", password=PASSWORD, display_name="Ada"),
    )
    assert isinstance(session, models.Session), session
    client = bts.AuthenticatedClient(base_url=base_url, token=session.token, raise_on_unexpected_status=True)

    top_up = api.wallet.top_up_wallet.sync(
        client=client,
        body=models.TopUpInputRequest(amount=20.0, method=models.TopUpMethodEnum.MANUAL),
        idempotency_key=str(uuid.uuid4()),
    )
    assert isinstance(top_up, models.TopUpView), top_up
    assert top_up.status == models.TopUpStatusEnum.CONFIRMED

    book = bts.types.File(
        payload=BytesIO(pdf_bytes(BOOK_PAGES, text=page_text)), file_name="book.pdf", mime_type="application/pdf"
    )
    upload = api.uploads.upload_file.sync(client=client, body=models.UploadInputRequest(file=book))
    assert isinstance(upload, models.UploadResult), upload

    project = api.projects.create_project.sync(
        client=client,
        body=models.ProjectCreateInputRequest(
            name="A generated book", upload_key=upload.upload_key, target_language_code=models.LanguageCodeEnum.FR
        ),
        idempotency_key=str(uuid.uuid4()),
    )
    assert isinstance(project, models.Project), project

    normalized = api.projects.normalize_project.sync(project.id, client=client)
    assert isinstance(normalized, models.Project), normalized
    assert normalized.status == models.ProjectStatusEnum.CALIBRATING
    assert len(normalized.pages) == BOOK_PAGES

    key = str(uuid.uuid4())
    handle = api.processing.process_project.sync(project.id, client=client, idempotency_key=key)
    assert isinstance(handle, models.JobHandle), handle
    retried = api.processing.process_project.sync_detailed(project.id, client=client, idempotency_key=key)
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert retried.parsed.job_id == handle.job_id

    def complete() -> bool:
        view = api.processing.get_project_status.sync(project.id, client=client)
        assert isinstance(view, models.ProjectStatusView), view
        assert view.state.value not in ("Failed", "CompletedWithErrors", "PausedNeedsCredit"), view
        return bool(view.state == models.ProjectStatusEnum.COMPLETE)

    wait_until(complete, what="the book to be Complete", services=services, timeout=120)
    job = api.processing.get_job.sync(handle.job_id, client=client)
    assert job.status == models.JobStatusEnum.SUCCEEDED

    asked = api.exports.request_export.sync(
        project.id,
        client=client,
        body=models.ExportRequestRequest(format_=models.FormatEnum.MARKDOWN),
        idempotency_key=str(uuid.uuid4()),
    )
    assert isinstance(asked, list), asked

    def markdown_ready() -> Any:
        files = api.exports.list_exports.sync(project.id, client=client)
        ready = models.ExportFileEntryStatusEnum.READY
        return next((file for file in files if file.format_ == "Markdown" and file.status == ready), None)

    entry: Any = wait_until(markdown_ready, what="the Markdown export", services=services, timeout=120)
    download = api.exports.download_export.sync_detailed(project.id, entry.file_name, client=client)

    assert download.status_code == 200
    assert isinstance(download.parsed, bts.types.File)
    assert download.headers["Content-Type"].startswith("text/markdown")
    assert "attachment" in download.headers["Content-Disposition"]
    assert download.headers["X-Request-Id"]
    text = download.parsed.payload.read().decode()
    for number in range(1, BOOK_PAGES + 1):
        assert f"[echo → fr] {page_text(number)}" in text

    missing = api.projects.get_project.sync(uuid.uuid4(), client=client)
    assert isinstance(missing, models.Problem)
    assert missing.code == models.ProblemCodeEnum.NOT_FOUND

    # DELETE /v1/me takes the password in a JSON body: the client must send it.
    deleted = api.account.delete_me.sync_detailed(
        client=client, body=models.AccountDeleteInputRequest(password=PASSWORD)
    )
    assert deleted.status_code == 204, deleted.content
    gone = api.account.get_me.sync(client=client)
    assert isinstance(gone, models.Problem)
    assert gone.code == models.ProblemCodeEnum.ACCOUNT_DISABLED
