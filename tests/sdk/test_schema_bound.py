"""The SDK's schema-bound modules (models, operations, problem classes) are what
clients/python/tools/generate.py makes of the live /v1/schema and /v1/problems: a change of
the API that the SDK does not follow fails here. And every problem code of the catalogue is
raised as a class of its own."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import pytest

import booktranslate
from booktranslate import BookTranslateError, problems
from booktranslate._transport import error_from_response

GENERATOR = Path(__file__).resolve().parents[2] / "clients" / "python" / "tools" / "generate.py"

pytestmark = pytest.mark.django_db


def generator():
    spec = importlib.util.spec_from_file_location("booktranslate_generate", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_models_operations_and_problems_are_what_the_live_schema_generates(client):
    schema = client.get("/v1/schema", {"format": "json"}).json()
    catalogue = client.get("/v1/problems").json()
    tool = generator()

    rendered = tool.render(schema, catalogue)

    for name, text in rendered.items():
        committed = (tool.PACKAGE_DIR / name).read_text()
        assert committed == text, f"{name} is out of date: run `python clients/python/tools/generate.py`"
    operation_ids = {operation["operationId"] for path in schema["paths"].values() for operation in path.values()}
    assert operation_ids
    assert all(callable(getattr(booktranslate.Client, name, None)) for name in operation_ids)


def test_every_catalogue_code_is_raised_as_its_own_class(client):
    catalogue = client.get("/v1/problems").json()

    assert {entry["code"] for entry in catalogue} == set(problems.PROBLEM_CLASSES)
    for entry in catalogue:
        answer = httpx.Response(
            entry["status"],
            json={**entry, "detail": "why", "instance": "/v1/x", "extraMember": 1},
            headers={"X-Request-Id": "req-1"},
        )
        error = error_from_response(answer)
        cls = problems.PROBLEM_CLASSES[entry["code"]]
        assert type(error) is cls
        assert isinstance(error, BookTranslateError)
        assert cls.__name__ == "".join(part.capitalize() for part in entry["code"].split("_"))
        assert getattr(booktranslate, cls.__name__) is cls
        assert (cls.code, cls.status) == (entry["code"], entry["status"])
        assert (error.status, error.code, error.title) == (entry["status"], entry["code"], entry["title"])
        assert error.detail == "why"
        assert (error.request_id, error.extra["extraMember"]) == ("req-1", 1)
