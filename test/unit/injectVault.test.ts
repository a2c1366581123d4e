// The inject stage with external-vault secrets: synchronous when every value is inline or cached, one
// asynchronous lookup per missing reference otherwise, and 502 credential_unavailable (nothing applied
// further) on any vault failure or a vault value that would break a header.
import { beforeAll, describe, expect, test } from "bun:test";
import { compileHostPattern, compilePathPattern } from "../../src/core/patterns.ts";
import type { InjectionConfigShape } from "../../src/core/secretRules.ts";
import type { GatewayContext } from "../../src/gateway/context.ts";
import type { ProxyRequest } from "../../src/gateway/request.ts";
import type { CompiledSecret } from "../../src/gateway/snapshot.ts";
import { inject } from "../../src/gateway/stages/inject.ts";
import { log } from "../../src/observability/log.ts";
import { VaultResolver } from "../../src/vault/resolver.ts";
import { FakeConnect, fakeFetch } from "../support/opConnect.ts";
import { credentials, proxyRequest } from "../support/proxyRequest.ts";

beforeAll(() => log.setQuiet(true));

const HOST = "api.vault.test";

function secret(name: string, value: string | null, opRef: string | null, injection: InjectionConfigShape, createdAt = "2025-01-01T00:00:00.000Z"): CompiledSecret {
  return {
    id: name,
    name,
    scope: "project",
    tier: 3,
    catchAllPath: true,
    createdAt,
    hostMatch: compileHostPattern(HOST),
    pathMatch: compilePathPattern(null),
    value,
    opRef,
    type: "generic",
    authMode: "api-key",
    injection,
  };
}

function request(secrets: CompiledSecret[]): ProxyRequest {
  const rq = proxyRequest({ host: HOST, target: "/v1/x?a=1" });
  rq.credentials = credentials({ injectable: secrets });
  return rq;
}

function setup(token = "tok") {
  const fake = new FakeConnect("tok");
  const vault = new VaultResolver({ host: "http://connect.test", token, fetch: fakeFetch(fake) });
  const v = fake.vault("Prod");
  fake.item(v, "Svc", { key: "vault-key", multi: "line1\nline2", slug: "abc" });
  return { fake, g: { vault } as unknown as GatewayContext };
}

describe("inject stage with external-vault secrets", () => {
  test("no vault secret: synchronous, as before", async () => {
    const { g } = setup();
    const rq = request([secret("inline", "inline-v", null, { headerName: "x-inline" })]);
    expect(inject(rq, g)).toBeUndefined();
    expect(rq.headers.get("x-inline")).toBe("inline-v");
    expect(rq.injectionCount).toBe(1);
  });

  test("a cache miss resolves asynchronously (one lookup per reference); the next request is synchronous", async () => {
    const { fake, g } = setup();
    const list = [
      secret("inline", "inline-v", null, { headerName: "x-inline" }),
      secret("v1", null, "op://Prod/Svc/key", { headerName: "authorization", valueFormat: "Bearer {value}" }),
      secret("v2", null, "op://Prod/Svc/key", { paramName: "k" }),
    ];
    const rq = request(list);
    const first = inject(rq, g);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBeUndefined();
    expect(rq.headers.get("authorization")).toBe("Bearer vault-key");
    expect(rq.headers.get("x-inline")).toBe("inline-v");
    expect(rq.upstreamTarget).toBe("/v1/x?a=1&k=vault-key");
    expect(rq.injectionCount).toBe(3);
    expect(fake.requests).toHaveLength(3);

    const again = request(list);
    expect(inject(again, g)).toBeUndefined();
    expect(again.headers.get("authorization")).toBe("Bearer vault-key");
    expect(fake.requests).toHaveLength(3);
  });

  test("any failure → 502 credential_unavailable, decision error", async () => {
    const { g } = setup();
    const rq = request([secret("inline", "inline-v", null, { headerName: "x-inline" }), secret("gone", null, "op://Prod/Gone/key", { headerName: "x-k" })]);
    const res = (await inject(rq, g)) as Response;
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: "credential_unavailable", message: `credgate could not obtain the credential for ${HOST}, so the request was not forwarded.` });
    expect(rq.decision).toBe("error");
    // The cached failure answers synchronously next time.
    const next = inject(request([secret("gone", null, "op://Prod/Gone/key", { headerName: "x-k" })]), g);
    expect(next).toBeInstanceOf(Response);
    expect((next as Response).status).toBe(502);
  });

  test("a vault value with a line break is refused for a header but allowed as a parameter", async () => {
    const { g } = setup();
    expect(((await inject(request([secret("h", null, "op://Prod/Svc/multi", { headerName: "x-k" })]), g)) as Response).status).toBe(502);
    const rq = request([secret("p", null, "op://Prod/Svc/multi", { paramName: "k" })]);
    expect(inject(rq, g)).toBeUndefined();
    expect(rq.upstreamTarget).toBe("/v1/x?a=1&k=line1%0Aline2");
  });

  test("not configured → synchronous 502; a wrong token → 502", async () => {
    const unconfigured = { vault: new VaultResolver({ host: null, token: null, fetch: fakeFetch(new FakeConnect("x")) }) } as unknown as GatewayContext;
    const res = inject(request([secret("v", null, "op://Prod/Svc/key", { headerName: "x-k" })]), unconfigured);
    expect(res).toBeInstanceOf(Response);
    expect((res as Response).status).toBe(502);
    const { g } = setup("wrong-token");
    expect(((await inject(request([secret("v", null, "op://Prod/Svc/key", { headerName: "x-k" })]), g)) as Response).status).toBe(502);
  });
});
