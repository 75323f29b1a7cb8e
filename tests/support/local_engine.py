"""The local engine's tools: tests that run the real Tesseract and Apertium carry this mark
(the `local_engine` fixture of tests/conftest.py configures the engine)."""

from __future__ import annotations

import shutil

import pytest

needs_local_tools = pytest.mark.skipif(
    shutil.which("tesseract") is None or shutil.which("apertium") is None,
    reason="tesseract and apertium are not installed (make test installs them)",
)
