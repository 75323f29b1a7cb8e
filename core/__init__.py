"""core: what every app builds on and no app owns — the event bus apps publish and
subscribe on (core/events.py), problem+json errors and the problem catalogue (errors.py,
problem_json.py), reads by id (selectors.py), the money quantum and its roundings
(money.py), storage, upload spooling and untrusted images, idempotency keys, rate limits,
request logging and ids, metrics and health, the OpenAPI schema, discovery and the status
page.

Layers: core is the bottom one: it imports no app (accounts, wallet, projects,
translation, exports, webhooks, bookstructure) and not `config`; apps hand it their
metrics and health checks rather than core reaching up, and settings come through
django.conf.settings.
"""
