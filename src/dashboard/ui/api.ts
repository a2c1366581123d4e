// The dashboard's client of the `/v1` API: the session cookie authenticates (no key is ever kept in the
// page or in web storage), `X-Project-Id` picks the project of the page, and failures become ApiFailure with
// the API's own message (docs/api.md#error-shapes: `error` is a string, or `error.message`).
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CallOptions {
  body?: unknown;
  project?: string | null;
  organization?: string | null;
  signal?: AbortSignal;
}

/** Called on a 401 from any call but the session probe: the session ended, so the page goes to sign-in. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

export async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  if (opts.project) headers["x-project-id"] = opts.project;
  if (opts.organization) headers["x-organization-id"] = opts.organization;
  let res: Response;
  try {
    res = await fetch(`/v1${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: "same-origin",
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiFailure(0, "credgate could not be reached. Check that it is running and try again.");
  }
  const text = await res.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (res.ok) return body as T;
  const message = typeof body?.error === "string" ? body.error : typeof body?.error?.message === "string" ? body.error.message : `Request failed (${res.status})`;
  if (res.status === 401 && path !== "/auth/session" && path !== "/auth/login") onUnauthorized?.();
  throw new ApiFailure(res.status, message);
}

/** An API client bound to one project (and its organization) — what every project page uses. */
export interface Api {
  get<T = any>(path: string, signal?: AbortSignal): Promise<T>;
  send<T = any>(method: string, path: string, body?: unknown): Promise<T>;
}

export function projectApi(project: string | null, organization: string | null, signal?: AbortSignal): Api {
  return {
    get: (path, s) => call("GET", path, { project, organization, signal: s ?? signal }),
    send: (method, path, body) => call(method, path, { project, organization, body }),
  };
}

/** `?a=1&b=2` from the defined entries of `params`. */
export function queryString(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
