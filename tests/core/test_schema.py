"""The OpenAPI description: generated without warnings, served anonymously, complete."""

import re
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import get_resolver

from core.schema import path_parameter_wire_name

pytestmark = pytest.mark.django_db

GENERATOR_CONFIG = Path(__file__).resolve().parents[2] / "docs" / "clients" / "openapi-python-client.yaml"
PAYMENT_CALLBACKS = {"/v1/payments/stripe/webhook", "/v1/payments/btcpay/webhook"}


@pytest.fixture
def schema(api_client):
    return api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def operations(schema):
    for path, path_item in schema["paths"].items():
        for method, operation in path_item.items():
            yield method.upper(), path, operation


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


def test_every_v1_route_is_in_the_schema(schema):
    schema_paths = set(schema["paths"])
    undocumented_on_purpose = {"/v1/schema", "/v1/docs", *PAYMENT_CALLBACKS}

    def routes(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            text = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                yield from routes(pattern, text)
            else:
                yield text

    v1_routes = {r for r in routes(get_resolver()) if r.startswith("v1/") and not r.endswith("]*$")}

    def as_openapi(route: str) -> str:
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)  # router regexes
        route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)  # Django converters
        route = re.sub(r"\{(\w+)\}", lambda match: "{" + path_parameter_wire_name(match.group(1)) + "}", route)
        return "/" + route.replace("^", "").replace("$", "").replace("{pk}", "{id}")

    normalised = {as_openapi(route) for route in v1_routes}
    missing = {path for path in normalised if path not in schema_paths} - undocumented_on_purpose
    assert not missing


def test_path_parameters_are_named_as_the_contract_names_them(schema):
    for path in (
        "/v1/projects/{id}/normalize",
        "/v1/projects/{id}/exports/{name}",
        "/v1/jobs/{jobId}",
        "/v1/wallet/top-up/{reference}",
        "/v1/webhooks/{id}/rotate-secret",
        "/v1/api-keys/{id}",
    ):
        assert path in schema["paths"], path
    for method, path, operation in operations(schema):
        declared = {parameter["name"] for parameter in operation.get("parameters", []) if parameter["in"] == "path"}
        assert declared == set(re.findall(r"\{(\w+)\}", path)), (method, path)
        assert not any("_" in name for name in declared), (method, path)


def test_json_bodies_are_declared_as_json_only_and_multipart_only_where_a_file_is_sent(schema):
    file_operations = set()
    for method, path, operation in operations(schema):
        media_types = set(operation.get("requestBody", {}).get("content", {}))
        if media_types == {"multipart/form-data"}:
            file_operations.add((method, path))
        else:
            assert media_types <= {"application/json"}, (method, path, media_types)
    assert file_operations == {
        ("POST", "/v1/uploads"),
        ("POST", "/v1/anonymous-estimate"),
        ("PUT", "/v1/me/avatar"),
    }


def test_every_operation_that_reads_a_body_declares_its_413_and_delete_me_its_password(schema):
    for method, path, operation in operations(schema):
        if "requestBody" in operation:
            assert {"400", "413", "415"} <= set(operation["responses"]), (method, path)
    delete_me = schema["paths"]["/v1/me"]["delete"]
    (body,) = delete_me["requestBody"]["content"].values()
    password = schema["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]["password"]
    assert password["type"] == "string"
    assert not delete_me["requestBody"].get("required")  # an account without a password sends nothing


def test_idempotent_operations_declare_the_key_their_statuses_and_the_replay_header(schema):
    process = schema["paths"]["/v1/projects/{id}/process"]["post"]
    create = schema["paths"]["/v1/projects"]["post"]
    read = schema["paths"]["/v1/projects/{id}"]["get"]

    for operation in (process, create, schema["paths"]["/v1/wallet/top-up"]["post"]):
        key = next(parameter for parameter in operation["parameters"] if parameter["in"] == "header")
        assert key["name"] == "Idempotency-Key"
        assert key["schema"]["maxLength"] == 255
        assert {"400", "409", "422"} <= set(operation["responses"])
        success = next(status for status in operation["responses"] if status.startswith("2"))
        assert "Idempotent-Replayed" in operation["responses"][success]["headers"]
        assert "Retry-After" in operation["responses"]["409"]["headers"]
    assert not [parameter for parameter in read.get("parameters", []) if parameter["in"] == "header"]
    assert "Idempotent-Replayed" not in read["responses"]["200"]["headers"]


def test_every_response_declares_the_request_id_and_rate_limits_their_retry_after(schema):
    for method, path, operation in operations(schema):
        for status, response in operation["responses"].items():
            assert response["headers"]["X-Request-Id"]["required"] is True, (method, path, status)
            if status == "429":
                assert "Retry-After" in response["headers"], (method, path)
    login = schema["paths"]["/v1/auth/login"]["post"]
    assert "429" in login["responses"]


def test_files_are_typed_with_their_media_types_and_a_save_as_name(schema):
    download = schema["paths"]["/v1/projects/{id}/exports/{name}"]["get"]["responses"]
    avatar = schema["paths"]["/v1/me/avatar"]["get"]["responses"]
    image = schema["paths"]["/v1/projects/{id}/pages/{pageId}/image"]["get"]["responses"]

    assert set(download["200"]["content"]) == {
        "text/markdown",
        "text/plain",
        "text/html",
        "application/epub+zip",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/pdf",
        "application/zip",
    }
    for response in (download["200"], avatar["200"], image["200"]):
        assert all(media["schema"] == {"type": "string", "format": "binary"} for media in response["content"].values())
        assert response["headers"]["Content-Disposition"]["required"] is True
    assert set(avatar["200"]["content"]) == set(image["200"]["content"]) == {"image/png"}
    assert download["302"]["headers"]["Location"]["required"] is True
    assert "application/problem+json" in download["410"]["content"]


def test_the_problem_code_is_the_enum_of_the_catalogue(schema, api_client):
    catalogue = {problem["code"] for problem in api_client.get("/v1/problems").json()}

    problem = schema["components"]["schemas"]["Problem"]
    assert problem["properties"]["code"] == {"$ref": "#/components/schemas/ProblemCodeEnum"}
    assert set(schema["components"]["schemas"]["ProblemCodeEnum"]["enum"]) == catalogue
    assert {"export_outdated", "idempotency_key_reused", "request_in_progress"} <= catalogue


def test_operation_ids_are_unique_and_the_payment_callbacks_are_not_in_the_document(schema):
    ids = [operation["operationId"] for _, _, operation in operations(schema)]

    assert len(ids) == len(set(ids))
    assert not PAYMENT_CALLBACKS & set(schema["paths"])
    assert not [name for name in schema["components"]["schemas"] if "Webhook" in name and "Stripe" in name]


def test_the_client_generator_config_maps_every_file_media_type_to_bytes(schema):
    overrides = yaml.safe_load(GENERATOR_CONFIG.read_text())["content_type_overrides"]
    file_media_types = {
        media_type
        for _, _, operation in operations(schema)
        for response in operation["responses"].values()
        for media_type, media in response.get("content", {}).items()
        if media["schema"].get("format") == "binary"
    }

    assert file_media_types == set(overrides)
    assert set(overrides.values()) == {"application/octet-stream"}


def test_operations_that_validate_their_query_string_document_its_400(schema):
    for path in (
        "/v1/projects",
        "/v1/projects/{id}/pages",
        "/v1/projects/{id}/pages/{pageId}/image",
        "/v1/wallet/ledger",
        "/v1/webhooks/{id}/deliveries",
    ):
        operation = schema["paths"][path]["get"]
        assert "400" in operation["responses"], path
        page_size = [parameter for parameter in operation["parameters"] if parameter["name"] == "pageSize"]
        assert not page_size or page_size[0]["schema"]["minimum"] == 1, path
    assert "400" not in schema["paths"]["/v1/projects/{id}/status"]["get"]["responses"]
