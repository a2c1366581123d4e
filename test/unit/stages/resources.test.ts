// The resources stage (docs/injection.md#app-connections, resource_access_denied) on requests whose winning
// connection the real connection stage chose: where a GitHub or Dropbox request names its resource (path,
// body, Dropbox-API-Arg header, `arg` URL parameter), that the body still reaches the upstream whole, and that
// what cannot be read is denied.
import { describe, expect, test } from "bun:test";
import { compiledApp } from "../../../src/apps/match.ts";
import type { Resources } from "../../../src/core/resources.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledConnection } from "../../../src/gateway/snapshot.ts";
import { connectionStage } from "../../../src/gateway/stages/connection.ts";
import { resourcesStage } from "../../../src/gateway/stages/resources.ts";
import { agentCredentials, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { PASS } from "../../../src/gateway/stage.ts";
import { outcome, type Answered } from "./helpers.ts";

interface Req {
  provider: "github" | "dropbox";
  resources: Resources | null;
  host: string;
  method?: string;
  /** Path and query. */
  target: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

const connection = connectionStage();
const resources = resourcesStage();

function rq(r: Req & { grant?: CompiledConnection["grant"] }): ProxyRequest {
  const app = compiledApp(r.provider)!;
  const request = testRequest({ tunnel: r.host, method: r.method ?? "POST", target: r.target, headers: r.headers, body: r.body });
  const conn: CompiledConnection = {
    id: "conn-1",
    provider: r.provider,
    label: "me",
    displayName: app.app.name,
    scope: "project",
    usable: true,
    app,
    credential: null,
    grant: r.grant !== undefined ? r.grant : { access: "full", resources: r.resources },
  };
  signIn(request, agentCredentials({ connections: [conn] }));
  expect(connection.request!(request)).toBe(PASS);
  expect(request.connection?.id).toBe("conn-1");
  return request;
}

/** The stage's verdict on `r`: undefined when it passes. */
async function guardResources(r: ProxyRequest): Promise<Answered | undefined> {
  const o = await outcome(resources.request!(r));
  return o === "pass" ? undefined : o;
}

/** The body of a refusal, once checked to be the 403 (logged as blocked) every refusal is. */
function denied(res: Answered | undefined): Record<string, unknown> {
  expect(res).toBeDefined();
  expect(res!.decision).toBe("blocked");
  expect(res!.status).toBe(403);
  expect(res!.headers["x-should-retry"]).toBe("false");
  expect(res!.headers["content-type"]).toContain("application/json");
  return res!.body as Record<string, unknown>;
}

const REPORTS = { folders: ["/Reports"] };
const API = "api.dropboxapi.com";
const CONTENT = "content.dropboxapi.com";

describe("github", () => {
  test("another repository → 403 with the documented body; the grant's repositories as allowed", async () => {
    const r = rq({ provider: "github", resources: { repositories: ["acme/api"] }, host: "api.github.com", method: "GET", target: "/repos/acme/other/issues?state=open" });
    expect(denied(await guardResources(r))).toEqual({
      error: "resource_access_denied",
      message: "This GitHub connection is limited to specific repositories; acme/other is not one of them.",
      provider: "github",
      allowed: ["acme/api"],
    });
  });

  test("an allowed repository, or no resources on the grant, or no grant: nothing to do", async () => {
    expect(await guardResources(rq({ provider: "github", resources: { repositories: ["acme/api"] }, host: "api.github.com", method: "GET", target: "/repos/Acme/Api" }))).toBeUndefined();
    expect(await guardResources(rq({ provider: "github", resources: null, host: "api.github.com", method: "POST", target: "/graphql" }))).toBeUndefined();
    const noGrant = rq({ provider: "github", resources: null, grant: null, host: "api.github.com", method: "GET", target: "/repos/a/b" });
    expect(await guardResources(noGrant)).toBeUndefined();
  });
});

describe("github: every reading of the path (docs/injection.md#every-reading-of-a-path)", () => {
  test("a path that names an allowed repository as sent but another once normalised → 403 naming the other", async () => {
    for (const target of ["/repos/acme/api/../../other/secret/issues", "/repos/acme/api/%2e%2e/%2e%2e/other/secret", "/repos/acme/api/..%2F..%2Fother/secret"]) {
      const r = rq({ provider: "github", resources: { repositories: ["acme/api"] }, host: "api.github.com", method: "GET", target });
      expect({ target, message: denied(await guardResources(r)).message }).toEqual({ target, message: "This GitHub connection is limited to specific repositories; other/secret is not one of them." });
    }
  });

  test("GraphQL spelled otherwise is still GraphQL; an allowed repository spelled otherwise still passes", async () => {
    for (const target of ["/./graphql", "/graphql;x", "/x/../graphql"]) {
      const r = rq({ provider: "github", resources: { repositories: ["acme/api"] }, host: "api.github.com", method: "POST", target });
      expect({ target, message: denied(await guardResources(r)).message }).toEqual({ target, message: "This GitHub connection is limited to specific repositories; the GraphQL API is not one of them." });
    }
    const ok = rq({ provider: "github", resources: { repositories: ["acme/api"] }, host: "api.github.com", method: "GET", target: "/repos/acme/%61pi/issues" });
    expect(await guardResources(ok)).toBeUndefined();
  });
});

describe("dropbox", () => {
  const json = { "content-type": "application/json" };

  test("a JSON body inside the folder passes and is still forwarded whole", async () => {
    const body = JSON.stringify({ path: "/reports/2024", recursive: true });
    const r = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/list_folder", headers: json, body });
    expect(await guardResources(r)).toBeUndefined();
    expect(await new Response(r.body).text()).toBe(body);
  });

  test("a JSON body outside the folder → 403 naming the path", async () => {
    const r = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/copy_v2", headers: json, body: '{"from_path":"/Reports/a","to_path":"/Private/a"}' });
    expect(denied(await guardResources(r))).toEqual({
      error: "resource_access_denied",
      message: "This Dropbox connection is limited to specific folders; /Private/a is not one of them.",
      provider: "dropbox",
      allowed: ["/Reports"],
    });
  });

  test("the Dropbox-API-Arg header of a content endpoint; an unreadable one is denied; the file body is not read", async () => {
    const file = new Uint8Array(64 * 1024).fill(0x7b);
    const ok = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, target: "/2/files/upload", headers: { "content-type": "application/octet-stream", "dropbox-api-arg": '{"path":"/Reports/x.bin"}' }, body: file });
    expect(await guardResources(ok)).toBeUndefined();
    expect(new Uint8Array(await new Response(ok.body).arrayBuffer())).toEqual(file);
    const out = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, target: "/2/files/download", headers: { "dropbox-api-arg": '{"path":"/Private/x"}' } });
    expect((denied(await guardResources(out))).message).toBe("This Dropbox connection is limited to specific folders; /Private/x is not one of them.");
    const bad = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, target: "/2/files/download", headers: { "dropbox-api-arg": "/Private/x" } });
    expect((denied(await guardResources(bad))).message).toBe("This Dropbox connection is limited to specific folders; this request is not one of them.");
  });

  test("the `arg` URL parameter (Dropbox's alternative to the header) is checked like the header", async () => {
    const arg = encodeURIComponent('{"path":"/Private/x.pdf"}');
    const r = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, method: "GET", target: `/2/files/download?arg=${arg}` });
    expect((denied(await guardResources(r))).message).toBe("This Dropbox connection is limited to specific folders; /Private/x.pdf is not one of them.");
    const inside = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, method: "GET", target: `/2/files/download?arg=${encodeURIComponent('{"path":"/Reports/x.pdf"}')}` });
    expect(await guardResources(inside)).toBeUndefined();
    const garbage = rq({ provider: "dropbox", resources: REPORTS, host: CONTENT, method: "GET", target: "/2/files/download?arg=%2FPrivate" });
    expect(denied(await guardResources(garbage))).toMatchObject({ error: "resource_access_denied" });
  });

  test("an RPC body is read whatever its content type (Dropbox's text/plain; charset=dropbox-cors-hack)", async () => {
    const r = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/delete_v2", headers: { "content-type": "text/plain; charset=dropbox-cors-hack" }, body: '{"path":"/Private"}' });
    expect((denied(await guardResources(r))).message).toBe("This Dropbox connection is limited to specific folders; /Private is not one of them.");
    const none = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/delete_v2", body: '{"path":"/Private"}' });
    expect(denied(await guardResources(none))).toMatchObject({ error: "resource_access_denied" });
  });

  test("a large batch body is read in full: a path past the first 16 KiB is still checked", async () => {
    const entries = Array.from({ length: 400 }, (_, i) => ({ from_path: `/Reports/file-${i}.pdf`, to_path: `/Reports/archive/file-${i}.pdf` }));
    const okBody = JSON.stringify({ entries, autorename: false });
    expect(okBody.length).toBeGreaterThan(16 * 1024);
    const ok = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/copy_batch_v2", headers: json, body: okBody });
    expect(await guardResources(ok)).toBeUndefined();
    expect(await new Response(ok.body).text()).toBe(okBody);
    const badBody = JSON.stringify({ entries: [...entries, { from_path: "/Reports/a", to_path: "/Private/a" }] });
    const bad = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/copy_batch_v2", headers: json, body: badBody });
    expect((denied(await guardResources(bad))).message).toBe("This Dropbox connection is limited to specific folders; /Private/a is not one of them.");
    // Whitespace padding cannot push the arguments out of sight either.
    const padded = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/delete_v2", headers: json, body: `${" ".repeat(20_000)}{"path":"/Private"}` });
    expect(denied(await guardResources(padded))).toMatchObject({ error: "resource_access_denied" });
  });

  test("an RPC body too large to read, or not JSON, is denied (fail closed)", async () => {
    const huge = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/delete_batch", headers: json, body: `{"entries":[${'{"path":"/Reports/x"},'.repeat(60_000)}{"path":"/Reports/y"}]}` });
    expect((denied(await guardResources(huge))).message).toBe("This Dropbox connection is limited to specific folders; this request is not one of them.");
    const notJson = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/delete_v2", headers: json, body: "path=/Private" });
    expect(denied(await guardResources(notJson))).toMatchObject({ error: "resource_access_denied" });
    // An RPC call without arguments passes.
    expect(await guardResources(rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/users/get_current_account" }))).toBeUndefined();
  });

  test("Dropbox-API-Path-Root other than home re-roots every path: denied", async () => {
    const nsRoot = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/list_folder", headers: { ...json, "dropbox-api-path-root": '{".tag":"namespace_id","namespace_id":"7"}' }, body: '{"path":"/Reports"}' });
    expect(denied(await guardResources(nsRoot))).toMatchObject({ error: "resource_access_denied" });
    const home = rq({ provider: "dropbox", resources: REPORTS, host: API, target: "/2/files/list_folder", headers: { ...json, "dropbox-api-path-root": '{".tag": "home"}' }, body: '{"path":"/Reports"}' });
    expect(await guardResources(home)).toBeUndefined();
  });
});
