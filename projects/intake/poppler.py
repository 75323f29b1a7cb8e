"""Running poppler's command-line tools (pdfinfo, pdftotext, pdftohtml) on a checked PDF.

One place for how a tool is found, run (no shell, the configured timeout) and how its
failures become ServiceError codes, shared by the page renderer and the layout reader.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from django.conf import settings

from core.errors import ServiceError

_TITLE_LINE = re.compile(r"^Title:[ \t]*(.*)$", re.MULTILINE)


def poppler_tool(name: str) -> str:
    """The path of poppler tool `name`; RuntimeError when poppler-utils is not installed."""
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} (poppler-utils) is not installed")
    return found


def poppler_run(args: list[str], *, what: str) -> str:
    """Run a poppler tool (no shell, with the configured timeout); its stdout as text.

    Raises ServiceError pdf_encrypted when the tool asks for a password, file_corrupt when
    it fails or runs past PDF_TOOL_TIMEOUT_SECONDS.
    """
    try:
        completed = subprocess.run(  # noqa: S603 - fixed tool, arguments are not a shell line
            args, capture_output=True, timeout=settings.PDF_TOOL_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise ServiceError(f"Reading the PDF took too long ({what}).", code="file_corrupt") from error
    stderr = completed.stderr.decode("utf-8", "replace")
    if completed.returncode != 0:
        if "password" in stderr.lower():
            raise ServiceError(code="pdf_encrypted")
        raise ServiceError(f"The PDF could not be read ({what}): {stderr.strip()[:200]}", code="file_corrupt")
    return completed.stdout.decode("utf-8", "replace")


def pdf_title(path: Path) -> str:
    """The title a PDF's metadata gives ("" for none, or for a file pdfinfo cannot read)."""
    try:
        info = poppler_run([poppler_tool("pdfinfo"), "-enc", "UTF-8", str(path)], what="pdfinfo")
    except ServiceError:
        return ""
    found = _TITLE_LINE.search(info)
    return " ".join(found.group(1).split()) if found else ""
