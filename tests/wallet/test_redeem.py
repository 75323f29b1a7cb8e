"""Redeeming credit codes over HTTP: POST /v1/wallet/redeem."""

from __future__ import annotations

import io
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services.users import token_issue
from tests.factories import UserFactory
from tests.support.problems import assert_problem
from tests.wallet.helpers import TOP_UP_FIELDS, assert_wallet_invariants
from wallet.models import EntryKind, LedgerEntry, RedeemBatch, RedeemCode, TopUp, Wallet
from wallet.services.redeem import batch_void, code_normalize, codes_issue

pytestmark = pytest.mark.django_db

URL = "/v1/wallet/redeem"


def issue(amount: str = "25", count: int = 1, **fields) -> tuple[RedeemBatch, list[str]]:  # type: ignore[no-untyped-def]
    return codes_issue(amount=Decimal(amount), count=count, operator=None, **fields)


def assert_nothing_credited(*users) -> None:  # type: ignore[no-untyped-def]
    """No redeem credit, no top-up, no money on any of these accounts."""
    for someone in users:
        assert not LedgerEntry.objects.filter(wallet__user=someone).exists()
        assert not TopUp.objects.filter(user=someone).exists()
        assert not Wallet.objects.filter(user=someone, balance__gt=0).exists()


def test_a_code_credits_at_once_and_answers_a_confirmed_top_up_view(user, jwt_client):
    batch, [code] = issue("25")
    client = jwt_client(user)

    response = client.post(URL, {"code": code})

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == TOP_UP_FIELDS
    assert body["status"] == "confirmed"
    assert body["method"] == "manual"
    assert (body["amount"], body["creditedAmount"], body["balance"]) == (25, 25, 25)
    assert body["currency"] == "USD"
    assert body["checkoutUrl"] is None
    assert body["message"] == f"Code …{code[-4:]} redeemed: 25 USD credited."
    assert client.get("/v1/wallet").json()["balanceUsd"] == 25
    assert client.get(f"/v1/wallet/top-up/{body['reference']}").json() == body
    redeemed = RedeemCode.objects.get(batch=batch)
    assert redeemed.redeemed_by == user
    assert redeemed.redeemed_at is not None
    [entry] = LedgerEntry.objects.filter(wallet__user=user)
    assert (entry.kind, entry.amount, entry.cause_type, entry.cause_id) == (
        EntryKind.REDEEM_CREDIT,
        Decimal("25"),
        "code",
        str(redeemed.pk),
    )
    assert TopUp.objects.get(reference=body["reference"]).ledger_entry == entry
    assert_wallet_invariants(entry.wallet_id)


def test_the_redeem_appears_in_the_ledger_as_one_redeem_credit(user, jwt_client):
    _, [code] = issue("7.5")
    client = jwt_client(user)

    client.post(URL, {"code": code})

    [entry] = client.get("/v1/wallet/ledger").json()["results"]
    assert (entry["kind"], entry["amountUsd"], entry["causeType"]) == ("redeem_credit", 7.5, "code")


@pytest.mark.parametrize(
    "typed",
    [
        pytest.param(lambda code: code.lower(), id="lower case"),
        pytest.param(lambda code: code.replace("-", " "), id="spaces for hyphens"),
        pytest.param(lambda code: f"  {code.replace('-', '').lower()} ", id="no hyphens, padded"),
        pytest.param(lambda code: code.removeprefix("BTS-"), id="without the prefix"),
        pytest.param(lambda code: code.replace("0", "O").replace("1", "l"), id="O for 0 and l for 1"),
    ],
)
def test_codes_are_accepted_as_people_type_them(user, jwt_client, typed):
    _, [code] = issue("5")

    response = jwt_client(user).post(URL, {"code": typed(code)})

    assert response.status_code == 200, response.content
    assert response.json()["creditedAmount"] == 5


def test_an_unknown_code_is_refused_and_changes_nothing(user, jwt_client):
    issue("5")

    for unknown in ("BTS-0000-0000-0000-0000", "not a code at all"):
        assert_problem(jwt_client(user).post(URL, {"code": unknown}), 400, "redeem_code_unknown")

    assert_nothing_credited(user)
    assert not RedeemCode.objects.filter(redeemed_at__isnull=False).exists()


def test_the_redeemers_retry_with_its_idempotency_key_gets_its_top_up_back(user, jwt_client, settings):
    """The answer lost (a crash after the commit) and the kept response gone: the retry with
    the same key is the same redemption, not redeem_code_used; without the key, it is used."""
    settings.IDEMPOTENCY_KEY_HOURS = 0  # the kept answer lapses at once
    _, [code, other_code] = issue("5", count=2)
    client = jwt_client(user)

    first = client.post(URL, {"code": code}, HTTP_IDEMPOTENCY_KEY="redeem-once")
    again = client.post(URL, {"code": code}, HTTP_IDEMPOTENCY_KEY="redeem-once")

    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json()["reference"] == first.json()["reference"]
    assert_problem(client.post(URL, {"code": code}), 400, "redeem_code_used")
    reused = client.post(URL, {"code": other_code}, HTTP_IDEMPOTENCY_KEY="redeem-once")
    assert_problem(reused, 422, "idempotency_key_reused")
    assert LedgerEntry.objects.filter(kind=EntryKind.REDEEM_CREDIT).count() == 1
    assert Wallet.objects.get(user=user).balance == 5


def test_a_used_code_is_refused_and_changes_nothing(user, other_user, jwt_client):
    _, [code] = issue("5")
    assert jwt_client(user).post(URL, {"code": code}).status_code == 200

    assert_problem(jwt_client(other_user).post(URL, {"code": code}), 400, "redeem_code_used")
    assert_problem(jwt_client(user).post(URL, {"code": code.lower()}), 400, "redeem_code_used")

    assert_nothing_credited(other_user)
    assert LedgerEntry.objects.filter(kind=EntryKind.REDEEM_CREDIT).count() == 1
    assert Wallet.objects.get(user=user).balance == 5
    assert RedeemCode.objects.get().redeemed_by == user


def test_an_expired_code_is_refused_and_changes_nothing(user, jwt_client):
    batch, [code] = issue("5", expires_at=timezone.now() + timedelta(days=1))
    RedeemBatch.objects.filter(pk=batch.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert_problem(jwt_client(user).post(URL, {"code": code}), 400, "redeem_code_expired")

    assert_nothing_credited(user)
    assert RedeemCode.objects.get().redeemed_at is None


def test_a_code_of_a_voided_batch_is_refused_and_changes_nothing(user, jwt_client):
    batch, [code] = issue("5")
    batch_void(batch=batch, operator=None)

    assert_problem(jwt_client(user).post(URL, {"code": code}), 400, "redeem_code_void")

    assert_nothing_credited(user)


def test_a_voided_code_is_refused_even_in_a_live_batch(user, jwt_client):
    _, codes = issue("5", count=2)
    voided = RedeemCode.objects.get(hint=codes[0][-4:])
    RedeemCode.objects.filter(pk=voided.pk).update(voided_at=timezone.now())
    client = jwt_client(user)

    assert_problem(client.post(URL, {"code": codes[0]}), 400, "redeem_code_void")
    assert client.post(URL, {"code": codes[1]}).status_code == 200


def test_voiding_a_batch_spares_the_codes_already_redeemed(user, other_user, jwt_client):
    batch, codes = issue("5", count=3)
    assert jwt_client(user).post(URL, {"code": codes[0]}).status_code == 200

    voided = batch_void(batch=batch, operator=None)

    assert voided == 2
    assert batch_void(batch=batch, operator=None) == 0
    assert_problem(jwt_client(other_user).post(URL, {"code": codes[1]}), 400, "redeem_code_void")
    assert_problem(jwt_client(other_user).post(URL, {"code": codes[0]}), 400, "redeem_code_used")
    assert Wallet.objects.get(user=user).balance == 5


def test_a_missing_or_blank_code_is_a_validation_error(user, jwt_client):
    client = jwt_client(user)

    assert_problem(client.post(URL, {}), 400, "validation_error")
    assert_problem(client.post(URL, {"code": "  "}), 400, "validation_error")


def test_redeeming_needs_a_credential(api_client):
    _, [code] = issue("5")

    assert_problem(api_client.post(URL, {"code": code}), 401, "not_authenticated")
    assert RedeemCode.objects.get().redeemed_at is None


def test_no_code_is_stored_in_plain_text_anywhere_in_the_database(user, jwt_client):
    _, codes = issue("5", count=3)
    jwt_client(user).post(URL, {"code": codes[0]}, HTTP_IDEMPOTENCY_KEY="redeem-1")
    dump = io.StringIO()

    call_command("dumpdata", stdout=dump)

    text = dump.getvalue().upper()
    for code in codes:
        assert code not in text
        assert code_normalize(code) not in text
        assert code.replace("-", "")[3:] not in text


def test_attempts_past_the_limit_are_throttled_per_account(user, other_user, jwt_client, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "redeem": "3/min"}
    _, [code] = issue("5")
    client = jwt_client(user)
    for attempt in range(3):
        assert_problem(client.post(URL, {"code": f"BTS-0000-0000-0000-000{attempt}"}), 400, "redeem_code_unknown")

    response = client.post(URL, {"code": code})

    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert RedeemCode.objects.get().redeemed_at is None
    assert jwt_client(other_user).post(URL, {"code": code}).status_code == 200  # the limit is per account


def test_attempts_past_the_limit_are_throttled_per_client_address_across_accounts(user, jwt_client, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "redeem": "3/min", "redeem_address": "5/min"}
    _, [code] = issue("5")
    accounts = [jwt_client(UserFactory()) for _ in range(2)]
    guesses = iter(f"BTS-0000-0000-0000-00{n:02d}" for n in range(20))
    statuses = [
        client.post(URL, {"code": next(guesses)}, REMOTE_ADDR="203.0.113.7").status_code
        for client in accounts
        for _ in range(3)
    ]

    blocked = jwt_client(user).post(URL, {"code": code}, REMOTE_ADDR="203.0.113.7")
    elsewhere = jwt_client(user).post(URL, {"code": code}, REMOTE_ADDR="198.51.100.20")

    assert statuses == [400, 400, 400, 400, 400, 429]  # the address's 5, though each account had 3
    assert_problem(blocked, 429, "rate_limited")
    assert elsewhere.status_code == 200  # the limit is per address: another one is not held back
    assert RedeemCode.objects.get().redeemed_by == user


def test_the_default_limit_is_ten_attempts_a_minute(user, jwt_client):
    client = jwt_client(user)
    statuses = [client.post(URL, {"code": f"BTS-0000-0000-0000-00{n:02d}"}).status_code for n in range(11)]

    assert statuses == [400] * 10 + [429]


def test_an_idempotency_key_replays_the_same_view_and_credits_once(user, jwt_client):
    _, [code] = issue("5")
    client = jwt_client(user)

    first = client.post(URL, {"code": code}, HTTP_IDEMPOTENCY_KEY="redeem-once")
    again = client.post(URL, {"code": code}, HTTP_IDEMPOTENCY_KEY="redeem-once")

    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert LedgerEntry.objects.filter(kind=EntryKind.REDEEM_CREDIT).count() == 1
    assert TopUp.objects.filter(user=user).count() == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_redeems_of_one_code_credit_exactly_once():
    callers = 8
    _, [code] = issue("10")
    users = [UserFactory() for _ in range(callers)]
    tokens = [token_issue(user=someone).token for someone in users]
    together = threading.Barrier(callers)
    results: list[tuple[int, str]] = []
    lock = threading.Lock()

    def redeem(token: str) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            together.wait(timeout=30)
            response = client.post(URL, {"code": code})
            with lock:
                results.append((response.status_code, response.json().get("code", "")))
        finally:
            connection.close()

    threads = [threading.Thread(target=redeem, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(results) == [(200, "")] + [(400, "redeem_code_used")] * (callers - 1)
    [entry] = LedgerEntry.objects.filter(kind=EntryKind.REDEEM_CREDIT)
    assert entry.amount == 10
    assert TopUp.objects.count() == 1
    assert sum(wallet.balance for wallet in Wallet.objects.all()) == 10
    assert RedeemCode.objects.get().redeemed_by_id == entry.wallet.user_id
