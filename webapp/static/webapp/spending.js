// /settings/spending: the monthly spending ceiling, the low-balance alert, auto top-up and
// the saved cards (make one primary, remove one), as the wallet's API allows.

import { api, session } from "./api.js";
import { busy, byId, cardBrand, el, formErrors, money, notice } from "./ui.js";

function amountOrNull(input) {
  return input.value === "" ? null : Number(input.value);
}

function valueOf(amount) {
  return amount === null || amount === undefined ? "" : String(Number(amount));
}

function walletFill(wallet) {
  byId("spending-summary").textContent = wallet.unlimited
    ? "Your account is unlimited: nothing is charged."
    : `Balance ${money(wallet.balanceUsd)}; spent this month ${money(wallet.spentThisMonthUsd)}.`;
  byId("ceiling").value = valueOf(wallet.monthlySpendingCeilingUsd);
  byId("alert-threshold").value = valueOf(wallet.lowBalanceAlertThresholdUsd);
  byId("auto-threshold").value = valueOf(wallet.autoTopUpThresholdUsd);
  byId("auto-amount").value = valueOf(wallet.autoTopUpAmountUsd);
  byId("auto-cap").value = valueOf(wallet.autoTopUpMonthlyCapUsd);
  byId("auto-off").hidden = wallet.autoTopUpThresholdUsd === null;
}

function formWire(id, path, body, done) {
  const form = byId(id);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    try {
      walletFill(await busy(form.querySelector("button[type=submit]"), api("PUT", path, { json: body(form) })));
      notice(done(form), "success");
    } catch (error) {
      formErrors(form, error);
    }
  });
}

async function cardsShow() {
  let cards;
  try {
    cards = await api("GET", "/v1/wallet/cards");
  } catch {
    cards = [];
  }
  const items = cards.map((card) => {
    const label = `${cardBrand(card.brand)} ending ${card.last4}`;
    const expiry = card.expMonth && card.expYear ? `expires ${String(card.expMonth).padStart(2, "0")}/${card.expYear}` : "";
    return el(
      "li",
      {},
      el("span", {}, label, " ", el("span", { class: "muted" }, expiry)),
      card.isPrimary
        ? el("span", { class: "badge ok" }, "Primary")
        : el("button", { type: "button", class: "secondary", "aria-label": `Make ${label} primary`, onclick: (event) => cardAct(event.currentTarget, "POST", `/v1/wallet/cards/${card.id}/primary`, `${label} is now primary.`) }, "Make primary"),
      el("button", { type: "button", class: "danger", "aria-label": `Remove ${label}`, onclick: (event) => cardAct(event.currentTarget, "DELETE", `/v1/wallet/cards/${card.id}`, `${label} was removed.`) }, "Remove"),
    );
  });
  byId("cards").replaceChildren(...items);
  byId("cards-empty").hidden = items.length > 0;
}

async function cardAct(button, method, path, done) {
  try {
    await busy(button, api(method, path));
    notice(done, "success");
    await cardsShow();
  } catch (error) {
    notice(error.message, "error");
  }
}

if (session.requireSignIn()) {
  formWire("ceiling-form", "/v1/wallet/spending-ceiling", (form) => ({ ceiling: amountOrNull(form.ceiling) }), (form) =>
    form.ceiling.value ? `Monthly ceiling set to ${money(form.ceiling.value)}.` : "No monthly ceiling.",
  );
  formWire("alert-form", "/v1/wallet/low-balance-alert", (form) => ({ threshold: amountOrNull(form.threshold) }), (form) =>
    form.threshold.value ? `You will be emailed when your balance falls to ${money(form.threshold.value)}.` : "Low-balance alert off.",
  );
  formWire(
    "auto-form",
    "/v1/wallet/auto-top-up",
    (form) => ({ threshold: amountOrNull(form.threshold), amount: amountOrNull(form.amount), monthlyCap: amountOrNull(form.monthlyCap) }),
    (form) => (form.threshold.value ? "Auto top-up saved." : "Auto top-up off."),
  );
  byId("auto-off").addEventListener("click", async (event) => {
    const form = byId("auto-form");
    formErrors(form, null);
    try {
      walletFill(await busy(event.currentTarget, api("PUT", "/v1/wallet/auto-top-up", { json: { threshold: null, amount: null, monthlyCap: null } })));
      notice("Auto top-up off.", "success");
    } catch (error) {
      formErrors(form, error);
    }
  });
  try {
    walletFill(await api("GET", "/v1/wallet"));
  } catch (error) {
    notice(error.message, "error");
  }
  cardsShow();
}
