// The console's shell: sign-in and sign-out, the hash router (#/overview, #/group/p/g, #/messages/p/g/i, #/pending/p/g/i,
// #/audit) and the live refresh loop that re-reads the current view's data without reloading the page.

import { get, login, logout, hasToken, onUnauthorized } from "/console/api.js";
import { say } from "/console/dom.js";
import { setSession } from "/console/admin.js";
import * as overview from "/console/overview.js";
import * as group from "/console/group.js";
import * as messages from "/console/messages.js";
import * as pending from "/console/pending.js";
import * as audit from "/console/audit.js";

/** How often the current view re-reads its data while live updates are on. */
const REFRESH_MS = 2000;

const $ = (id) => document.getElementById(id);
let view = null;
let timer = null;
let generation = 0;

function showLogin(message) {
  generation += 1;
  clearTimeout(timer);
  view = null;
  setSession(null);
  $("view").replaceChildren();
  $("nav").hidden = true;
  $("logout").hidden = true;
  $("live-label").hidden = true;
  $("who").textContent = "";
  $("login-message").textContent = message || "";
  $("login-view").hidden = false;
  document.title = "Sign in · rsc console";
  say("");
  $("login-username").focus();
}

async function startSession() {
  let s;
  try {
    s = await get("/coord/v1/monitoring/session");
  } catch (e) {
    if (e.status !== 401) showLogin("Could not read your session: " + e.message);
    return;
  }
  setSession(s);
  $("login-view").hidden = true;
  $("nav").hidden = false;
  $("logout").hidden = false;
  $("live-label").hidden = false;
  $("who").textContent = s.username + " (" + (s.roles || []).join(", ") + ")";
  $("who").setAttribute("data-roles", (s.roles || []).join(" "));
  route();
}

function parse() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, q] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "overview", args: parts.slice(1), params: new URLSearchParams(q || "") };
}

function route() {
  if (!hasToken()) return;
  generation += 1;
  clearTimeout(timer);
  const { name, args, params } = parse();
  const modules = { overview, group, messages, pending, audit };
  const mod = modules[name] || overview;
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.getAttribute("href") === "#/" + name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const el = $("view");
  el.replaceChildren();
  view = mod.mount(el, args, params);
  document.title = view.title + " · rsc console";
  $("main").focus({ preventScroll: true });
  loop(generation);
}

async function loop(gen) {
  if (gen !== generation || !view) return;
  try {
    await view.refresh();
    if (gen === generation && $("status").classList.contains("stale")) say("");
  } catch (e) {
    if (gen === generation && e.status !== 401) say("Could not refresh: " + e.message, "stale");
  }
  if (gen !== generation) return;
  if ($("live").checked && view.live !== false) timer = setTimeout(() => loop(gen), REFRESH_MS);
}

function boot() {
  onUnauthorized((message) => showLogin(message));
  $("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const u = $("login-username").value.trim();
    const p = $("login-password").value;
    if (!u || !p) {
      $("login-message").textContent = "Enter a username and a password.";
      return;
    }
    $("login-submit").disabled = true;
    try {
      await login(u, p);
      $("login-password").value = "";
      $("login-message").textContent = "";
      await startSession();
    } catch (e) {
      $("login-message").textContent = e.status === 401 ? "Sign-in refused: wrong username or password." : "Sign-in failed: " + e.message;
    } finally {
      $("login-submit").disabled = false;
    }
  });
  $("logout").addEventListener("click", async () => {
    try {
      await logout();
      showLogin("You are signed out; your token was revoked.");
    } catch (e) {
      showLogin("Signed out here, but the coordinator could not revoke the token: " + e.message);
    }
  });
  $("live").addEventListener("change", () => {
    if ($("live").checked) {
      generation += 1;
      loop(generation);
    } else clearTimeout(timer);
  });
  window.addEventListener("hashchange", route);
  if (hasToken()) startSession();
  else showLogin("");
}

boot();
