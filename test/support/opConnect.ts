// A stand-in for a 1Password Connect server (a third party the tests cannot reach): the Connect REST API v1
// wire format for reading vaults and items — `GET /v1/vaults[?filter=name eq "…"]`, `GET /v1/vaults/{id}`,
// `GET /v1/vaults/{id}/items[?filter=title eq "…"]`, `GET /v1/vaults/{id}/items/{id}` — over an in-memory
// model, with the bearer token checked and every request recorded. `handle` serves a Request directly
// (unit tests); `startOpConnect` puts it behind a real HTTPS or HTTP listener (e2e tests).
import type { Server } from "bun";
import type { TestPki } from "./upstream.ts";

export interface FakeField {
  id: string;
  label: string;
  value?: string;
  type?: string;
  purpose?: string;
  section?: { id: string };
}

export interface FakeItem {
  id: string;
  title: string;
  category?: string;
  sections?: { id: string; label?: string }[];
  fields: FakeField[];
}

export interface FakeVault {
  id: string;
  name: string;
  items: FakeItem[];
}

export interface ConnectRequest {
  method: string;
  /** Path and decoded query, e.g. `/v1/vaults?filter=name eq "Prod"`. */
  url: string;
  authorization: string | null;
}

const ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A 1Password-style object id: 26 lowercase letters and digits. */
export function opId(): string {
  let s = "";
  for (const b of crypto.getRandomValues(new Uint8Array(26))) s += ID_CHARS[b % ID_CHARS.length];
  return s;
}

const error = (status: number, message: string) => Response.json({ status, message }, { status });

function parseFilter(filter: string | null, attribute: string): string | null | undefined {
  if (filter === null) return null;
  const m = new RegExp(`^${attribute} eq "((?:[^"\\\\]|\\\\.)*)"$`).exec(filter.trim());
  return m ? m[1]!.replace(/\\(.)/g, "$1") : undefined;
}

const STAMP = "2025-03-01T12:00:00Z";

export class FakeConnect {
  vaults: FakeVault[] = [];
  requests: ConnectRequest[] = [];
  /** Milliseconds to wait before answering (slow-server tests). */
  delayMs = 0;

  constructor(public token: string) {}

  vault(name: string, id = opId()): FakeVault {
    const v: FakeVault = { id, name, items: [] };
    this.vaults.push(v);
    return v;
  }

  item(vault: FakeVault, title: string, fields: Record<string, string> | FakeField[], id = opId()): FakeItem {
    const list = Array.isArray(fields) ? fields : Object.entries(fields).map(([label, value]) => ({ id: label.toLowerCase() === "password" ? "password" : opId(), label, value, type: "CONCEALED" }));
    const it: FakeItem = { id, title, category: "API_CREDENTIAL", fields: list };
    vault.items.push(it);
    return it;
  }

  handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    this.requests.push({ method: req.method, url: decodeURIComponent(url.pathname + url.search), authorization: req.headers.get("authorization") });
    if (this.delayMs > 0) await Bun.sleep(this.delayMs);
    if (req.headers.get("authorization") !== `Bearer ${this.token}`) return error(401, "Invalid token signature");
    if (req.method !== "GET") return error(405, "method not allowed");
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== "v1" || parts[1] !== "vaults") return error(404, "not found");
    if (parts.length === 2) {
      const name = parseFilter(url.searchParams.get("filter"), "name");
      if (name === undefined) return error(400, "Invalid filter");
      return Response.json(this.vaults.filter((v) => name === null || v.name === name).map(vaultJson));
    }
    const vault = this.vaults.find((v) => v.id === parts[2]);
    if (!vault) return error(404, "vault not found");
    if (parts.length === 3) return Response.json(vaultJson(vault));
    if (parts[3] !== "items") return error(404, "not found");
    if (parts.length === 4) {
      const title = parseFilter(url.searchParams.get("filter"), "title");
      if (title === undefined) return error(400, "Invalid filter");
      return Response.json(vault.items.filter((i) => title === null || i.title === title).map((i) => itemSummary(vault, i)));
    }
    const item = vault.items.find((i) => i.id === parts[4]);
    if (!item || parts.length > 5) return error(404, "item not found");
    return Response.json({ ...itemSummary(vault, item), sections: item.sections ?? [], fields: item.fields });
  };

  /** Requests after index `since` (for counting). */
  since(n: number): ConnectRequest[] {
    return this.requests.slice(n);
  }
}

function vaultJson(v: FakeVault) {
  return { id: v.id, name: v.name, description: "", attributeVersion: 1, contentVersion: v.items.length, items: v.items.length, type: "USER_CREATED", createdAt: STAMP, updatedAt: STAMP };
}

function itemSummary(v: FakeVault, i: FakeItem) {
  return { id: i.id, title: i.title, vault: { id: v.id }, category: i.category ?? "LOGIN", version: 1, tags: [], favorite: false, createdAt: STAMP, updatedAt: STAMP, lastEditedBy: opId() };
}

/** A fetch that answers from the fake directly (no network), honouring the abort signal. */
export function fakeFetch(fake: FakeConnect): (url: string, init: BunFetchRequestInit) => Promise<Response> {
  return (url, init) =>
    new Promise((resolve, reject) => {
      const signal = init.signal;
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      fake.handle(new Request(url, init as RequestInit)).then(resolve, reject);
    });
}

export interface RunningConnect {
  server: Server<unknown>;
  port: number;
  stop(): Promise<void>;
}

/** Serves the fake on loopback: HTTPS with the test PKI's leaf, or plain HTTP without one. */
export function startOpConnect(fake: FakeConnect, pki?: TestPki): RunningConnect {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    ...(pki ? { tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) } } : {}),
    fetch: fake.handle,
  });
  return { server, port: server.port!, stop: () => server.stop(true) };
}
