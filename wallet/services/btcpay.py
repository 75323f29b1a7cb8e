"""Crypto top-ups through a BTCPay Server store, over its Greenfield API (v1).

A crypto top-up is one BTCPay invoice in USD for the top-up's amount, restricted to the
chosen coin's on-chain payment method (`BTC-CHAIN`), carrying our reference as its
`orderId`. BTCPay reports on the invoice with webhooks signed `BTCPay-Sig: sha256=<hex
HMAC-SHA256 of the raw body>`. A webhook is trusted only to name an invoice of ours: we
then read the invoice from the API and act on its real status, through `_STATUS_ACTIONS`:

    Settled     -> confirmed (credited exactly once, even after we had marked it expired:
                   the provider's word about money wins)
    Processing  -> pending, "Payment seen, waiting for confirmations."
    Expired     -> expired (a partial payment is said in the message)
    Invalid     -> cancelled
    New         -> pending

`pending_reconcile` (Celery beat, every 5 minutes) applies the same rules to pending
top-ups whose webhook was lost. See docs/payments-crypto.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import MalformedRequest
from wallet.errors import BtcpaySignatureInvalid, PaymentMethodUnavailable, PaymentProviderError
from wallet.models import TopUp, TopUpMethod, TopUpStatus
from wallet.services import topups

logger = logging.getLogger(__name__)

SIGNATURE_PREFIX = "sha256="
# A pending top-up younger than this may still be opening its invoice or hearing its first
# webhook; the reconcile leaves it alone.
RECONCILE_AFTER = timedelta(minutes=5)
# Top-ups looked at per reconcile run, oldest first, so one run stays short.
RECONCILE_BATCH = 200

PROCESSING_MESSAGE = "Payment seen, waiting for confirmations."
PARTIAL_MESSAGE = "Part of the amount has been received; the rest is still due before the invoice expires."


class ProviderError(PaymentProviderError):
    """BTCPay Server could not be reached or answered with an error (502)."""


class InvoiceMissing(ProviderError):
    """BTCPay answered 404 for an invoice (deleted, or the API key cannot see it)."""


# --- Configuration and the HTTP client ---------------------------------------------------


def _configured() -> bool:
    return bool(settings.BTCPAY_URL and settings.BTCPAY_API_KEY and settings.BTCPAY_STORE_ID)


def configured_or_refuse() -> None:
    """Refuses crypto top-ups (403 payment_method_unavailable) unless a BTCPay store is configured."""
    if not _configured():
        raise PaymentMethodUnavailable()


def _store_url(path: str) -> str:
    return f"{settings.BTCPAY_URL.rstrip('/')}/api/v1/stores/{quote(settings.BTCPAY_STORE_ID, safe='')}{path}"


def _call(method: str, path: str, *, body: dict[str, Any] | None = None) -> Any:
    """One Greenfield call on the store; the parsed JSON (decimals as Decimal), or ProviderError."""
    try:
        response = requests.request(
            method,
            _store_url(path),
            json=body,
            headers={"Authorization": f"token {settings.BTCPAY_API_KEY}", "Accept": "application/json"},
            timeout=settings.PAYMENT_HTTP_TIMEOUT_SECONDS,
        )
    except requests.RequestException as exc:
        logger.warning("BTCPay %s %s failed: %r", method, path, exc)
        raise ProviderError(f"BTCPay Server could not be reached ({type(exc).__name__}).") from exc
    if response.status_code == 404:
        raise InvoiceMissing("BTCPay Server answered HTTP 404 (no such store or invoice for this API key).")
    if not response.ok:
        logger.warning("BTCPay %s %s answered %s: %s", method, path, response.status_code, response.text[:500])
        raise ProviderError(f"BTCPay Server answered HTTP {response.status_code}.")
    try:
        return response.json(parse_float=Decimal)
    except ValueError as exc:
        raise ProviderError("BTCPay Server answered with a body that is not JSON.") from exc


def _invoice_get(invoice_id: str) -> dict[str, Any]:
    invoice = _call("GET", f"/invoices/{quote(invoice_id, safe='')}")
    if not isinstance(invoice, dict):
        raise ProviderError("BTCPay Server answered with an invoice that is not an object.")
    return invoice


def _timestamp(value: Any) -> datetime | None:
    """A Greenfield UnixTimestamp (seconds) as an aware UTC datetime."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    return datetime.fromtimestamp(int(value), tz=UTC)


# --- Opening an invoice ------------------------------------------------------------------


def _payment_method_id(coin: str) -> str:
    """The coin's on-chain payment method (BTCPay 2 names it COIN-CHAIN; older servers accept it too)."""
    return f"{coin}-CHAIN"


def _invoice_request(*, top_up: TopUp, coin: str) -> dict[str, Any]:
    payment_method = _payment_method_id(coin)
    return {
        "amount": f"{top_up.amount.normalize():f}",
        "currency": "USD",
        "metadata": {
            "orderId": top_up.reference,
            "itemDesc": f"Prepaid credit, {top_up.amount.normalize():f} USD",
        },
        "checkout": {
            "paymentMethods": [payment_method],
            "defaultPaymentMethod": payment_method,
            # Activate the payment method now, so that its address and amount exist to show.
            "lazyPaymentMethods": False,
            "redirectURL": f"{settings.APP_URL}/wallet?topUp={quote(top_up.reference)}",
        },
    }


def _payment_method_find(*, invoice_id: str, coin: str) -> dict[str, Any] | None:
    """The invoice's payment method for the coin, or None when BTCPay does not give it: the
    checkout link alone is enough to pay, so this never fails the top-up."""
    try:
        methods = _call("GET", f"/invoices/{quote(invoice_id, safe='')}/payment-methods")
    except ProviderError as exc:
        logger.warning("BTCPay invoice %s: payment methods unreadable (%s)", invoice_id, exc.detail)
        return None
    wanted = {_payment_method_id(coin), coin}
    for method in methods if isinstance(methods, list) else []:
        if isinstance(method, dict) and (method.get("paymentMethodId") or method.get("paymentMethod")) in wanted:
            return method
    return None


def _text_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def invoice_open(*, top_up: TopUp, coin: str) -> TopUp:
    """Creates the BTCPay invoice of a pending crypto top-up and returns the top-up, still
    pending, with the checkout link, the invoice's expiry and, when BTCPay gives them, the
    deposit address, the coin and the exact coin amount due. If BTCPay cannot be reached or
    refuses, the top-up is resolved as failed and ProviderError (502 payment_provider_error)
    is raised: no invoice was handed out, so nothing can have been paid."""
    try:
        invoice = _call("POST", "/invoices", body=_invoice_request(top_up=top_up, coin=coin))
        if not isinstance(invoice, dict) or not invoice.get("id") or not invoice.get("checkoutLink"):
            raise ProviderError("BTCPay Server answered without an invoice id or checkout link.")
    except ProviderError as exc:
        topups.top_up_resolve(
            top_up_id=top_up.pk, status=TopUpStatus.FAILED, message=f"{exc.detail} Nothing was charged."
        )
        raise
    invoice_id = str(invoice["id"])
    method = _payment_method_find(invoice_id=invoice_id, coin=coin) or {}
    address = _text_or_none(method.get("destination"))
    due = _text_or_none(method.get("due"))
    resolved_coin = _text_or_none(method.get("currency") or method.get("cryptoCode")) or (coin if method else None)
    with transaction.atomic():
        locked = TopUp.objects.select_for_update().get(pk=top_up.pk)
        locked.provider_reference = invoice_id
        locked.checkout_url = str(invoice["checkoutLink"])
        locked.expires_at = _timestamp(invoice.get("expirationTime"))
        locked.crypto_address, locked.crypto_amount, locked.crypto_coin = address, due, resolved_coin
        if locked.status == TopUpStatus.PENDING:
            locked.message = (
                f"Send {due} {resolved_coin} to {address}, or pay on the checkout page, before the invoice expires."
                if address and due
                else "Pay on the checkout page before the invoice expires."
            )
        locked.updated_at = timezone.now()
        locked.save(
            update_fields=[
                "provider_reference",
                "checkout_url",
                "expires_at",
                "crypto_address",
                "crypto_amount",
                "crypto_coin",
                "message",
                "updated_at",
            ]
        )
    return locked


# --- What an invoice's status does to its top-up ----------------------------------------


def _pending_note(*, top_up: TopUp, message: str) -> bool:
    """Updates the message of a still-pending top-up; whether it changed."""
    with transaction.atomic():
        locked = TopUp.objects.select_for_update().get(pk=top_up.pk)
        if locked.status != TopUpStatus.PENDING or locked.message == message:
            return False
        locked.message = message
        locked.updated_at = timezone.now()
        locked.save(update_fields=["message", "updated_at"])
        return True


def _resolve(*, top_up: TopUp, status: str, message: str) -> bool:
    """Ends a pending top-up without credit; whether it was still pending."""
    was_pending = top_up.status == TopUpStatus.PENDING
    resolved = topups.top_up_resolve(top_up_id=top_up.pk, status=status, message=message)
    return was_pending and resolved.status == status


def _on_settled(top_up: TopUp, additional_status: str | None) -> bool:
    if top_up.status == TopUpStatus.CONFIRMED:
        return False
    if top_up.status != TopUpStatus.PENDING:
        logger.info(
            "BTCPay invoice %s settled after top-up %s was %s", top_up.provider_reference, top_up, top_up.status
        )
    topups.top_up_confirm(
        top_up_id=top_up.pk,
        memo=f"crypto top-up {top_up.reference} (BTCPay invoice {top_up.provider_reference})",
    )
    return True


def _on_processing(top_up: TopUp, additional_status: str | None) -> bool:
    return _pending_note(top_up=top_up, message=PROCESSING_MESSAGE)


def _on_new(top_up: TopUp, additional_status: str | None) -> bool:
    if additional_status == "PaidPartial":
        return _pending_note(top_up=top_up, message=PARTIAL_MESSAGE)
    return False


def _on_expired(top_up: TopUp, additional_status: str | None) -> bool:
    message = (
        "The invoice expired after a partial payment; what was sent was not credited. Contact support for a refund."
        if additional_status == "PaidPartial"
        else "The invoice expired before it was paid."
    )
    return _resolve(top_up=top_up, status=TopUpStatus.EXPIRED, message=message)


def _on_invalid(top_up: TopUp, additional_status: str | None) -> bool:
    if top_up.status == TopUpStatus.CONFIRMED:
        # Credit already landed; taking it back is an operator's decision, not a webhook's.
        logger.error(
            "BTCPay invoice %s is Invalid but top-up %s was credited; review it", top_up.provider_reference, top_up
        )
        return False
    return _resolve(
        top_up=top_up,
        status=TopUpStatus.CANCELLED,
        message="The invoice was marked invalid at BTCPay Server; nothing was credited.",
    )


_STATUS_ACTIONS: dict[str, Callable[[TopUp, str | None], bool]] = {
    "New": _on_new,
    "Processing": _on_processing,
    "Settled": _on_settled,
    "Expired": _on_expired,
    "Invalid": _on_invalid,
}


def _invoice_apply(*, top_up: TopUp, invoice: dict[str, Any]) -> bool:
    """Moves the top-up to what the invoice's real status says; whether anything changed."""
    metadata = invoice.get("metadata")
    order_id = metadata.get("orderId") if isinstance(metadata, dict) else None
    if invoice.get("id") != top_up.provider_reference or order_id != top_up.reference:
        logger.error("BTCPay invoice %s is not the invoice of top-up %s; left alone", invoice.get("id"), top_up)
        return False
    action = _STATUS_ACTIONS.get(str(invoice.get("status")))
    if action is None:
        logger.warning("BTCPay invoice %s has an unknown status %r", top_up.provider_reference, invoice.get("status"))
        return False
    additional_status = invoice.get("additionalStatus")
    return action(top_up, additional_status if isinstance(additional_status, str) else None)


# --- Webhooks ----------------------------------------------------------------------------


def _signature_verify(*, payload: bytes, signature: str | None) -> None:
    secret = settings.BTCPAY_WEBHOOK_SECRET
    # Without a secret anyone could compute a "valid" signature, so nothing is accepted.
    if not secret or not signature:
        raise BtcpaySignatureInvalid()
    expected = SIGNATURE_PREFIX + hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.strip().lower().encode("utf-8", "replace")):
        raise BtcpaySignatureInvalid()


def webhook_handle(*, payload: bytes, signature: str | None) -> None:
    """Handles one BTCPay webhook delivery. A missing or wrong `BTCPay-Sig` is refused (400
    btcpay_signature_invalid) and changes nothing. The body is trusted only to name an
    invoice: the invoice is read from the API and its real status applied. Events of other
    stores, of unknown invoices or without an invoice are acknowledged and ignored; a replay
    changes nothing. BTCPay unreachable: ProviderError (502), so that BTCPay redelivers."""
    _signature_verify(payload=payload, signature=signature)
    try:
        event = json.loads(payload)
    except ValueError:
        raise MalformedRequest("The webhook body is not JSON.") from None
    if not isinstance(event, dict):
        raise MalformedRequest("The webhook body is not a JSON object.")
    invoice_id, store_id = event.get("invoiceId"), event.get("storeId")
    if not isinstance(invoice_id, str) or not invoice_id or store_id != settings.BTCPAY_STORE_ID:
        logger.info("BTCPay webhook %r ignored: no invoice of this store", event.get("type"))
        return
    top_up = TopUp.objects.filter(method=TopUpMethod.CRYPTO, provider_reference=invoice_id).first()
    if top_up is None:
        logger.info("BTCPay webhook %r ignored: invoice %s is not a top-up of ours", event.get("type"), invoice_id)
        return
    configured_or_refuse()
    try:
        invoice = _invoice_get(invoice_id)
    except InvoiceMissing:
        logger.warning("BTCPay webhook for invoice %s of top-up %s, which BTCPay does not know", invoice_id, top_up)
        return
    _invoice_apply(top_up=top_up, invoice=invoice)


# --- Reconciliation ----------------------------------------------------------------------


def pending_reconcile() -> int:
    """Reads, for each crypto top-up pending for more than RECONCILE_AFTER, its invoice
    from BTCPay and applies its status as a webhook would (webhooks can be lost); returns
    how many top-ups changed. A pending top-up that never got an invoice (the process died
    before BTCPay answered) is resolved as failed: no one was given anything to pay. Stops
    at the first BTCPay outage, to try again on the next run."""
    if not _configured():
        return 0
    cutoff = timezone.now() - RECONCILE_AFTER
    pending = TopUp.objects.filter(
        method=TopUpMethod.CRYPTO, status=TopUpStatus.PENDING, created_at__lte=cutoff
    ).order_by("created_at")[:RECONCILE_BATCH]
    changed = 0
    for top_up in pending:
        if not top_up.provider_reference:
            changed += _resolve(
                top_up=top_up,
                status=TopUpStatus.FAILED,
                message="No BTCPay invoice was created for this top-up; nothing was charged.",
            )
            continue
        try:
            invoice = _invoice_get(top_up.provider_reference)
        except InvoiceMissing:
            logger.warning("Reconcile: BTCPay does not know invoice %s of top-up %s", top_up.provider_reference, top_up)
            continue
        except ProviderError as exc:
            logger.warning("Reconcile stopped, BTCPay unavailable: %s", exc.detail)
            break
        changed += _invoice_apply(top_up=top_up, invoice=invoice)
    return changed
