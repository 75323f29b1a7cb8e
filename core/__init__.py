"""core: what every app builds on and no app owns — problem+json errors and the problem
catalogue, the money quantum and its roundings (core/money.py), storage, upload spooling
and untrusted images, idempotency keys, rate limits, request logging and ids, metrics and
health, the OpenAPI schema, discovery and the status page.

Layers: core is the bottom one and imports no app (accounts, wallet, projects,
translation, exports, webhooks, bookstructure); apps publish their metrics and health
checks to it rather than core reaching up. It may import the Celery app in `config` (the
work queues' names), which imports core in turn only for logging and metrics.
"""
