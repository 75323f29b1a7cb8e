"""translation: the engines that turn a page (its text layer, or its image) into a
translated page of Markdown — vLLM over its OpenAI-compatible API, a CPU engine (Tesseract
and Apertium), an echo engine for tests — the completeness check each result passes, the
languages, and the model status (GET /v1/model-status). See docs/engines.md.

Layers: translation imports only core and bookstructure; it knows nothing of projects,
pages or wallets. projects' batch runner and normalize call it through
`translation.engines`, so in the import graph translation sits below projects (beside
bookstructure), not above it as a consumer of projects' events would.
"""
