"""Every error under /v1 is RFC 9457 problem+json, wherever it started."""

import importlib
import logging
from collections import defaultdict

import pytest
from rest_framework.test import APIRequestFactory

from core.errors import NotFound, RequestTooLarge, ServiceError, problem_class
from core.problem_json import problem_exception_handler
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db


def test_an_unknown_address_under_v1_is_a_problem_404(api_client):
    assert_problem(api_client.get("/v1/no-such-thing"), 404, "not_found")
    assert_problem(api_client.post("/v1/projects/123/unknown"), 404, "not_found")


@pytest.mark.parametrize(
    "path", ["/v1/projects/abc%0A/batch-quote", "/v1/projects/abc%0A", "/v1/%0A", "/v1/meta%0A", "/v1/a%0Db"]
)
def test_an_address_with_a_line_break_under_v1_is_a_problem_404_even_with_debug_on(api_client, settings, path):
    settings.DEBUG = True  # Django's own 404 page would be its HTML debug page

    assert_problem(api_client.get(path), 404, "not_found")


def test_a_form_body_to_a_json_operation_is_a_problem_415_and_changes_nothing(api_client, user):
    response = api_client.post(
        "/v1/auth/register",
        "email=new%40example.com&password=a-long-password&displayName=New",
        content_type="application/x-www-form-urlencoded",
    )

    assert_problem(response, 415, "unsupported_media_type")
    assert not type(user).objects.filter(email="new@example.com").exists()


def test_a_method_the_resource_lacks_is_a_problem_405(api_client):
    body = assert_problem(api_client.delete("/v1/meta"), 405, "method_not_allowed")
    assert "DELETE" in body["detail"]


def test_a_body_that_is_not_json_is_a_malformed_request(api_client):
    response = api_client.post("/v1/auth/login", "{not json", content_type="application/json")

    assert_problem(response, 400, "malformed_request")


def test_an_unsupported_content_type_is_a_problem_415(api_client):
    response = api_client.post("/v1/auth/login", "email=a", content_type="text/csv")

    assert_problem(response, 415, "unsupported_media_type")


def test_validation_errors_map_each_field_to_its_messages_in_camel_case(api_client):
    response = api_client.post("/v1/auth/register", {"email": "not-an-email", "password": "x"}, format="json")

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == {"email", "displayName"}
    assert all(isinstance(message, str) for messages in body["errors"].values() for message in messages)


def test_a_json_body_that_is_not_an_object_is_a_validation_error(api_client):
    response = api_client.post("/v1/auth/login", [1, 2, 3], format="json")

    body = assert_problem(response, 400, "validation_error")
    assert "nonFieldErrors" in body["errors"]


def test_an_unexpected_exception_is_a_logged_problem_500_without_internals(caplog):
    request = APIRequestFactory().get("/v1/anything")

    with caplog.at_level(logging.ERROR):
        response = problem_exception_handler(RuntimeError("database password is hunter2"), {"request": request})

    assert response.status_code == 500
    assert response.content_type == "application/problem+json"
    assert response.data["code"] == "server_error"
    assert "hunter2" not in str(response.data)
    assert "RuntimeError" in caplog.text


def test_pages_outside_the_api_keep_djangos_own_errors(client):
    response = client.get("/not-the-api")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_post_to_an_unknown_address_is_a_problem_404_even_with_csrf_checks(db):
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/v1/projects//process")
    assert_problem(response, 404, "not_found")


# --- One class per problem code ---------------------------------------------------------------


def _declaring_classes() -> dict[str, list[type[ServiceError]]]:
    """Every application class that declares a problem code, by code (test modules' own
    classes left out)."""
    declaring: dict[str, list[type[ServiceError]]] = defaultdict(list)
    waiting: list[type[ServiceError]] = [ServiceError]
    while waiting:
        problem = waiting.pop()
        waiting.extend(problem.__subclasses__())
        if "code" in vars(problem) and not problem.__module__.startswith("tests"):
            declaring[problem.code].append(problem)
    return declaring


def test_every_code_in_the_catalogue_is_declared_by_exactly_one_class_with_its_meaning(api_client):
    listing = api_client.get("/v1/problems").json()
    declaring = _declaring_classes()

    assert {problem["code"] for problem in listing} == set(declaring)
    for problem in listing:
        (declared,) = declaring[problem["code"]]
        assert (declared.status, declared.title, declared.description) == (
            problem["status"],
            problem["title"],
            problem["description"],
        )
        assert problem_class(problem["code"]) is declared


def _module_declaring(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text("from core.errors import ServiceError\n\n\n" + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)


def test_a_code_declared_again_with_another_meaning_fails_at_import(tmp_path, monkeypatch):
    body = (
        "class Gone(ServiceError):\n"
        '    code = "not_found"\n'
        "    status = 410\n"
        '    title = "Gone"\n'
        '    description = "Another meaning for the same code."\n'
    )

    with pytest.raises(TypeError, match="'not_found' declared twice"):
        _module_declaring(tmp_path, monkeypatch, "errors_declared_twice", body)

    assert problem_class("not_found") is NotFound
    assert NotFound.status == 404


def test_a_code_declared_again_even_with_the_same_meaning_fails_at_import(tmp_path, monkeypatch):
    body = (
        "class NotFoundAgain(ServiceError):\n"
        '    code = "not_found"\n'
        "    status = 404\n"
        '    title = "Not found"\n'
        '    description = "The resource does not exist or does not belong to the caller."\n'
    )

    with pytest.raises(TypeError, match="one class per code"):
        _module_declaring(tmp_path, monkeypatch, "errors_declared_again", body)

    assert problem_class("not_found") is NotFound


def test_a_code_declared_without_its_meaning_fails_at_import_and_joins_no_catalogue(tmp_path, monkeypatch, api_client):
    body = 'class Vague(ServiceError):\n    code = "vague_refusal"\n    status = 409\n'

    with pytest.raises(TypeError, match="without title, description"):
        _module_declaring(tmp_path, monkeypatch, "errors_without_meaning", body)

    assert problem_class("vague_refusal") is None
    assert_problem(api_client.get("/v1/problems/vague_refusal"), 404, "not_found")


def test_a_subclass_shares_its_parents_code_and_a_class_without_a_code_cannot_be_raised():
    class ShelfTooLarge(RequestTooLarge):
        pass

    refused = ShelfTooLarge(max_file_size_bytes=10)

    assert (refused.code, refused.status, refused.detail) == ("request_too_large", 413, RequestTooLarge.description)
    assert problem_class("request_too_large") is RequestTooLarge
    with pytest.raises(TypeError, match="declares no problem code"):
        ServiceError("Which problem?")
