// Signing in with an external identity provider (OpenID Connect), without any of the
// provider's scripts: the browser goes to the provider's authorization address for an ID
// token (response_type=id_token, returned in the address's fragment to /signin), and the
// sign-in page hands it to POST /v1/auth/oauth/{provider} with the nonce it sent.

import { api, nextAddress, session } from "./api.js";
import { byId, formErrors, notice, problemText } from "./ui.js";

const PENDING_KEY = "bts.oidc";

function providersConfig() {
  const data = byId("providers-config");
  return data ? JSON.parse(data.textContent) : [];
}

function randomToken() {
  return Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Wires the "Continue with ..." buttons of the page. */
export function providersWire() {
  const providers = new Map(providersConfig().map((provider) => [provider.name, provider]));
  for (const button of document.querySelectorAll("[data-provider]")) {
    const provider = providers.get(button.dataset.provider);
    if (!provider) continue;
    button.addEventListener("click", () => {
      const state = randomToken();
      const nonce = randomToken();
      sessionStorage.setItem(PENDING_KEY, JSON.stringify({ provider: provider.name, state, nonce, next: nextAddress() }));
      const address = new URL(provider.authorizeUrl);
      address.search = new URLSearchParams({
        client_id: provider.clientId,
        response_type: "id_token",
        response_mode: "fragment",
        scope: "openid email profile",
        redirect_uri: `${location.origin}/signin`,
        state,
        nonce,
      }).toString();
      location.assign(address.toString());
    });
  }
}

/** On /signin: finishes a provider's sign-in when the browser comes back with an ID
 * token (or an error) in the fragment. Answers true when it took over the page. */
export async function providerReturn(form) {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (!fragment.has("id_token") && !fragment.has("error")) return false;
  history.replaceState(null, "", location.pathname + location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  if (!pending || pending.state !== fragment.get("state")) {
    notice("That sign-in did not start here; try again.", "error");
    return true;
  }
  if (fragment.has("error")) {
    notice(`The provider did not sign you in (${fragment.get("error_description") || fragment.get("error")}).`, "error");
    return true;
  }
  try {
    notice("Signing you in…");
    const answer = await api("POST", `/v1/auth/oauth/${encodeURIComponent(pending.provider)}`, {
      json: { idToken: fragment.get("id_token"), nonce: pending.nonce },
    });
    session.begin(answer.token);
    location.replace(pending.next || "/books");
  } catch (error) {
    if (form) formErrors(form, null);
    notice(problemText(error), "error");
  }
  return true;
}
