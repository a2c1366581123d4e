// The winning-connection rules of docs/injection.md#winning-connection on the gateway stage itself, for the case the shipped catalog
// cannot produce: two apps serving the same path (409 multiple_providers). The two apps are catalog data
// written here; the stage, the matchers and the secret matching are the real ones.
import { describe, expect, test } from "bun:test";
import { compileApp } from "../../src/apps/match.ts";
import type { AppDefinition } from "../../src/apps/types.ts";
import { compileHostPattern, compilePathPattern } from "../../src/core/patterns.ts";
import { selectConnection } from "../../src/gateway/stages/appConnection.ts";
import type { ProxyRequest } from "../../src/gateway/request.ts";
import { credentials, proxyRequest } from "../support/proxyRequest.ts";
import type { CompiledConnection, CompiledSecret } from "../../src/gateway/snapshot.ts";

const HOST = "api.resend.com";
const app = (id: string): AppDefinition => ({
  id,
  name: id.toUpperCase(),
  description: "",
  connectionType: "api_key",
  fields: [{ name: "apiKey", label: "API Key", secret: true }],
  hosts: [{ host: HOST, paths: ["/emails/*"], inject: [{ kind: "bearer" }] }],
  blocklist: [],
  tools: [],
});

function connection(id: string, provider: string): CompiledConnection {
  return { id, provider, label: `${provider} ${id}`, displayName: provider.toUpperCase(), scope: "project", usable: true, app: compileApp(app(provider)), credential: { kind: "api_key", fields: { apiKey: "k" } }, grant: null };
}

function request(connections: CompiledConnection[], headers: Record<string, string> = {}, secrets: CompiledSecret[] = []): ProxyRequest {
  const rq = proxyRequest({ host: HOST, target: "/emails", headers });
  rq.credentials = credentials({ connections, injectable: secrets });
  return rq;
}

const a = connection("c-a", "mail-one");
const b = connection("c-b", "mail-two");

describe("winning connection across providers (docs/injection.md#winning-connection)", () => {
  test("two providers serving the path → 409 multiple_providers listing both, with the header and an example", async () => {
    const rq = request([a, b]);
    const res = selectConnection(rq)!;
    expect(res.status).toBe(409);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await res.json()).toEqual({
      error: "multiple_providers",
      message: "Several apps can serve this request. Specify which connection to use with the x-credgate-connection-id header.",
      connections: [
        { id: "c-a", label: "mail-one c-a", provider: "mail-one", display_name: "MAIL-ONE" },
        { id: "c-b", label: "mail-two c-b", provider: "mail-two", display_name: "MAIL-TWO" },
      ],
      header: "x-credgate-connection-id",
      example: "x-credgate-connection-id: c-a",
    });
    expect(rq.decision).toBe("error");
  });

  test("the header picks one of them", async () => {
    const rq = request([a, b], { "x-credgate-connection-id": "c-b" });
    expect(selectConnection(rq)).toBeUndefined();
    expect(rq.connection?.id).toBe("c-b");
    expect(rq.provider).toBe("mail-two");
  });

  test("a secret serving the path swallows the conflict", async () => {
    const secret = { id: "s", hostMatch: compileHostPattern(HOST), pathMatch: compilePathPattern(null), scope: "project", type: "generic" } as unknown as CompiledSecret;
    const rq = request([a, b], {}, [secret]);
    expect(selectConnection(rq)).toBeUndefined();
    expect(rq.connection).toBeNull();
    expect(rq.connectionCandidates.map((c) => c.id)).toEqual(["c-a", "c-b"]);
  });
});
