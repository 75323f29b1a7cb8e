"""The OpenAPI description: generated without warnings, served anonymously, complete."""

import re

import pytest
from django.core.management import call_command
from django.urls import get_resolver

pytestmark = pytest.mark.django_db


def test_the_schema_generates_without_warnings_or_errors(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))

    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3")


def test_the_schema_and_its_ui_are_served_anonymously(api_client):
    schema = api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    docs = api_client.get("/v1/docs")

    assert schema.status_code == 200
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content


def test_every_operation_documents_its_errors_as_problem_json_and_uses_camel_case(api_client):
    schema = api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            error_statuses = [status for status in operation["responses"] if status.startswith(("4", "5"))]
            assert error_statuses, f"{method.upper()} {path} documents no error responses"
            for status in error_statuses:
                assert "application/problem+json" in operation["responses"][status]["content"], (path, status)
    for name, component in schema["components"]["schemas"].items():
        for field in component.get("properties", {}):
            assert "_" not in field, f"{name}.{field} is not camelCase"


def test_every_v1_route_is_in_the_schema(api_client):
    schema_paths = set(api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"])
    undocumented_on_purpose = {"/v1/schema", "/v1/docs"}

    def routes(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            text = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                yield from routes(pattern, text)
            else:
                yield text

    v1_routes = {r for r in routes(get_resolver()) if r.startswith("v1/") and not r.endswith(".*$")}

    def as_openapi(route: str) -> str:
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)  # router regexes
        route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)  # Django converters
        return "/" + route.replace("^", "").replace("$", "").replace("{pk}", "{id}")

    normalised = {as_openapi(route) for route in v1_routes}
    missing = {path for path in normalised if path not in schema_paths} - undocumented_on_purpose
    assert not missing
