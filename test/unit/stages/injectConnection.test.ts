// The inject-connection stage (docs/injection.md#app-connections): the winning connection's credential goes on
// the way its app's host rule says — bearer, basic, header (with a format) or query parameter — before any
// secret; an OAuth token inside its refresh window is refreshed first, by the real OAuth service over a real
// store (a connection it cannot find cannot be refreshed: 502). A missing value, or a value that would break
// a header, is 502 credential_unavailable. The apps are catalog data written here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileApp } from "../../../src/apps/match.ts";
import type { AppInjection } from "../../../src/apps/types.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledConnection } from "../../../src/gateway/snapshot.ts";
import { connectionStage } from "../../../src/gateway/stages/connection.ts";
import { injectConnectionStage } from "../../../src/gateway/stages/injectConnection.ts";
import { agentCredentials, signIn, testRequest } from "../../../src/gateway/testing.ts";
import type { ConnectionCredential } from "../../../src/services/connections.ts";
import { createTestApi, type TestApi } from "../../support/app.ts";
import { outcome } from "./helpers.ts";

const HOST = "api.mailer.test";
let api: TestApi;
let stage: ReturnType<typeof injectConnectionStage>;
const choose = connectionStage();

beforeAll(async () => {
  api = await createTestApi();
  stage = injectConnectionStage({ oauth: api.core.services.oauth });
});
afterAll(() => api.core.close());

function connected(inject: AppInjection[], credential: ConnectionCredential | null): CompiledConnection {
  const app = compileApp({
    id: "mailer",
    name: "Mailer",
    description: "",
    connectionType: credential?.kind === "oauth" ? "oauth" : "api_key",
    fields: [{ name: "apiKey", label: "API Key", secret: true }],
    hosts: [{ host: HOST, paths: ["/send/*"], inject }],
    blocklist: [],
    tools: [],
  });
  return { id: `conn-${crypto.randomUUID()}`, provider: "mailer", label: null, displayName: "Mailer", scope: "project", usable: true, app, credential, grant: null };
}

/** A request whose winning connection the connection stage chose. */
function request(connection: CompiledConnection, target = "/send/one?x=1"): ProxyRequest {
  const rq = testRequest({ tunnel: HOST, method: "POST", target });
  signIn(rq, agentCredentials({ connections: [connection] }));
  choose.request!(rq);
  expect(rq.connection).toBe(connection);
  return rq;
}

const apiKey = (value: string): ConnectionCredential => ({ kind: "api_key", fields: { apiKey: value } });
const UNAVAILABLE = { decision: "error", status: 502, body: { error: "credential_unavailable", message: `credgate could not obtain the credential for ${HOST}, so the request was not forwarded.` } };

describe("how the app says to inject", () => {
  test("bearer, basic, header with a format and a query parameter, all counted", async () => {
    const rq = request(
      connected(
        [
          { kind: "bearer" },
          { kind: "basic", username: "api" },
          { kind: "header", name: "x-mailer-key", format: "Key {value}" },
          { kind: "query", param: "key" },
        ],
        apiKey("mk-123"),
      ),
    );
    expect(await outcome(stage.request!(rq))).toBe("pass");
    // The basic injection came after the bearer one on the same header: it wins.
    expect(rq.headers.get("authorization")).toBe(`Basic ${Buffer.from("api:mk-123").toString("base64")}`);
    expect(rq.headers.get("x-mailer-key")).toBe("Key mk-123");
    expect(rq.upstreamTarget).toBe("/send/one?x=1&key=mk-123");
    expect(rq.injectionCount).toBe(4);
  });

  test("no winning connection, or a path its app does not serve: nothing to do", async () => {
    const none = testRequest({ tunnel: HOST, target: "/send/one" });
    signIn(none, agentCredentials());
    expect(await outcome(stage.request!(none))).toBe("pass");
    expect(none.injectionCount).toBe(0);
  });
});

describe("failures → 502 credential_unavailable", () => {
  test("a field the credential does not have", async () => {
    expect(await outcome(stage.request!(request(connected([{ kind: "bearer", field: "token" }], apiKey("mk")))))).toMatchObject(UNAVAILABLE);
  });

  test("a value with a line break cannot go into a header (a query parameter takes it)", async () => {
    expect(await outcome(stage.request!(request(connected([{ kind: "bearer" }], apiKey("a\nb")))))).toMatchObject(UNAVAILABLE);
    const rq = request(connected([{ kind: "query", param: "k" }], apiKey("a\nb")));
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.upstreamTarget).toBe("/send/one?x=1&k=a%0Ab");
  });
});

describe("OAuth tokens", () => {
  test("a token outside its refresh window goes on as it is, synchronously", async () => {
    const rq = request(connected([{ kind: "bearer" }], { kind: "oauth", accessToken: "at-live", refreshToken: "rt", expiresAt: Date.now() + 3_600_000, tokenType: "Bearer" }));
    const verdict = stage.request!(rq);
    expect(verdict).not.toBeInstanceOf(Promise);
    expect(rq.headers.get("authorization")).toBe("Bearer at-live");
  });

  test("a token due for refresh asks the OAuth service; one it cannot refresh → 502", async () => {
    const rq = request(connected([{ kind: "bearer" }], { kind: "oauth", accessToken: "at-old", refreshToken: "rt", expiresAt: Date.now() - 1000, tokenType: "Bearer" }));
    const verdict = stage.request!(rq);
    expect(verdict).toBeInstanceOf(Promise);
    expect(await outcome(verdict)).toMatchObject(UNAVAILABLE);
    expect(rq.injectionCount).toBe(0);
  });
});
