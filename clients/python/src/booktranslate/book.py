"""A whole book in one call, and its resumption.

The journey is upload -> create -> normalize -> process -> wait -> export -> download. The
service runs the ladder by itself once `process` is accepted (1, 5, 25, 100 pages, then the
rest, each batch paid from the wallet as it starts): the client calls nothing between
batches, it only waits: it reads GET /v1/projects/{id}/status when the status hub tells it
the book moved (a state change, a batch ended) and at least every `hub_poll_interval_s`, or,
without the hub (`booktranslate.hub`), every `poll_interval_s`. A wallet too low for the next
batch pauses the book (PausedNeedsCredit); credit that lands resumes it.

Resumable: every step after create reads the book's state first and does only what is
missing, and every call that starts or charges something carries an Idempotency-Key derived
from the project id and the step (`booktranslate:<project id>:process`, `...:export:<format>`),
so a new client that resumes after the old one died anywhere repeats nothing: the service
answers a repeated key with the first answer, and `process` keeps one job in flight per book.
The create key is derived from the upload key for the same reason.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

from booktranslate import models
from booktranslate._operations import Operations
from booktranslate._transport import Transport
from booktranslate.errors import BookTranslateError, TranslationStopped, WaitTimedOut
from booktranslate.hub import HubAlarm, HubUnavailable
from booktranslate.problems import InsufficientCredit, NothingToProcess, SpendingCeilingReached

DONE_STATES = frozenset({"Complete", "CompletedWithErrors"})
STOPPED_STATES = frozenset({"Failed", "Cancelling", "Cancelled"})
MEDIA_TYPES = {".pdf": "application/pdf", ".zip": "application/zip", ".png": "image/png", ".jpg": "image/jpeg"}


@dataclass(frozen=True)
class BookProgress:
    """What the progress callback is told, each time something changed.

    `step`: upload, create, normalize, process, translate, export, download or done.
    `batch`: the batch of the ladder running or next to run (1 for the first); once the
    book is done, how many batches it took. `batch_size`: that batch's pages (the running
    job's, else the ladder's next rung; None for the final "all remaining" rung, and once
    done).
    `cost_usd`: the measured cost of the pages translated so far (billing charges at most
    this; the wallet's ledger has the charges)."""

    step: str
    project_id: str | None = None
    state: str | None = None
    translated_pages: int = 0
    total_pages: int = 0
    failed_pages: int = 0
    batch: int = 0
    batch_size: int | None = None
    cost_usd: Decimal = Decimal(0)
    detail: str = ""


@dataclass(frozen=True)
class BookResult:
    """A finished journey: the book's final state (Complete, or CompletedWithErrors with
    `failed_pages` pages that could not be translated) and the files written. `waited_on`:
    "hub" when the status hub woke the wait, "polling" when only status reads did."""

    project_id: str
    state: str
    files: list[Path] = field(default_factory=list)
    translated_pages: int = 0
    failed_pages: int = 0
    cost_usd: Decimal = Decimal(0)
    waited_on: str = "polling"


class BookJourney:
    """One run of the journey with a client's operations and transport; `start` from a
    file, `resume` from a project id."""

    def __init__(
        self,
        client: Operations,
        transport: Transport,
        *,
        formats: list[str],
        out_dir: Path,
        progress: Callable[[BookProgress], None] | None,
        poll_interval_s: float,
        sleep: Callable[[float], None],
        hub: bool = True,
        hub_poll_interval_s: float = 5.0,
        timeout_s: float | None = None,
    ) -> None:
        self.client = client
        self.transport = transport
        self.formats = formats
        self.out_dir = out_dir
        self.progress = progress
        self.poll_interval_s = poll_interval_s
        self.sleep = sleep
        self.hub = hub
        self.hub_poll_interval_s = hub_poll_interval_s
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.waited_on = "polling"
        self.job_sizes: dict[str, int] = {}
        self.last: BookProgress | None = None

    def start(self, path: Path, *, target: str, name: str | None) -> BookResult:
        """Uploads and creates the project, then goes on as `resume` does."""
        self._tell(BookProgress(step="upload", detail=path.name))
        media_type = MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream")
        with path.open("rb") as book:
            upload = self.client.upload_file((path.name, book, media_type))
        self._tell(BookProgress(step="create", detail=upload["fileName"]))
        body: models.ProjectCreateInputRequest = {
            "name": name or path.stem,
            "uploadKey": upload["uploadKey"],
            "targetLanguageCode": cast("models.LanguageCodeEnum", target),
            "sourceSizeBytes": upload["sizeBytes"],
        }
        project = self.client.create_project(body, idempotency_key=f"booktranslate:create:{upload['uploadKey']}")
        return self.resume(project["id"])

    def resume(self, project_id: str) -> BookResult:
        """Normalize (a no-op once done), process (replayed, or the job in flight, once
        started), wait, export and download what is not in `out_dir` yet. An error raised
        on the way carries the project's id (`BookTranslateError.project_id`)."""
        try:
            return self._resume(project_id)
        except BookTranslateError as error:
            error.project_id = project_id
            raise

    def _resume(self, project_id: str) -> BookResult:
        view = self.client.get_project_status(project_id)
        self._stop_if_stopped(view)
        if view["state"] not in DONE_STATES:
            if view["state"] == "Created":
                self._tell(self._from_view("normalize", view))
                self.client.normalize_project(project_id)
            self._tell(self._from_view("process", self.client.get_project_status(project_id)))
            # NothingToProcess: every page is done already, as the status read below says.
            with contextlib.suppress(NothingToProcess):
                self.client.process_project(project_id, idempotency_key=f"booktranslate:{project_id}:process")
            view = self._wait(project_id)
        return self._export(project_id, view)

    def _wait(self, project_id: str) -> models.ProjectStatusView:
        alarm = self._alarm(project_id)
        cost = Decimal(0)
        translated = -1
        try:
            while True:
                view = self.client.get_project_status(project_id)
                self._stop_if_stopped(view)
                if view["progress"]["translatedPages"] != translated:
                    translated = view["progress"]["translatedPages"]
                    cost = self._cost(project_id)
                self._tell(self._from_view("translate", view, cost))
                if view["state"] in DONE_STATES:
                    return view
                if view["state"] == "PausedNeedsCredit" and view["waitingOn"] is None:
                    problem = InsufficientCredit if view["blockedOn"] == "credit" else SpendingCeilingReached
                    raise problem(self._problem(view, problem.code, problem.status))
                self._check_deadline(view, "the book to be translated")
                if alarm is not None:
                    try:
                        alarm.wait(self.hub_poll_interval_s)
                        continue
                    except HubUnavailable:
                        alarm.close()
                        alarm = None
                self.sleep(self.poll_interval_s)
        finally:
            if alarm is not None:
                alarm.close()

    def _alarm(self, project_id: str) -> HubAlarm | None:
        """The hub following the book, when asked for and available; None: poll."""
        if not self.hub:
            return None
        try:
            alarm = HubAlarm(self.transport.base_url, self.transport.credential, project_id)
        except HubUnavailable:
            return None
        self.waited_on = "hub"
        return alarm

    def _export(self, project_id: str, view: models.ProjectStatusView) -> BookResult:
        cost = self._cost(project_id)
        wanted: dict[str, models.ExportFileEntry] = {}
        for export_format in self.formats:
            self._tell(self._from_view("export", view, cost, detail=export_format))
            entries = self.client.request_export(
                project_id,
                {"format": cast("models.FormatEnum", export_format)},
                idempotency_key=f"booktranslate:{project_id}:export:{export_format}",
            )
            wanted.update((entry["fileName"], entry) for entry in entries)
        while True:
            ready = {entry["fileName"]: entry for entry in self.client.list_exports(project_id)}
            failed = [name for name in wanted if ready.get(name, wanted[name])["status"] == "failed"]
            if failed:
                raise TranslationStopped(
                    {
                        "code": TranslationStopped.code,
                        "title": "Export failed",
                        "detail": f"The export of {', '.join(failed)} failed.",
                        "projectId": project_id,
                    }
                )
            if all(ready.get(name, wanted[name])["status"] == "ready" for name in wanted):
                break
            self._check_deadline(view, "the exports")
            self.sleep(self.poll_interval_s)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        files = []
        for name in wanted:
            entry = ready[name]
            destination = self.out_dir / Path(entry["saveAsName"] or name).name
            self._tell(self._from_view("download", view, cost, detail=destination.name))
            if not (destination.exists() and destination.stat().st_size == entry["sizeBytes"]):
                self.transport.download(f"/v1/projects/{project_id}/exports/{name}", destination)
            files.append(destination)
        self._tell(self._from_view("done", view, cost))
        progress = view["progress"]
        return BookResult(
            project_id=project_id,
            state=view["state"],
            files=files,
            translated_pages=progress["translatedPages"],
            failed_pages=progress["failedPages"],
            cost_usd=cost,
            waited_on=self.waited_on,
        )

    def _cost(self, project_id: str) -> Decimal:
        """The measured cost of the book's pages translated so far."""
        pages = self.client.get_project(project_id)["pages"]
        return sum((Decimal(str(page["costUsd"])) for page in pages if page["costUsd"] is not None), Decimal(0))

    def _check_deadline(self, view: models.ProjectStatusView, what: str) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            problem = self._problem(view, WaitTimedOut.code, 0)
            problem["detail"] = f"Timed out waiting for {what}; the book is {view['state']}: {view['detail']}"
            raise WaitTimedOut(problem)

    def _stop_if_stopped(self, view: models.ProjectStatusView) -> None:
        if view["state"] in STOPPED_STATES:
            raise TranslationStopped(self._problem(view, TranslationStopped.code, 0))

    @staticmethod
    def _problem(view: models.ProjectStatusView, code: str, status: int) -> dict[str, Any]:
        """A problem made of a status view, for the errors a journey raises by itself."""
        return {
            "code": code,
            "status": status,
            "title": view["title"],
            "detail": view["detail"],
            "projectId": view["projectId"],
            "statusView": view,
        }

    def _from_view(
        self, step: str, view: models.ProjectStatusView, cost: Decimal = Decimal(0), *, detail: str = ""
    ) -> BookProgress:
        progress = view["progress"]
        done = view["state"] in DONE_STATES
        size = progress["nextBatchSize"]
        if view["jobId"] is not None and not done:
            size = self._job_size(view["jobId"])
        return BookProgress(
            step=step,
            project_id=view["projectId"],
            state=view["state"],
            translated_pages=progress["translatedPages"],
            total_pages=progress["totalPages"],
            failed_pages=progress["failedPages"],
            batch=progress["rung"] if done else progress["rung"] + 1,
            batch_size=None if done else size,
            cost_usd=cost,
            detail=detail or view["title"],
        )

    def _job_size(self, job_id: str) -> int:
        """The pages of the batch in flight (the ladder's rung, or fewer at the book's end)."""
        if job_id not in self.job_sizes:
            self.job_sizes[job_id] = self.client.get_job(job_id)["pageCount"]
        return self.job_sizes[job_id]

    def _tell(self, progress: BookProgress) -> None:
        if self.progress is not None and progress != self.last:
            self.last = progress
            self.progress(progress)
