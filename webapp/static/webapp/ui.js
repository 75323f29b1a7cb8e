// Small DOM helpers every page uses. Data from the API reaches the page only as text
// (textContent, attributes): never as HTML.

/** Builds an element: `attrs` become attributes (`class`, `for`, aria-*, data-*), a
 * function under an `on...` name an event listener, `dataset` data attributes; children
 * are nodes or text (arrays are flattened; null and false are skipped). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2).toLowerCase(), value);
    else if (name === "value" && "value" in node) node.value = value;
    else if (name === "checked" && "checked" in node) node.checked = Boolean(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...nodes(children));
  return node;
}

function nodes(children) {
  const result = [];
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    result.push(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return result;
}

/** The element with this id (a page's own fixed nodes). */
export function byId(id) {
  return document.getElementById(id);
}

/** Shows a sentence in the live region under the header (read out by screen readers);
 * `kind` is "info", "success" or "error". An empty text empties it. (The region is never
 * hidden: a screen reader announces only changes to a region it already knows.) */
export function notice(text, kind = "info") {
  const region = byId("notice");
  region.dataset.kind = kind;
  region.replaceChildren(...(text ? [text] : []));
}

/** An amount as money in the person's locale: "$12.50". Amounts come from the API as
 * numbers or decimal strings; this only formats them. */
export function money(amount, currency = "USD") {
  const value = Number(amount);
  if (amount === null || amount === undefined || amount === "" || !Number.isFinite(value)) return "—";
  const digits = Math.abs(value) > 0 && Math.abs(value) < 0.01 ? 4 : 2;
  return new Intl.NumberFormat(undefined, {
    style: "currency",
    currency: currency || "USD",
    minimumFractionDigits: 2,
    maximumFractionDigits: digits,
  }).format(value);
}

/** A card's brand as people write it ("visa" -> "Visa", "amex" -> "American Express"). */
export function cardBrand(brand) {
  const names = { amex: "American Express", diners: "Diners Club", jcb: "JCB", unionpay: "UnionPay", mastercard: "Mastercard" };
  if (!brand) return "Card";
  return names[brand] || brand.charAt(0).toUpperCase() + brand.slice(1);
}

/** A date-time from the API as the person reads dates. */
export function dateTime(iso) {
  if (!iso) return "—";
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? String(iso) : when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** One human sentence for a failure: the problem's detail, or what to do. */
export function problemText(problem) {
  if (!problem) return "Something went wrong.";
  if (problem.name === "AbortError") return "";
  if (problem.status === 0) return `${problem.title} ${problem.detail}`.trim();
  if (problem.status === 429) {
    const wait = problem.retryAfter ? ` Try again in ${Math.ceil(problem.retryAfter)} seconds.` : " Try again shortly.";
    return `Too many requests.${wait}`;
  }
  if (problem.status >= 500) return problem.detail || "The service had a problem; try again in a moment.";
  const fields = Object.keys(problem.fields || {});
  if (fields.length && problem.code === "validation_error") return "Please correct the fields marked below.";
  return problem.detail || problem.title || problem.message || "Something went wrong.";
}

/** Shows a problem's field errors next to the form's fields (matched by the control's
 * name, as the API spells it), marks them invalid and focuses the first; what matches no
 * field goes to the notice with the problem's sentence. A problem about no field in
 * particular (a code refused) is shown next to the control named `near`, when given.
 * Clears earlier errors first. */
export function formErrors(form, problem, { near } = {}) {
  for (const old of form.querySelectorAll(".field-error")) old.remove();
  for (const control of form.querySelectorAll("[aria-invalid]")) {
    control.removeAttribute("aria-invalid");
    const described = (control.getAttribute("aria-describedby") || "").split(" ").filter((id) => !id.endsWith("-error"));
    if (described.length) control.setAttribute("aria-describedby", described.join(" "));
    else control.removeAttribute("aria-describedby");
  }
  if (!problem) return;
  const fields = problem.fields || {};
  if (near && !Object.keys(fields).length && problem.status >= 400 && problem.status < 500 && problem.status !== 429) {
    problem = Object.assign(Object.create(Object.getPrototypeOf(problem)), problem, { fields: { [near]: [problemText(problem)] } });
  }
  const unplaced = [];
  let first = null;
  for (const [field, messages] of Object.entries(problem.fields || {})) {
    const control = form.elements.namedItem(field);
    const text = [].concat(messages).join(" ");
    if (!control || !(control instanceof Element)) {
      unplaced.push(text);
      continue;
    }
    const id = `${form.id || "form"}-${field.replace(/[^\w-]/g, "_")}-error`;
    const message = el("p", { class: "field-error", id }, text);
    (control.closest(".field") || control.parentElement).append(message);
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", [control.getAttribute("aria-describedby"), id].filter(Boolean).join(" "));
    first = first || control;
  }
  notice([problemText(problem), ...unplaced].filter(Boolean).join(" "), "error");
  first?.focus();
}

/** Runs `promise` (or the function giving it) with `button` disabled and marked busy;
 * answers its result. */
export async function busy(button, promise) {
  const label = button?.textContent;
  if (button) {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
  }
  try {
    return await (typeof promise === "function" ? promise() : promise);
  } finally {
    if (button) {
      button.disabled = false;
      button.removeAttribute("aria-busy");
      button.textContent = label;
    }
  }
}

/** The route's values the server put in the page (a book's id, a page number, a
 * top-up reference), by the names of webapp/urls.py. */
export function route() {
  const data = byId("route");
  return data ? JSON.parse(data.textContent) : {};
}

/** Whether this is a development deployment (manual top-ups allowed). */
export function development() {
  return document.body.dataset.development === "true";
}

/** Copies text to the clipboard; says so in the notice. */
export async function copyText(text, what = "Copied") {
  try {
    await navigator.clipboard.writeText(text);
    notice(`${what} to the clipboard.`, "success");
  } catch {
    notice("The browser did not allow copying; select the text and copy it.", "error");
  }
}

/** Makes `zone` take dropped files: marked while a file is over it, then `onFiles(files)`. */
export function dropZone(zone, onFiles) {
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    onFiles(event.dataTransfer?.files || []);
  });
}
