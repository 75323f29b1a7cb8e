// /signup: a new account with a password (or an external provider), signed in at once.

import { nextAddress, session } from "./api.js";
import { noticeCarry } from "./shell.js";
import { providersWire } from "./providers.js";
import { busy, byId, formErrors, notice } from "./ui.js";

const form = byId("signup-form");

if (session.signedIn()) location.replace(nextAddress());

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  formErrors(form, null);
  notice("");
  if (!form.reportValidity()) return;
  try {
    await busy(
      form.querySelector("button[type=submit]"),
      session.register({ displayName: form.displayName.value.trim(), email: form.email.value.trim(), password: form.password.value }),
    );
    noticeCarry("Welcome! Your account is ready.", "success");
    location.replace(nextAddress());
  } catch (error) {
    formErrors(form, error);
  }
});

const params = new URLSearchParams(location.search);
byId("signin-link").search = params.has("next") ? `?next=${encodeURIComponent(nextAddress())}` : "";
providersWire();
form.displayName.focus();
