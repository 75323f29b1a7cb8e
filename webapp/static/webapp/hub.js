// The status hub (docs/hub.md): one websocket per page for the signed-in person's events.
// It reconnects with backoff; on every (re)connection it subscribes again to the books the
// page follows, which answers each book's status as it is now (the hub keeps no events for
// later, so this is the catch-up), and tells the page `hub.connected` so it can read again
// what it shows. When the socket cannot be opened, the followed books are polled instead
// (GET /v1/projects/{id}/status) until it can.

import { api, session, tokenGet } from "./api.js";

const PING_EVERY_MS = 30000;
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_LONGEST_MS = 30000;
const POLL_AFTER_FAILURES = 2;
const POLL_EVERY_MS = 5000;

/**
 * Connects to the hub. `onEvent(message)` gets every server message ({type, data}:
 * project.status_changed, project.status, job.succeeded, job.failed, export.ready,
 * wallet.top_up_confirmed, wallet.low_balance, error) and `{type: "hub.connected"}` after
 * each (re)connection; `onState(state)` gets "connecting", "live", "reconnecting",
 * "polling" or "closed". Answers {subscribe(projectId), unsubscribe(projectId), close()}.
 */
export function connectHub(onEvent, { onState = () => {} } = {}) {
  const followed = new Set();
  let socket = null;
  let closed = false;
  let failures = 0;
  let delay = BACKOFF_FIRST_MS;
  let reconnectTimer = null;
  let pingTimer = null;
  let pollTimer = null;

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  function state(name) {
    onState(name);
  }

  async function pollOnce() {
    for (const projectId of [...followed]) {
      try {
        const status = await api("GET", `/v1/projects/${projectId}/status`);
        if (!closed && !live()) onEvent({ type: "project.status", data: status });
      } catch (error) {
        if (error.status === 404) onEvent({ type: "error", data: { code: "not_found", projectId, detail: error.message } });
      }
    }
  }

  function live() {
    return Boolean(socket && socket.readyState === WebSocket.OPEN);
  }

  function pollStart() {
    if (pollTimer || closed) return;
    state("polling");
    pollOnce();
    pollTimer = setInterval(pollOnce, POLL_EVERY_MS);
  }

  function pollStop() {
    clearInterval(pollTimer);
    pollTimer = null;
  }

  function connect() {
    const token = tokenGet();
    if (closed || !token) return;
    state(failures ? "reconnecting" : "connecting");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    let ws;
    try {
      // A browser cannot set headers on a websocket: the JWT goes in access_token.
      ws = new WebSocket(`${scheme}//${location.host}/v1/hub?access_token=${encodeURIComponent(token)}`);
    } catch {
      retry();
      return;
    }
    socket = ws;
    ws.addEventListener("open", () => {
      if (ws !== socket) return;
      failures = 0;
      delay = BACKOFF_FIRST_MS;
      pollStop();
      state("live");
      for (const projectId of followed) send({ type: "subscribe", projectId });
      pingTimer = setInterval(() => send({ type: "ping" }), PING_EVERY_MS);
      onEvent({ type: "hub.connected", data: {} });
    });
    ws.addEventListener("message", (event) => {
      if (ws !== socket) return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message && message.type !== "pong") onEvent({ ...message, data: message.data || {} });
    });
    ws.addEventListener("close", (event) => {
      if (ws !== socket) return;
      clearInterval(pingTimer);
      socket = null;
      if (closed) return;
      if (event.code === 4401 || event.code === 4410) {
        // The sign-in has ended (or the account is gone): never reconnect with it.
        closed = true;
        state("closed");
        session.forget();
        location.assign(`/signin?next=${encodeURIComponent(location.pathname + location.search)}&ended=1`);
        return;
      }
      if (event.code === 4403) {
        closed = true;
        state("closed");
        return;
      }
      retry();
    });
  }

  function retry() {
    failures += 1;
    if (failures >= POLL_AFTER_FAILURES) pollStart();
    else state("reconnecting");
    reconnectTimer = setTimeout(connect, delay);
    delay = Math.min(delay * 2, BACKOFF_LONGEST_MS);
  }

  connect();

  return {
    /** Follows a book: its status now (at once if connected), then its events. */
    subscribe(projectId) {
      followed.add(projectId);
      if (!send({ type: "subscribe", projectId }) && pollTimer) pollOnce();
    },
    unsubscribe(projectId) {
      followed.delete(projectId);
      send({ type: "unsubscribe", projectId });
    },
    close() {
      closed = true;
      clearTimeout(reconnectTimer);
      clearInterval(pingTimer);
      pollStop();
      if (socket) {
        const closing = socket;
        socket = null;
        closing.close(1000);
      }
      state("closed");
    },
  };
}
