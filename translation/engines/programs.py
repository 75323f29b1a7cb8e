"""Running the command-line programs the engines use (Tesseract, Apertium): one place that
turns a timeout, a program that cannot start and a failed exit into the engine's errors."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from translation.engines.base import EngineError, EngineUnavailable


def program_run(
    command: list[str],
    *,
    stdin: bytes,
    timeout_seconds: float,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> str:
    """The program's standard output (UTF-8, bad bytes replaced). Raises EngineError when it
    runs longer than `timeout_seconds` or (with `check`) exits non-zero, EngineUnavailable
    when it cannot be started."""
    try:
        completed = subprocess.run(  # noqa: S603  (a fixed program and arguments)
            command, input=stdin, capture_output=True, timeout=timeout_seconds, check=False, env=env
        )
    except subprocess.TimeoutExpired as error:
        raise EngineError(f"{command[0]} took longer than {timeout_seconds:g} seconds.") from error
    except OSError as error:
        raise EngineUnavailable(f"{command[0]} could not be started: {error}.") from error
    output = completed.stdout.decode("utf-8", errors="replace")
    if check and completed.returncode != 0:
        message = completed.stderr.decode("utf-8", errors="replace").strip()[:300]
        raise EngineError(f"{command[0]} failed (exit {completed.returncode}): {message}")
    return output
