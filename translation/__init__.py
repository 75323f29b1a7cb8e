"""translation: the engines that turn a page (its text layer, or its image) into a
translated page of Markdown — vLLM over its OpenAI-compatible API, a CPU engine (Tesseract
and Apertium), an echo engine for tests — the completeness check each result passes, and
the model status (GET /v1/model-status). The batch runner (projects) calls it through
`translation.engines`. See docs/engines.md."""
