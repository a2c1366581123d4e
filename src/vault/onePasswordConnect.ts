// A minimal 1Password Connect REST client: reads one field of one item, addressed by an
// `op://<vault>/<item>/<field>` reference whose parts are names or ids. Errors carry a short reason code
// and never a value or the token.
//
// Wire calls (Connect API v1, `Authorization: Bearer <token>`):
//   vault: GET /v1/vaults/{id} when the part looks like an id, else (or on 404) GET /v1/vaults?filter=name eq "<name>"
//   item:  GET /v1/vaults/{vaultId}/items/{id} when it looks like an id, else (or on 404)
//          GET /v1/vaults/{vaultId}/items?filter=title eq "<title>" then GET /v1/vaults/{vaultId}/items/{itemId}
//   field: in the item's `fields[]`, by `id`, else by `label` (exact, then case-insensitive), in any section.
import { readBounded } from "../core/boundedRead.ts";
import { VERSION } from "../runtime/version.ts";

/** The most a Connect answer may hold (an item with its fields and sections). */
const CONNECT_ANSWER_MAX = 4 * 1024 * 1024;

export type ConnectFetch = (url: string, init: BunFetchRequestInit) => Promise<Response>;

export interface OpRef {
  vault: string;
  item: string;
  field: string;
}

/** `op://vault/item/field` (the only form the secrets API accepts, docs/injection.md#secrets), else null. */
export function parseOpRef(ref: string): OpRef | null {
  const m = /^op:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(ref.trim());
  if (!m) return null;
  const [vault, item, field] = [m[1]!.trim(), m[2]!.trim(), m[3]!.trim()];
  return vault && item && field ? { vault, item, field } : null;
}

export class VaultLookupError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** 1Password object ids: 26 lowercase letters and digits. */
const ID_SHAPE = /^[a-z0-9]{26}$/;

interface Named {
  id?: unknown;
  name?: unknown;
  title?: unknown;
}

interface ConnectField {
  id?: unknown;
  label?: unknown;
  value?: unknown;
}

/** The Connect base URL: a scheme-less host means plain HTTP (Connect's own default), no trailing slash. */
export function connectBaseUrl(host: string): string | null {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(host) ? host : `http://${host}`;
  try {
    const url = new URL(withScheme);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  } catch {
    return null;
  }
  return withScheme.replace(/\/+$/, "");
}

/** A SCIM `eq` filter with the value quoted and escaped. */
function eqFilter(attribute: string, value: string): string {
  return encodeURIComponent(`${attribute} eq "${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`);
}

/** The one entry whose name matches: exact first, then case-insensitive. */
function pickByName<T extends Named>(list: unknown, name: string, key: "name" | "title", kind: string): T {
  if (!Array.isArray(list)) throw new VaultLookupError("bad_response");
  const entries = list as T[];
  let matches = entries.filter((e) => e[key] === name);
  if (matches.length === 0) matches = entries.filter((e) => typeof e[key] === "string" && (e[key] as string).toLowerCase() === name.toLowerCase());
  if (matches.length === 0) throw new VaultLookupError(`${kind}_not_found`);
  if (matches.length > 1) throw new VaultLookupError(`${kind}_ambiguous`);
  return matches[0]!;
}

/** The field's value: by id, else by label (exact, then case-insensitive); several matches are ambiguous. */
export function pickField(item: unknown, query: string): string {
  const raw = (item as { fields?: unknown } | null)?.fields;
  const fields = (Array.isArray(raw) ? raw : []) as ConnectField[];
  let matches = fields.filter((f) => f.id === query);
  if (matches.length === 0) matches = fields.filter((f) => f.label === query);
  if (matches.length === 0) matches = fields.filter((f) => typeof f.label === "string" && f.label.toLowerCase() === query.toLowerCase());
  if (matches.length === 0) throw new VaultLookupError("field_not_found");
  if (matches.length > 1) throw new VaultLookupError("field_ambiguous");
  const value = matches[0]!.value;
  if (typeof value !== "string" || value === "") throw new VaultLookupError("field_empty");
  return value;
}

export class OnePasswordConnect {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly fetch: ConnectFetch,
  ) {}

  /** The value of the referenced field. Throws VaultLookupError, or the fetch error (network, abort). */
  async read(ref: OpRef, signal: AbortSignal): Promise<string> {
    const vaultId = await this.#vaultId(ref.vault, signal);
    const item = await this.#item(vaultId, ref.item, signal);
    return pickField(item, ref.field);
  }

  async #vaultId(vault: string, signal: AbortSignal): Promise<string> {
    if (ID_SHAPE.test(vault)) {
      const byId = await this.#get(`/v1/vaults/${vault}`, signal);
      if (byId !== null) return idOf(byId);
    }
    const list = await this.#get(`/v1/vaults?filter=${eqFilter("name", vault)}`, signal);
    return idOf(pickByName(list ?? [], vault, "name", "vault"));
  }

  async #item(vaultId: string, item: string, signal: AbortSignal): Promise<unknown> {
    const base = `/v1/vaults/${encodeURIComponent(vaultId)}/items`;
    if (ID_SHAPE.test(item)) {
      const byId = await this.#get(`${base}/${item}`, signal);
      if (byId !== null) return byId;
    }
    const list = await this.#get(`${base}?filter=${eqFilter("title", item)}`, signal);
    const summary = pickByName(list ?? [], item, "title", "item");
    const full = await this.#get(`${base}/${encodeURIComponent(idOf(summary))}`, signal);
    if (full === null) throw new VaultLookupError("item_not_found");
    return full;
  }

  /** GET a JSON document; null on 404. */
  async #get(path: string, signal: AbortSignal): Promise<unknown> {
    const res = await this.fetch(this.baseUrl + path, {
      method: "GET",
      headers: { authorization: `Bearer ${this.token}`, accept: "application/json", "user-agent": `credgate/${VERSION}` },
      // A redirect could carry the bearer token elsewhere: never follow one.
      redirect: "manual",
      signal,
    });
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => {});
      if (res.status === 404) return null;
      if (res.status === 401) throw new VaultLookupError("unauthorized");
      if (res.status === 403) throw new VaultLookupError("forbidden");
      throw new VaultLookupError(`http_${res.status}`);
    }
    const text = await readBounded(res.body, CONNECT_ANSWER_MAX);
    if (text === null) throw new VaultLookupError("answer_too_large");
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new VaultLookupError("bad_response");
    }
  }
}

function idOf(entry: unknown): string {
  const id = (entry as Named | null)?.id;
  if (typeof id !== "string" || id === "") throw new VaultLookupError("bad_response");
  return id;
}
