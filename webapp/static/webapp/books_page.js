// One page of a book: its source image next to its translation (stacked on a phone),
// previous and next, why it failed and a retry, and approve / reject with a reason.

import { api, session, tokenGet } from "./api.js";
import { connectHub } from "./hub.js";
import { busy, byId, el, notice, problemText, route } from "./ui.js";

const { project_id: projectId, number } = route();
let page = null;
let imageShown = null;

async function imageShow(url) {
  if (!url || url === imageShown) return;
  const response = await fetch(url, { headers: { Authorization: `Bearer ${tokenGet()}` } });
  if (!response.ok) return;
  const image = byId("page-image");
  image.src = URL.createObjectURL(await response.blob());
  image.alt = `Page ${number} of the book as uploaded`;
  image.hidden = false;
  image.style.maxWidth = "100%";
  byId("page-image-wait").hidden = true;
  imageShown = url;
}

async function pageLoad() {
  const [project, listed] = await Promise.all([
    api("GET", `/v1/projects/${projectId}`),
    api("GET", `/v1/projects/${projectId}/pages`, { query: { page: number, pageSize: 1 } }),
  ]);
  const row = listed.results[0];
  page = await api("GET", `/v1/projects/${projectId}/pages/${row.id}`);
  const name = project.name || project.sourceFileName || "Untitled";
  byId("back-to-book").textContent = `Back to ${name}`;
  byId("back-to-book").href = `/books/${projectId}`;
  byId("page-title").textContent = `Page ${number} of ${name}`;
  document.title = `Page ${number} · Book translation`;
  byId("page-position").textContent = `${number} of ${listed.count}`;
  const previous = byId("page-previous");
  previous.hidden = number <= 1;
  previous.href = `/books/${projectId}/pages/${number - 1}`;
  const next = byId("page-next");
  next.hidden = number >= listed.count;
  next.href = `/books/${projectId}/pages/${number + 1}`;
  const states = { Pending: "Waiting to be translated", InProgress: "Being translated", Approved: "Translated", Failed: "Failed" };
  byId("page-state").textContent = states[page.status] || page.status;
  const failed = page.status === "Failed";
  byId("page-failure").hidden = !failed;
  byId("page-failure-reason").textContent = page.failureReason || "The engine gave no reason.";
  const review = page.review;
  const text = review?.translation || "";
  const translation = byId("page-translation");
  translation.lang = project.targetLanguageCode;
  translation.replaceChildren(
    ...(text
      ? text.split(/\n{2,}/).map((paragraph) => el("p", {}, paragraph))
      : [el("p", { class: "muted" }, failed ? "No translation: the page failed." : "Not translated yet.")]),
  );
  byId("page-review").hidden = !text || page.status === "InProgress";
  byId("page-approve").hidden = !(page.status === "Approved" || (failed && text));
  byId("reject-form").hidden = page.status !== "Approved";
  if (review?.reviewFlags?.length) notice(`This page needs a look: ${review.reviewFlags.join(" ")}`);
  await imageShow(page.imageUrl);
}

const hub = connectHub(
  (message) => {
    const data = message.data || {};
    if (message.type === "project.status_changed" && data.projectId === projectId) pageLoad().catch(() => null);
    if ((message.type === "job.succeeded" || message.type === "job.failed") && data.projectId === projectId) pageLoad().catch(() => null);
  },
  { onState: (state) => Object.assign(byId("hub-state"), { hidden: false, textContent: state }).setAttribute("data-state", state) },
);

if (session.requireSignIn()) {
  byId("page-retry").addEventListener("click", (event) =>
    busy(event.currentTarget, () => api("POST", `/v1/projects/${projectId}/retry`, { idempotent: true }))
      .then(() => {
        notice("The page is being translated again (with the book's other failed pages).", "success");
        return pageLoad();
      })
      .catch((problem) => notice(problemText(problem), "error")),
  );
  byId("page-approve").addEventListener("click", (event) =>
    busy(event.currentTarget, () => api("POST", `/v1/projects/${projectId}/pages/${page.id}/approve`))
      .then(() => {
        notice(`Page ${number} approved: its translation is kept.`, "success");
        return pageLoad();
      })
      .catch((problem) => notice(problemText(problem), "error")),
  );
  byId("reject-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const reason = byId("reject-reason").value.trim();
    busy(event.submitter, () => api("POST", `/v1/projects/${projectId}/pages/${page.id}/reject`, { json: reason ? { reason } : {} }))
      .then(() => {
        notice(`Page ${number} rejected: it will be translated again.`, "success");
        byId("reject-form").reset();
        return pageLoad();
      })
      .catch((problem) => notice(problemText(problem), "error"));
  });
  hub.subscribe(projectId);
  pageLoad().catch((problem) => notice(problemText(problem), "error"));
}
