# The two commands: `make run` starts the whole service; `make test` passes the suite.
.PHONY: run test lint format bench venv dev-user

run:
	scripts/run.sh

test:
	scripts/test.sh

venv:
	scripts/bootstrap.sh

lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

format: venv
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

bench: venv
	.venv/bin/python -m bench

dev-user: venv
	.venv/bin/python manage.py create_dev_user
