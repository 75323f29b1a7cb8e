"""Query strings are validated like bodies: a paginated list refuses a `page` or `pageSize`
that is not a whole number in range, or is given twice, with a 400 naming the parameter,
never ignoring it; a filter the same."""

from __future__ import annotations

import pytest

from projects.models import Project
from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem
from webhooks.services.subscriptions import subscription_create

pytestmark = pytest.mark.django_db

BAD_VALUES = ["null", "true", "false", "", "0", "-1", "1.5", "abc", "1e3", "\u0661", " 2"]


@pytest.fixture
def lists(user):
    """The address of every paginated list, each with something in it."""
    project: Project = ProjectFactory.create(owner=user)
    pages_add(project, 3)
    subscription, _ = subscription_create(owner=user, url="https://hooks.example.com/receiver")
    return [
        "/v1/projects",
        f"/v1/projects/{project.pk}/pages",
        "/v1/wallet/ledger",
        f"/v1/webhooks/{subscription.pk}/deliveries",
    ]


@pytest.mark.parametrize("parameter", ["page", "pageSize"])
@pytest.mark.parametrize("value", BAD_VALUES)
def test_a_page_parameter_that_is_not_a_whole_number_from_1_is_a_400_naming_it(auth_client, lists, parameter, value):
    for url in lists:
        body = assert_problem(auth_client.get(url, {parameter: value}), 400, "validation_error")
        assert list(body["errors"]) == [parameter], url


def test_a_page_size_above_the_lists_maximum_is_a_400_that_says_the_maximum(auth_client, lists, settings):
    settings.PROJECTS_PAGE_SIZE_MAX = 20
    maxima = {"/v1/projects": 20, "/v1/wallet/ledger": 500}

    for url, maximum in maxima.items():
        body = assert_problem(auth_client.get(url, {"pageSize": maximum + 1}), 400, "validation_error")
        assert str(maximum) in body["errors"]["pageSize"][0]
        assert auth_client.get(url, {"pageSize": maximum}).status_code == 200


def test_valid_page_parameters_still_page_the_list(auth_client, lists):
    pages_url = lists[1]

    first = auth_client.get(pages_url, {"pageSize": 2}).json()
    second = auth_client.get(pages_url, {"pageSize": "2", "page": "2"}).json()

    assert first["count"] == 3
    assert [page["index"] for page in first["results"]] == [1, 2]
    assert [page["index"] for page in second["results"]] == [3]
    assert_problem(auth_client.get(pages_url, {"pageSize": 2, "page": 3}), 404, "not_found")


def test_a_filter_with_a_null_value_is_a_400_too(auth_client, lists):
    body = assert_problem(auth_client.get("/v1/projects", {"status": "null"}), 400, "validation_error")

    assert list(body["errors"]) == ["status"]


@pytest.mark.parametrize("parameter", ["page", "pageSize"])
def test_a_page_parameter_given_twice_is_a_400_naming_it(auth_client, lists, parameter):
    for url in lists:
        body = assert_problem(auth_client.get(f"{url}?{parameter}=1&{parameter}=2"), 400, "validation_error")
        assert body["errors"] == {parameter: ["Given more than once; send it once."]}, url


def test_a_filter_given_twice_is_a_400_and_an_unnamed_parameter_is_still_ignored(auth_client, lists):
    body = assert_problem(auth_client.get("/v1/projects?status=Created&status=Failed"), 400, "validation_error")
    assert list(body["errors"]) == ["status"]

    assert auth_client.get("/v1/projects?cacheBuster=1&cacheBuster=2").status_code == 200
