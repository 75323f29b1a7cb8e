// The app's one door to the API: every call goes through `api`, with the signed-in
// person's JWT, problem+json answers as `ApiProblem`, and an Idempotency-Key on billable
// calls. `session` signs in and out and keeps who is signed in.

const TOKEN_KEY = "bts.token";
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const RETRY_AT_MOST = 2;
const RETRY_WAIT_LONGEST_S = 10;

/** A problem+json answer (or a failure with no body) as an exception. */
export class ApiProblem extends Error {
  constructor(status, problem = {}, retryAfter = null) {
    super(problem.detail || problem.title || (status ? `The server answered ${status}.` : "The service cannot be reached."));
    this.name = "ApiProblem";
    this.status = status;
    this.code = problem.code || (status ? `http_${status}` : "network_error");
    this.title = problem.title || "";
    this.detail = problem.detail || "";
    this.type = problem.type || "";
    // Validation problems: field name (as the API spells it) -> messages.
    this.fields = problem.errors || {};
    this.unknownFields = problem.unknown_fields || problem.unknownFields || [];
    this.retryAfter = retryAfter;
  }
}

// Set once a call met the ended sign-in and sent the page to sign-in (see `api`).
let leavingForSignIn = false;

export function tokenGet() {
  return localStorage.getItem(TOKEN_KEY);
}

function tokenSet(token) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
  document.documentElement.classList.toggle("signed-in", Boolean(token));
}

function requestKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function retryAfterSeconds(response) {
  const value = response.headers.get("Retry-After");
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

function sleep(seconds, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

function isJson(response) {
  return /^application\/([\w.+-]*\+)?json\b/.test(response.headers.get("Content-Type") || "");
}

/** Where to come back to after signing in: this page. */
function here() {
  return location.pathname + location.search + location.hash;
}

/**
 * One API call. `json` is sent as JSON, `body` as is (a FormData for uploads), `query` as
 * the query string. Answers the parsed JSON (null for 204), or the Response itself when it
 * is not JSON (a download) or `raw` is set. A safe call, or one made `idempotent` (a fresh
 * Idempotency-Key, reused by its own retries), is retried when the service is briefly
 * away or asks to wait (Retry-After).
 */
export async function api(method, path, { json, body, query, idempotent = false, signal, raw = false, headers: extra } = {}) {
  const headers = { Accept: "application/json", ...extra };
  const token = tokenGet();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (idempotent) headers["Idempotency-Key"] = requestKey();
  let payload = body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(json);
  }
  let address = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
    }
    if ([...params].length) address += (address.includes("?") ? "&" : "?") + params;
  }
  const retryable = idempotent || method === "GET" || method === "HEAD";
  for (let attempt = 0; ; attempt += 1) {
    let response;
    try {
      response = await fetch(address, { method, headers, body: payload, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      if (retryable && attempt < RETRY_AT_MOST) {
        await sleep(0.5 * 2 ** attempt, signal);
        continue;
      }
      throw new ApiProblem(0, { title: "The service cannot be reached.", detail: "Check your connection and try again." });
    }
    const wait = retryAfterSeconds(response);
    if (retryable && RETRY_STATUSES.has(response.status) && attempt < RETRY_AT_MOST && (wait ?? 1) <= RETRY_WAIT_LONGEST_S) {
      await sleep(wait ?? 0.5 * 2 ** attempt, signal);
      continue;
    }
    if (response.ok) {
      if (raw || (!isJson(response) && response.status !== 204)) return response;
      if (response.status === 204) return null;
      return response.json();
    }
    const problem = isJson(response) ? await response.json().catch(() => ({})) : {};
    if (response.status === 401 && token && tokenGet() === token) {
      // The sign-in has ended (expired, password changed elsewhere): sign in again here.
      // The page is going away, so the call never settles: a problem thrown now would reach
      // a page that no longer shows it, as an unhandled rejection in the console.
      session.forget();
      leavingForSignIn = true;
      location.assign(`/signin?next=${encodeURIComponent(here())}&ended=1`);
      return new Promise(() => {});
    }
    if (leavingForSignIn) {
      // Another call met the ended sign-in first and is taking the page to sign-in: this
      // one (made at the same time, or after, without the credential) never settles either.
      // Thrown, it reached the page going away as an unhandled rejection (the keyboard
      // journey caught it in CI).
      return new Promise(() => {});
    }
    throw new ApiProblem(response.status, problem, wait);
  }
}

let mePromise = null;

/** Signing in and out, and who is signed in. */
export const session = {
  signedIn() {
    return Boolean(tokenGet());
  },

  async signIn(email, password) {
    const answer = await api("POST", "/v1/auth/login", { json: { email, password } });
    this.begin(answer.token);
    return answer;
  },

  async register(fields) {
    const answer = await api("POST", "/v1/auth/register", { json: fields });
    this.begin(answer.token);
    return answer;
  },

  /** Keeps a JWT the API gave (login, register, an external provider's sign-in). */
  begin(token) {
    mePromise = null;
    tokenSet(token);
  },

  forget() {
    mePromise = null;
    tokenSet(null);
  },

  /** Signs out and goes home. */
  signOut() {
    this.forget();
    location.assign("/");
  },

  /** The profile (GET /v1/me), fetched once per page; `fresh` fetches it again. */
  current({ fresh = false } = {}) {
    if (!tokenGet()) return Promise.resolve(null);
    if (!mePromise || fresh) {
      mePromise = api("GET", "/v1/me").catch((error) => {
        mePromise = null;
        throw error;
      });
    }
    return mePromise;
  },

  /** On a page for signed-in people: goes to /signin (and back here after) otherwise. */
  requireSignIn() {
    if (tokenGet()) return true;
    location.replace(`/signin?next=${encodeURIComponent(here())}`);
    return false;
  },
};

/** The `next` address of a sign-in page, if it is one of ours (never another site). */
export function nextAddress(fallback = "/books") {
  const next = new URLSearchParams(location.search).get("next");
  if (next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\")) return next;
  return fallback;
}
