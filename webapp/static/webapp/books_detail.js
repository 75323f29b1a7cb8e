// One book: its state live from the hub (the batch, pages translated, cost so far), its
// page grid, the failed pages with why, cancel / continue / retry, and every export
// format to make and download.

import { api, session, tokenGet } from "./api.js";
import { connectHub } from "./hub.js";
import { busy, byId, el, money, notice, problemText, route } from "./ui.js";

const { project_id: projectId } = route();
const WORKING = new Set(["Calibrating", "Processing", "PausedNeedsCredit", "PausedNeedsCapacity", "Cancelling"]);
const PAGE_STATES = { Pending: "waiting", InProgress: "translating", Approved: "translated", Failed: "failed" };

let formats = [];

function statusShow(view) {

  const progress = view.progress || {};
  byId("book-state").textContent = `${view.title} (${view.state})`;
  byId("book-detail").textContent = view.detail || "";
  byId("book-progress").max = Math.max(progress.totalPages || 0, 1);
  byId("book-progress").value = progress.translatedPages || 0;
  byId("book-translated").textContent = `${progress.translatedPages || 0} of ${progress.totalPages || 0} pages`;
  byId("book-failed").textContent = String(progress.failedPages || 0);
  const next = progress.nextBatchSize ? `next batch ${progress.nextBatchSize} pages` : "next batch: all remaining pages";
  const batches = `${progress.rung || 0} batches done`;
  byId("book-batch").textContent =
    view.phase === "done" ? batches : `${view.jobId ? "a batch is running; " : ""}${batches}, ${next}`;
  byId("book-credit").hidden = view.nextAction !== "add_credit";
  byId("book-retry").hidden = view.nextAction !== "retry" || Boolean(view.jobId);
  byId("book-cancel").hidden = !WORKING.has(view.state) || view.state === "Cancelling";
  byId("book-continue").hidden = view.state !== "Cancelled";
  const done = view.phase === "done";
  byId("downloads-wait").hidden = done;
  byId("downloads").hidden = !done;
}

async function projectLoad() {
  const project = await api("GET", `/v1/projects/${projectId}`);
  byId("book-title").textContent = project.name || project.sourceFileName || "Untitled";
  document.title = `${byId("book-title").textContent} · Book translation`;
  byId("book-language").textContent = project.targetLanguageCode;
  const cost = project.pages.reduce((sum, page) => sum + Number(page.costUsd || 0), 0);
  byId("book-cost").textContent = money(cost);
  byId("page-grid").replaceChildren(
    ...project.pages.map((page) =>
      el(
        "li",
        { dataset: { status: page.status } },
        el("a", { href: `/books/${projectId}/pages/${page.index}` }, `Page ${page.index}: ${PAGE_STATES[page.status] || page.status}`),
      ),
    ),
  );
  const failed = project.pages.filter((page) => page.status === "Failed");
  byId("failed-section").hidden = failed.length === 0;
  byId("failed-list").replaceChildren(
    ...failed.map((page) =>
      el(
        "li",
        {},
        el("a", { href: `/books/${projectId}/pages/${page.index}` }, `Page ${page.index}`),
        el("span", {}, page.failureReason || page.failureCode || "It failed."),
      ),
    ),
  );
}

async function exportsLoad() {
  const files = await api("GET", `/v1/projects/${projectId}/exports`);
  const rows = formats.map((format) => {
    const file = files.find((entry) => entry.format === format && !entry.bilingual && entry.layout !== "original");
    let what = "Not made yet";
    let action = el("button", { type: "button", class: "secondary", onclick: (event) => exportMake(event.currentTarget, format) }, `Make ${format}`);
    if (file && file.status === "pending") {
      what = "Being made…";
      action = el("span", { class: "muted" }, "—");
    } else if (file && file.status === "ready") {
      what = `${file.saveAsName}${file.sizeBytes ? ` (${Math.ceil(file.sizeBytes / 1024)} KB)` : ""}`;
      action = el("button", { type: "button", onclick: (event) => busy(event.currentTarget, () => download(file)) }, `Download ${format}`);
    } else if (file && file.status === "failed") {
      what = "It could not be made; make it again.";
    }
    return el("tr", {}, el("td", { "data-label": "Format" }, format), el("td", { "data-label": "File" }, what), el("td", { "data-label": "Action" }, action));
  });
  byId("downloads").querySelector("tbody").replaceChildren(...rows);
}

function exportMake(button, format) {
  busy(button, () => api("POST", `/v1/projects/${projectId}/export`, { json: { format }, idempotent: true }))
    .then(() => {
      notice(`The ${format} file is being made; its download appears here when it is ready.`);
      return exportsLoad();
    })
    .catch((problem) => notice(problemText(problem), "error"));
}

// A download needs the JWT, so it is fetched and handed to the browser as a file.
async function download(file) {
  if (!/^\/v1\/projects\/[0-9a-f-]+\/exports\/[^/]+$/.test(String(file.url))) return;
  try {
    const response = await fetch(file.url, { headers: { Authorization: `Bearer ${tokenGet()}` } });
    if (!response.ok) throw new Error(`The download failed (${response.status}); make the file again.`);
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: file.saveAsName || file.fileName });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  } catch (error) {
    notice(error.message, "error");
  }
}

function act(button, verb, done) {
  busy(button, () => api("POST", `/v1/projects/${projectId}/${verb}`, { idempotent: verb !== "cancel" }))
    .then(() => {
      notice(done, "success");
      hub.subscribe(projectId);
      return projectLoad();
    })
    .catch((problem) => notice(problemText(problem), "error"));
}

const hub = connectHub(
  (message) => {
    const data = message.data || {};
    if ((message.type === "project.status" || message.type === "project.status_changed") && data.projectId === projectId) {
      statusShow(data);
      projectLoad().catch(() => null);
    } else if ((message.type === "job.succeeded" || message.type === "job.failed") && data.projectId === projectId) {
      hub.subscribe(projectId);
    } else if (message.type === "export.ready" && String(data.url || "").includes(projectId)) {
      exportsLoad().catch(() => null);
    } else if (message.type === "hub.connected") {
      exportsLoad().catch(() => null);
    } else if (message.type === "error" && data.projectId === projectId) {
      notice(data.detail || "This book cannot be found.", "error");
    }
  },
  { onState: (state) => Object.assign(byId("hub-state"), { hidden: false, textContent: state }).setAttribute("data-state", state) },
);

if (session.requireSignIn()) {
  byId("book-cancel").addEventListener("click", (event) => act(event.currentTarget, "cancel", "The book is cancelled."));
  byId("book-retry").addEventListener("click", (event) => act(event.currentTarget, "retry", "The failed pages are being retried."));
  byId("book-continue").addEventListener("click", (event) => act(event.currentTarget, "process", "The book goes on."));
  Promise.all([api("GET", "/v1/meta"), projectLoad()])
    .then(([meta]) => {
      formats = meta.exportFormats.filter((format) => format !== "All");
      hub.subscribe(projectId);
      return exportsLoad();
    })
    .catch((problem) => notice(problemText(problem), "error"));
}
