// /settings: the profile (name, email), preferences (the default target language, time
// zone, list size, notifications) and the password.

import { api, session } from "./api.js";
import { busy, byId, el, formErrors, notice } from "./ui.js";

let me = null;

function profileFill(profile) {
  me = profile;
  const form = byId("profile-form");
  form.displayName.value = profile.displayName;
  form.email.value = profile.email;
  form.currentPassword.value = "";
  byId("profile-password-field").hidden = true;
  byId("password-section").hidden = !profile.hasPassword;
  const preferences = profile.preferences;
  const prefs = byId("preferences-form");
  prefs.defaultTargetLanguage.value = preferences.defaultTargetLanguage || "";
  // The API keeps a default once set (null leaves it unchanged): no "none" after that.
  prefs.defaultTargetLanguage.querySelector("option[value='']").hidden = Boolean(preferences.defaultTargetLanguage);
  prefs.timeZone.value = preferences.timeZone;
  prefs.projectsPageSize.value = preferences.projectsPageSize;
  prefs.emailNotifications.checked = preferences.emailNotifications;
  prefs.inAppNotifications.checked = preferences.inAppNotifications;
}

async function languagesFill() {
  const languages = await api("GET", "/v1/languages");
  const available = new Set(languages.engine.targets);
  const select = byId("preferences-form").defaultTargetLanguage;
  select.append(
    ...languages.targets
      .filter((language) => available.has(language.code))
      .map((language) => el("option", { value: language.code }, `${language.name} (${language.code})`)),
  );
}

function timeZonesFill() {
  const zones = Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [];
  byId("time-zones").append(...zones.map((zone) => el("option", { value: zone })));
}

function profileWire() {
  const form = byId("profile-form");
  form.email.addEventListener("input", () => {
    byId("profile-password-field").hidden = !(me?.hasPassword && form.email.value.trim() !== me.email);
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    const body = { displayName: form.displayName.value.trim() };
    if (form.email.value.trim() !== me.email) {
      body.email = form.email.value.trim();
      if (me.hasPassword) body.currentPassword = form.currentPassword.value;
    }
    try {
      profileFill(await busy(form.querySelector("button[type=submit]"), api("PUT", "/v1/me", { json: body })));
      session.current({ fresh: true });
      notice("Profile saved.", "success");
    } catch (error) {
      formErrors(form, error);
    }
  });
}

function preferencesWire() {
  const form = byId("preferences-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    const body = {
      timeZone: form.timeZone.value.trim(),
      projectsPageSize: Number(form.projectsPageSize.value),
      emailNotifications: form.emailNotifications.checked,
      inAppNotifications: form.inAppNotifications.checked,
    };
    if (form.defaultTargetLanguage.value) body.defaultTargetLanguage = form.defaultTargetLanguage.value;
    try {
      profileFill(await busy(form.querySelector("button[type=submit]"), api("PUT", "/v1/me/preferences", { json: body })));
      notice("Preferences saved.", "success");
    } catch (error) {
      formErrors(form, error);
    }
  });
}

function passwordWire() {
  const form = byId("password-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors(form, null);
    if (!form.reportValidity()) return;
    try {
      const answer = await busy(
        form.querySelector("button[type=submit]"),
        api("POST", "/v1/me/password", { json: { currentPassword: form.currentPassword.value, newPassword: form.newPassword.value } }),
      );
      session.begin(answer.token);
      form.reset();
      notice("Password changed. Other devices are signed out.", "success");
    } catch (error) {
      formErrors(form, error);
    }
  });
}

if (session.requireSignIn()) {
  profileWire();
  preferencesWire();
  passwordWire();
  timeZonesFill();
  try {
    await languagesFill();
    profileFill(await session.current());
  } catch (error) {
    notice(error.message, "error");
  }
}
