"""The one poppler runner and its parsers (projects/intake/poppler.py), with real programs:
poppler's own tools on a Debian manual and a file that is not a PDF, and `sh`/`sleep` where
a program must hang, fail or flood on purpose."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from reportlab.pdfgen import canvas

from projects.intake.poppler import (
    STDERR_KEEP_BYTES,
    PdfInfoUnreadable,
    PopplerFailed,
    PopplerNotInstalled,
    PopplerOutputTooLarge,
    PopplerTimedOut,
    pdfinfo_parse,
    pdfinfo_read,
    pdftoppm_pgm,
    pdftoppm_png_files,
    pdftotext_pages,
    poppler_run,
    poppler_run_all,
)
from projects.intake.sniffing import source_inspect
from tests.support.corpus import debian_pdf

BOOK = "bzip2"  # 38 letter pages, no title in its metadata
BOOK_PAGES = 38


def gone(pid: int) -> bool:
    """No process (running or a zombie waiting to be reaped) has this id."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def pids_written(path: Path) -> list[int]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) == 2:
            return [int(line) for line in lines]
        time.sleep(0.01)
    raise AssertionError(f"{path} never held two process ids")


# --- The runner -------------------------------------------------------------------------------


def test_a_run_past_its_timeout_is_killed_with_what_it_started_and_reaped(tmp_path):
    pids = tmp_path / "pids"
    # The shell writes its own id and its child's, then waits for the child.
    script = f"echo $$ > {pids}.part; sleep 30 & echo $! >> {pids}.part; mv {pids}.part {pids}; wait"
    started = time.monotonic()

    with pytest.raises(PopplerTimedOut) as raised:
        poppler_run(["sh", "-c", script], timeout=1)

    assert time.monotonic() - started < 5
    assert (raised.value.tool, raised.value.timeout) == ("sh", 1)
    shell, sleeper = pids_written(pids)
    assert gone(shell)  # killed and reaped: not even a zombie is left
    deadline = time.monotonic() + 5  # the orphaned sleep is reaped by init once killed
    while not gone(sleeper) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(sleeper)


def test_a_poppler_tool_past_its_timeout_is_refused_as_timed_out():
    started = time.monotonic()

    with pytest.raises(PopplerTimedOut) as raised:  # a letter page at 1200 dpi takes seconds
        pdftoppm_pgm(debian_pdf(BOOK), page=1, dpi=1200, timeout=0.2, output_limit=1 << 30)

    assert raised.value.tool == "pdftoppm"
    assert time.monotonic() - started < 5


def test_no_call_runs_past_the_configured_tool_timeout(settings):
    settings.PDF_TOOL_TIMEOUT_SECONDS = 0

    with pytest.raises(PopplerTimedOut) as raised:
        poppler_run(["sleep", "5"], timeout=60)

    assert raised.value.timeout == 0


def test_runs_side_by_side_share_one_deadline_and_all_end_with_it(tmp_path):
    started = time.monotonic()

    with pytest.raises(PopplerTimedOut):
        poppler_run_all([["true"], ["sleep", "30"], ["sleep", "30"]], timeout=0.5)

    assert time.monotonic() - started < 5


def test_a_non_zero_exit_is_failed_with_the_status_and_what_the_tool_said(tmp_path):
    not_a_pdf = tmp_path / "notes.pdf"
    not_a_pdf.write_text("plain text")

    with pytest.raises(PopplerFailed) as raised:
        poppler_run(["pdfinfo", str(not_a_pdf)])

    assert (raised.value.tool, raised.value.returncode) == ("pdfinfo", 1)
    assert "Couldn't read xref table" in raised.value.stderr


def test_a_flood_of_complaints_keeps_its_start_and_its_end():
    flood = "i=0; while [ $i -lt 20000 ]; do echo Syntax Error: $i >&2; i=$((i+1)); done; exit 3"

    with pytest.raises(PopplerFailed) as raised:
        poppler_run(["sh", "-c", flood])

    assert raised.value.returncode == 3
    assert len(raised.value.stderr) <= 2 * STDERR_KEEP_BYTES + 16
    assert raised.value.stderr.startswith("Syntax Error: 0\n")
    assert raised.value.stderr.endswith("Syntax Error: 19999\n")
    assert "\n[...]\n" in raised.value.stderr


def test_a_tool_that_is_not_installed_is_named():
    with pytest.raises(PopplerNotInstalled) as raised:
        poppler_run(["pdftoppm-not-installed", "-v"])

    assert raised.value.tool == "pdftoppm-not-installed"
    assert "is not installed" in str(raised.value)


def test_output_past_the_limit_stops_the_tool():
    with pytest.raises(PopplerOutputTooLarge) as raised:
        poppler_run(["pdftotext", str(debian_pdf(BOOK)), "-"], output_limit=10_000)

    assert (raised.value.tool, raised.value.limit) == ("pdftotext", 10_000)


def test_a_sink_gets_the_whole_output_as_it_streams_past_any_limit():
    whole = poppler_run(["pdftotext", str(debian_pdf(BOOK)), "-"])
    chunks: list[bytes] = []

    returned = poppler_run(["pdftotext", str(debian_pdf(BOOK)), "-"], output_limit=10, stdout_sink=chunks.append)

    assert returned == b""
    assert b"".join(chunks) == whole
    assert len(whole) > 10_000


# --- The parsers ------------------------------------------------------------------------------


def test_pdfinfo_of_a_debian_manual_reads_its_pages_and_every_page_size():
    info = pdfinfo_read(debian_pdf(BOOK), first=1, last=BOOK_PAGES + 1)

    assert (info.pages, info.encrypted, info.title) == (BOOK_PAGES, False, "")
    assert info.page_sizes == {number: (612.0, 792.0) for number in range(1, BOOK_PAGES + 1)}


def test_pdfinfo_without_a_page_range_describes_no_page():
    info = pdfinfo_read(debian_pdf(BOOK))

    assert (info.pages, info.page_sizes) == (BOOK_PAGES, {})


def test_pdfinfo_lines_with_a_title_encryption_and_sizes_in_exponent_form():
    # pdfinfo's own lines for a protected two-page file with huge pages.
    output = (
        "Title:           Guide:  part\t one\n"
        "Producer:        pdfTeX-1.40.14\n"
        "Pages:           2\n"
        "Encrypted:       yes (print:yes copy:no change:no addNotes:no algorithm:AES)\n"
        "Page    1 size:  1e+09 x 1e+09 pts\n"
        "Page    1 rot:   0\n"
        "Page    2 size:  595.276 x 841.89 pts (A4)\n"
        "File size:       1234 bytes\n"
    )

    info = pdfinfo_parse(output)

    assert (info.pages, info.encrypted, info.title) == (2, True, "Guide: part one")
    assert info.page_sizes == {1: (1e9, 1e9), 2: (595.276, 841.89)}


def test_a_title_holding_pdfinfo_lines_changes_neither_the_page_count_nor_the_sizes(tmp_path):
    # pdfinfo prints a title's line breaks as they are, before its own lines.
    book = tmp_path / "book.pdf"
    made = canvas.Canvas(str(book), pagesize=(612, 792))
    made.setTitle("Spoof\nPages:           1\nEncrypted:       yes\nPage    1 size:  1e+09 x 1e+09 pts")
    made.setAuthor("someone\nTitle: another")
    for _ in range(3):
        made.drawString(100, 100, "A page of the book.")
        made.showPage()
    made.save()

    info = pdfinfo_read(book, first=1, last=4)

    assert (info.pages, info.encrypted, info.title) == (3, False, "Spoof")
    assert info.page_sizes == {number: (612.0, 792.0) for number in (1, 2, 3)}
    assert source_inspect(path=book, file_name="book.pdf").page_count == 3


def test_pdfinfo_output_without_a_page_count_is_a_failure():
    with pytest.raises(PdfInfoUnreadable, match="no page count"):
        pdfinfo_parse("Title: x\nEncrypted: no\n")


def test_pdftotext_pages_are_one_string_per_page_asked_for():
    pages = pdftotext_pages(debian_pdf(BOOK), first=3, last=5)

    assert len(pages) == 3
    assert all(page.strip() for page in pages)
    assert pages == [pdftotext_pages(debian_pdf(BOOK), first=n, last=n)[0] for n in (3, 4, 5)]


def test_pages_rendered_side_by_side_are_all_there_by_number(tmp_path):
    # Two renders into one folder (as a chunk renders while the one before is stored).
    first = pdftoppm_png_files(debian_pdf(BOOK), tmp_path, first=1, last=5, dpi=36, processes=2)
    second = pdftoppm_png_files(debian_pdf(BOOK), tmp_path, first=6, last=7, dpi=36, processes=3)

    assert sorted(first) == [1, 2, 3, 4, 5]
    assert sorted(second) == [6, 7]
    assert len({*first.values(), *second.values()}) == 7
    assert all(file.read_bytes().startswith(b"\x89PNG") for file in [*first.values(), *second.values()])
