// /signin: email and password (or an external provider); then back to `next`.

import { nextAddress, session } from "./api.js";
import { providerReturn, providersWire } from "./providers.js";
import { busy, byId, formErrors, notice } from "./ui.js";

const form = byId("signin-form");
const params = new URLSearchParams(location.search);

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  formErrors(form, null);
  notice("");
  if (!form.reportValidity()) return;
  try {
    await busy(form.querySelector("button[type=submit]"), session.signIn(form.email.value.trim(), form.password.value));
    location.replace(nextAddress());
  } catch (error) {
    form.password.value = "";
    formErrors(form, error);
  }
});

byId("signup-link").search = params.has("next") ? `?next=${encodeURIComponent(nextAddress())}` : "";
providersWire();
const took = await providerReturn(form);
if (!took) {
  if (session.signedIn() && !params.has("ended")) location.replace(nextAddress());
  else if (params.has("ended")) notice("Your sign-in has ended; please sign in again.", "info");
  form.email.focus();
}
