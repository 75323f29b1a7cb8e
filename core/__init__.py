"""core: what every app builds on and no app owns — problem+json errors and the problem
catalogue, the money quantum and its roundings (core/money.py), storage, upload spooling
and untrusted images, idempotency keys, rate limits, request logging and ids, metrics and
health, the OpenAPI schema, discovery and the status page.

Layers: core is the bottom one: it imports no app (accounts, wallet, projects,
translation, exports, webhooks, bookstructure) and not `config`; apps hand it their
metrics and health checks rather than core reaching up, and settings come through
django.conf.settings.
"""
