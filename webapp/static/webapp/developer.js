// /settings/developer: API keys. Create one (name, scopes, expiry), see its secret once
// with a copy button, list them, revoke one (at once: the hub closes its connections too).

import { api, session } from "./api.js";
import { busy, byId, copyText, dateTime, el, formErrors, notice } from "./ui.js";

const SCOPE_NAMES = { "projects:write": "read and write", "projects:read": "read only", approve: "approve" };

function keyState(key) {
  if (key.revokedUtc) return el("span", { class: "badge off" }, "Revoked");
  if (key.expiresUtc && new Date(key.expiresUtc) <= new Date()) return el("span", { class: "badge off" }, "Expired");
  return el("span", { class: "badge ok" }, "Active");
}

async function keysShow() {
  const keys = await api("GET", "/v1/api-keys");
  const rows = keys.map((key) => {
    const usable = !key.revokedUtc && !(key.expiresUtc && new Date(key.expiresUtc) <= new Date());
    const revoke = usable
      ? el("button", { type: "button", class: "danger", "aria-label": `Revoke ${key.name}`, onclick: (event) => keyRevoke(key, event.currentTarget) }, "Revoke")
      : null;
    return el(
      "tr",
      { dataset: { keyId: key.id } },
      el("td", { "data-label": "Name" }, key.name),
      el("td", { "data-label": "Key" }, el("code", {}, `${key.prefix}…`)),
      el("td", { "data-label": "Scopes" }, key.scopes.map((scope) => SCOPE_NAMES[scope] || scope).join(", ")),
      el("td", { "data-label": "Created" }, dateTime(key.createdUtc)),
      el("td", { "data-label": "Last used" }, key.lastUsedUtc ? dateTime(key.lastUsedUtc) : "Never"),
      el("td", { "data-label": "Expires" }, key.expiresUtc ? dateTime(key.expiresUtc) : "Never"),
      el("td", { "data-label": "State" }, el("span", { class: "actions" }, keyState(key), revoke)),
    );
  });
  const table = byId("keys");
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = rows.length === 0;
  byId("keys-empty").hidden = rows.length > 0;
}

async function keyRevoke(key, button) {
  if (!window.confirm(`Revoke the key "${key.name}"? Programs using it stop working at once.`)) return;
  try {
    await busy(button, api("DELETE", `/v1/api-keys/${encodeURIComponent(key.id)}`));
    notice(`The key "${key.name}" is revoked.`, "success");
    await keysShow();
    byId("keys-title").focus?.();
  } catch (error) {
    notice(error.message, "error");
  }
}

function secretShow(created) {
  const panel = byId("secret-panel");
  byId("secret-value").textContent = created.secret;
  byId("secret-example").textContent = `curl -H "Authorization: Bearer ${created.secret}" ${location.origin}/v1/wallet`;
  panel.hidden = false;
  panel.focus();
}

function createWire() {
  const form = byId("key-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    const scopes = [...form.querySelectorAll("input[name=scopes]:checked")].map((box) => box.value);
    const body = { name: form.name.value.trim(), scopes };
    if (form.expiresInDays.value) body.expiresInDays = Number(form.expiresInDays.value);
    try {
      const created = await busy(form.querySelector("button[type=submit]"), api("POST", "/v1/api-keys", { json: body }));
      form.reset();
      secretShow(created);
      notice(`The key "${created.name}" is ready. Copy its secret now.`, "success");
      await keysShow();
    } catch (error) {
      formErrors(form, error);
    }
  });
  byId("secret-copy").addEventListener("click", () => copyText(byId("secret-value").textContent, "The key was copied"));
  byId("secret-done").addEventListener("click", () => {
    byId("secret-value").textContent = "";
    byId("secret-example").textContent = "";
    byId("secret-panel").hidden = true;
    notice("");
    byId("key-name").focus();
  });
}

if (session.requireSignIn()) {
  byId("keys-title").tabIndex = -1;
  createWire();
  keysShow().catch((error) => notice(error.message, "error"));
}
