"""The SDK and the `booktranslate` command against the real service (a uvicorn API server
and a Celery worker on this test's PostgreSQL and Redis, the echo engine translating only
English <-> Spanish): a book in one call, a journey resumed by a new client after the first
died, the typed errors, and the command's output and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from booktranslate import (
    BookProgress,
    Client,
    InsufficientCredit,
    LanguagePairUnsupported,
    NotFound,
)
from tests.e2e.processes import Services
from tests.support.pdfs import pdf_bytes

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

CLI = Path(sys.executable).with_name("booktranslate")
PASSWORD = "Lantern-Orchard-47-Quietly"
# 7 pages: the ladder runs 1, 5, then the last page: three batches.
BOOK_PAGES = 7
BATCHES = 3
# Index 8 always fails: a book of 9 pages ends CompletedWithErrors, shorter ones never reach it.
ENGINE = {"TRANSLATION_ENGINE_OPTIONS": '{"pairs": ["en-es", "es-en"], "fail_pages": [8], "fail_attempts": 0}'}
# A deadline against a hang (WaitTimedOut), not a timing assertion.
WAIT = 180


def page_text(number: int) -> str:
    return f"The lighthouse keeper wrote page {number} of his long diary tonight."


def service(services: Services) -> str:
    """The API server and a worker on every queue the journey uses; the base URL."""
    base_url = services.api_server(DEVELOPMENT_DEPLOYMENT="true", **ENGINE)
    services.worker("worker", queues="process,retry,default,export", **ENGINE)
    return base_url


def account(base_url: str, credit_usd: float) -> Client:
    """A client signed in (JWT) as a new account with this much credit."""
    client = Client(base_url)
    client.register({"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": PASSWORD, "displayName": "Ada"})
    if credit_usd:
        client.top_up_wallet({"amount": credit_usd, "method": "manual"})
    return client


def book(folder: Path, pages: int = BOOK_PAGES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "diary.pdf"
    path.write_bytes(pdf_bytes(pages, text=page_text))
    return path


def batch_charges(client: Client) -> list[dict[str, Any]]:
    entries = client.list_ledger_entries(page_size=200)["results"]
    return [entry for entry in entries if entry["kind"] == "batch_charge"]


def test_translate_book_in_one_call_writes_each_format_and_reports_its_progress(services, tmp_path):
    client = account(service(services), credit_usd=20)
    seen: list[BookProgress] = []

    result = client.translate_book(
        book(tmp_path),
        target="es",
        formats=["Epub", "Pdf"],
        out_dir=tmp_path / "out",
        progress=seen.append,
        timeout_s=WAIT,
    )

    assert result.state == "Complete"
    assert (result.translated_pages, result.failed_pages) == (BOOK_PAGES, 0)
    assert result.waited_on == "hub"
    epub, pdf = result.files
    assert (epub.parent, epub.suffix, pdf.suffix) == (tmp_path / "out", ".epub", ".pdf")
    assert pdf.read_bytes().startswith(b"%PDF")
    with zipfile.ZipFile(epub) as archive:
        text = " ".join(archive.read(name).decode(errors="replace") for name in archive.namelist())
    assert "[echo → es]" in text
    assert "page 7 of his long diary" in text

    steps = [progress.step for progress in seen]
    order = ["upload", "create", "process", "translate", "export", "download", "done"]
    assert [step for step in order if step in steps] == order
    assert [steps.index(step) for step in order] == sorted(steps.index(step) for step in order)
    translated = [progress.translated_pages for progress in seen if progress.step == "translate"]
    assert translated == sorted(translated)
    assert translated[-1] == BOOK_PAGES
    assert {progress.total_pages for progress in seen if progress.step == "translate"} == {BOOK_PAGES}
    assert max(progress.batch for progress in seen) == BATCHES
    assert seen[-1].state == "Complete"
    assert seen[-1].cost_usd == result.cost_usd
    charged = sum(-float(entry["amountUsd"]) for entry in batch_charges(client))
    assert charged <= float(result.cost_usd) + 1e-9


class ClientDied(Exception):
    """The first client's end, as its process would end: in the middle of the journey."""


def test_a_new_client_resumes_a_journey_after_the_first_died_and_the_book_is_charged_once(services, tmp_path):
    base_url = service(services)
    first = account(base_url, credit_usd=20)
    key = first.create_api_key({"name": "resumer"})["secret"]

    def die_once_processing(progress: BookProgress) -> None:
        if progress.step == "translate":  # process was accepted; the ladder runs without us
            raise ClientDied(progress.project_id)

    with pytest.raises(ClientDied) as died:
        first.translate_book(book(tmp_path), target="es", formats=["Markdown"], out_dir=tmp_path / "out",
                             progress=die_once_processing, timeout_s=WAIT)  # fmt: skip
    project_id = str(died.value)
    first.close()

    second = Client(base_url, api_key=key)
    result = second.resume(project_id, formats=["Markdown"], out_dir=tmp_path / "out", hub=False, timeout_s=WAIT)
    again = second.resume(project_id, formats=["Markdown"], out_dir=tmp_path / "out", timeout_s=WAIT)

    assert result.state == again.state == "Complete"
    assert result.waited_on == "polling"
    assert result.files == again.files
    (markdown,) = result.files
    for number in range(1, BOOK_PAGES + 1):
        assert f"[echo → es] {page_text(number)}" in markdown.read_text()
    assert second.get_project(project_id)["approvalCount"] == BATCHES
    charges = batch_charges(second)
    assert len(charges) == BATCHES
    assert len({entry["causeId"] for entry in charges}) == BATCHES
    holds = [entry for entry in second.list_ledger_entries(page_size=200)["results"] if entry["kind"] == "hold"]
    assert len(holds) == BATCHES


def test_refusals_are_raised_as_the_problem_classes_of_their_codes(services, tmp_path):
    base_url = service(services)
    broke = account(base_url, credit_usd=0)

    with pytest.raises(InsufficientCredit) as unpaid:
        broke.translate_book(book(tmp_path, pages=2), target="es", formats=["Markdown"], out_dir=tmp_path)
    with pytest.raises(LanguagePairUnsupported) as unsupported:
        broke.translate_book(book(tmp_path, pages=2), target="fr", formats=["Markdown"], out_dir=tmp_path)
    with pytest.raises(NotFound) as missing:
        broke.get_project_status(str(uuid.uuid4()))

    assert (unpaid.value.status, unpaid.value.code) == (402, "insufficient_credit")
    assert unpaid.value.request_id
    assert "shortfall" in unpaid.value.extra
    assert unsupported.value.status == 400
    assert unsupported.value.extra["supportedPairs"]
    assert unpaid.value.project_id
    assert unsupported.value.project_id is None  # refused at create: there is no book
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert list(tmp_path.glob("*.md")) == []
    assert broke.get_wallet()["reservedUsd"] == 0


def run_cli(*args: str, url: str, api_key: str | None, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BOOKTRANSLATE_URL": url, "XDG_CONFIG_HOME": str(home)}
    env.pop("BOOKTRANSLATE_API_KEY", None)
    if api_key is not None:
        env["BOOKTRANSLATE_API_KEY"] = api_key
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_the_command_translates_a_book_and_says_how_each_run_ended_in_its_exit_code(services, tmp_path):
    base_url = service(services)
    client = account(base_url, credit_usd=20)
    key = client.create_api_key({"name": "cli"})["secret"]
    broke_key = account(base_url, credit_usd=0).create_api_key({"name": "cli"})["secret"]
    home = tmp_path / "config"
    path = book(tmp_path)

    translated = run_cli("translate", str(path), "--to", "es", "--format", "epub,md", "--out", str(tmp_path / "out"),
                         url=base_url, api_key=key, home=home)  # fmt: skip
    assert translated.returncode == 0, translated.stderr
    files = [Path(line) for line in translated.stdout.splitlines()]
    assert [file.suffix for file in files] == [".epub", ".md"]
    assert all(file.is_file() and file.stat().st_size for file in files)
    assert f"{BOOK_PAGES}/{BOOK_PAGES} pages" in translated.stderr
    assert "Complete" in translated.stderr

    wallet = run_cli("wallet", url=base_url, api_key=key, home=home)
    assert wallet.returncode == 0, wallet.stderr
    assert wallet.stdout.startswith("balance:")

    (home / "booktranslate").mkdir(parents=True)
    (home / "booktranslate" / "config.toml").write_text(f'api_key = "{key}"\n')
    listed = run_cli("keys", "list", url=base_url, api_key=None, home=home)
    assert listed.returncode == 0, listed.stderr
    assert "cli" in listed.stdout

    failing = run_cli("translate", str(book(tmp_path / "long", pages=9)), "--to", "es", "--format", "md", "--out",
                      str(tmp_path / "long"), url=base_url, api_key=key, home=home)  # fmt: skip
    assert failing.returncode == 5, failing.stderr
    assert Path(failing.stdout.strip()).is_file()
    assert "1 of the book's pages could not be translated" in failing.stderr
    assert "CompletedWithErrors" in failing.stderr

    unpaid = run_cli("translate", str(path), "--to", "es", url=base_url, api_key=broke_key, home=tmp_path)
    refused = run_cli("wallet", url=base_url, api_key="svc_sk_live_" + "A" * 49, home=tmp_path)
    usage = run_cli("translate", str(path), "--format", "epub", url=base_url, api_key=key, home=tmp_path)
    unreachable = run_cli("wallet", url="http://127.0.0.1:9", api_key=key, home=tmp_path)

    assert (unpaid.returncode, refused.returncode, usage.returncode) == (4, 3, 2)
    assert "402 insufficient_credit" in unpaid.stderr
    assert "booktranslate resume" in unpaid.stderr
    assert "401 credential_malformed" in refused.stderr
    assert unreachable.returncode == 6
    assert "service_unreachable" in unreachable.stderr
