"""Wire shapes of the wallet: the Wallet view, the Top-up view, the ledger, the request
bodies. Money is a JSON number (`MoneyField`), exact to 6 places in the code."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from rest_framework import serializers

from core.serializers import MoneyField
from wallet.models import LedgerEntry, TopUp, TopUpMethod, TopUpStatus


class WalletViewSerializer(serializers.Serializer[Any]):
    balance_usd = MoneyField(help_text="Settled prepaid credit; meaningless when unlimited.")
    currency = serializers.CharField(default="USD", help_text="Always USD.")
    unlimited = serializers.BooleanField(help_text="A whitelisted account: work included, no charge.")
    low_balance = serializers.BooleanField(
        help_text="The balance is at or below the low-balance alert threshold; always false when unlimited."
    )
    spendable_usd = MoneyField(help_text="Balance minus reserved: the figure the affordability gate uses.")
    reserved_usd = MoneyField(help_text="Held against queued or running jobs; always 0 when unlimited.")
    auto_top_up_threshold_usd = MoneyField(allow_null=True, help_text="Null when auto top-up is disabled.")
    auto_top_up_amount_usd = MoneyField(allow_null=True, help_text="Null when auto top-up is disabled.")
    auto_top_up_monthly_cap_usd = MoneyField(allow_null=True, help_text="Null means no cap.")
    low_balance_alert_threshold_usd = MoneyField(allow_null=True, help_text="Null when the alert is disabled.")
    monthly_spending_ceiling_usd = MoneyField(allow_null=True, help_text="Null when there is no ceiling.")
    spent_this_month_usd = MoneyField(help_text="Batch charges this calendar month (UTC).")

    class Meta:
        ref_name = "WalletView"


class TopUpViewSerializer(serializers.Serializer[Any]):
    amount = MoneyField(help_text="USD the top-up is for.")
    balance = MoneyField(help_text="The wallet balance now; post-credit once confirmed.")
    credited_amount = MoneyField(allow_null=True, help_text="Null while pending or failed.")
    checkout_url = serializers.CharField(allow_null=True, help_text="Hosted checkout; null when credit is immediate.")
    crypto_address = serializers.CharField(allow_null=True, help_text="Deposit address of a pending crypto checkout.")
    crypto_amount = serializers.CharField(allow_null=True, help_text="Exact coin amount to send to cryptoAddress.")
    crypto_coin = serializers.CharField(allow_null=True, help_text="Coin the invoice resolved.")
    currency = serializers.CharField(default="USD")
    message = serializers.CharField(help_text="Human-readable result.")
    method = serializers.ChoiceField(choices=TopUpMethod.choices)
    reference = serializers.CharField(help_text="Opaque; poll GET /v1/wallet/top-up/{reference}.")
    status = serializers.ChoiceField(choices=TopUpStatus.choices)
    created_utc = serializers.DateTimeField(source="created_at")
    expires_utc = serializers.DateTimeField(
        source="expires_at", allow_null=True, help_text="When a pending checkout lapses."
    )

    class Meta:
        ref_name = "TopUpView"

    @classmethod
    def of(cls, top_up: TopUp, *, balance: Any) -> dict[str, Any]:
        """The view of a top-up with the owner's balance beside it."""
        data = {field: getattr(top_up, field) for field in cls._declared_fields if hasattr(top_up, field)}
        data.update(balance=balance, currency="USD", created_at=top_up.created_at, expires_at=top_up.expires_at)
        return dict(cls(data).data)


class TopUpInputSerializer(serializers.Serializer[Any]):
    amount = MoneyField(help_text="USD, between TOP_UP_MIN_USD and TOP_UP_MAX_USD.")
    method = serializers.ChoiceField(choices=TopUpMethod.choices, default=TopUpMethod.MANUAL)
    coin = serializers.CharField(
        required=False, allow_null=True, max_length=16, help_text="Crypto only: the coin ticker (default BTC)."
    )
    saved_card_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="Card only: charge this saved card at once; omit for a checkout."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        method = attrs.get("method", TopUpMethod.MANUAL)
        if attrs.get("coin") and method != TopUpMethod.CRYPTO:
            raise serializers.ValidationError({"coin": "Only a crypto top-up takes a coin."})
        if attrs.get("saved_card_id") and method != TopUpMethod.CARD:
            raise serializers.ValidationError({"saved_card_id": "Only a card top-up takes a saved card."})
        return attrs


class LedgerEntrySerializer(serializers.ModelSerializer[LedgerEntry]):
    amount_usd = MoneyField(source="amount", help_text="Signed change to spendable credit.")
    balance_after_usd = MoneyField(source="balance_after")
    reserved_after_usd = MoneyField(source="reserved_after")
    created_utc = serializers.DateTimeField(source="created_at")

    class Meta:
        model = LedgerEntry
        fields = [
            "id",
            "kind",
            "amount_usd",
            "balance_after_usd",
            "reserved_after_usd",
            "cause_type",
            "cause_id",
            "memo",
            "created_utc",
        ]
        ref_name = "LedgerEntry"


class AutoTopUpInputSerializer(serializers.Serializer[Any]):
    threshold = MoneyField(allow_null=True, min_value=0, help_text="Spendable credit at which to top up.")
    amount = MoneyField(allow_null=True, help_text="USD to charge each time.")
    monthly_cap = MoneyField(
        allow_null=True, required=False, default=None, help_text="At most this much auto top-up per calendar month."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if (attrs["threshold"] is None) != (attrs["amount"] is None):
            raise serializers.ValidationError(
                {"non_field_errors": "Give threshold and amount both (enable) or both null (disable)."}
            )
        low, high = Decimal(settings.TOP_UP_MIN_USD), Decimal(settings.TOP_UP_MAX_USD)
        amount = attrs["amount"]
        if amount is not None and not low <= amount <= high:
            raise serializers.ValidationError({"amount": f"An auto top-up is between {low} and {high} USD."})
        cap = attrs.get("monthly_cap")
        if cap is not None and cap <= 0:
            raise serializers.ValidationError({"monthly_cap": "Must be positive, or null for no cap."})
        return attrs


class LowBalanceAlertInputSerializer(serializers.Serializer[Any]):
    threshold = MoneyField(
        allow_null=True, required=False, default=None, min_value=0, help_text="Null or omitted disables the alert."
    )


class SpendingCeilingInputSerializer(serializers.Serializer[Any]):
    ceiling = MoneyField(
        allow_null=True, required=False, default=None, help_text="USD per calendar month (UTC); null disables."
    )

    def validate_ceiling(self, value: Any) -> Any:
        if value is not None and value <= 0:
            raise serializers.ValidationError("Must be positive, or null for no ceiling.")
        return value


class BookCostSerializer(serializers.Serializer[Any]):
    """A whole book's price before commitment: "about expectedUsd, at most maxUsd"."""

    expected_usd = MoneyField(
        source="expected",
        help_text="About-cost of the whole book: its pages x the expected rate of the price tier its cost per page "
        "falls in (predicted from its words per page until a page is measured).",
    )
    max_usd = MoneyField(
        source="maximum",
        allow_null=True,
        help_text="Never-exceed cost of the whole book: billing cannot charge more for these pages "
        "(CALIBRATION_HOLD_USD + (pages - 1) x the top ceiling rate; see docs/billing.md). "
        "Null when no price table is configured.",
    )
    currency = serializers.ChoiceField(choices=["USD"])
    estimated = serializers.BooleanField(help_text="True until a page of the book has been measured (calibrated).")
    basis = serializers.ChoiceField(
        choices=["price_table", "measured"],
        help_text="price_table: the cost per page is predicted from the word estimate; measured: from the book's "
        "measured pages.",
    )

    class Meta:
        ref_name = "BookCost"


class BatchQuoteSerializer(serializers.Serializer[Any]):
    can_start = serializers.BooleanField(
        help_text="Always true when unlimited; otherwise needs a positive spendable balance and, once estimable, "
        "an estimate not above it (and within the monthly spending ceiling)."
    )
    balance_usd = MoneyField(source="balance", help_text="The current balance.")
    spendable_usd = MoneyField(source="spendable", help_text="Balance minus reserved: what the gate compares.")
    estimated_usd = MoneyField(
        source="estimated",
        help_text="Committed never-exceed cost at the tier-ceiling rate; what the gate and the hold use.",
    )
    expected_usd = MoneyField(
        source="expected", help_text="About-cost at the expected rate; equals estimatedUsd with no price table."
    )
    estimable = serializers.BooleanField(
        help_text="False until a page of this book has been measured: the first (calibration) batch runs "
        "without a dollar estimate."
    )
    page_count = serializers.IntegerField(help_text="Pages the next batch covers; 0 if none are pending.")
    explanation = serializers.CharField(help_text="The calibration state, the tier, or why it is blocked.")
    cost_per_page_usd = MoneyField(source="cost_per_page", help_text="Measured USD per page; 0 until calibrated.")
    target_language = serializers.CharField()
    unlimited = serializers.BooleanField()
    blocked_on = serializers.ChoiceField(
        source="blocked_by",
        choices=["credit", "spending_ceiling", "nothing_pending", "language_pair_unsupported"],
        allow_null=True,
        help_text="Why canStart is false (null when it is true); language_pair_unsupported: the engine cannot "
        "translate the book's source language (or a page's) into its target (see GET /v1/languages).",
    )
    shortfall_usd = MoneyField(source="shortfall", help_text="Credit to add before the batch can start.")
    book_cost = BookCostSerializer(help_text="The whole book's cost: about expectedUsd, at most maxUsd.")

    class Meta:
        ref_name = "BatchQuote"
