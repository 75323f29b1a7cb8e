"""What every upload endpoint shares: the limits shape, how an extension is read, and the
temporary files an upload passes through.

A request's uploaded file is spooled to a named temporary file (Django's
TemporaryUploadedFile) that is deleted when the request ends, however it ends, except when
the process itself dies (kill -9, OOM): then nothing runs to delete it. So each such file
carries the identity of the process that wrote it (`owned_temporary_file`), and
`upload_temporary_files_sweep` deletes the files whose process is gone. The web server
sweeps when it starts (config/asgi.py) and beat's `core.tasks.upload_temporary_files_sweep`
does it periodically.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, TemporaryFileUploadHandler

logger = logging.getLogger(__name__)

# Room for the multipart boundaries and part headers around the file itself.
MULTIPART_OVERHEAD_BYTES = 64 * 1024
TEMPORARY_FILE_PREFIX = "bts-upload-"
# bts-upload-<pid>.<start>-<random><suffix>: the writer's process id and its start time
# (clock ticks since boot), so that a new process that got the same id is not mistaken for it.
_OWNED_NAME = re.compile(rf"^{re.escape(TEMPORARY_FILE_PREFIX)}(?P<pid>\d+)\.(?P<start>\d+)-")


@dataclass(frozen=True)
class UploadLimits:
    """What an endpoint accepts: extensions with a leading dot, and a size in bytes."""

    accepted_extensions: tuple[str, ...]
    max_file_size_bytes: int


def extension_of(file_name: str) -> str:
    """The lower-case extension with its leading dot (".png"), or "" when there is none."""
    return os.path.splitext(os.path.basename(file_name or ""))[1].lower()


def _process_start(pid: int) -> int | None:
    """When the process started (clock ticks since boot, from /proc), or None when no such
    process runs. 0 where /proc is missing: then only the process id tells."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if not Path("/proc/self/stat").exists():
            return 0 if _process_exists(pid) else None
        return None
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return int(stat.rsplit(")", 1)[1].split()[19])


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


@cache
def _this_process_tag(pid: int) -> str:
    return f"{pid}.{_process_start(pid) or 0}"


def upload_temporary_dir() -> Path:
    """Where uploads are spooled: FILE_UPLOAD_TEMP_DIR, else the system's temporary folder."""
    return Path(settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir())


def owned_temporary_file(*, suffix: str = "") -> IO[bytes]:
    """A named temporary file in the upload folder, deleted when closed, whose name says
    which process wrote it (for `upload_temporary_files_sweep`)."""
    prefix = f"{TEMPORARY_FILE_PREFIX}{_this_process_tag(os.getpid())}-"
    return tempfile.NamedTemporaryFile(prefix=prefix, suffix=suffix, dir=upload_temporary_dir())


def upload_temporary_files_sweep(*, folder: Path | None = None) -> int:
    """Delete the upload temporary files whose writing process no longer runs; returns how
    many. A file of a running process is never touched, however old."""
    folder = folder or upload_temporary_dir()
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        owner = _OWNED_NAME.match(entry.name)
        if owner is None or not entry.is_file(follow_symlinks=False):
            continue
        if _owner_alive(pid=int(owner["pid"]), start=int(owner["start"])):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            removed += 1
    if removed:
        logger.warning("Removed %d upload temporary file(s) left by processes that died, in %s.", removed, folder)
    return removed


def _owner_alive(*, pid: int, start: int) -> bool:
    """The process `pid` runs and is the one that started at `start` (0: unknown, then the
    process id alone decides)."""
    started = _process_start(pid)
    if started is None:
        return False
    return started == start or 0 in (started, start)


class OwnedTemporaryUploadedFile(TemporaryUploadedFile):
    """Django's TemporaryUploadedFile, in an `owned_temporary_file`."""

    def __init__(
        self,
        name: str,
        content_type: str,
        size: int,
        charset: str | None,
        content_type_extra: dict[str, Any] | None = None,
    ) -> None:
        spool = owned_temporary_file(suffix=".upload" + extension_of(name))
        UploadedFile.__init__(self, spool, name, content_type, size, charset, content_type_extra)


class OwnedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """FILE_UPLOAD_HANDLERS' disk handler: spools to an `OwnedTemporaryUploadedFile`."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        FileUploadHandler.new_file(self, *args, **kwargs)
        self.file = OwnedTemporaryUploadedFile(
            self.file_name or "upload", self.content_type or "", 0, self.charset, self.content_type_extra
        )
