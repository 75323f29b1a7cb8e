// What every page shares: the header (signed-in links, the balance, signing out), the
// current page marked in the navigation, and the notice a previous page left.

import { api, session } from "./api.js";
import { byId, money, notice } from "./ui.js";

/** Reads the balance again into the header (after a top-up, a redeem, a hub event). */
export async function balanceRefresh() {
  const slot = byId("nav-balance");
  if (!slot || !session.signedIn()) return null;
  try {
    const wallet = await api("GET", "/v1/wallet");
    slot.textContent = wallet.unlimited ? "(unlimited)" : `(${money(wallet.balanceUsd, wallet.currency)})`;
    return wallet;
  } catch {
    slot.textContent = "";
    return null;
  }
}

/** Leaves a sentence for the next page to show (a redirect after saving, signing out). */
export function noticeCarry(text, kind = "info") {
  sessionStorage.setItem("bts.notice", JSON.stringify({ text, kind }));
}

function navMark() {
  const section = location.pathname.split("/")[1] || "";
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === section) link.setAttribute("aria-current", "page");
  }
}

function noticeShow() {
  const carried = sessionStorage.getItem("bts.notice");
  if (!carried) return;
  sessionStorage.removeItem("bts.notice");
  try {
    const { text, kind } = JSON.parse(carried);
    notice(text, kind);
  } catch {
    // A value this page did not write: nothing to show.
  }
}

byId("sign-out").addEventListener("click", () => {
  noticeCarry("You are signed out.", "success");
  session.signOut();
});
navMark();
noticeShow();
balanceRefresh();
