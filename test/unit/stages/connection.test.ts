// The connection stage (docs/injection.md#app-connections) on its own rules, including the case the shipped
// catalog cannot produce: two apps serving the same path (409 multiple_providers). The two apps are catalog
// data written here; the stage, the matchers and the secret matching are the real ones. On the way back a
// forwarded request's reply lists the candidates.
import { describe, expect, test } from "bun:test";
import { compileApp } from "../../../src/apps/match.ts";
import type { AppDefinition } from "../../../src/apps/types.ts";
import { Reply } from "../../../src/gateway/reply.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledConnection, CompiledSecret } from "../../../src/gateway/snapshot.ts";
import { connectionStage } from "../../../src/gateway/stages/connection.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { outcome } from "./helpers.ts";

const HOST = "api.resend.com";
const stage = connectionStage();
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

function request(connections: CompiledConnection[], headers: Record<string, string> = {}, secrets: CompiledSecret[] = [], path = "/emails"): ProxyRequest {
  const rq = testRequest({ tunnel: HOST, target: path, headers });
  signIn(rq, agentCredentials({ connections, injectable: secrets }));
  return rq;
}

const a = connection("c-a", "mail-one");
const b = connection("c-b", "mail-two");
const a2 = connection("c-a2", "mail-one");
const listed = [
  { id: "c-a", label: "mail-one c-a", provider: "mail-one", display_name: "MAIL-ONE" },
  { id: "c-b", label: "mail-two c-b", provider: "mail-two", display_name: "MAIL-TWO" },
];

describe("request", () => {
  test("two providers serving the path → 409 multiple_providers listing both, with the header and an example", async () => {
    const rq = request([a, b]);
    expect(await outcome(stage.request!(rq))).toEqual({
      decision: "error",
      status: 409,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "multiple_providers",
        message: "Several apps can serve this request. Specify which connection to use with the x-credgate-connection-id header.",
        connections: listed,
        header: "x-credgate-connection-id",
        example: "x-credgate-connection-id: c-a",
      },
    });
    expect(rq.connection).toBeNull();
  });

  test("two connections of one provider → 409 multiple_connections", async () => {
    expect(await outcome(stage.request!(request([a, a2])))).toMatchObject({ decision: "error", status: 409, body: { error: "multiple_connections" } });
  });

  test("the header picks one of them; a single candidate wins on its own", async () => {
    const picked = request([a, b], { "x-credgate-connection-id": "c-b" });
    expect(await outcome(stage.request!(picked))).toBe("pass");
    expect(picked.connection?.id).toBe("c-b");
    expect(picked.provider).toBe("mail-two");
    const single = request([a]);
    expect(await outcome(stage.request!(single))).toBe("pass");
    expect(single.connection?.id).toBe("c-a");
    expect(single.provider).toBe("mail-one");
  });

  test("a header naming no candidate → 404 connection_not_found", async () => {
    expect(await outcome(stage.request!(request([a, b], { "x-credgate-connection-id": "c-gone" })))).toEqual({
      decision: "error",
      status: 404,
      headers: expect.objectContaining({ "x-should-retry": "false" }),
      body: {
        error: "connection_not_found",
        message: "Connection 'c-gone' was not found or has been removed. Choose from the available connections.",
        connections: listed,
        header: "x-credgate-connection-id",
      },
    });
  });

  test("a secret serving the path swallows the conflict", async () => {
    const rq = request([a, b], {}, [compiledSecret({ hostPattern: HOST })]);
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.connection).toBeNull();
    expect(rq.connectionCandidates.map((c) => c.id)).toEqual(["c-a", "c-b"]);
  });

  test("a path the apps do not serve has no candidates", async () => {
    const rq = request([a, b], {}, [], "/domains");
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.connectionCandidates).toEqual([]);
    expect(rq.connection).toBeNull();
  });

  test("a host rule's paths grant the connection: a path that leaves them under any reading has no candidates (docs/injection.md#every-reading-of-a-path)", async () => {
    for (const path of ["/emails/../domains", "/emails/%2e%2e/domains", "/emails/..%2Fdomains"]) {
      const rq = request([a], {}, [], path);
      expect(await outcome(stage.request!(rq))).toBe("pass");
      expect({ path, candidates: rq.connectionCandidates }).toEqual({ path, candidates: [] });
    }
    const inside = request([a], {}, [], "/emails/./x;v=1");
    expect(await outcome(stage.request!(inside))).toBe("pass");
    expect(inside.connection?.id).toBe("c-a");
  });
});

describe("response", () => {
  test("a forwarded request's reply lists the candidates in x-credgate-connections", async () => {
    const rq = request([a, b], { "x-credgate-connection-id": "c-a" });
    stage.request!(rq);
    const reply = new Reply(200, "OK", [["content-type", "application/json"]], null);
    expect(JSON.parse((await stage.response!(rq, reply)).header("x-credgate-connections")!)).toEqual(listed);
    const none = request([], {}, [], "/emails");
    stage.request!(none);
    const plain = new Reply(200, "OK", [], null);
    expect((await stage.response!(none, plain)).header("x-credgate-connections")).toBeNull();
  });
});
