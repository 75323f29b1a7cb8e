"""Every error under /v1 is RFC 9457 problem+json, wherever it started."""

import logging

import pytest
from rest_framework.test import APIRequestFactory

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
