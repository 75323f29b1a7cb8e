// The home page: what the service does, its languages (GET /v1/languages) and a book's
// price before signing up (POST /v1/anonymous-estimate, by choosing or dropping a file).
// Someone signed in goes straight to their books.

import { api, session } from "./api.js";
import { busy, byId, dropZone, el, formErrors, money, notice } from "./ui.js";

// The estimate's key, for the books page to adopt the file without uploading it again.
const ESTIMATE_KEY = "bts.estimate";

async function languagesShow() {
  try {
    const languages = await api("GET", "/v1/languages");
    const available = new Set(languages.engine.targets);
    byId("languages").replaceChildren(
      ...languages.targets.filter((language) => available.has(language.code)).map((language) => el("li", {}, language.name)),
    );
  } catch {
    byId("languages").replaceChildren(el("li", { class: "muted" }, "The list of languages cannot be read just now."));
  }
}

function estimateShow(estimate) {
  const cost = estimate.bookCost;
  byId("estimate-name").textContent = estimate.fileName;
  byId("estimate-pages").textContent = String(estimate.pageCount);
  byId("estimate-words").textContent = estimate.wordEstimate.toLocaleString();
  byId("estimate-expected").textContent = money(cost.expectedUsd, cost.currency);
  byId("estimate-max").textContent = cost.maxUsd === null ? "—" : money(cost.maxUsd, cost.currency);
  byId("estimate-per-page").textContent = estimate.pageCount ? money(Number(cost.expectedUsd) / estimate.pageCount, cost.currency) : "—";
  byId("estimate-note").textContent = estimate.hasTextLayer
    ? "The price is predicted from the words on its pages; the first page translated measures it."
    : "The pages are images: their words are read when they are translated, so the price is a first guess.";
  byId("estimate").hidden = false;
  sessionStorage.setItem(ESTIMATE_KEY, JSON.stringify({ key: estimate.anonymousUploadKey, fileName: estimate.fileName, expiresUtc: estimate.expiresUtc }));
}

async function estimate(form, file) {
  formErrors(form, null);
  notice("");
  const body = new FormData();
  body.append("file", file);
  try {
    notice(`Counting the pages of ${file.name}…`);
    const answer = await busy(form.querySelector("button[type=submit]"), api("POST", "/v1/anonymous-estimate", { body }));
    notice("");
    estimateShow(answer);
    byId("estimate-name").tabIndex = -1;
    byId("estimate-name").focus();
  } catch (error) {
    formErrors(form, error);
  }
}

function estimateWire() {
  const form = byId("estimate-form");
  const zone = byId("drop-zone");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    estimate(form, form.file.files[0]);
  });
  dropZone(zone, (files) => {
    if (files[0]) estimate(form, files[0]);
  });
}

if (session.signedIn()) {
  location.replace("/books");
} else {
  languagesShow();
  estimateWire();
}
