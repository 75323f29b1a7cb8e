"""Problem codes owned by translation (the engines)."""

from core.problems import register

register(
    "language_pair_unsupported",
    400,
    "Language pair not supported",
    "The configured translation engine cannot translate from this source language into this target "
    "language; `supportedPairs` lists the pairs it can (source null: any), as GET /v1/languages does. "
    "Checked at project create, at PATCH of a project or page, and before any batch is held; nothing "
    "changed, nothing was held or charged.",
)
register(
    "engine_unavailable",
    503,
    "Translation engine unavailable",
    "process-next-batch could not run its batch: the translation engine is down, warming up or at capacity "
    "(429s or 503s after its retries). The batch ended: the pages it finished before the outage are kept and "
    "charged, the rest of the hold released, the others back to Pending. Call again after Retry-After seconds, "
    "or use process, which waits for the engine by itself.",
)
