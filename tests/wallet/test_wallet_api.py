"""The wallet over HTTP: the Wallet view, the ledger, manual top-ups and the preferences."""

from __future__ import annotations

from decimal import Decimal

import pytest

from core.events import subscribe, unsubscribe
from tests.support.problems import assert_problem
from tests.wallet.helpers import TOP_UP_FIELDS
from wallet.events import CreditLanded
from wallet.models import EntryKind, SavedCard, TopUp, Wallet, WalletSettings
from wallet.services.ledger import hold_place, wallet_credit

pytestmark = pytest.mark.django_db

WALLET_FIELDS = {
    "balanceUsd",
    "currency",
    "unlimited",
    "lowBalance",
    "spendableUsd",
    "reservedUsd",
    "autoTopUpThresholdUsd",
    "autoTopUpAmountUsd",
    "autoTopUpMonthlyCapUsd",
    "lowBalanceAlertThresholdUsd",
    "monthlySpendingCeilingUsd",
    "spentThisMonthUsd",
}


def credit(user, amount: str, cause_id: str = "seed") -> None:  # type: ignore[no-untyped-def]
    wallet_credit(
        user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=cause_id
    )


def test_a_new_account_reads_an_empty_wallet_with_every_field(auth_client):
    response = auth_client.get("/v1/wallet")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == WALLET_FIELDS
    assert body["balanceUsd"] == 0
    assert body["currency"] == "USD"
    assert body["unlimited"] is False
    assert body["lowBalance"] is False
    assert body["autoTopUpThresholdUsd"] is None
    assert body["monthlySpendingCeilingUsd"] is None


def test_the_wallet_view_shows_balance_reserved_and_spendable_as_json_numbers(user, auth_client):
    credit(user, "10.25")
    hold_place(user=user, amount=Decimal("4"), cause_type="job", cause_id="job-1")
    body = auth_client.get("/v1/wallet").json()
    assert (body["balanceUsd"], body["reservedUsd"], body["spendableUsd"]) == (10.25, 4.0, 6.25)


def test_an_unlimited_wallet_says_so_and_shows_nothing_reserved(user, auth_client):
    credit(user, "1")
    Wallet.objects.filter(user=user).update(unlimited=True)
    hold_place(user=user, amount=Decimal("0.5"), cause_type="job", cause_id="job-1")
    body = auth_client.get("/v1/wallet").json()
    assert body["unlimited"] is True
    assert body["reservedUsd"] == 0


def test_a_manual_top_up_on_a_development_deployment_is_credited_at_once(
    user, auth_client, settings, django_capture_on_commit_callbacks
):
    settings.DEVELOPMENT_DEPLOYMENT = True
    landed: list[Decimal] = []

    def record(event: CreditLanded) -> None:
        if event.user_id == user.pk:
            landed.append(event.amount)

    subscribe(CreditLanded, record)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = auth_client.post("/v1/wallet/top-up", {"amount": 12.5}, format="json")
    finally:
        unsubscribe(CreditLanded, record)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == TOP_UP_FIELDS
    assert body["status"] == "confirmed"
    assert body["method"] == "manual"
    assert (body["amount"], body["creditedAmount"], body["balance"]) == (12.5, 12.5, 12.5)
    assert body["checkoutUrl"] is None
    assert landed == [Decimal("12.500000")]
    entries = list(user.wallet.entries.values_list("kind", "amount", "cause_id"))
    assert entries == [(EntryKind.TOP_UP_CREDIT, Decimal("12.5"), body["reference"])]

    polled = auth_client.get(f"/v1/wallet/top-up/{body['reference']}")
    assert polled.status_code == 200
    assert polled.json()["status"] == "confirmed"


def test_an_idempotency_key_names_one_top_up_for_its_whole_life(user, auth_client, settings):
    """Even once its kept answer is gone (IDEMPOTENCY_KEY_HOURS over, or the answer lost in a
    crash), the key still names its top-up: the same request gets it back, never a second
    credit; another amount with it is refused."""
    settings.DEVELOPMENT_DEPLOYMENT = True
    settings.IDEMPOTENCY_KEY_HOURS = 0  # the kept answer lapses at once
    key = {"HTTP_IDEMPOTENCY_KEY": "ten-dollars"}

    first = auth_client.post("/v1/wallet/top-up", {"amount": 10}, format="json", **key)
    again = auth_client.post("/v1/wallet/top-up", {"amount": 10}, format="json", **key)
    other = auth_client.post("/v1/wallet/top-up", {"amount": 20}, format="json", **key)

    assert (first.status_code, again.status_code) == (200, 200)
    assert "Idempotent-Replayed" not in again  # answered afresh, from the top-up the key names
    assert again.json()["reference"] == first.json()["reference"]
    assert_problem(other, 422, "idempotency_key_reused")
    assert TopUp.objects.filter(user=user).count() == 1
    assert Wallet.objects.get(user=user).balance == Decimal("10")


def test_a_manual_top_up_elsewhere_is_refused_and_writes_nothing(user, auth_client, settings):
    settings.DEVELOPMENT_DEPLOYMENT = False
    response = auth_client.post("/v1/wallet/top-up", {"amount": 10, "method": "manual"}, format="json")
    assert_problem(response, 403, "manual_top_up_disabled")
    assert not TopUp.objects.exists()
    assert auth_client.get("/v1/wallet").json()["balanceUsd"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {"amount": -5},
        {"amount": 0},
        {"amount": "NaN"},
        {"amount": "abc"},
        {"amount": 0.5},
        {"amount": 1_000_000},
        {"amount": 10.1234567},
        {},
        {"amount": 10, "method": "cheque"},
        {"amount": 10, "coin": "BTC"},
        {"amount": 10, "method": "manual", "savedCardId": "7d3c2f55-52f4-4a43-9d6b-0a8e3b7e0d11"},
    ],
)
def test_bad_top_up_requests_are_400_and_change_nothing(auth_client, settings, body):
    settings.DEVELOPMENT_DEPLOYMENT = True
    response = auth_client.post("/v1/wallet/top-up", body, format="json")
    assert_problem(response, 400, "validation_error")
    assert not TopUp.objects.exists()


def test_a_double_submitted_top_up_is_credited_once(user, auth_client, settings):
    settings.DEVELOPMENT_DEPLOYMENT = True
    first = auth_client.post("/v1/wallet/top-up", {"amount": 10}, format="json")
    second = auth_client.post("/v1/wallet/top-up", {"amount": 10}, format="json")
    assert first.json()["reference"] == second.json()["reference"]
    keyed = [
        auth_client.post("/v1/wallet/top-up", {"amount": 5}, format="json", HTTP_IDEMPOTENCY_KEY="pay-5")
        for _ in range(2)
    ]
    assert keyed[0].json() == keyed[1].json()
    assert keyed[1].headers["Idempotent-Replayed"] == "true"
    assert TopUp.objects.count() == 2
    assert auth_client.get("/v1/wallet").json()["balanceUsd"] == 15


def test_someone_elses_top_up_is_not_found(user, other_user, jwt_client, settings):
    settings.DEVELOPMENT_DEPLOYMENT = True
    reference = jwt_client(user).post("/v1/wallet/top-up", {"amount": 10}, format="json").json()["reference"]
    assert_problem(jwt_client(other_user).get(f"/v1/wallet/top-up/{reference}"), 404, "not_found")
    assert_problem(jwt_client(user).get("/v1/wallet/top-up/tu_unknown"), 404, "not_found")


def test_the_ledger_lists_the_owners_entries_newest_first_in_pages(user, other_user, auth_client):
    for number in range(3):
        credit(user, "1", cause_id=f"c{number}")
    credit(other_user, "7", cause_id="theirs")
    hold_place(user=user, amount=Decimal("2"), cause_type="job", cause_id="job-1")
    response = auth_client.get("/v1/wallet/ledger", {"pageSize": 2})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 4
    assert [entry["kind"] for entry in body["results"]] == ["hold", "adjustment"]
    assert body["results"][0]["amountUsd"] == -2
    assert body["results"][0]["reservedAfterUsd"] == 2
    assert body["results"][0]["causeType"] == "job"
    rest = auth_client.get("/v1/wallet/ledger", {"pageSize": 2, "page": 2}).json()["results"]
    assert [entry["causeId"] for entry in rest] == ["c1", "c0"]


def test_auto_top_up_needs_both_threshold_and_amount_and_a_saved_card(user, auth_client):
    assert_problem(auth_client.put("/v1/wallet/auto-top-up", {"threshold": 5}, format="json"), 400, "validation_error")
    assert_problem(
        auth_client.put("/v1/wallet/auto-top-up", {"threshold": 5, "amount": None}, format="json"),
        400,
        "validation_error",
    )
    no_card = auth_client.put("/v1/wallet/auto-top-up", {"threshold": 5, "amount": 20}, format="json")
    assert_problem(no_card, 400, "validation_error")
    assert "amount" in no_card.json()["errors"]
    SavedCard.objects.create(user=user, stripe_payment_method_id="pm_1", brand="visa", last4="4242", is_primary=True)
    bad_cap = auth_client.put("/v1/wallet/auto-top-up", {"threshold": 5, "amount": 20, "monthlyCap": -1}, format="json")
    assert_problem(bad_cap, 400, "validation_error")
    assert not WalletSettings.objects.filter(auto_top_up_amount__isnull=False).exists()

    enabled = auth_client.put(
        "/v1/wallet/auto-top-up", {"threshold": 5, "amount": 20, "monthlyCap": 100}, format="json"
    ).json()
    assert (enabled["autoTopUpThresholdUsd"], enabled["autoTopUpAmountUsd"], enabled["autoTopUpMonthlyCapUsd"]) == (
        5,
        20,
        100,
    )
    disabled = auth_client.put("/v1/wallet/auto-top-up", {"threshold": None, "amount": None}, format="json").json()
    assert (disabled["autoTopUpThresholdUsd"], disabled["autoTopUpAmountUsd"], disabled["autoTopUpMonthlyCapUsd"]) == (
        None,
        None,
        None,
    )


def test_the_low_balance_threshold_drives_low_balance_and_can_be_cleared(user, auth_client):
    credit(user, "10")
    body = auth_client.put("/v1/wallet/low-balance-alert", {"threshold": 10}, format="json").json()
    assert (body["lowBalanceAlertThresholdUsd"], body["lowBalance"]) == (10, True)
    body = auth_client.put("/v1/wallet/low-balance-alert", {"threshold": 9.99}, format="json").json()
    assert body["lowBalance"] is False
    body = auth_client.put("/v1/wallet/low-balance-alert", {}, format="json").json()
    assert (body["lowBalanceAlertThresholdUsd"], body["lowBalance"]) == (None, False)
    negative = auth_client.put("/v1/wallet/low-balance-alert", {"threshold": -1}, format="json")
    assert_problem(negative, 400, "validation_error")


def test_the_spending_ceiling_is_set_and_cleared(auth_client):
    assert (
        auth_client.put("/v1/wallet/spending-ceiling", {"ceiling": 50}, format="json").json()[
            "monthlySpendingCeilingUsd"
        ]
        == 50
    )
    assert_problem(
        auth_client.put("/v1/wallet/spending-ceiling", {"ceiling": 0}, format="json"), 400, "validation_error"
    )
    assert (
        auth_client.put("/v1/wallet/spending-ceiling", {"ceiling": None}, format="json").json()[
            "monthlySpendingCeilingUsd"
        ]
        is None
    )


def test_the_wallet_needs_a_credential(api_client):
    assert_problem(api_client.get("/v1/wallet"), 401, "not_authenticated")
    assert_problem(api_client.post("/v1/wallet/top-up", {"amount": 5}, format="json"), 401, "not_authenticated")
