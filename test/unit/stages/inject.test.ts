// The inject stage (docs/injection.md): every matching secret the agent may use, in precedence order (later
// writes win), synchronously for inline and cached vault values, with one asynchronous lookup per missing
// external-vault reference; 502 credential_unavailable (decision error, nothing applied further) on any vault
// failure or a value that would break a header. The vault is the real resolver over a fake 1Password Connect
// (a third party) speaking Connect's wire format.
import { beforeAll, describe, expect, test } from "bun:test";
import type { InjectionConfigShape } from "../../../src/core/secretRules.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { CompiledSecret } from "../../../src/gateway/snapshot.ts";
import { injectStage, VAULT_VALUE_NOT_HEADER_SAFE } from "../../../src/gateway/stages/inject.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { log } from "../../../src/observability/log.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { FakeConnect, fakeFetch } from "../../support/opConnect.ts";
import { outcome } from "./helpers.ts";

beforeAll(() => log.setQuiet(true));

const HOST = "api.vault.test";

function secret(name: string, value: string | null, opRef: string | null, injection: InjectionConfigShape, extra: Partial<CompiledSecret> = {}): CompiledSecret {
  return compiledSecret({ id: name, name, hostPattern: HOST, value, valueRef: opRef, injection, ...extra });
}

function request(secrets: CompiledSecret[], target = "/v1/x?a=1"): ProxyRequest {
  const rq = testRequest({ tunnel: HOST, target, headers: { authorization: "Bearer placeholder", "x-agent": "kept" } });
  signIn(rq, agentCredentials({ injectable: secrets }));
  return rq;
}

function setup(token = "tok") {
  const fake = new FakeConnect("tok");
  const vault = new VaultResolver({ host: "http://connect.test", token, fetch: fakeFetch(fake) });
  const v = fake.vault("Prod");
  fake.item(v, "Svc", { key: "vault-key", multi: "line1\nline2", slug: "abc" });
  return { fake, stage: injectStage({ vault }) };
}

const UNAVAILABLE = { error: "credential_unavailable", message: `credgate could not obtain the credential for ${HOST}, so the request was not forwarded.` };

describe("inline secrets", () => {
  test("applied in order, synchronously: later writes win, the count and values are kept for the echo guard", () => {
    const { stage } = setup();
    const rq = request([
      secret("org", "org-value-1", null, { headerName: "authorization", valueFormat: "Bearer {value}" }, { tier: 2 }),
      secret("project", "project-value", null, { headerName: "authorization", valueFormat: "Bearer {value}" }),
      secret("param", "param-value", null, { paramName: "key" }),
    ]);
    expect(stage.request!(rq)).toEqual({ decision: null, response: null });
    expect(rq.headers.get("authorization")).toBe("Bearer project-value");
    expect(rq.headers.get("x-agent")).toBe("kept");
    expect(rq.upstreamTarget).toBe("/v1/x?a=1&key=param-value");
    expect(rq.target).toBe("/v1/x?a=1");
    expect(rq.injectionCount).toBe(3);
    expect(rq.injectedValues).toEqual(["org-value-1", "project-value", "param-value"]);
    expect(rq.matched.map((s) => s.id)).toEqual(["org", "project", "param"]);
  });

  test("no matching secret: nothing changes", () => {
    const { stage } = setup();
    const rq = request([compiledSecret({ hostPattern: "other.test" })]);
    expect(stage.request!(rq)).toEqual({ decision: null, response: null });
    expect(rq.injectionCount).toBe(0);
    expect(rq.headers.get("authorization")).toBe("Bearer placeholder");
  });
});

describe("a secret's path pattern and every reading of the path (docs/injection.md#every-reading-of-a-path)", () => {
  const scoped = () => compiledSecret({ id: "public", name: "public", hostPattern: HOST, pathPattern: "/public/*", value: "public-value", injection: { headerName: "x-public-key" } });

  test("a spelling that stays under the pattern is injected; the target goes upstream as sent", () => {
    const { stage } = setup();
    for (const target of ["/public/a", "/public/%61", "/public/./a;v=1", "/public/x/../a?q=1"]) {
      const rq = request([scoped()], target);
      expect(stage.request!(rq)).toEqual({ decision: null, response: null });
      expect({ target, key: rq.headers.get("x-public-key") }).toEqual({ target, key: "public-value" });
      expect(rq.upstreamTarget).toBe(target);
    }
  });

  test("a path that climbs out of it under any reading is not injected, and still goes upstream as sent", () => {
    const { stage } = setup();
    for (const target of ["/public/../private/a", "/public/%2e%2e/private/a", "/public/..%2Fprivate/a", "/public/..\\private/a", "/%70ublic/../private"]) {
      const rq = request([scoped()], target);
      expect(stage.request!(rq)).toEqual({ decision: null, response: null });
      expect({ target, key: rq.headers.get("x-public-key"), count: rq.injectionCount }).toEqual({ target, key: null, count: 0 });
      expect(rq.upstreamTarget).toBe(target);
    }
  });
});

describe("external-vault secrets", () => {
  test("a cache miss resolves asynchronously (one lookup per reference); the next request is synchronous", async () => {
    const { fake, stage } = setup();
    const list = [
      secret("inline", "inline-v", null, { headerName: "x-inline" }),
      secret("v1", null, "op://Prod/Svc/key", { headerName: "authorization", valueFormat: "Bearer {value}" }),
      secret("v2", null, "op://Prod/Svc/key", { paramName: "k" }),
    ];
    const rq = request(list);
    const first = stage.request!(rq);
    expect(first).toBeInstanceOf(Promise);
    expect(await outcome(first)).toBe("pass");
    expect(rq.headers.get("authorization")).toBe("Bearer vault-key");
    expect(rq.headers.get("x-inline")).toBe("inline-v");
    expect(rq.upstreamTarget).toBe("/v1/x?a=1&k=vault-key");
    expect(rq.injectionCount).toBe(3);
    expect(fake.requests).toHaveLength(3);

    const again = request(list);
    expect(stage.request!(again)).not.toBeInstanceOf(Promise);
    expect(again.headers.get("authorization")).toBe("Bearer vault-key");
    expect(fake.requests).toHaveLength(3);
  });

  test("any failure → 502 credential_unavailable, decision error; a cached failure answers synchronously", async () => {
    const { stage } = setup();
    const rq = request([secret("inline", "inline-v", null, { headerName: "x-inline" }), secret("gone", null, "op://Prod/Gone/key", { headerName: "x-k" })]);
    expect(await outcome(stage.request!(rq))).toEqual({ decision: "error", status: 502, headers: expect.any(Object), body: { ...UNAVAILABLE, secret_name: "gone" } });
    const next = stage.request!(request([secret("gone", null, "op://Prod/Gone/key", { headerName: "x-k" })]));
    expect(next).not.toBeInstanceOf(Promise);
    expect(await outcome(next)).toMatchObject({ decision: "error", status: 502 });
  });

  test("a vault value with a line break is refused for a header (the reason appended) but allowed as a parameter", async () => {
    const { stage } = setup();
    expect(await outcome(stage.request!(request([secret("h", null, "op://Prod/Svc/multi", { headerName: "x-k" })])))).toMatchObject({
      decision: "error",
      status: 502,
      body: { message: `${UNAVAILABLE.message} ${VAULT_VALUE_NOT_HEADER_SAFE}` },
    });
    const rq = request([secret("p", null, "op://Prod/Svc/multi", { paramName: "k" })]);
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.upstreamTarget).toBe("/v1/x?a=1&k=line1%0Aline2");
  });

  test("not configured → synchronous 502; a wrong token → 502", async () => {
    const unconfigured = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fakeFetch(new FakeConnect("x")) }) });
    const res = unconfigured.request!(request([secret("v", null, "op://Prod/Svc/key", { headerName: "x-k" })]));
    expect(res).not.toBeInstanceOf(Promise);
    expect(await outcome(res)).toMatchObject({ decision: "error", status: 502 });
    const { stage } = setup("wrong-token");
    expect(await outcome(stage.request!(request([secret("v", null, "op://Prod/Svc/key", { headerName: "x-k" })])))).toMatchObject({ decision: "error", status: 502 });
  });
});
