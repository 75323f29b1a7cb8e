// The books page: the person's books (paged, each with its state and progress from the
// hub), and a new book: upload, price (the whole book's bookCost and the first batch's
// quote) before anything is charged, then create -> normalize -> process.

import { api, session } from "./api.js";
import { connectHub } from "./hub.js";
import { busy, byId, dropZone, el, money, notice, problemText } from "./ui.js";

const PAGE_SIZE = 10;
let listPage = 1;
let draft = null; // the project made for the price shown, until it is started or discarded
const rows = new Map(); // projectId -> {state, bar}

function statusShow(status) {
  const row = rows.get(status.projectId);
  if (!row) return;
  const progress = status.progress || {};
  row.state.textContent = `${status.title} (${status.state})`;
  row.bar.max = Math.max(progress.totalPages || 0, 1);
  row.bar.value = progress.translatedPages || 0;
  row.bar.textContent = `${progress.translatedPages || 0} of ${progress.totalPages || 0}`;
  row.bar.setAttribute("aria-label", `${progress.translatedPages || 0} of ${progress.totalPages || 0} pages translated`);
}

const hub = connectHub(
  (message) => {
    if (message.type === "project.status" || message.type === "project.status_changed") statusShow(message.data);
    if (message.type === "job.succeeded" || message.type === "job.failed") hub.subscribe(message.data.projectId);
  },
  { onState: (state) => Object.assign(byId("hub-state"), { hidden: false, textContent: state }).setAttribute("data-state", state) },
);

async function listLoad() {
  const answer = await api("GET", "/v1/projects", { query: { page: listPage, pageSize: PAGE_SIZE } });
  for (const projectId of rows.keys()) hub.unsubscribe(projectId);
  rows.clear();
  const items = answer.results.map((project) => {
    const state = el("span", { class: "muted" }, project.status);
    const bar = el("progress", { max: 1, value: 0 });
    rows.set(project.id, { state, bar });
    return el(
      "li",
      { dataset: { projectId: project.id } },
      el("a", { href: `/books/${project.id}` }, project.name || project.sourceFileName || "Untitled"),
      el("span", {}, `${project.pageCount} pages → ${project.targetLanguageCode}`),
      state,
      bar,
    );
  });
  byId("book-list").replaceChildren(...items);
  byId("books-empty").hidden = answer.count > 0;
  const last = Math.max(1, Math.ceil(answer.count / PAGE_SIZE));
  byId("book-pages").hidden = last === 1;
  byId("books-position").textContent = `Page ${listPage} of ${last}`;
  byId("books-previous").disabled = listPage === 1;
  byId("books-next").disabled = listPage >= last;
  for (const projectId of rows.keys()) hub.subscribe(projectId);
}

async function languagesLoad() {
  const [languages, me] = await Promise.all([api("GET", "/v1/languages"), session.current()]);
  const engine = new Set(languages.engine?.targets || []);
  const preferred = me?.preferences?.defaultTargetLanguage || "";
  const options = languages.targets
    .filter((language) => !engine.size || engine.has(language.code))
    .map((language) => el("option", { value: language.code }, `${language.name} (${language.code})`));
  const select = byId("book-language");
  select.replaceChildren(...options);
  if (preferred) select.value = preferred;
}

async function quoteShow() {
  const quote = await api("GET", `/v1/projects/${draft.id}/batch-quote`);
  const cost = quote.bookCost || draft.bookCost || {};
  byId("quote-name").textContent = draft.name || draft.sourceFileName;
  byId("quote-pages").textContent = String(draft.pageCount);
  byId("quote-expected").textContent = money(cost.expectedUsd, cost.currency);
  byId("quote-max").textContent = cost.maxUsd === null || cost.maxUsd === undefined ? "—" : money(cost.maxUsd, cost.currency);
  byId("quote-balance").textContent = quote.unlimited ? "Unlimited" : money(quote.spendableUsd);
  // Before normalize no page is waiting yet (nothing_pending): that does not stop a start.
  const blocked = !quote.canStart && quote.blockedOn !== "nothing_pending";
  byId("quote-explanation").textContent = blocked ? quote.explanation || "" : "";
  byId("quote-short").hidden = !(blocked && quote.blockedOn === "credit");
  byId("quote-start").disabled = blocked;
  byId("quote").hidden = false;
  byId("quote-title").focus?.();
}

async function priceAsk(file) {
  if (draft) await api("DELETE", `/v1/projects/${draft.id}`).catch(() => null);
  draft = null;
  byId("quote").hidden = true;
  notice(`Reading ${file.name}…`);
  const body = new FormData();
  body.append("file", file);
  const upload = await api("POST", "/v1/uploads", { body });
  draft = await api("POST", "/v1/projects", {
    json: { uploadKey: upload.uploadKey, sourceSizeBytes: upload.sizeBytes, targetLanguageCode: byId("book-language").value },
    idempotent: true,
  });
  notice("");
  await Promise.all([quoteShow(), listLoad()]);
}

async function start() {
  const project = draft;
  await api("POST", `/v1/projects/${project.id}/normalize`);
  try {
    await api("POST", `/v1/projects/${project.id}/process`, { idempotent: true });
  } catch (problem) {
    if (problem.code === "insufficient_credit") {
      byId("quote-short").hidden = false;
      notice(`${problemText(problem)} Add credit in your wallet (link below the price).`, "error");
      return;
    }
    throw problem;
  }
  draft = null;
  location.assign(`/books/${project.id}`);
}

function fileChosen(file) {
  if (!file) return;
  busy(byId("book-price"), () => priceAsk(file)).catch((problem) => notice(problemText(problem), "error"));
}

if (session.requireSignIn()) {
  const zone = byId("drop-zone");
  dropZone(zone, (files) => {
    if (files.length !== 1) notice("Drop one file: a PDF, an image, or a zip of images.", "error");
    else fileChosen(files[0]);
  });
  byId("new-book").addEventListener("submit", (event) => {
    event.preventDefault();
    const file = byId("book-file").files[0];
    if (!file) notice("Choose a file first.", "error");
    else fileChosen(file);
  });
  byId("book-language").addEventListener("change", () => {
    if (!draft) return;
    api("PATCH", `/v1/projects/${draft.id}`, { json: { targetLanguageCode: byId("book-language").value } })
      .then((project) => {
        draft = project;
        return quoteShow();
      })
      .catch((problem) => notice(problemText(problem), "error"));
  });
  byId("quote-start").addEventListener("click", (event) =>
    busy(event.currentTarget, start).catch((problem) => notice(problemText(problem), "error")),
  );
  byId("quote-discard").addEventListener("click", async () => {
    if (draft) await api("DELETE", `/v1/projects/${draft.id}`).catch(() => null);
    draft = null;
    byId("quote").hidden = true;
    byId("new-book").reset();
  });
  byId("books-previous").addEventListener("click", () => {
    listPage = Math.max(1, listPage - 1);
    listLoad().catch((problem) => notice(problemText(problem), "error"));
  });
  byId("books-next").addEventListener("click", () => {
    listPage += 1;
    listLoad().catch((problem) => notice(problemText(problem), "error"));
  });
  Promise.all([languagesLoad(), listLoad()]).catch((problem) => notice(problemText(problem), "error"));
}
