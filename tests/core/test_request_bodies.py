"""Strict request bodies: a member an operation does not have, however it is spelt, is a
400 naming it as sent and changes nothing; an amount of money is a JSON number or ASCII
digits, never another script's digits or Decimal()'s other spellings."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem
from wallet.models import LedgerEntry, TopUp, WalletSettings

pytestmark = pytest.mark.django_db

ALERT = "/v1/wallet/low-balance-alert"


def alert_threshold(user) -> Decimal | None:  # type: ignore[no-untyped-def]
    return WalletSettings.objects.get(wallet__user=user).low_balance_threshold


@pytest.fixture
def alert_at_ten(user, auth_client):  # type: ignore[no-untyped-def]
    assert auth_client.put(ALERT, {"threshold": 10}, format="json").status_code == 200
    assert alert_threshold(user) == 10


@pytest.mark.parametrize(
    ("body", "sent"),
    [
        ('{"treshold": 5}', "treshold"),
        ('{"THRESHOLD": 5}', "THRESHOLD"),
        ('{"Threshold": 5}', "Threshold"),
        ('{"threshold_usd": 5}', "threshold_usd"),
        ('{"lowBalanceAlertThresholdUsd": 5}', "lowBalanceAlertThresholdUsd"),
        ('{"threshold": 5, "threshold": null}', "threshold"),
        ('{"threshold": 5, "THRESHOLD": null}', "THRESHOLD"),
    ],
)
def test_a_misspelt_or_repeated_member_is_refused_by_its_name_and_leaves_the_alert_on(
    user, auth_client, alert_at_ten, body, sent
):
    response = auth_client.generic("PUT", ALERT, body, content_type="application/json")

    problem = assert_problem(response, 400, "validation_error")
    assert problem["unknownFields"] == [sent]
    assert sent in problem["detail"]
    assert alert_threshold(user) == 10


def test_a_snake_case_name_is_refused_with_its_camel_case_spelling(user, auth_client):
    body = {"threshold": 20, "amount": 25, "monthly_cap": 100}

    problem = assert_problem(auth_client.put("/v1/wallet/auto-top-up", body, format="json"), 400, "validation_error")

    assert problem["unknownFields"] == ["monthly_cap"]
    assert "monthlyCap" in " ".join(message for messages in problem["errors"].values() for message in messages)
    assert not WalletSettings.objects.filter(wallet__user=user, auto_top_up_threshold__isnull=False).exists()


def test_a_read_only_field_is_refused_like_an_unknown_one(user, auth_client, settings):
    settings.DEVELOPMENT_DEPLOYMENT = True

    response = auth_client.post("/v1/wallet/top-up", {"amount": 5, "creditedAmount": 500}, format="json")

    assert assert_problem(response, 400, "validation_error")["unknownFields"] == ["creditedAmount"]
    assert not TopUp.objects.exists()


def test_an_unknown_member_of_a_nested_object_is_refused_by_its_path(user, auth_client):
    project = ProjectFactory(owner=user)
    before = project.glossary
    glossary = [{"term": "Ahab", "translation": "Acab"}, {"term": "Ishmael", "translation": "Ismael", "note": "x"}]

    response = auth_client.patch(f"/v1/projects/{project.pk}", {"glossary": glossary}, format="json")

    assert assert_problem(response, 400, "validation_error")["unknownFields"] == ["glossary[1].note"]
    project.refresh_from_db()
    assert project.glossary == before


def test_a_body_that_was_read_loosely_is_strict_too(user, auth_client):
    project = ProjectFactory(owner=user)
    (page,) = pages_add(project, 1)

    response = auth_client.post(f"/v1/projects/{project.pk}/pages/{page.pk}/reject", {"reasn": "blurry"}, format="json")

    assert assert_problem(response, 400, "validation_error")["unknownFields"] == ["reasn"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_json_that_is_not_json_is_malformed(user, auth_client, alert_at_ten, literal):
    response = auth_client.generic("PUT", ALERT, f'{{"threshold": {literal}}}', content_type="application/json")

    assert_problem(response, 400, "malformed_request")
    assert alert_threshold(user) == 10


NOT_PLAIN = "Give the amount as a JSON number or a string of ASCII digits, such as 12.50."
# Decimal() reads every one of these as a number.
NOT_PLAIN_AMOUNTS = {
    "arabic-indic": "١٢",
    "fullwidth": "１２",
    "devanagari": "१२",
    "arabic-indic-fraction": "٣.٥",
    "underscore": "1_2",
    "spaces": " 12 ",
    "exponent": "1.2e1",
    "plus": "+12",
    "boolean": True,
}


@pytest.mark.parametrize("amount", NOT_PLAIN_AMOUNTS.values(), ids=NOT_PLAIN_AMOUNTS.keys())
def test_a_top_up_in_other_digits_is_refused_and_credits_nothing(user, auth_client, settings, amount):
    settings.DEVELOPMENT_DEPLOYMENT = True

    response = auth_client.post("/v1/wallet/top-up", {"amount": amount, "method": "manual"}, format="json")

    assert assert_problem(response, 400, "validation_error")["errors"] == {"amount": [NOT_PLAIN]}
    assert not TopUp.objects.exists()
    assert not LedgerEntry.objects.exists()


@pytest.mark.parametrize("amount", ["12.50", 12.5, "12", 12])
def test_a_top_up_as_a_number_or_ascii_digits_is_credited(user, auth_client, settings, amount):
    settings.DEVELOPMENT_DEPLOYMENT = True

    response = auth_client.post("/v1/wallet/top-up", {"amount": amount, "method": "manual"}, format="json")

    assert response.status_code == 200, response.content
    assert Decimal(str(response.json()["creditedAmount"])) == Decimal(str(amount))


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (ALERT, {"threshold": "١٢"}, "threshold"),
        ("/v1/wallet/spending-ceiling", {"ceiling": "١٢"}, "ceiling"),
        ("/v1/wallet/auto-top-up", {"threshold": "١٢", "amount": 25}, "threshold"),
        ("/v1/wallet/auto-top-up", {"threshold": 5, "amount": "２５"}, "amount"),
        ("/v1/wallet/auto-top-up", {"threshold": 5, "amount": 25, "monthlyCap": "١٠٠"}, "monthlyCap"),
    ],
)
def test_every_money_setting_takes_ascii_digits_only(user, auth_client, path, body, field):
    before = WalletSettings.objects.filter(wallet__user=user).values().first()

    response = auth_client.put(path, body, format="json")

    assert assert_problem(response, 400, "validation_error")["errors"] == {field: [NOT_PLAIN]}
    assert WalletSettings.objects.filter(wallet__user=user).values().first() == before


def test_every_json_request_body_in_the_schema_forbids_other_properties(api_client):
    document = api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = document["components"]["schemas"]
    bodies = {
        content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        for path_item in document["paths"].values()
        for operation in path_item.values()
        if "application/json" in (content := operation.get("requestBody", {}).get("content", {}))
    }

    assert len(bodies) >= 20
    loose = sorted(
        name for name in bodies | {"GlossaryEntryRequest"} if components[name].get("additionalProperties") is not False
    )
    assert loose == []
    assert json.dumps(components["GlossaryEntryRequest"])  # the nested one is a component of its own
