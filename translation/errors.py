"""The problem codes translation owns: a language pair the engine cannot do, and an
engine that is down when a batch must run now."""

from __future__ import annotations

from typing import Any

from core.errors import ServiceError


class UnsupportedLanguagePair(ServiceError):
    """The engine cannot translate this pair; raised by `Engine.check_supported` before any hold."""

    code = "language_pair_unsupported"
    status = 400
    title = "Language pair not supported"
    description = (
        "The configured translation engine cannot translate from this source language into this target "
        "language; `supportedPairs` lists the pairs it can (source null: any), as GET /v1/languages does. "
        "Checked at project create, at PATCH of a project or page, and before any batch is held; nothing "
        "changed, nothing was held or charged."
    )

    def __init__(
        self,
        *,
        engine: str,
        source_language: str | None,
        target_language: str,
        supported_pairs: list[tuple[str | None, str]],
    ) -> None:
        listed = ", ".join(f"{source or 'any'}->{target}" for source, target in supported_pairs) or "none"
        detail = (
            f"The {engine} engine cannot translate {source_language or 'this book'} into {target_language}. "
            f"It translates: {listed}."
        )
        pairs: list[dict[str, Any]] = [{"source": source, "target": target} for source, target in supported_pairs]
        super().__init__(detail, supported_pairs=pairs)
        self.source_language = source_language
        self.target_language = target_language


class BatchEngineUnavailable(ServiceError):
    """A batch that had to run now (process-next-batch) met an engine outage; the caller
    sets `retry_after_seconds`."""

    code = "engine_unavailable"
    status = 503
    title = "Translation engine unavailable"
    description = (
        "process-next-batch could not run its batch: the translation engine is down, warming up or at capacity "
        "(429s or 503s after its retries). The batch ended: the pages it finished before the outage are kept and "
        "charged, the rest of the hold released, the others back to Pending. Call again after Retry-After seconds, "
        "or use process, which waits for the engine by itself."
    )
