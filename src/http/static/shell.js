// The shell: top bar, navigation and the hash router that renders one view at a time.

import { ApiError, BASE, api, qs } from "./api.js";
import { clear, h } from "./dom.js";

let views = [];
let jobView = null;
export let main;
export const navLinks = {};
export let dlqCount;
export let timers = [];
export let generation = 0;

export function buildShell() {
  const nav = h("nav", { class: "nav", attrs: { "aria-label": "Sections" } });
  for (const view of views) {
    const link = h("a", {
      href: `#/${view.path}`,
      text: view.label,
      data: { view: view.path || "overview" },
    });
    if (view.path === "dlq") {
      dlqCount = h("span", { class: "count hidden", data: { testid: "dlq-count" } });
      link.append(dlqCount);
    }
    navLinks[view.path] = link;
    nav.append(link);
  }
  const logout = h(
    "form",
    { method: "post", action: `${BASE}/logout` },
    h("button", { class: "btn-link", type: "submit", text: "Log out" }),
  );
  const bar = h(
    "header",
    { class: "topbar" },
    h(
      "a",
      { class: "brand", href: "#/" },
      h("span", { class: "brand-mark", attrs: { "aria-hidden": "true" } }),
      "errand",
    ),
    nav,
    logout,
  );
  main = h("main", { class: "page" });
  document.body.append(bar, main);
}

export function parseHash() {
  const raw = window.location.hash.replace(/^#\/?/, "");
  const [pathPart, query = ""] = raw.split("?");
  // A link mangled on its way (`%E0%A4%A`, a lone `%`) keeps its text: decodeURIComponent threw.
  const segments = pathPart
    .split("/")
    .filter(Boolean)
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
  return { segments, params: new URLSearchParams(query) };
}

export function go(path, params = {}) {
  window.location.hash = `#/${path}${qs(params)}`;
}

/** Re-renders every `ms` while this view is shown. */
export function every(ms, fn) {
  const id = setInterval(fn, ms);
  timers.push(id);
}

export async function route() {
  for (const id of timers) clearInterval(id);
  timers = [];
  const gen = ++generation;
  const { segments, params } = parseHash();
  const top = segments[0] || "";
  for (const [path, link] of Object.entries(navLinks)) link.classList.toggle("active", path === top);
  clear(main);
  const isCurrent = () => gen === generation;
  try {
    if (top === "jobs" && segments[1]) await jobView(segments[1], isCurrent);
    else {
      const view = views.find((v) => v.path === top);
      if (!view) {
        main.append(h("div", { class: "empty", text: "Nothing here." }));
        return;
      }
      await view.render(params, isCurrent);
    }
  } catch (err) {
    if (!isCurrent() || (err instanceof ApiError && err.status === 401)) return;
    clear(main);
    main.append(h("div", { class: "notice", text: `Could not load this page: ${err.message}` }));
  }
}

export async function refreshDlqBadge(stats) {
  const data = stats || (await api("/stats"));
  const n = data.dlq || 0;
  dlqCount.textContent = n > 999 ? "999+" : String(n);
  dlqCount.classList.toggle("hidden", n === 0);
}

/** Builds the shell for these views (and the job page) and shows the current one. */
export function startShell(allViews, renderJob) {
  views = allViews;
  jobView = renderJob;
  buildShell();
  window.addEventListener("hashchange", route);
  route();
  refreshDlqBadge().catch(() => {});
}
