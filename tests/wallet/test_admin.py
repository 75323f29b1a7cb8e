"""The wallet's Django admin, through its pages as an operator, and `manage.py issue_codes`."""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from tests.factories import UserFactory
from tests.support.problems import assert_problem
from tests.wallet.helpers import assert_wallet_invariants
from wallet.errors import RefundExists
from wallet.models import EntryKind, LedgerEntry, RedeemBatch, RedeemCode, StripeCustomerErasure, TopUp, Wallet
from wallet.services.ledger import (
    batch_charge_refund,
    hold_place,
    hold_settle,
    wallet_credit,
    wallet_get_or_create,
)
from wallet.services.redeem import codes_issue

pytestmark = pytest.mark.django_db

ISSUE_URL = "/admin/wallet/redeembatch/add/"
BATCHES_URL = "/admin/wallet/redeembatch/"
WALLETS_URL = "/admin/wallet/wallet/"
REDEEM_URL = "/v1/wallet/redeem"


def issue_form(**fields: str) -> dict[str, str]:
    return {"amount": "25", "count": "3", "expires_at_0": "", "expires_at_1": "", "note": "launch", **fields}


def csv_rows(response) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def credit_form_id(page) -> str:  # type: ignore[no-untyped-def]
    return re.search(r'name="credit_id" value="([0-9a-f-]{36})"', page.content.decode()).group(1)


def seed(user, amount: str = "10") -> Wallet:  # type: ignore[no-untyped-def]
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.TOP_UP_CREDIT, cause_type="top_up", cause_id="s")
    return Wallet.objects.get(user=user)


# --- Credit codes ----------------------------------------------------------------------------


def test_issuing_a_batch_downloads_a_csv_whose_codes_redeem(staff_client, operator, user, jwt_client):
    form_page = staff_client.get(ISSUE_URL)

    response = staff_client.post(ISSUE_URL, issue_form())

    assert form_page.status_code == 200
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment;")
    assert "no-store" in response["Cache-Control"]
    rows = csv_rows(response)
    batch = RedeemBatch.objects.get()
    assert (batch.amount, batch.count, batch.note, batch.created_by) == (Decimal("25"), 3, "launch", operator)
    assert list(rows[0]) == ["code", "amount", "currency", "expires_utc", "batch"]
    assert [(row["amount"], row["currency"], row["expires_utc"], row["batch"]) for row in rows] == [
        ("25", "USD", "", str(batch.pk))
    ] * 3
    assert all(re.fullmatch(r"BTS(-[0-9A-HJKMNP-TV-Z]{4}){4}", row["code"]) for row in rows)
    client = jwt_client(user)
    for row in rows:
        assert client.post(REDEEM_URL, {"code": row["code"]}).status_code == 200
    assert client.get("/v1/wallet").json()["balanceUsd"] == 75
    assert LogEntry.objects.filter(user=operator, object_id=str(batch.pk)).exists()


def test_an_expiry_given_in_the_form_is_in_the_csv_and_on_the_batch(staff_client):
    response = staff_client.post(ISSUE_URL, issue_form(count="1", expires_at_0="2099-12-31", expires_at_1="23:59:00"))

    assert [row["expires_utc"] for row in csv_rows(response)] == ["2099-12-31T23:59:00Z"]
    assert RedeemBatch.objects.get().expires_at.isoformat() == "2099-12-31T23:59:00+00:00"


@pytest.mark.parametrize(
    "fields",
    [
        {"count": "0"},
        {"count": "10001"},
        {"amount": "0"},
        {"amount": "-5"},
        {"amount": "10000.01"},
        {"amount": "١٢"},
        {"expires_at_0": "2000-01-01", "expires_at_1": "00:00:00"},
    ],
)
def test_the_issue_form_refuses_bad_input_and_issues_nothing(staff_client, fields):
    response = staff_client.post(ISSUE_URL, issue_form(**fields))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert response.context["form"].errors
    assert not RedeemBatch.objects.exists()
    assert not RedeemCode.objects.exists()


def test_the_batch_list_counts_redeemed_and_unredeemed_codes(staff_client, user, jwt_client):
    _, codes = codes_issue(amount=Decimal("5"), count=3, operator=None)
    jwt_client(user).post(REDEEM_URL, {"code": codes[0]})

    response = staff_client.get(BATCHES_URL)

    assert response.status_code == 200
    [batch] = response.context["cl"].result_list
    assert (batch.redeemed_count, batch.unredeemed_count) == (1, 2)
    assert codes[1] not in response.content.decode()


def test_voiding_a_batch_withdraws_its_unredeemed_codes_only(staff_client, user, other_user, jwt_client):
    batch, codes = codes_issue(amount=Decimal("5"), count=3, operator=None)
    assert jwt_client(user).post(REDEEM_URL, {"code": codes[0]}).status_code == 200

    response = staff_client.post(
        BATCHES_URL, {"action": "void_unredeemed", "_selected_action": [str(batch.pk)]}, follow=True
    )

    assert response.status_code == 200
    assert "Voided 2 unredeemed code(s)." in response.content.decode()
    batch.refresh_from_db()
    assert batch.voided_at is not None
    assert RedeemCode.objects.filter(voided_at__isnull=False).count() == 2
    assert_problem(jwt_client(other_user).post(REDEEM_URL, {"code": codes[1]}), 400, "redeem_code_void")
    assert Wallet.objects.get(user=user).balance == 5  # what was redeemed stands


def test_batches_and_codes_cannot_be_edited_or_deleted(staff_client):
    batch, _ = codes_issue(amount=Decimal("5"), count=1, operator=None)
    code = RedeemCode.objects.get()

    edit = staff_client.post(f"{BATCHES_URL}{batch.pk}/change/", {"amount": "500", "count": "1"})
    delete = staff_client.post(f"{BATCHES_URL}{batch.pk}/delete/", {"post": "yes"})
    code_edit = staff_client.post(f"/admin/wallet/redeemcode/{code.pk}/change/", {"hint": "XXXX"})

    assert (edit.status_code, delete.status_code, code_edit.status_code) == (403, 403, 403)
    batch.refresh_from_db()
    assert batch.amount == 5
    assert RedeemCode.objects.get().hint == code.hint
    assert staff_client.get(f"{BATCHES_URL}{batch.pk}/change/").status_code == 200


def test_searching_the_codes_for_a_whole_code_finds_it_by_its_hash(staff_client):
    _, codes = codes_issue(amount=Decimal("5"), count=3, operator=None)

    response = staff_client.get("/admin/wallet/redeemcode/", {"q": codes[1].lower()})

    assert [code.hint for code in response.context["cl"].result_list] == [codes[1][-4:]]


# --- Wallets -----------------------------------------------------------------------------------


def test_the_wallet_list_shows_email_balance_reserved_spendable_and_unlimited(staff_client, user):
    seed(user, "10")
    hold_place(user=user, amount=Decimal("4"), cause_type="job", cause_id="job-1")

    response = staff_client.get(WALLETS_URL, {"q": user.email})

    page = response.content.decode()
    assert response.status_code == 200
    assert user.email in page
    assert all(figure in page for figure in ("10.000000", "4.000000", "6.000000"))


def test_granting_and_revoking_unlimited_goes_through_the_actions(staff_client, operator, user, jwt_client):
    wallet = wallet_get_or_create(user=user)

    staff_client.post(WALLETS_URL, {"action": "grant_unlimited", "_selected_action": [str(wallet.pk)]})
    granted = jwt_client(user).get("/v1/wallet").json()["unlimited"]
    staff_client.post(WALLETS_URL, {"action": "revoke_unlimited", "_selected_action": [str(wallet.pk)]})
    revoked = jwt_client(user).get("/v1/wallet").json()["unlimited"]

    assert (granted, revoked) == (True, False)
    assert LogEntry.objects.filter(user=operator, object_id=str(wallet.pk)).count() == 2
    assert not LedgerEntry.objects.filter(wallet=wallet).exists()


def test_an_open_hold_keeps_its_terms_when_unlimited_is_granted(staff_client, user):
    wallet = seed(user, "10")
    hold = hold_place(user=user, amount=Decimal("4"), cause_type="job", cause_id="job-1")

    staff_client.post(WALLETS_URL, {"action": "grant_unlimited", "_selected_action": [str(wallet.pk)]})

    wallet.refresh_from_db()
    assert (wallet.unlimited, wallet.reserved) == (True, 4)
    hold.refresh_from_db()
    assert hold.state == "open"


def test_add_credit_writes_an_adjustment_naming_the_operator(staff_client, user, jwt_client):
    wallet = wallet_get_or_create(user=user)
    url = f"{WALLETS_URL}{wallet.pk}/add-credit/"
    form_page = staff_client.get(url)
    credit_id = credit_form_id(form_page)
    post = {"amount": "12.50", "reason": "Goodwill after an outage", "credit_id": credit_id}

    response = staff_client.post(url, post)
    staff_client.post(url, post)  # the same form posted twice credits once

    assert form_page.status_code == 200
    assert response.status_code == 302
    assert response["Location"] == f"{WALLETS_URL}{wallet.pk}/change/"
    [entry] = LedgerEntry.objects.filter(wallet=wallet)
    assert (entry.kind, entry.amount, entry.cause_type, entry.cause_id) == (
        EntryKind.ADJUSTMENT,
        Decimal("12.5"),
        "operator",
        credit_id,
    )
    assert entry.memo == "Goodwill after an outage (by operator@example.com)"
    assert jwt_client(user).get("/v1/wallet").json()["balanceUsd"] == 12.5
    assert not TopUp.objects.exists()


def test_each_add_credit_form_is_a_new_cause(staff_client, user):
    wallet = wallet_get_or_create(user=user)
    url = f"{WALLETS_URL}{wallet.pk}/add-credit/"

    for _ in range(2):
        staff_client.post(url, {"amount": "1", "reason": "refund", "credit_id": credit_form_id(staff_client.get(url))})

    assert Wallet.objects.get(pk=wallet.pk).balance == 2


@pytest.mark.parametrize(
    "fields",
    [{"amount": "0"}, {"amount": "-3"}, {"amount": "abc"}, {"amount": "١٢"}, {"amount": "１２"}, {"reason": ""}],
)
def test_add_credit_refuses_bad_input_and_credits_nothing(staff_client, user, fields):
    wallet = wallet_get_or_create(user=user)
    url = f"{WALLETS_URL}{wallet.pk}/add-credit/"
    post = {"amount": "5", "reason": "why", "credit_id": credit_form_id(staff_client.get(url)), **fields}

    response = staff_client.post(url, post)

    assert response.status_code == 200
    assert response.context["form"].errors
    assert not LedgerEntry.objects.exists()


def debit_form_id(page) -> str:  # type: ignore[no-untyped-def]
    return re.search(r'name="debit_id" value="([0-9a-f-]{36})"', page.content.decode()).group(1)


def test_debit_writes_a_negative_adjustment_naming_the_operator_and_keeps_the_held_credit(staff_client, user):
    wallet = seed(user, "10")
    hold_place(user=user, amount=Decimal("4"), cause_type="job", cause_id="running")  # spendable 6
    url = f"{WALLETS_URL}{wallet.pk}/debit/"
    form_page = staff_client.get(url)
    post = {"amount": "5.5", "reason": "Chargeback on the card top-up", "debit_id": debit_form_id(form_page)}

    response = staff_client.post(url, post)
    staff_client.post(url, post)  # the same form posted twice debits once

    assert form_page.status_code == 200
    assert response.status_code == 302
    assert response["Location"] == f"{WALLETS_URL}{wallet.pk}/change/"
    entry = LedgerEntry.objects.get(wallet=wallet, kind=EntryKind.ADJUSTMENT)
    assert (entry.amount, entry.cause_type, entry.cause_id) == (Decimal("-5.5"), "operator", post["debit_id"])
    assert entry.memo == "Chargeback on the card top-up (by operator@example.com)"
    wallet = assert_wallet_invariants(wallet.pk)
    assert (wallet.balance, wallet.reserved, wallet.spendable) == (Decimal("4.5"), 4, Decimal("0.5"))
    assert LogEntry.objects.filter(object_id=str(wallet.pk), change_message__startswith="Debited 5.5").exists()


@pytest.mark.parametrize("amount", ["6.000001", "0", "-1", "abc", "٣"])
def test_a_debit_past_spendable_or_not_positive_is_refused_and_writes_nothing(staff_client, user, amount):
    wallet = seed(user, "10")
    hold_place(user=user, amount=Decimal("4"), cause_type="job", cause_id="running")
    url = f"{WALLETS_URL}{wallet.pk}/debit/"
    entries = LedgerEntry.objects.count()

    response = staff_client.post(
        url, {"amount": amount, "reason": "why", "debit_id": debit_form_id(staff_client.get(url))}
    )

    assert response.status_code == 200
    assert response.context["form"].errors
    assert LedgerEntry.objects.count() == entries
    assert Wallet.objects.get(pk=wallet.pk).spendable == 6


def charged(user, job: str, hold: str, charge: str) -> None:  # type: ignore[no-untyped-def]
    hold_settle(
        hold=hold_place(user=user, amount=Decimal(hold), cause_type="job", cause_id=job), amount=Decimal(charge)
    )


def test_a_batch_charge_is_refunded_once_at_most_what_it_charged(staff_client, user):
    wallet = seed(user, "10")
    charged(user, "job-1", "4", "3")
    charged(user, "job-2", "1", "1")
    url = f"{WALLETS_URL}{wallet.pk}/refund/"
    form_page = staff_client.get(url)
    assert {job for job, _ in form_page.context["form"].fields["job_id"].choices} == {"job-1", "job-2"}

    too_much = staff_client.post(url, {"job_id": "job-1", "amount": "3.000001", "reason": "bad pages"})
    response = staff_client.post(url, {"job_id": "job-1", "amount": "2", "reason": "Two pages came back garbled"})
    again = staff_client.post(url, {"job_id": "job-1", "amount": "1", "reason": "once more"})

    assert too_much.status_code == 200
    assert "amount" in too_much.context["form"].errors
    assert response.status_code == 302
    assert again.status_code == 200  # job-1 is no longer offered
    assert "job_id" in again.context["form"].errors
    [refund] = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REFUND)
    assert (refund.amount, refund.cause_type, refund.cause_id) == (Decimal("2"), "job", "job-1")
    assert refund.memo == "Two pages came back garbled (by operator@example.com)"
    assert {job for job, _ in staff_client.get(url).context["form"].fields["job_id"].choices} == {"job-2"}
    wallet = assert_wallet_invariants(wallet.pk)
    assert wallet.balance == Decimal("8")  # 10 - 3 - 1 + 2


def test_a_second_refund_of_one_job_is_refused_by_the_service_too(operator, user):
    seed(user, "10")
    charged(user, "job-1", "4", "3")
    batch_charge_refund(job_id="job-1", amount=Decimal("1"), reason="first", operator=operator)

    with pytest.raises(RefundExists):
        batch_charge_refund(job_id="job-1", amount=Decimal("1"), reason="second", operator=operator)
    with pytest.raises(ServiceError) as unknown:
        batch_charge_refund(job_id="job-none", amount=Decimal("1"), reason="nothing", operator=operator)

    assert unknown.value.code == "charge_not_found"
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == 1


def test_staff_who_may_only_view_wallets_cannot_debit_or_refund(client, user):
    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_wallet"))
    wallet = seed(user, "10")
    charged(user, "job-1", "4", "3")
    client.force_login(viewer)
    entries = LedgerEntry.objects.count()

    debit = client.post(f"{WALLETS_URL}{wallet.pk}/debit/", {"amount": "5", "reason": "me", "debit_id": "x"})
    refund = client.post(f"{WALLETS_URL}{wallet.pk}/refund/", {"job_id": "job-1", "amount": "3", "reason": "me"})

    assert (debit.status_code, refund.status_code) == (403, 403)
    assert LedgerEntry.objects.count() == entries


def test_money_fields_are_not_editable_anywhere(staff_client, user):
    wallet = seed(user, "10")
    change_url = f"{WALLETS_URL}{wallet.pk}/change/"

    page = staff_client.get(change_url)
    edit = staff_client.post(change_url, {"balance": "1000", "reserved": "0", "unlimited": "on"})
    add = staff_client.post(f"{WALLETS_URL}add/", {"user": str(user.pk), "balance": "1000"})
    delete = staff_client.post(f"{WALLETS_URL}{wallet.pk}/delete/", {"post": "yes"})

    content = page.content.decode()
    assert page.status_code == 200
    assert 'name="balance"' not in content
    assert 'name="reserved"' not in content
    assert 'name="_save"' not in content
    assert "Add credit" in content
    assert "Debit" in content
    assert "Refund a batch charge" in content
    assert (edit.status_code, add.status_code, delete.status_code) == (403, 403, 403)
    wallet.refresh_from_db()
    assert (wallet.balance, wallet.reserved, wallet.unlimited) == (10, 0, False)


def test_the_ledger_inline_is_read_only_and_newest_first(staff_client, user):
    wallet = seed(user, "10")
    wallet_credit(user=user, amount=Decimal("1"), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="later")

    response = staff_client.get(f"{WALLETS_URL}{wallet.pk}/change/")

    content = response.content.decode()
    [inline] = response.context["inline_admin_formsets"]
    assert [form.original.cause_id for form in inline] == ["later", "s"]
    assert not inline.has_add_permission
    assert not inline.has_change_permission
    assert not inline.has_delete_permission
    assert 'name="entries-0-amount"' not in content
    assert 'name="entries-0-DELETE"' not in content


@pytest.mark.parametrize("path", ["ledgerentry", "hold", "topup", "savedcard", "redeemcode", "stripecustomererasure"])
def test_the_records_are_read_only(staff_client, path):
    listing = staff_client.get(f"/admin/wallet/{path}/")
    add = staff_client.get(f"/admin/wallet/{path}/add/")

    assert listing.status_code == 200
    assert add.status_code == 403
    assert not listing.context["has_add_permission"]
    assert listing.context["action_form"] is None  # no actions at all, not even delete


def test_a_stripe_customer_stripe_has_not_deleted_is_listed_with_what_stripe_answered(staff_client, user):
    StripeCustomerErasure.objects.create(
        customer_id="cus_waiting", user=user, attempts=3, last_error="APIConnectionError('Stripe is unreachable')"
    )

    content = staff_client.get("/admin/wallet/stripecustomererasure/").content.decode()

    assert "cus_waiting" in content
    assert "Stripe is unreachable" in content


def test_the_ledger_and_top_ups_are_searchable_by_email_and_reference(staff_client, user, other_user):
    seed(user)
    wallet_credit(user=other_user, amount=Decimal("3"), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="o")
    top_up = TopUp.objects.create(reference="tu_findme", user=user, method="manual", amount=Decimal("1"))

    ledger = staff_client.get("/admin/wallet/ledgerentry/", {"q": user.email})
    top_ups = staff_client.get("/admin/wallet/topup/", {"q": "tu_findme"})

    assert {entry.wallet.user for entry in ledger.context["cl"].result_list} == {user}
    assert list(top_ups.context["cl"].result_list) == [top_up]


# --- Who may use it ----------------------------------------------------------------------------


def test_the_wallet_admin_is_for_staff_only(client, user):
    wallet = wallet_get_or_create(user=user)
    client.force_login(user)

    pages = [
        client.get(WALLETS_URL),
        client.get(f"{WALLETS_URL}{wallet.pk}/add-credit/"),
        client.post(f"{WALLETS_URL}{wallet.pk}/add-credit/", {"amount": "5", "reason": "me", "credit_id": "x"}),
        client.post(ISSUE_URL, issue_form()),
        client.post(WALLETS_URL, {"action": "grant_unlimited", "_selected_action": [str(wallet.pk)]}),
    ]

    assert all(page.status_code == 302 and "/admin/login/" in page["Location"] for page in pages)
    assert not RedeemBatch.objects.exists()
    assert not LedgerEntry.objects.exists()
    assert not Wallet.objects.get(pk=wallet.pk).unlimited


def test_staff_who_may_only_view_wallets_cannot_move_money(client, user):
    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_wallet"))
    wallet = wallet_get_or_create(user=user)
    client.force_login(viewer)

    listing = client.get(WALLETS_URL)
    credit = client.post(f"{WALLETS_URL}{wallet.pk}/add-credit/", {"amount": "5", "reason": "me", "credit_id": "x"})
    client.post(WALLETS_URL, {"action": "grant_unlimited", "_selected_action": [str(wallet.pk)]})

    assert listing.status_code == 200
    assert listing.context["action_form"] is None  # the money actions are not offered
    assert credit.status_code == 403
    assert not LedgerEntry.objects.exists()
    assert not Wallet.objects.get(pk=wallet.pk).unlimited


# --- manage.py issue_codes ---------------------------------------------------------------------


def test_issue_codes_writes_the_csv_to_stdout(user, jwt_client):
    out = io.StringIO()

    call_command("issue_codes", "--amount", "25", "--count", "2", "--expires-days", "90", "--note", "promo", stdout=out)

    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    batch = RedeemBatch.objects.get()
    assert [row["amount"] for row in rows] == ["25", "25"]
    assert all(row["expires_utc"] and row["batch"] == str(batch.pk) for row in rows)
    assert batch.note == "promo"
    assert jwt_client(user).post(REDEEM_URL, {"code": rows[1]["code"]}).json()["creditedAmount"] == 25


def test_issue_codes_writes_a_new_private_file_and_never_overwrites_one(tmp_path, operator):
    target = tmp_path / "codes.csv"

    call_command(
        "issue_codes", "--amount", "5", "--count", "3", "--operator", operator.email, "--output", str(target),
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip

    assert len(list(csv.DictReader(target.open()))) == 3
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert RedeemBatch.objects.get().created_by == operator
    with pytest.raises(CommandError, match="exists"):
        call_command("issue_codes", "--amount", "5", "--count", "3", "--output", str(target))
    assert RedeemBatch.objects.count() == 1


@pytest.mark.parametrize("arguments", [["--count", "0"], ["--count", "10001"], ["--amount", "0"], ["--amount", "x"]])
def test_issue_codes_refuses_bad_arguments_and_issues_nothing(arguments):
    defaults = {"--amount": "5", "--count": "1"}
    given = dict(zip(arguments[::2], arguments[1::2], strict=True))
    argv = [item for pair in {**defaults, **given}.items() for item in pair]

    with pytest.raises(CommandError):
        call_command("issue_codes", *argv, stdout=io.StringIO())
    assert not RedeemBatch.objects.exists()
