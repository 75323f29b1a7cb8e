"""Operators' admin for the wallet.

Money is never edited here: balance and reserved are read-only everywhere, and every
change of money goes through a service that writes the ledger, naming the operator: add
credit and debit (a positive or negative `adjustment`; a debit never below 0 spendable),
refund a batch charge (a `refund` under the job, at most its charge, once). Wallets get
grant/revoke unlimited; the ledger,
holds, top-ups and saved cards are read-only; redeem batches are issued through a form
whose answer is the CSV of the new codes (the one moment their plaintext exists) and can
have their unredeemed codes voided.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminSplitDateTime
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from accounts.models import User
from core.errors import ServiceError, ValidationFailed
from core.forms import MoneyFormField
from wallet.models import (
    CauseType,
    EntryKind,
    Hold,
    LedgerEntry,
    RedeemBatch,
    RedeemCode,
    SavedCard,
    StripeCustomerErasure,
    TopUp,
    Wallet,
)
from wallet.services.ledger import (
    batch_charge_refund,
    wallet_operator_credit,
    wallet_operator_debit,
    wallet_unlimited_set,
)
from wallet.services.redeem import MAX_CODES_PER_BATCH, batch_void, code_hash, code_normalize, codes_csv, codes_issue

_Row = TypeVar("_Row", bound=Model)

LEDGER_INLINE_ENTRIES = 50
MONEY_PERMISSION = "wallet.change_wallet"
CODES_PERMISSION = "wallet.change_redeembatch"


class ReadOnlyAdmin(admin.ModelAdmin[_Row]):
    """Rows written only by services: operators look, never add, change or delete."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def _operator(request: HttpRequest) -> User:
    """The staff member acting (the admin lets only signed-in staff in)."""
    assert isinstance(request.user, User)
    return request.user


def _service_errors_on(form: forms.Form, error: ServiceError) -> None:
    """A service's refusal shown on the form (per field where the field exists)."""
    if isinstance(error, ValidationFailed):
        for field, field_messages in error.extra.get("errors", {}).items():
            form.add_error(field if field in form.fields else None, field_messages)
    else:
        form.add_error(None, error.detail)


# --- Wallets ---------------------------------------------------------------------------------


class NewestEntriesFormSet(BaseInlineFormSet[LedgerEntry, Wallet]):
    """Only the newest entries: a busy wallet's whole ledger would not fit one page."""

    def get_queryset(self) -> QuerySet[LedgerEntry]:
        if not hasattr(self, "_newest"):
            self._newest = super().get_queryset()[:LEDGER_INLINE_ENTRIES]
        return self._newest


class LedgerEntryInline(admin.TabularInline[LedgerEntry, Wallet]):
    model = LedgerEntry
    formset = NewestEntriesFormSet
    verbose_name_plural = f"ledger entries (the newest {LEDGER_INLINE_ENTRIES})"
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-created_at", "-id"]
    fields = readonly_fields = (
        "created_at",
        "kind",
        "amount",
        "balance_after",
        "reserved_after",
        "cause_type",
        "cause_id",
        "memo",
    )

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class AddCreditForm(forms.Form):
    amount = MoneyFormField(help_text="USD added to the balance.")
    reason = forms.CharField(max_length=200, help_text="Shown in the ledger entry's memo, with your email.")
    credit_id = forms.UUIDField(widget=forms.HiddenInput)


class DebitForm(forms.Form):
    amount = MoneyFormField(help_text="USD taken from the balance; at most the spendable credit.")
    reason = forms.CharField(max_length=200, help_text="Shown in the ledger entry's memo, with your email.")
    debit_id = forms.UUIDField(widget=forms.HiddenInput)


REFUNDABLE_CHARGES_SHOWN = 200


class RefundForm(forms.Form):
    job_id = forms.ChoiceField(label="Batch charge", help_text="The wallet's batch charges not refunded yet.")
    amount = MoneyFormField(help_text="USD given back; at most what the batch was charged.")
    reason = forms.CharField(max_length=200, help_text="Shown in the ledger entry's memo, with your email.")

    def __init__(self, *args: Any, wallet: Wallet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        refunded = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REFUND, cause_type=CauseType.JOB)
        charges = (
            LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.BATCH_CHARGE, cause_type=CauseType.JOB)
            .exclude(cause_id__in=refunded.values("cause_id"))
            .order_by("-created_at", "-id")[:REFUNDABLE_CHARGES_SHOWN]
        )
        job_field = self.fields["job_id"]
        assert isinstance(job_field, forms.ChoiceField)
        job_field.choices = [
            (entry.cause_id, f"job {entry.cause_id}: {-entry.amount} USD on {entry.created_at:%Y-%m-%d %H:%M} UTC")
            for entry in charges
        ]


@admin.register(Wallet)
class WalletAdmin(admin.ModelAdmin[Wallet]):
    """Read-only money; the actions and the add-credit form need the change-wallet
    permission and go through services."""

    list_display = ["user_email", "balance", "reserved", "spendable", "unlimited", "created_at"]
    list_filter = ["unlimited"]
    list_select_related = ["user"]
    search_fields = ["user__email"]
    ordering = ["-created_at"]
    fields = readonly_fields = (
        "user",
        "balance",
        "reserved",
        "spendable",
        "unlimited",
        "created_at",
        "ledger",
    )
    inlines = [LedgerEntryInline]
    actions = ["grant_unlimited", "revoke_unlimited"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a wallet is made with its account's first use

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # nothing on the row is edited by hand; see the actions and add credit

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # the ledger protects it

    def has_money_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(MONEY_PERMISSION)

    @admin.display(description="user", ordering="user__email")
    def user_email(self, wallet: Wallet) -> str:
        return wallet.user.email

    @admin.display(description="spendable")
    def spendable(self, wallet: Wallet) -> Decimal:
        return wallet.spendable

    @admin.display(description="ledger")
    def ledger(self, wallet: Wallet) -> str:
        url = reverse("admin:wallet_ledgerentry_changelist") + f"?wallet__id__exact={wallet.pk}"
        return format_html('<a href="{}">Every entry of this wallet</a>', url)

    @admin.action(description="Grant unlimited use to the selected wallets", permissions=["money"])
    def grant_unlimited(self, request: HttpRequest, queryset: QuerySet[Wallet]) -> None:
        self._unlimited_set(request, queryset, unlimited=True)

    @admin.action(description="Revoke unlimited use from the selected wallets", permissions=["money"])
    def revoke_unlimited(self, request: HttpRequest, queryset: QuerySet[Wallet]) -> None:
        self._unlimited_set(request, queryset, unlimited=False)

    def _unlimited_set(self, request: HttpRequest, queryset: QuerySet[Wallet], *, unlimited: bool) -> None:
        verb = "Granted" if unlimited else "Revoked"
        count = 0
        for wallet in queryset.select_related("user"):
            if wallet.unlimited == unlimited:
                continue
            wallet_unlimited_set(user=wallet.user, unlimited=unlimited, operator=_operator(request))
            self.log_change(request, wallet, f"{verb} unlimited use.")
            count += 1
        self.message_user(request, f"{verb} unlimited use on {count} wallet(s).", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<path:object_id>/add-credit/",
                self.admin_site.admin_view(self.add_credit_view),
                name="wallet_wallet_add_credit",
            ),
            path("<path:object_id>/debit/", self.admin_site.admin_view(self.debit_view), name="wallet_wallet_debit"),
            path(
                "<path:object_id>/refund/",
                self.admin_site.admin_view(self.refund_view),
                name="wallet_wallet_refund",
            ),
        ]
        return custom + super().get_urls()

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra_context = {**(extra_context or {}), "can_move_money": self.has_money_permission(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    def add_credit_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A form (amount, reason) that credits the wallet as an operator's adjustment."""
        return self._money_view(
            request,
            object_id,
            make_form=lambda data, wallet: AddCreditForm(data, initial={"credit_id": uuid.uuid4()}),
            perform=lambda wallet, data: wallet_operator_credit(
                user=wallet.user,
                amount=data["amount"],
                reason=data["reason"],
                operator=_operator(request),
                credit_id=str(data["credit_id"]),
            ),
            done=lambda wallet, entry: f"Added {entry.amount.normalize():f} USD to {wallet.user.email}.",
            title="Add credit to the wallet of {email}",
            action="Add credit",
        )

    def debit_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A form (amount, reason) that debits the wallet as an operator's negative
        adjustment, never below 0 spendable."""
        return self._money_view(
            request,
            object_id,
            make_form=lambda data, wallet: DebitForm(data, initial={"debit_id": uuid.uuid4()}),
            perform=lambda wallet, data: wallet_operator_debit(
                user=wallet.user,
                amount=data["amount"],
                reason=data["reason"],
                operator=_operator(request),
                debit_id=str(data["debit_id"]),
            ),
            done=lambda wallet, entry: f"Debited {(-entry.amount).normalize():f} USD from {wallet.user.email}.",
            title="Debit the wallet of {email}",
            action="Debit",
        )

    def refund_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A form (batch charge, amount, reason) that refunds a batch charge once, at most
        what it charged."""
        return self._money_view(
            request,
            object_id,
            make_form=lambda data, wallet: RefundForm(data, wallet=wallet),
            perform=lambda wallet, data: batch_charge_refund(
                job_id=data["job_id"],
                amount=data["amount"],
                reason=data["reason"],
                operator=_operator(request),
            ),
            done=lambda wallet, entry: (
                f"Refunded {entry.amount.normalize():f} USD of job {entry.cause_id} to {wallet.user.email}."
            ),
            title="Refund a batch charge of {email}",
            action="Refund",
        )

    def _money_view(
        self,
        request: HttpRequest,
        object_id: str,
        *,
        make_form: Callable[[Any, Wallet], forms.Form],
        perform: Callable[[Wallet, dict[str, Any]], LedgerEntry],
        done: Callable[[Wallet, LedgerEntry], str],
        title: str,
        action: str,
    ) -> HttpResponse:
        """One money action's page: the form; on a valid POST the service, recorded in the
        admin's history and announced, or its refusal shown on the form."""
        if not self.has_money_permission(request):
            raise PermissionDenied
        wallet = get_object_or_404(Wallet.objects.select_related("user"), pk=object_id)
        form = make_form(request.POST if request.method == "POST" else None, wallet)
        if request.method == "POST" and form.is_valid():
            try:
                entry = perform(wallet, form.cleaned_data)
            except ServiceError as error:
                _service_errors_on(form, error)
            else:
                message = done(wallet, entry)
                self.log_change(request, wallet, f"{message} {entry.memo}")
                self.message_user(request, message, messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:wallet_wallet_change", args=[wallet.pk]))
        return self._money_form_render(
            request, wallet, form, title=title.format(email=wallet.user.email), action=action
        )

    def _money_form_render(
        self, request: HttpRequest, wallet: Wallet, form: forms.Form, *, title: str, action: str
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "action": action,
            "wallet": wallet,
            "form": form,
        }
        return TemplateResponse(request, "admin/wallet/wallet/money_form.html", context)


# --- Read-only records -------------------------------------------------------------------


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin[LedgerEntry]):
    list_display = [
        "created_at",
        "user_email",
        "kind",
        "amount",
        "balance_after",
        "reserved_after",
        "cause_type",
        "cause_id",
        "memo",
    ]
    list_filter = ["kind", "cause_type"]
    list_select_related = ["wallet__user"]
    search_fields = ["wallet__user__email", "cause_id", "memo"]
    ordering = ["-created_at", "-id"]

    @admin.display(description="user", ordering="wallet__user__email")
    def user_email(self, entry: LedgerEntry) -> str:
        return entry.wallet.user.email


@admin.register(Hold)
class HoldAdmin(ReadOnlyAdmin[Hold]):
    list_display = ["created_at", "user_email", "amount", "state", "cause_type", "cause_id", "settled_amount"]
    list_filter = ["state", "cause_type"]
    list_select_related = ["wallet__user"]
    search_fields = ["wallet__user__email", "cause_id"]
    ordering = ["-created_at", "-id"]

    @admin.display(description="user", ordering="wallet__user__email")
    def user_email(self, hold: Hold) -> str:
        return hold.wallet.user.email


@admin.register(TopUp)
class TopUpAdmin(ReadOnlyAdmin[TopUp]):
    list_display = ["created_at", "reference", "user", "method", "origin", "amount", "status", "credited_amount"]
    list_filter = ["method", "origin", "status"]
    list_select_related = ["user"]
    search_fields = ["user__email", "reference", "provider_reference"]
    ordering = ["-created_at"]


@admin.register(SavedCard)
class SavedCardAdmin(ReadOnlyAdmin[SavedCard]):
    list_display = ["user", "brand", "last4", "exp_month", "exp_year", "is_primary", "created_at"]
    list_select_related = ["user"]
    search_fields = ["user__email", "last4", "stripe_payment_method_id"]
    ordering = ["-created_at"]


@admin.register(StripeCustomerErasure)
class StripeCustomerErasureAdmin(ReadOnlyAdmin[StripeCustomerErasure]):
    """Deleted accounts' Stripe customers that Stripe has not yet deleted: a row with many
    attempts says what Stripe answered (wallet.tasks.stripe_customers_erase tries again)."""

    list_display = ["created_at", "customer_id", "user", "attempts", "last_error"]
    list_select_related = ["user"]
    search_fields = ["customer_id"]
    ordering = ["created_at"]


# --- Credit codes --------------------------------------------------------------------------


class IssueCodesForm(forms.Form):
    amount = MoneyFormField(help_text="USD each code credits.")
    count = forms.IntegerField(min_value=1, max_value=MAX_CODES_PER_BATCH, help_text="How many codes.")
    expires_at = forms.SplitDateTimeField(
        required=False, widget=AdminSplitDateTime, label="Expires (UTC)", help_text="Optional."
    )
    note = forms.CharField(max_length=255, required=False, help_text="What the batch is for (campaign, customer).")


@admin.register(RedeemBatch)
class RedeemBatchAdmin(admin.ModelAdmin[RedeemBatch]):
    """Add = issue codes (answered with the CSV); void = withdraw the unredeemed codes."""

    list_display = ["id", "amount", "count", "redeemed", "unredeemed", "state", "expires_at", "note", "created_at"]
    list_filter = ["voided_at"]
    search_fields = ["note", "created_by__email"]
    ordering = ["-created_at"]
    fields = readonly_fields = (
        "amount",
        "count",
        "redeemed",
        "unredeemed",
        "state",
        "expires_at",
        "note",
        "created_by",
        "created_at",
        "voided_at",
        "code_list",
    )
    actions = ["void_unredeemed"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[RedeemBatch]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                redeemed_count=Count("codes", filter=Q(codes__redeemed_at__isnull=False)),
                unredeemed_count=Count("codes", filter=Q(codes__redeemed_at__isnull=True)),
            )
        )

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # a batch is issued, then only voided

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # redeemed codes point at it; void instead

    def has_void_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(CODES_PERMISSION)

    @admin.display(description="redeemed", ordering="redeemed_count")
    def redeemed(self, batch: RedeemBatch) -> int:
        count: int = batch.redeemed_count  # type: ignore[attr-defined]  # annotated by get_queryset
        return count

    @admin.display(description="unredeemed", ordering="unredeemed_count")
    def unredeemed(self, batch: RedeemBatch) -> int:
        count: int = batch.unredeemed_count  # type: ignore[attr-defined]  # annotated by get_queryset
        return count

    @admin.display(description="state")
    def state(self, batch: RedeemBatch) -> str:
        if batch.voided_at is not None:
            return "void"
        if batch.expires_at is not None and batch.expires_at <= timezone.now():
            return "expired"
        return "active"

    @admin.display(description="codes")
    def code_list(self, batch: RedeemBatch) -> str:
        url = reverse("admin:wallet_redeemcode_changelist") + f"?batch__id__exact={batch.pk}"
        return format_html('<a href="{}">The codes of this batch (hints only)</a>', url)

    @admin.action(description="Void the unredeemed codes of the selected batches", permissions=["void"])
    def void_unredeemed(self, request: HttpRequest, queryset: QuerySet[RedeemBatch]) -> None:
        total = 0
        for batch in queryset:
            voided = batch_void(batch=batch, operator=_operator(request))
            self.log_change(request, batch, f"Voided {voided} unredeemed code(s).")
            total += voided
        self.message_user(request, f"Voided {total} unredeemed code(s).", messages.SUCCESS)

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Issue codes: a valid form is answered with the CSV download of the new codes."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = IssueCodesForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                batch, codes = codes_issue(
                    amount=form.cleaned_data["amount"],
                    count=form.cleaned_data["count"],
                    expires_at=form.cleaned_data["expires_at"],
                    note=form.cleaned_data["note"],
                    operator=_operator(request),
                )
            except ServiceError as error:
                _service_errors_on(form, error)
            else:
                self.log_addition(request, batch, f"Issued {batch.count} codes of {batch.amount} USD.")
                response = HttpResponse(codes_csv(batch=batch, codes=codes), content_type="text/csv; charset=utf-8")
                response["Content-Disposition"] = f'attachment; filename="redeem-codes-batch-{batch.pk}.csv"'
                response["Cache-Control"] = "no-store"
                return response
        context = {
            **self.admin_site.each_context(request),
            **(extra_context or {}),
            "opts": self.opts,
            "title": "Issue credit codes",
            "form": form,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/wallet/redeembatch/issue_codes.html", context)


class CodeStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("redeemed", "redeemed"), ("unredeemed", "unredeemed"), ("void", "void")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[RedeemCode]) -> QuerySet[RedeemCode]:
        if self.value() == "redeemed":
            return queryset.filter(redeemed_at__isnull=False)
        if self.value() == "unredeemed":
            return queryset.filter(redeemed_at__isnull=True, voided_at__isnull=True, batch__voided_at__isnull=True)
        if self.value() == "void":
            return queryset.filter(redeemed_at__isnull=True).filter(
                Q(voided_at__isnull=False) | Q(batch__voided_at__isnull=False)
            )
        return queryset


@admin.register(RedeemCode)
class RedeemCodeAdmin(ReadOnlyAdmin[RedeemCode]):
    """Codes by hint; searching for a whole code finds it by its hash."""

    list_display = ["code_hint", "batch", "redeemed_by", "redeemed_at", "voided_at"]
    list_filter = [CodeStateFilter]
    list_select_related = ["batch", "redeemed_by"]
    search_fields = ["hint", "redeemed_by__email"]
    fields = readonly_fields = ("code_hint", "batch", "redeemed_by", "redeemed_at", "voided_at")
    ordering = ["-id"]

    @admin.display(description="code", ordering="hint")
    def code_hint(self, code: RedeemCode) -> str:
        return f"…{code.hint}"

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[RedeemCode], search_term: str
    ) -> tuple[QuerySet[RedeemCode], bool]:
        normalized = code_normalize(search_term)
        if normalized:
            return queryset.filter(code_hash=code_hash(normalized)), False
        return super().get_search_results(request, queryset, search_term)
