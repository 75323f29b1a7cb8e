"""Tesseract as the page reader of an engine: which languages it has (looked up again every
DISCOVERY_SECONDS) and a page image read with them (translation/engines/tesseract.py).

The local engine reads every page without a text layer with it, at intake and when it
translates; the vLLM engine uses it at intake only, keeping a reading it can trust (the model
reads the others from the image itself)."""

from __future__ import annotations

import os
import shutil
import threading
import time

from translation.engines.base import EngineUnavailable
from translation.engines.programs import program_run
from translation.engines.tesseract import OcrReading, page_read
from translation.languages import ISO_639_1, ISO_639_3

DISCOVERY_SECONDS = 60.0  # the installed languages are looked up again this often


class TesseractReader:
    def __init__(self, *, command: str, timeout_seconds: float) -> None:
        self.command = command
        self.timeout_seconds = timeout_seconds
        self._lock = threading.Lock()
        self._discovered_at = float("-inf")
        self._languages: list[str] = []

    def program(self) -> str | None:
        """The Tesseract program's path, None when it is not installed."""
        return shutil.which(self.command)

    def languages(self) -> list[str]:
        """The installed traineddata (Tesseract's names, `osd` left out); none when
        Tesseract is not installed."""
        with self._lock:
            if time.monotonic() - self._discovered_at > DISCOVERY_SECONDS:
                self._languages = self._installed()
                self._discovered_at = time.monotonic()
            return self._languages

    def _installed(self) -> list[str]:
        program = self.program()
        if program is None:
            return []
        listing = program_run([program, "--list-langs"], stdin=b"", timeout_seconds=self.timeout_seconds, check=False)
        return [line.strip() for line in listing.splitlines()[1:] if line.strip() and line.strip() != "osd"]

    def read(self, image: bytes, *, language: str | None) -> OcrReading:
        """The page image read, turned upright and level first, with the warnings that say
        when its reading cannot be trusted: in `language` (ISO 639-1) when its traineddata is
        installed, else in every installed language. Raises EngineUnavailable without
        Tesseract or any traineddata."""
        program, installed = self.program(), self.languages()
        if program is None or not installed:
            raise EngineUnavailable(
                "Tesseract is not installed (apt-get install tesseract-ocr): pages without text wait."
            )
        wanted = ISO_639_3.get(language or "")
        languages = wanted if wanted in installed else "+".join(installed)
        if language is None and len(installed) == 1:  # the one language it can be read in
            language = ISO_639_1.get(installed[0])
        # One OpenMP thread: pages are read ENGINE_CONCURRENCY at a time already, and OpenMP's
        # spinning threads make each Tesseract several times slower on a busy machine.
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        return page_read(
            image,
            command=[program, "stdin", "stdout", "-l", languages],
            language=language,
            run=lambda command, stdin: program_run(command, stdin=stdin, timeout_seconds=self.timeout_seconds, env=env),
        )
