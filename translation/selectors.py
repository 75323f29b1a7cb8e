"""Reads of translation: the languages of the service and what the configured engine can
do with them (GET /v1/languages)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from translation.engines import engine_get
from translation.languages import language_name


def languages_read() -> dict[str, Any]:
    """The target languages with their names, and the engine's targets, pairs (source None:
    any) and OCR languages. The engine's capabilities are its own cached discovery (the
    local engine looks its programs up again every minute), so this costs no probe."""
    capabilities = engine_get().capabilities()
    return {
        "targets": [{"code": code, "name": language_name(code)} for code in settings.TARGET_LANGUAGES],
        "engine": {
            "name": capabilities.engine,
            "targets": list(capabilities.targets),
            "pairs": [
                {"source": source, "targets": list(targets)}
                for source, targets in sorted(capabilities.pairs.items(), key=lambda item: item[0] or "")
            ],
            "ocr_languages": list(capabilities.ocr_languages),
        },
    }
