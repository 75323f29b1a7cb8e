"""End-to-end tests with real processes: a Celery worker (and the API server) on this
test's PostgreSQL database and Redis, always killed at the end. Their `services` fixture
is in tests/conftest.py: the hub, metrics and deployment tests start processes too."""
