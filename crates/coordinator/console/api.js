// The coord/v1 API as the console uses it: the bearer token in this tab's session storage, JSON in and
// out, a 401 anywhere ends the session (the page returns to the sign-in form).

const KEY = "rsc.console.token";

export class ApiError extends Error {
  constructor(status, body) {
    const code = body && body.errorCode ? body.errorCode : "HTTP_" + status;
    const text = body && body.message ? body.message : "request failed";
    super(code + ": " + text);
    this.status = status;
    this.code = code;
  }
}

let unauthorized = () => {};
let serverOffsetMs = 0;

/** Called with a message when the coordinator refuses the token (expired, revoked, unknown). */
export function onUnauthorized(f) {
  unauthorized = f;
}

export function hasToken() {
  return !!sessionStorage.getItem(KEY);
}

/** The server's clock minus ours (from the Date header; whole seconds), for lease bars. */
export function serverNow() {
  return Date.now() + serverOffsetMs;
}

function headers(body) {
  const h = { Accept: "application/json" };
  const t = sessionStorage.getItem(KEY);
  if (t) h.Authorization = "Bearer " + t;
  if (body !== undefined) h["Content-Type"] = "application/json";
  return h;
}

async function call(method, path, body) {
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers: headers(body),
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (_) {
    // No HTTP answer at all: the coordinator process is down or unreachable from this browser.
    throw new ApiError(0, {
      errorCode: "COORDINATOR_UNREACHABLE",
      message: "the coordinator at " + location.origin + " does not answer (is rsc serve running?); the page shows the last data it read",
    });
  }
  const date = resp.headers.get("Date");
  if (date) {
    const t = Date.parse(date);
    if (!Number.isNaN(t)) serverOffsetMs = t - Date.now();
  }
  let data = null;
  const text = await resp.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (_) {
      data = { message: text };
    }
  }
  if (resp.status === 401 && path !== "/coord/v1/auth/login") {
    sessionStorage.removeItem(KEY);
    unauthorized("Your session has ended (the token expired or was revoked). Sign in again.");
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

/** A path segment, percent-encoded. */
export function seg(s) {
  return encodeURIComponent(s);
}

export function get(path, params) {
  return call("GET", path + query(params));
}

export function post(path, body) {
  return call("POST", path, body);
}

export function del(path, body) {
  return call("DELETE", path, body);
}

export async function login(username, password) {
  const r = await call("POST", "/coord/v1/auth/login", { username, password });
  sessionStorage.setItem(KEY, r.accessToken);
  return r;
}

/** Revokes the token on the coordinator, then forgets it (also when the coordinator cannot be reached). */
export async function logout() {
  try {
    if (hasToken()) await call("POST", "/coord/v1/auth/revoke");
  } finally {
    sessionStorage.removeItem(KEY);
  }
}

/** Group paths. */
export function groupPath(p, g) {
  return "/coord/v1/streams/" + seg(p) + "/groups/" + seg(g);
}

export function monitoringPath(p, g) {
  return "/coord/v1/monitoring/streams/" + seg(p) + "/groups/" + seg(g);
}
