"""Translation engines: one small interface (`Engine`: status, check a language pair,
translate a page, say what languages it can do) and three implementations chosen by TRANSLATION_ENGINE — `vllm` (an
OpenAI-compatible server with a vision-language model), `local` (Tesseract + Apertium on
the CPU) and `echo` (deterministic, for tests) — plus the completeness check every result
passes and the cached model status. See docs/engines.md."""

from translation.engines.base import (
    Engine,
    EngineCapabilities,
    EngineError,
    EngineSaturated,
    EngineStatus,
    EngineUnavailable,
    ModelState,
    PageInput,
    PageLanguageUnsupported,
    PageReading,
    PageResult,
    cost_usd,
)
from translation.engines.completeness import completeness_problem
from translation.engines.factory import engine_build, engine_get
from translation.engines.status import model_status, model_status_forget, model_status_local_drop
from translation.errors import UnsupportedLanguagePair

__all__ = [
    "Engine",
    "EngineCapabilities",
    "EngineError",
    "EngineSaturated",
    "EngineStatus",
    "EngineUnavailable",
    "ModelState",
    "PageInput",
    "PageLanguageUnsupported",
    "PageReading",
    "PageResult",
    "UnsupportedLanguagePair",
    "completeness_problem",
    "cost_usd",
    "engine_build",
    "engine_get",
    "model_status",
    "model_status_forget",
    "model_status_local_drop",
]
