# The two commands: `make run` starts the whole service; `make test` passes the suite.
.PHONY: run test reliability lint format bench venv dev-user

run:
	scripts/run.sh

test:
	scripts/test.sh

# The reliability suites alone, harder: more fuzzing examples per operation (docs/reliability.md).
reliability:
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-200} scripts/test.sh tests/reliability

venv:
	scripts/bootstrap.sh

lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports

format: venv
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

# Every benchmark, then docs/performance.md rewritten with the figures (docs/performance.md).
# QUICK=1: shorter API load runs. The API bench starts a Redis of its own (installed if missing).
bench: venv
	@command -v redis-server >/dev/null || bash -c 'source scripts/lib.sh && apt_install redis-server'
	BENCH_QUICK=$(QUICK) .venv/bin/python -m bench

dev-user: venv
	.venv/bin/python manage.py create_dev_user
