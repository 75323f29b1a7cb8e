// /wallet: the balance, adding credit (card checkout, a saved card, crypto, or instant
// credit on a development deployment), redeeming a code, and the history (the ledger),
// page by page. Payment providers' checkout pages come back to /wallet/top-up/<reference>
// (card) or /wallet?topUp=<reference> (crypto), which shows the outcome.

import { api, session } from "./api.js";
import { connectHub } from "./hub.js";
import { balanceRefresh } from "./shell.js";
import { busy, byId, cardBrand, dateTime, el, formErrors, money, notice } from "./ui.js";

const LEDGER_PAGE_SIZE = 20;
const KINDS = {
  top_up_credit: "Credit added",
  redeem_credit: "Credit code redeemed",
  batch_charge: "Translation",
  hold: "Held for a batch",
  hold_release: "Hold released",
  refund: "Refund",
  adjustment: "Adjustment",
};

let ledgerPage = 1;

async function walletShow() {
  const wallet = await balanceRefresh();
  if (!wallet) return;
  byId("balance").textContent = wallet.unlimited ? "Unlimited" : money(wallet.balanceUsd, wallet.currency);
  byId("spendable").textContent = wallet.unlimited ? "Unlimited" : money(wallet.spendableUsd, wallet.currency);
  byId("reserved").textContent = money(wallet.reservedUsd, wallet.currency);
  byId("spent").textContent = money(wallet.spentThisMonthUsd, wallet.currency);
  if (wallet.lowBalance) notice("Your balance is low: add credit so your books keep going.", "info");
}

async function ledgerShow(page = ledgerPage) {
  const answer = await api("GET", "/v1/wallet/ledger", { query: { page, pageSize: LEDGER_PAGE_SIZE } });
  ledgerPage = page;
  const rows = answer.results.map((entry) => {
    const amount = Number(entry.amountUsd);
    return el(
      "tr",
      {},
      el("td", { "data-label": "Date" }, dateTime(entry.createdUtc)),
      el("td", { "data-label": "What" }, KINDS[entry.kind] || entry.kind, entry.memo ? el("span", { class: "muted" }, ` — ${entry.memo}`) : null),
      el("td", { "data-label": "Amount", class: "amount" }, `${amount > 0 ? "+" : ""}${money(amount)}`),
      el("td", { "data-label": "Balance after", class: "amount" }, money(entry.balanceAfterUsd)),
    );
  });
  const table = byId("ledger");
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = rows.length === 0;
  byId("ledger-empty").hidden = answer.count > 0;
  const pages = Math.max(1, Math.ceil(answer.count / LEDGER_PAGE_SIZE));
  byId("ledger-pages").hidden = pages <= 1;
  byId("ledger-position").textContent = `Page ${page} of ${pages}`;
  byId("ledger-previous").disabled = !answer.previous;
  byId("ledger-next").disabled = !answer.next;
}

async function cardsShow(form) {
  const field = byId("saved-card-field");
  if (!field) return;
  let cards = [];
  try {
    cards = await api("GET", "/v1/wallet/cards");
  } catch {
    return;
  }
  const select = form.savedCardId;
  select.replaceChildren(
    el("option", { value: "" }, "A new card (checkout page)"),
    ...cards.map((card) =>
      el("option", { value: card.id, selected: card.isPrimary }, `${cardBrand(card.brand)} ending ${card.last4}${card.isPrimary ? " (primary)" : ""}`),
    ),
  );
  field.hidden = cards.length === 0;
}

function checkoutGo(address) {
  const target = new URL(address, location.href);
  if (target.protocol !== "https:" && target.origin !== location.origin) throw new Error("The checkout address is not secure.");
  location.assign(target.toString());
}

function topUpWire() {
  const form = byId("top-up-form");
  if (!form) return;
  const methodChanged = () => {
    const field = byId("saved-card-field");
    if (field) field.querySelector("select").disabled = form.method.value !== "card";
  };
  form.addEventListener("change", methodChanged);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    const method = form.method.value;
    const body = { amount: Number(form.amount.value), method };
    if (method === "card" && form.savedCardId?.value) body.savedCardId = form.savedCardId.value;
    try {
      const view = await busy(form.querySelector("button[type=submit]"), api("POST", "/v1/wallet/top-up", { json: body, idempotent: true }));
      if (view.checkoutUrl && view.status === "pending") {
        notice("Taking you to the checkout…");
        checkoutGo(view.checkoutUrl);
        return;
      }
      if (view.status === "confirmed") notice(`${money(view.creditedAmount ?? view.amount)} added to your balance.`, "success");
      else location.assign(`/wallet/top-up/${encodeURIComponent(view.reference)}`);
      await Promise.all([walletShow(), ledgerShow(1)]);
    } catch (error) {
      formErrors(form, error);
    }
  });
  cardsShow(form).then(methodChanged);
}

function redeemWire() {
  const form = byId("redeem-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    try {
      const view = await busy(
        form.querySelector("button[type=submit]"),
        api("POST", "/v1/wallet/redeem", { json: { code: form.code.value.trim() }, idempotent: true }),
      );
      form.reset();
      notice(`Code redeemed: ${money(view.creditedAmount ?? view.amount)} added to your balance.`, "success");
      await Promise.all([walletShow(), ledgerShow(1)]);
    } catch (error) {
      formErrors(form, error, { near: "code" });
    }
  });
}

if (session.requireSignIn()) {
  const returning = new URLSearchParams(location.search).get("topUp");
  if (returning) {
    location.replace(`/wallet/top-up/${encodeURIComponent(returning)}`);
  } else {
    topUpWire();
    redeemWire();
    byId("ledger-previous").addEventListener("click", () => ledgerShow(ledgerPage - 1));
    byId("ledger-next").addEventListener("click", () => ledgerShow(ledgerPage + 1));
    Promise.all([walletShow(), ledgerShow(1)]).catch((error) => notice(error.message, "error"));
    connectHub((message) => {
      if (message.type === "wallet.top_up_confirmed" || message.type === "wallet.low_balance" || message.type === "hub.connected") {
        walletShow();
        ledgerShow();
      }
    });
  }
}
