"""Every call of poppler's command-line tools, and the parsers of what they print.

One runner (`poppler_run`, `poppler_run_all` for processes that run side by side) starts a
tool found on PATH, never through a shell, and guarantees:
- it ends within its timeout, and never later than PDF_TOOL_TIMEOUT_SECONDS: past it the
  process is killed and reaped, and PopplerTimedOut is raised;
- what it prints is bounded: stdout to `output_limit` bytes (past it the process is killed,
  PopplerOutputTooLarge), unless a sink consumes it as it streams; stderr is kept to its
  first and last STDERR_KEEP_BYTES, whatever the tool complains;
- a non-zero exit is PopplerFailed (with the exit status and that stderr), a tool not
  installed PopplerNotInstalled;
- whatever happens (an error, the caller's own exception), no process is left running and
  none unreaped.
The tools' output is read by one parser per kind: pdfinfo's `Key: value` lines into a
PdfInfo, pdftotext's form-feed-separated pages into a list. (The XML of `pdftotext
-bbox-layout` and `pdftohtml -xml` is read by layout.py, their one reader.)

Errors stay typed here; `poppler_problems` turns them into the intake's problem codes for
the callers that report them as poppler's own failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from django.conf import settings

from projects.errors import FileCorrupt, PdfEncrypted

# A tool's text output (a chunk's text, its layout XML, pdfinfo's lines) never comes near
# this; a PDF making a tool print more is refused rather than held in memory.
OUTPUT_LIMIT_BYTES = 64 * 1024 * 1024
# The start and the end of a tool's complaints are kept; the middle of a flood of
# "Syntax Error" lines is dropped.
STDERR_KEEP_BYTES = 64 * 1024
_READ_BYTES = 64 * 1024
# pdfinfo prints huge sizes in exponent form ("1e+09 x 1e+09 pts").
_PAGE_SIZE_KEY = re.compile(r"^Page\s+(\d+)\s+size$")
_PAGE_SIZE_VALUE = re.compile(r"^([\d.]+(?:e[+-]?\d+)?)\s+x\s+([\d.]+(?:e[+-]?\d+)?)\s+pts")
# A crop far wider than any page: pdftotext then keeps text set past the page's right edge
# (a listing's long line), which it drops without one.
_WHOLE_PAGE = ["-x", "0", "-y", "0", "-W", "10000", "-H", "10000"]


class PopplerError(Exception):
    """A poppler tool could not do its work; `tool` names it."""

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class PopplerNotInstalled(PopplerError):
    """The tool is not on PATH (poppler-utils is not installed): the server's fault."""


class PopplerRefused(PopplerError):
    """The tool failed on this file (its fault, not the server's)."""


class PopplerTimedOut(PopplerRefused):
    """The tool ran past its timeout; it was killed and reaped."""

    def __init__(self, message: str, *, tool: str, timeout: float) -> None:
        super().__init__(message, tool=tool)
        self.timeout = timeout


class PopplerOutputTooLarge(PopplerRefused):
    """The tool printed more than its output limit; it was killed and reaped."""

    def __init__(self, message: str, *, tool: str, limit: int) -> None:
        super().__init__(message, tool=tool)
        self.limit = limit


class PopplerFailed(PopplerRefused):
    """The tool exited with a non-zero status (or printed nothing a parser could read)."""

    def __init__(self, message: str, *, tool: str, returncode: int, stderr: str) -> None:
        super().__init__(message, tool=tool)
        self.returncode = returncode
        self.stderr = stderr


# --- The runner --------------------------------------------------------------------------------


def poppler_run(
    argv: Sequence[str],
    *,
    timeout: float | None = None,
    output_limit: int = OUTPUT_LIMIT_BYTES,
    stdout_sink: Callable[[bytes], None] | None = None,
) -> bytes:
    """Run one tool (`argv[0]` is its name on PATH); its stdout.

    `timeout` defaults to PDF_TOOL_TIMEOUT_SECONDS and never exceeds it. With
    `stdout_sink`, stdout is handed to it chunk by chunk as it streams (and not bounded or
    returned). Raises PopplerTimedOut, PopplerOutputTooLarge, PopplerFailed or
    PopplerNotInstalled; the process has ended and been reaped whatever it raises.
    """
    (done,) = _processes_run([argv], timeout=timeout, output_limit=output_limit, stdout_sink=stdout_sink)
    return bytes(done.stdout)


def poppler_run_all(
    commands: Sequence[Sequence[str]], *, timeout: float | None = None, output_limit: int = OUTPUT_LIMIT_BYTES
) -> list[bytes]:
    """Run tools side by side under one deadline; their stdouts, in order.

    The first timeout or output past its limit kills them all; a non-zero exit is raised
    once every process has ended. Otherwise as poppler_run.
    """
    done = _processes_run(commands, timeout=timeout, output_limit=output_limit, stdout_sink=None)
    return [bytes(each.stdout) for each in done]


@dataclass
class _Running:
    tool: str
    process: subprocess.Popen[bytes]
    stdout: bytearray = field(default_factory=bytearray)
    stderr_head: bytearray = field(default_factory=bytearray)
    stderr_tail: bytearray = field(default_factory=bytearray)
    stderr_dropped: bool = False

    def stdout_keep(self, chunk: bytes, *, limit: int) -> None:
        self.stdout += chunk
        if len(self.stdout) > limit:
            raise PopplerOutputTooLarge(f"{self.tool} printed more than {limit} bytes.", tool=self.tool, limit=limit)

    def stderr_keep(self, chunk: bytes) -> None:
        room = STDERR_KEEP_BYTES - len(self.stderr_head)
        self.stderr_head += chunk[:room]
        rest = chunk[room:] if room > 0 else chunk
        if rest:
            self.stderr_tail += rest
            if len(self.stderr_tail) > STDERR_KEEP_BYTES:
                del self.stderr_tail[:-STDERR_KEEP_BYTES]
                self.stderr_dropped = True

    def stderr_text(self) -> str:
        middle = b"\n[...]\n" if self.stderr_dropped else b""
        return bytes(self.stderr_head + middle + self.stderr_tail).decode("utf-8", "replace")


def _processes_run(
    commands: Sequence[Sequence[str]],
    *,
    timeout: float | None,
    output_limit: int,
    stdout_sink: Callable[[bytes], None] | None,
) -> list[_Running]:
    """Start the commands, feed their output, end and reap them; raise for the first that failed."""
    limit = settings.PDF_TOOL_TIMEOUT_SECONDS if timeout is None else min(timeout, settings.PDF_TOOL_TIMEOUT_SECONDS)
    deadline = time.monotonic() + limit
    running: list[_Running] = []
    try:
        with selectors.DefaultSelector() as selector:
            for argv in commands:
                started = _process_start(argv)
                running.append(started)
                selector.register(_pipe(started.process.stdout), selectors.EVENT_READ, (started, True))
                selector.register(_pipe(started.process.stderr), selectors.EVENT_READ, (started, False))
            while selector.get_map():
                for key, _ in selector.select(_left(deadline, running, limit)):
                    owner, is_stdout = key.data
                    chunk = os.read(key.fd, _READ_BYTES)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif not is_stdout:
                        owner.stderr_keep(chunk)
                    elif stdout_sink is not None:
                        stdout_sink(chunk)
                    else:
                        owner.stdout_keep(chunk, limit=output_limit)
        for each in running:
            try:
                each.process.wait(_left(deadline, running, limit))
            except subprocess.TimeoutExpired:
                raise _timed_out(running, limit) from None
    finally:
        _processes_end(running)
    for each in running:
        if each.process.returncode != 0:
            stderr = each.stderr_text()
            raise PopplerFailed(
                f"{each.tool} exited with status {each.process.returncode}: {stderr.strip()[:200]}",
                tool=each.tool,
                returncode=each.process.returncode,
                stderr=stderr,
            )
    return running


def _process_start(argv: Sequence[str]) -> _Running:
    tool = argv[0]
    found = shutil.which(tool)
    if found is None:
        raise PopplerNotInstalled(f"{tool} (poppler-utils) is not installed", tool=tool)
    try:
        process = subprocess.Popen(  # noqa: S603 - a program found on PATH, arguments are not a shell line
            [found, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a kill reaches anything it started
        )
    except FileNotFoundError as error:  # removed between which() and the start
        raise PopplerNotInstalled(f"{tool} (poppler-utils) is not installed", tool=tool) from error
    return _Running(tool=Path(tool).name, process=process)


def _pipe(pipe: IO[bytes] | None) -> IO[bytes]:
    if pipe is None:  # never: both are PIPE
        raise RuntimeError("a poppler tool was started without its pipes")
    return pipe


def _left(deadline: float, running: list[_Running], limit: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timed_out(running, limit)
    return left


def _timed_out(running: list[_Running], limit: float) -> PopplerTimedOut:
    tools = ", ".join(sorted({each.tool for each in running}))
    return PopplerTimedOut(f"{tools} ran past {limit} s.", tool=tools, timeout=limit)


def _processes_end(running: list[_Running]) -> None:
    """Kill what still runs, reap every process and close its pipes."""
    for each in running:
        # Not reaped yet (running, or a zombie): its group id cannot belong to anyone else.
        if each.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(each.process.pid, signal.SIGKILL)
    for each in running:
        each.process.wait()
        for pipe in (each.process.stdout, each.process.stderr):
            if pipe is not None:
                pipe.close()


# --- pdfinfo -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PdfInfo:
    """What pdfinfo says of a PDF. `page_sizes` (points, width x height, from page 1 on)
    holds the pages asked for with `first`/`last` and that pdfinfo described."""

    pages: int
    encrypted: bool
    title: str = ""
    page_sizes: dict[int, tuple[float, float]] = field(default_factory=dict)


def pdfinfo_parse(output: str) -> PdfInfo:
    """pdfinfo's `Key: value` lines as a PdfInfo; PdfInfoUnreadable without a page count.

    pdfinfo prints the metadata (Title first, then Subject, Author, ...) as the file gives
    it, line breaks included, so a title can hold a line "Pages: 1". Every line pdfinfo
    writes itself (Pages, Encrypted, the page sizes) comes after the metadata: the last
    line of a key counts, and the title is the first line of the first Title.
    """
    fields: dict[str, str] = {}
    title: str | None = None
    sizes: dict[int, tuple[float, float]] = {}
    for line in output.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        value = value.strip()
        page = _PAGE_SIZE_KEY.match(key)
        if page:
            size = _PAGE_SIZE_VALUE.match(value)
            if size:
                sizes[int(page.group(1))] = (float(size.group(1)), float(size.group(2)))
            continue
        if key == "Title" and title is None:
            title = value
        fields[key] = value
    pages = fields.get("Pages", "")
    if not pages.isdigit():
        raise PdfInfoUnreadable("pdfinfo printed no page count.")
    return PdfInfo(
        pages=int(pages),
        encrypted=fields.get("Encrypted", "no").lower().startswith("yes"),
        title=" ".join((title or "").split()),
        page_sizes=sizes,
    )


class PdfInfoUnreadable(ValueError):
    """pdfinfo's output holds no page count."""


def pdfinfo_read(path: Path, *, first: int | None = None, last: int | None = None) -> PdfInfo:
    """pdfinfo on a PDF (page sizes for pages first..last when given).

    Raises the runner's errors; a run that prints no page count is PopplerFailed too
    (carrying the tool's complaint), as a PDF pdfinfo cannot read.
    """
    pages = [*(["-f", str(first)] if first else []), *(["-l", str(last)] if last else [])]
    argv = ["pdfinfo", "-enc", "UTF-8", *pages, _file_argument(path)]
    (done,) = _processes_run([argv], timeout=None, output_limit=OUTPUT_LIMIT_BYTES, stdout_sink=None)
    try:
        return pdfinfo_parse(bytes(done.stdout).decode("utf-8", "replace"))
    except PdfInfoUnreadable as error:
        raise PopplerFailed(str(error), tool="pdfinfo", returncode=0, stderr=done.stderr_text()) from None


def pdf_title(path: Path) -> str:
    """The title a PDF's metadata gives ("" for none, or for a file pdfinfo cannot read)."""
    try:
        return pdfinfo_read(path).title
    except PopplerRefused:
        return ""


# --- pdftotext -----------------------------------------------------------------------------------


def text_pages_parse(output: str) -> list[str]:
    """pdftotext's pages: it ends every page with a form feed (the last may lack one)."""
    pages = output.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    return pages


def pdftotext_pages(path: Path, *, first: int, last: int) -> list[str]:
    """The text layer of pages first..last laid out as on the page (`-layout`), with what
    is set past a page's right edge; one string per page pdftotext printed."""
    output = poppler_run(
        [
            "pdftotext",
            "-layout",
            *_WHOLE_PAGE,
            "-enc",
            "UTF-8",
            "-f",
            str(first),
            "-l",
            str(last),
            _file_argument(path),
            "-",
        ]
    )
    return text_pages_parse(output.decode("utf-8", "replace"))


def pdftotext_stream(path: Path, sink: Callable[[bytes], None]) -> None:
    """The whole text layer (UTF-8), handed to `sink` chunk by chunk as pdftotext prints it."""
    poppler_run(["pdftotext", "-enc", "UTF-8", _file_argument(path), "-"], stdout_sink=sink)


def pdftotext_bbox_layout(path: Path, *, first: int, last: int) -> str:
    """`pdftotext -bbox-layout`'s XHTML for pages first..last: blocks, lines, words, boxes."""
    output = poppler_run(
        ["pdftotext", "-bbox-layout", "-enc", "UTF-8", "-f", str(first), "-l", str(last), _file_argument(path), "-"]
    )
    return output.decode("utf-8", "replace")


def pdftohtml_xml(path: Path, *, first: int, last: int, zoom: int) -> str:
    """`pdftohtml -xml`'s runs of one font with their boxes for pages first..last, at `zoom`
    (hidden text included, no images, full font names)."""
    output = poppler_run(
        [
            "pdftohtml",
            "-xml",
            "-i",
            "-hidden",
            "-q",
            "-fontfullname",
            "-zoom",
            str(zoom),
            "-stdout",
            "-f",
            str(first),
            "-l",
            str(last),
            _file_argument(path),
        ]
    )
    return output.decode("utf-8", "replace")


# --- pdftoppm ------------------------------------------------------------------------------------


def pdftoppm_png_files(path: Path, folder: Path, *, first: int, last: int, dpi: int, processes: int) -> dict[int, Path]:
    """Render pages first..last as PNG files in `folder` at `dpi`, split over `processes`
    pdftoppm processes side by side (each a run of consecutive pages); the files written,
    by page number.

    pdftoppm's exit status is not trusted either way: a failed process's pages that were
    written count, and the caller checks that every page it needs is there. Raises
    PopplerTimedOut and PopplerNotInstalled.
    """
    count = last - first + 1
    parts = max(1, min(processes, count))
    # The folder may hold other runs' pages: this run's files have names of their own.
    prefixes = [f"{uuid.uuid4().hex}p{part}" for part in range(parts)]
    commands: list[list[str]] = []
    start = first
    for part, name in enumerate(prefixes):
        pages = count // parts + (1 if part < count % parts else 0)
        prefix = folder / name
        end = start + pages - 1
        commands.append(
            ["pdftoppm", "-r", str(dpi), "-f", str(start), "-l", str(end), "-png", _file_argument(path), str(prefix)]
        )
        start = end + 1
    with contextlib.suppress(PopplerFailed):
        poppler_run_all(commands)
    return {number: file for name in prefixes for number, file in _numbered_files(folder, name, "png")}


def pdftoppm_pgm(path: Path, *, page: int, dpi: int, timeout: float, output_limit: int) -> bytes:
    """One page in grey at `dpi` as PGM bytes (from stdout, at most `output_limit`)."""
    return poppler_run(
        ["pdftoppm", "-f", str(page), "-l", str(page), "-r", str(dpi), "-gray", _file_argument(path)],
        timeout=timeout,
        output_limit=output_limit,
    )


def pdftoppm_pgm_files(path: Path, prefix: Path, *, first: int, last: int, scale_to: int, timeout: float) -> None:
    """Pages first..last in grey, `scale_to` pixels on their long side, written as
    `<prefix>-<page number>.pgm` (read them with pgm_files)."""
    poppler_run(
        [
            "pdftoppm",
            "-f",
            str(first),
            "-l",
            str(last),
            "-scale-to",
            str(scale_to),
            "-gray",
            _file_argument(path),
            str(prefix),
        ],
        timeout=timeout,
    )


def pgm_files(prefix: Path) -> list[tuple[int, Path]]:
    """The PGM pages pdftoppm wrote under `prefix` so far, by page number, in order."""
    return _numbered_files(prefix.parent, prefix.name, "pgm")


def _numbered_files(folder: Path, prefix: str, extension: str) -> list[tuple[int, Path]]:
    """pdftoppm's `<prefix>-<page number>.<extension>` files (the number zero-padded)."""
    found: list[tuple[int, Path]] = []
    for file in folder.glob(f"{prefix}-*.{extension}"):
        number = file.stem.rsplit("-", 1)[-1]
        if number.isdigit():
            found.append((int(number), file))
    return sorted(found)


def _file_argument(path: Path) -> str:
    """The PDF as an absolute path: never a name a tool could read as an option."""
    return os.fspath(path.absolute())


# --- As the intake reports it ----------------------------------------------------------------------


@contextlib.contextmanager
def poppler_problems(what: str) -> Iterator[None]:
    """A tool's failure on the file as the intake's problem: pdf_encrypted when it asked for
    a password, else file_corrupt (a missing tool stays the server's error)."""
    try:
        yield
    except PopplerTimedOut as error:
        raise FileCorrupt(f"Reading the PDF took too long ({what}).") from error
    except PopplerFailed as error:
        if "password" in error.stderr.lower():
            raise PdfEncrypted() from error
        raise FileCorrupt(f"The PDF could not be read ({what}): {error.stderr.strip()[:200]}") from error
    except PopplerOutputTooLarge as error:
        raise FileCorrupt(f"The PDF could not be read ({what}): it prints too much.") from error
