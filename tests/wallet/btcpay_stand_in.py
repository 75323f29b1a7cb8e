"""A local stand-in for a BTCPay Server store, speaking the Greenfield API (v1) over HTTP.

It implements what crypto top-ups use, with Greenfield's JSON shapes:

- `POST /api/v1/stores/{storeId}/invoices` (InvoiceData; 400 ValidationProblemDetails for a
  payment method the store does not have),
- `GET /api/v1/stores/{storeId}/invoices/{invoiceId}` (InvoiceData),
- `GET /api/v1/stores/{storeId}/invoices/{invoiceId}/payment-methods`
  (a list of InvoicePaymentMethodDataModel),

each behind `Authorization: token <apikey>` (401 ProblemDetails otherwise; 404 for another
store or an unknown invoice). A test moves an invoice through New, Processing, Settled,
Expired and Invalid (with an additionalStatus) with `invoice_status_set`, reads what was
asked in `requests`, can make every call fail with `fail_with`, and delivers webhooks
signed as BTCPay signs them (`BTCPay-Sig: sha256=<hex HMAC-SHA256 of the raw body>`) with
`webhook_send`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tests.support.local_http import QuietHandler, serving

WEBHOOK_PATH = "/v1/payments/btcpay/webhook"
# Rates of the store's on-chain payment methods, in USD per coin.
RATES = {"BTC-CHAIN": Decimal("60628.45"), "LTC-CHAIN": Decimal("71.37")}
ADDRESSES = {"BTC-CHAIN": "bcrt1q", "LTC-CHAIN": "rltc1q"}
INVOICE_MINUTES = 15


@dataclass
class RecordedRequest:
    method: str
    path: str
    authorization: str | None
    body: Any


@dataclass
class StandInInvoice:
    id: str
    store_id: str
    amount: Decimal
    currency: str
    metadata: dict[str, Any]
    checkout: dict[str, Any]
    payment_method_ids: list[str]
    created_time: int
    status: str = "New"
    additional_status: str = "None"
    addresses: dict[str, str] = field(default_factory=dict)

    def due(self, payment_method_id: str) -> str:
        """The coin amount due, as BTCPay writes it (8 decimals)."""
        return str((self.amount / RATES[payment_method_id]).quantize(Decimal("0.00000001")))

    def as_invoice_data(self, base_url: str) -> dict[str, Any]:
        settled = self.status == "Settled"
        return {
            "id": self.id,
            "storeId": self.store_id,
            "amount": str(self.amount),
            "paidAmount": str(self.amount) if settled else "0",
            "currency": self.currency,
            "type": "Standard",
            "checkoutLink": f"{base_url}/i/{self.id}",
            "createdTime": self.created_time,
            "expirationTime": self.created_time + INVOICE_MINUTES * 60,
            "monitoringExpiration": self.created_time + INVOICE_MINUTES * 60 + 86400,
            "status": self.status,
            "additionalStatus": self.additional_status,
            "availableStatusesForManualMarking": [] if settled else ["Settled", "Invalid"],
            "archived": False,
            "metadata": self.metadata,
            "checkout": self.checkout,
            "receipt": {"enabled": None, "showQR": None, "showPayments": None},
        }

    def as_payment_methods(self) -> list[dict[str, Any]]:
        methods = []
        for method_id in self.payment_method_ids:
            due = self.due(method_id)
            address = self.addresses[method_id]
            paid = due if self.status == "Settled" else "0"
            methods.append(
                {
                    "paymentMethodId": method_id,
                    "currency": method_id.split("-")[0],
                    "destination": address,
                    "paymentLink": f"bitcoin:{address}?amount={due}",
                    "rate": str(RATES[method_id]),
                    "paymentMethodPaid": paid,
                    "totalPaid": paid,
                    "due": "0" if self.status == "Settled" else due,
                    "amount": due,
                    "paymentMethodFee": "0",
                    "payments": [],
                    "activated": True,
                    "additionalData": {"keyPath": "0/1", "payjoinEnabled": False},
                }
            )
        return methods


@dataclass
class BtcpayStandIn:
    """The store's state; `url` is the server's base address (BTCPAY_URL)."""

    url: str = ""
    api_key: str = field(default_factory=lambda: secrets.token_hex(20))
    store_id: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    webhook_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    invoices: dict[str, StandInInvoice] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    fail_with: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def invoice_status_set(self, invoice_id: str, status: str, additional_status: str = "None") -> None:
        with self.lock:
            invoice = self.invoices[invoice_id]
            invoice.status, invoice.additional_status = status, additional_status

    def invoice_for(self, order_id: str) -> StandInInvoice | None:
        """The invoice created with this metadata.orderId (our top-up reference)."""
        with self.lock:
            return next((i for i in self.invoices.values() if i.metadata.get("orderId") == order_id), None)

    def requests_to(self, method: str, path_suffix: str = "") -> list[RecordedRequest]:
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path.endswith(path_suffix)]

    def webhook_body(self, invoice_id: str, event_type: str, *, store_id: str | None = None, **extra: Any) -> bytes:
        """A WebhookInvoiceEvent body as BTCPay sends it."""
        invoice = self.invoices.get(invoice_id)
        delivery_id = secrets.token_urlsafe(16)
        event = {
            "deliveryId": delivery_id,
            "webhookId": "stand-in-webhook",
            "originalDeliveryId": delivery_id,
            "isRedelivery": False,
            "type": event_type,
            "timestamp": int(time.time()),
            "storeId": store_id or self.store_id,
            "invoiceId": invoice_id,
            "metadata": invoice.metadata if invoice else {},
            **extra,
        }
        return json.dumps(event, indent=2).encode()

    # --- the HTTP side ------------------------------------------------------------------

    def handle(self, method: str, path: str, authorization: str | None, raw: bytes) -> tuple[int, Any]:
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        with self.lock:
            self.requests.append(RecordedRequest(method, path, authorization, body))
            if self.fail_with is not None:
                return self.fail_with, {"code": "generic-error", "message": "The stand-in was told to fail."}
            if authorization != f"token {self.api_key}":
                return 401, {
                    "code": "unauthenticated",
                    "message": "Authentication is required for accessing this endpoint",
                }
            match = re.fullmatch(r"/api/v1/stores/([^/]+)/invoices(?:/([^/]+)(/payment-methods)?)?", path)
            if match is None or match.group(1) != self.store_id:
                return 404, {"code": "store-not-found", "message": "The store was not found"}
            invoice_id, payment_methods = match.group(2), match.group(3)
            if method == "POST" and invoice_id is None:
                return self._invoice_create(body)
            invoice = self.invoices.get(invoice_id or "")
            if method != "GET" or invoice is None:
                return 404, {"code": "invoice-not-found", "message": "The invoice was not found"}
            if payment_methods:
                return 200, invoice.as_payment_methods()
            return 200, invoice.as_invoice_data(self.url)

    def _invoice_create(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, [{"path": "", "message": "The request body is not a JSON object"}]
        checkout = body.get("checkout") or {}
        method_ids = checkout.get("paymentMethods") or list(RATES)
        unknown = [m for m in method_ids if m not in RATES]
        if unknown:
            return 400, [{"path": "checkout.paymentMethods", "message": f"Invalid payment method {unknown[0]}"}]
        try:
            amount = Decimal(str(body["amount"]))
        except (KeyError, ArithmeticError):
            return 400, [{"path": "amount", "message": "The amount is invalid"}]
        invoice = StandInInvoice(
            id=secrets.token_urlsafe(16).replace("-", "x").replace("_", "y"),
            store_id=self.store_id,
            amount=amount,
            currency=body.get("currency") or "USD",
            metadata=body.get("metadata") or {},
            checkout=checkout,
            payment_method_ids=list(method_ids),
            created_time=int(time.time()),
        )
        invoice.addresses = {m: ADDRESSES[m] + secrets.token_hex(19) for m in method_ids}
        self.invoices[invoice.id] = invoice
        return 200, invoice.as_invoice_data(self.url)


@contextmanager
def btcpay_stand_in() -> Iterator[BtcpayStandIn]:
    """A running stand-in on 127.0.0.1 (a random port), stopped on exit."""
    state = BtcpayStandIn()

    class Handler(QuietHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, payload = state.handle(self.command, self.path, self.headers.get("Authorization"), raw)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

    with serving(Handler) as address:
        state.url = address
        yield state


def webhook_signature(body: bytes, secret: str) -> str:
    """The BTCPay-Sig header BTCPay sends: sha256= and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_send(client: Any, body: bytes, *, secret: str | None = None, signature: str | None = None) -> Any:
    """POSTs a webhook body to our endpoint as BTCPay does: signed with `secret`, or with the
    given `signature` header as is, or (both None) unsigned."""
    headers = {}
    if signature is None and secret is not None:
        signature = webhook_signature(body, secret)
    if signature is not None:
        headers["HTTP_BTCPAY_SIG"] = signature
    return client.generic("POST", WEBHOOK_PATH, body, content_type="application/json", **headers)
