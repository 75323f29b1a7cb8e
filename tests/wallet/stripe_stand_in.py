"""A local stand-in for Stripe's API (v1), speaking its wire protocol over HTTP.

It implements what card top-ups use, the way Stripe documents it: form-encoded requests
(`metadata[key]=value`, `line_items[0][price_data][unit_amount]=...`), `Authorization:
Bearer <secret key>` (401 otherwise), JSON objects carrying `object` and `id`, and errors
as `{"error": {"type", "code", "message", ...}}` with Stripe's statuses (402 for a card
error, 400/404 for an invalid request):

- `POST /v1/customers`, `DELETE /v1/customers/{id}` (its PaymentMethods detached with it;
  an unknown or already deleted customer is 404 resource_missing),
- `POST /v1/checkout/sessions` (payment mode; `expires_at` must be 30 minutes to 24 hours
  ahead; an unknown customer is 400 resource_missing),
- `POST /v1/payment_intents` (confirm + off_session with a saved PaymentMethod),
- `GET /v1/payment_intents/{id}` (with `expand[]=payment_method`),
- `POST /v1/payment_methods/{id}/detach`.

Cards behave like Stripe's test PaymentMethods (`pm_card_visa`, `pm_card_chargeCustomerFail`
which attaches but whose charges are declined, `pm_card_authenticationRequired`, ...). A
`POST` with an `Idempotency-Key` already seen is answered with the first response, as
Stripe does. A test plays the customer on the hosted page with `checkout_pay` or lets the
page lapse with `checkout_expire`, reads what was asked in `requests`, and builds signed
events with `event_payload` and `signature_header` (`Stripe-Signature: t=<unix time>,
v1=<hex HMAC-SHA256 of "<t>.<payload>" with the endpoint's whsec_ secret>`).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

API_VERSION = "2026-10-28.endive"
# The secrets the tests configure the service and the stand-in with.
API_KEY = "sk_test_stand_in_51Hx"
WEBHOOK_SECRET = "whsec_stand_in_test_secret"


@dataclass(frozen=True)
class StandInCard:
    brand: str
    last4: str
    # What an off-session charge does: None succeeds, else (code, decline_code, message).
    decline: tuple[str, str, str] | None = None


DECLINED = ("card_declined", "generic_decline", "Your card was declined.")
INSUFFICIENT_FUNDS = ("card_declined", "insufficient_funds", "Your card has insufficient funds.")
AUTHENTICATION = (
    "authentication_required",
    "authentication_required",
    "Your card was declined. This transaction requires authentication.",
)
TEST_CARDS = {
    "pm_card_visa": StandInCard("visa", "4242"),
    "pm_card_mastercard": StandInCard("mastercard", "4444"),
    "pm_card_chargeCustomerFail": StandInCard("visa", "0341", DECLINED),
    "pm_card_chargeDeclined": StandInCard("visa", "0002", DECLINED),
    "pm_card_chargeDeclinedInsufficientFunds": StandInCard("visa", "9995", INSUFFICIENT_FUNDS),
    "pm_card_authenticationRequired": StandInCard("visa", "3184", AUTHENTICATION),
}


@dataclass
class RecordedRequest:
    method: str
    path: str
    form: dict[str, str]
    idempotency_key: str | None
    authorization: str | None


class StripeError(Exception):
    def __init__(self, status: int, **error: Any) -> None:
        super().__init__(error.get("message"))
        self.status = status
        self.error = error


def _new_id(prefix: str) -> str:
    return f"{prefix}_test_{secrets.token_hex(12)}"


def _nested(form: dict[str, str], prefix: str) -> dict[str, str]:
    """`metadata[a]=1&metadata[b]=2` as {"a": "1", "b": "2"}."""
    start = f"{prefix}["
    return {key[len(start) : -1]: value for key, value in form.items() if key.startswith(start) and key.count("[") == 1}


class StripeStandIn:
    def __init__(self, *, api_key: str) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.customers: dict[str, dict[str, Any]] = {}
        self.payment_methods: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.intents: dict[str, dict[str, Any]] = {}
        self._intent_metadata_of_session: dict[str, dict[str, str]] = {}
        self._replies: dict[str, tuple[int, dict[str, Any]]] = {}
        self._held: dict[str, threading.Event] = {}  # path -> the gate its POSTs' answers wait at
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- Lifecycle -----------------------------------------------------------------------

    @classmethod
    @contextmanager
    def running(cls, *, api_key: str) -> Iterator[StripeStandIn]:
        stand_in = cls(api_key=api_key)
        stand_in.start()
        try:
            yield stand_in
        finally:
            stand_in.stop()

    def start(self) -> None:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stand_in._serve(self, "GET")

            def do_POST(self) -> None:
                stand_in._serve(self, "POST")

            def do_DELETE(self) -> None:
                stand_in._serve(self, "DELETE")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval lets stop() return at once.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        """Stops listening: from now on, connections are refused (Stripe unreachable)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is stopped")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answers_held(self, path: str) -> threading.Event:
        """From now on a POST to `path` takes effect (a payment is made) but its answer is
        not sent until the returned event is set: the caller may die waiting, as when our
        API process is killed while it waits for Stripe."""
        gate = threading.Event()
        self._held[path] = gate
        return gate

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.method == method and request.path == path]

    # --- HTTP ----------------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length).decode() if length else ""
        form = dict(parse_qsl(body if method == "POST" else url.query, keep_blank_values=True))
        key = handler.headers.get("Idempotency-Key")
        authorization = handler.headers.get("Authorization")
        with self._lock:
            self.requests.append(RecordedRequest(method, url.path, form, key, authorization))
            replay_key = f"{authorization}:{key}" if method == "POST" and key else None
            if replay_key and replay_key in self._replies:
                status, reply = self._replies[replay_key]
                return self._send(handler, status, reply, replayed=True)
            try:
                if authorization != f"Bearer {self.api_key}":
                    raise StripeError(401, type="invalid_request_error", message="Invalid API Key provided.")
                status, reply = 200, self._route(method, url.path, form)
            except StripeError as error:
                status, reply = error.status, {"error": error.error}
            if replay_key and status != 401:
                self._replies[replay_key] = (status, reply)
            gate = self._held.get(url.path) if method == "POST" else None
        if gate is not None:
            gate.wait(timeout=60)
        with contextlib.suppress(OSError):  # the caller may have died waiting
            self._send(handler, status, reply)

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, reply: dict[str, Any], replayed: bool = False
    ) -> None:
        data = json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Request-Id", _new_id("req"))
        if replayed:
            handler.send_header("Idempotent-Replayed", "true")
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, method: str, path: str, form: dict[str, str]) -> dict[str, Any]:
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/v1/customers":
            return self._customer_create(form)
        if method == "DELETE" and len(parts) == 3 and parts[1] == "customers":
            return self._customer_delete(parts[2])
        if method == "POST" and path == "/v1/checkout/sessions":
            return self._session_create(form)
        if method == "POST" and path == "/v1/payment_intents":
            return self._intent_create(form)
        if method == "GET" and len(parts) == 3 and parts[1] == "payment_intents":
            return self._intent_read(parts[2], form)
        if method == "POST" and len(parts) == 4 and parts[1] == "payment_methods" and parts[3] == "detach":
            return self._payment_method_detach(parts[2])
        raise StripeError(404, type="invalid_request_error", message=f"Unrecognized request URL ({method}: {path}).")

    # --- Objects -------------------------------------------------------------------------

    def _customer_create(self, form: dict[str, str]) -> dict[str, Any]:
        customer = {
            "id": _new_id("cus"),
            "object": "customer",
            "email": form.get("email"),
            "metadata": _nested(form, "metadata"),
            "created": int(time.time()),
            "livemode": False,
        }
        self.customers[customer["id"]] = customer
        return copy.deepcopy(customer)

    def _customer_delete(self, customer_id: str) -> dict[str, Any]:
        if customer_id not in self.customers:
            raise StripeError(
                404,
                type="invalid_request_error",
                code="resource_missing",
                param="id",
                message=f"No such customer: '{customer_id}'",
            )
        del self.customers[customer_id]
        for payment_method in self.payment_methods.values():
            if payment_method["customer"] == customer_id:
                payment_method["customer"] = None
        return {"id": customer_id, "object": "customer", "deleted": True}

    def _customer_known(self, customer_id: str | None) -> str:
        if not customer_id or customer_id not in self.customers:
            raise StripeError(
                400,
                type="invalid_request_error",
                code="resource_missing",
                param="customer",
                message=f"No such customer: '{customer_id}'",
            )
        return customer_id

    def _session_create(self, form: dict[str, str]) -> dict[str, Any]:
        if form.get("mode") != "payment":
            raise StripeError(400, type="invalid_request_error", param="mode", message="Only payment mode here.")
        if "payment_method_types[0]" in form:
            raise StripeError(
                400,
                type="invalid_request_error",
                code="payment_method_types_no_longer_supported",
                param="payment_method_types",
                message="payment_method_types is no longer supported; use allowed_payment_method_types.",
            )
        now = int(time.time())
        expires_at = int(form.get("expires_at") or now + 86400)
        if not now + 1800 <= expires_at <= now + 86400:
            raise StripeError(
                400,
                type="invalid_request_error",
                param="expires_at",
                message="The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session "
                "creation.",
            )
        customer = self._customer_known(form.get("customer"))
        amount = int(form["line_items[0][price_data][unit_amount]"]) * int(form.get("line_items[0][quantity]", "1"))
        session_id = _new_id("cs")
        session = {
            "id": session_id,
            "object": "checkout.session",
            "mode": "payment",
            "status": "open",
            "payment_status": "unpaid",
            "amount_subtotal": amount,
            "amount_total": amount,
            "currency": form["line_items[0][price_data][currency]"],
            "customer": customer,
            "client_reference_id": form.get("client_reference_id"),
            "metadata": _nested(form, "metadata"),
            "payment_intent": None,
            "success_url": form.get("success_url"),
            "cancel_url": form.get("cancel_url"),
            "expires_at": expires_at,
            "created": now,
            "livemode": False,
            "url": f"https://checkout.stripe.com/c/pay/{session_id}",
        }
        self.sessions[session_id] = session
        self._intent_metadata_of_session[session_id] = {
            key[len("payment_intent_data[metadata][") : -1]: value
            for key, value in form.items()
            if key.startswith("payment_intent_data[metadata][")
        }
        return copy.deepcopy(session)

    def _payment_method_new(self, *, alias: str, customer: str | None) -> dict[str, Any]:
        card = TEST_CARDS[alias]
        payment_method = {
            "id": _new_id("pm"),
            "object": "payment_method",
            "type": "card",
            "customer": customer,
            "card": {"brand": card.brand, "last4": card.last4, "exp_month": 12, "exp_year": 2034, "funding": "credit"},
            "created": int(time.time()),
            "livemode": False,
            "_alias": alias,
        }
        self.payment_methods[payment_method["id"]] = payment_method
        return payment_method

    @staticmethod
    def _public(payment_method: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in copy.deepcopy(payment_method).items() if not key.startswith("_")}

    def _intent_new(
        self, *, amount: int, currency: str, customer: str, payment_method: str, metadata: dict[str, str], status: str
    ) -> dict[str, Any]:
        intent = {
            "id": _new_id("pi"),
            "object": "payment_intent",
            "amount": amount,
            "amount_received": amount if status == "succeeded" else 0,
            "currency": currency,
            "customer": customer,
            "payment_method": payment_method,
            "status": status,
            "metadata": metadata,
            "last_payment_error": None,
            "created": int(time.time()),
            "livemode": False,
        }
        self.intents[intent["id"]] = intent
        return intent

    def _intent_create(self, form: dict[str, str]) -> dict[str, Any]:
        customer = self._customer_known(form.get("customer"))
        method_id = form.get("payment_method", "")
        payment_method = self.payment_methods.get(method_id)
        if payment_method is None and method_id in TEST_CARDS:
            payment_method = self._payment_method_new(alias=method_id, customer=customer)
        if payment_method is None:
            raise StripeError(
                400,
                type="invalid_request_error",
                code="resource_missing",
                param="payment_method",
                message=f"No such PaymentMethod: '{method_id}'",
            )
        if form.get("confirm") != "true" or form.get("off_session") != "true":
            raise StripeError(400, type="invalid_request_error", message="The stand-in only confirms off-session.")
        decline = TEST_CARDS[payment_method["_alias"]].decline
        intent = self._intent_new(
            amount=int(form["amount"]),
            currency=form["currency"],
            customer=customer,
            payment_method=payment_method["id"],
            metadata=_nested(form, "metadata"),
            status="succeeded" if decline is None else "requires_payment_method",
        )
        if decline is None:
            return copy.deepcopy(intent)
        code, decline_code, message = decline
        error = {"type": "card_error", "code": code, "decline_code": decline_code, "message": message}
        intent["last_payment_error"] = {**error, "payment_method": self._public(payment_method)}
        raise StripeError(
            402, **error, payment_intent=copy.deepcopy(intent), payment_method=self._public(payment_method)
        )

    def _intent_read(self, intent_id: str, query: dict[str, str]) -> dict[str, Any]:
        intent = self.intents.get(intent_id)
        if intent is None:
            raise StripeError(
                404, type="invalid_request_error", code="resource_missing", param="intent", message="No such intent"
            )
        reply = copy.deepcopy(intent)
        if "payment_method" in (query.get("expand[0]"), query.get("expand[]")):
            reply["payment_method"] = self._public(self.payment_methods[intent["payment_method"]])
        return reply

    def _payment_method_detach(self, method_id: str) -> dict[str, Any]:
        payment_method = self.payment_methods.get(method_id)
        if payment_method is None:
            raise StripeError(
                404,
                type="invalid_request_error",
                code="resource_missing",
                param="payment_method",
                message=f"No such PaymentMethod: '{method_id}'",
            )
        if payment_method["customer"] is None:
            raise StripeError(
                400,
                type="invalid_request_error",
                message="The payment method you provided is not attached to a customer so detachment is impossible.",
            )
        payment_method["customer"] = None
        return self._public(payment_method)

    # --- The customer on the hosted page, and events ------------------------------------

    def checkout_pay(self, session_id: str, *, card: str = "pm_card_visa") -> dict[str, Any]:
        """The customer pays the session with a test card, saved to the session's customer
        (setup_future_usage); returns the completed session."""
        with self._lock:
            session = self.sessions[session_id]
            payment_method = self._payment_method_new(alias=card, customer=session["customer"])
            intent = self._intent_new(
                amount=session["amount_total"],
                currency=session["currency"],
                customer=session["customer"],
                payment_method=payment_method["id"],
                metadata=self._intent_metadata_of_session[session_id],
                status="succeeded",
            )
            session.update(status="complete", payment_status="paid", payment_intent=intent["id"])
            return copy.deepcopy(session)

    def checkout_expire(self, session_id: str) -> dict[str, Any]:
        with self._lock:
            session = self.sessions[session_id]
            session.update(status="expired")
            return copy.deepcopy(session)

    @staticmethod
    def event_payload(event_type: str, obj: dict[str, Any], *, event_id: str | None = None) -> bytes:
        """An event as Stripe posts it to an endpoint (a snapshot event of API_VERSION)."""
        event = {
            "id": event_id or _new_id("evt"),
            "object": "event",
            "api_version": API_VERSION,
            "created": int(time.time()),
            "type": event_type,
            "data": {"object": obj},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
        }
        return json.dumps(event, indent=2).encode()


def signature_header(payload: bytes, secret: str, *, timestamp: int | None = None) -> str:
    """`Stripe-Signature` as Stripe computes it: t=<unix time>,v1=<hex HMAC-SHA256 of
    "<t>.<payload>" keyed with the whole whsec_ secret>."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    signed = f"{timestamp}.".encode() + payload
    return f"t={timestamp},v1={hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"
