// The JSON API client: every request the dashboard makes, and its errors.

export const BASE = document.body.dataset.base || "";
export const STATES = ["waiting", "pending", "running", "completed", "failed", "cancelled"];
export const PAGE_SIZE = 50;
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function api(path, options = {}) {
  const init = {
    method: options.method || "GET",
    headers: { accept: "application/json" },
    credentials: "same-origin",
  };
  if (options.body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(`${BASE}/api${path}`, init);
  if (response.status === 401) {
    window.location.assign(`${BASE}/login`);
    throw new ApiError(401, "signed out");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    /* not JSON */
  }
  if (!response.ok) throw new ApiError(response.status, data?.error || `HTTP ${response.status}`);
  return data;
}

export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : "";
}
