// /wallet/top-up/<reference>: where a checkout sends the browser back; shows the top-up's
// outcome and follows a pending one (the hub's wallet.top_up_confirmed, and a read every
// few seconds) until it is settled.

import { api, session } from "./api.js";
import { connectHub } from "./hub.js";
import { balanceRefresh } from "./shell.js";
import { byId, money, notice, problemText, route } from "./ui.js";

const READ_EVERY_MS = 3000;
const TITLES = {
  confirmed: "Credit added",
  pending: "Waiting for the payment",
  failed: "The payment failed",
  cancelled: "The payment was cancelled",
  expired: "The checkout expired",
};

const { reference } = route();
const cameBack = new URLSearchParams(location.search).get("checkout");
let timer = null;

function show(view) {
  byId("outcome-title").textContent = TITLES[view.status] || view.status;
  let detail = view.message || "";
  if (view.status === "pending" && cameBack === "cancelled") detail = "You left the checkout before paying. Nothing was charged.";
  byId("outcome-detail").textContent = detail;
  byId("outcome-amount").textContent = money(view.amount, view.currency);
  byId("outcome-credited").textContent = view.creditedAmount === null ? "—" : money(view.creditedAmount, view.currency);
  byId("outcome-balance").textContent = money(view.balance, view.currency);
  byId("outcome-reference").textContent = view.reference;
  byId("outcome-facts").hidden = false;
  const checkout = byId("outcome-checkout");
  checkout.hidden = !(view.status === "pending" && view.checkoutUrl && /^https:/.test(view.checkoutUrl));
  if (!checkout.hidden) checkout.href = view.checkoutUrl;
  if (view.status === "confirmed") balanceRefresh();
}

async function read() {
  clearTimeout(timer);
  try {
    const view = await api("GET", `/v1/wallet/top-up/${encodeURIComponent(reference)}`);
    show(view);
    if (view.status === "pending") timer = setTimeout(read, READ_EVERY_MS);
  } catch (error) {
    byId("outcome-title").textContent = error.status === 404 ? "No such top-up" : "The top-up cannot be read";
    notice(problemText(error), "error");
  }
}

if (session.requireSignIn()) {
  read();
  connectHub((message) => {
    if (message.type === "wallet.top_up_confirmed" || message.type === "hub.connected") read();
  });
}
