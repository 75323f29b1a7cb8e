#!/usr/bin/env bash
# make test: lint, then the whole suite against real PostgreSQL and Redis servers on
# loopback (installed with apt-get and started here when none is running).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/bootstrap.sh
system_tools_ensure

TEST_PG_PORT="${TEST_PG_PORT:-55432}"
TEST_REDIS_PORT="${TEST_REDIS_PORT:-56379}"
pg_ensure "$TEST_PG_PORT"
redis_ensure "$TEST_REDIS_PORT"

export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:$TEST_PG_PORT/booktranslate}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:$TEST_REDIS_PORT/0}"
export PATH="$PWD/.venv/bin:$PATH"
# A fast hasher: tests create many accounts, and hashing strength is not what they check.
export PASSWORD_HASHERS="${PASSWORD_HASHERS:-django.contrib.auth.hashers.MD5PasswordHasher}"

echo ">> ruff"
ruff check .
ruff format --check .
echo ">> mypy"
mypy
echo ">> import contracts"
lint-imports
echo ">> pytest (PostgreSQL), on every core"
# One xdist worker per core (TEST_WORKERS=1 for one process), each on a database and a
# Redis database of its own (tests/xdist_worker.py, imported from the repository root).
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" pytest -n "${TEST_WORKERS:-auto}" -p tests.xdist_worker "$@"
if [ $# -eq 0 ]; then
  # The embedded default is SQLite: the end-to-end API suites run on it too.
  echo ">> pytest (SQLite): the API end to end"
  DATABASE_URL="sqlite:///$VAR_DIR/test-sqlite.db" pytest -m "not postgres_only" \
    tests/projects/test_intake_api.py tests/accounts/test_auth_api.py tests/accounts/test_api_keys.py \
    tests/core/test_idempotency.py tests/core/test_errors.py \
    tests/wallet/test_wallet_api.py tests/wallet/test_pricing.py tests/projects/test_processing.py
fi
