// The secret stores' outbound path (docs/injection.md#secret-stores) with the real egress guard and outbound door
// against a real local HTTPS server: pinned by CREDGATE_RESOLVE and trusted through the upstream CA file; in cloud
// mode a store on a private address is refused (StoreError egress_denied, nothing sent) until CREDGATE_EGRESS_ALLOW
// names it; redirects are not followed; an unreachable store is a StoreError that does not quote anything.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EgressGuard } from "../../src/gateway/egressGuard.ts";
import { parseCidrList } from "../../src/runtime/configOutbound.ts";
import { Outbound } from "../../src/services/outbound.ts";
import { storeFetch } from "../../src/services/storeFetch.ts";
import { StoreError } from "../../src/vault/stores/types.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "vault.store.test";
let pki: TestPki;
let up: TestUpstream;

beforeAll(() => {
  pki = makePki([HOST]);
  up = startUpstream(pki);
});
afterAll(async () => {
  await up?.stop();
});

function fetcher(mode: "self-hosted" | "cloud", allow = "") {
  const outbound = new Outbound({ resolve: new Map([[`${HOST}:${up.port}`, "127.0.0.1"]]), upstreamCaFile: pki.caFile });
  const egress = new EgressGuard({ mode, egressAllow: parseCidrList("CREDGATE_EGRESS_ALLOW", allow), egressDeny: [], port: 1, gatewayPort: 2 }, outbound);
  return storeFetch(outbound, egress);
}

const url = (path: string) => new URL(`https://${HOST}:${up.port}${path}`);
const signal = () => AbortSignal.timeout(10_000);

describe("store requests take the gateway's egress path", () => {
  test("self-hosted: a pinned loopback store is reached over verified TLS", async () => {
    const res = await fetcher("self-hosted")(url("/v1/secret/data/app"), { signal: signal(), headers: { "x-vault-token": "t" } });
    expect(res.status).toBe(200);
    expect(up.seen.at(-1)).toMatchObject({ url: "/v1/secret/data/app", headers: { "x-vault-token": "t" } });
  });

  test("cloud: a private address is refused before anything is sent; CREDGATE_EGRESS_ALLOW lets it through", async () => {
    const before = up.seen.length;
    let err: unknown;
    try {
      await fetcher("cloud")(url("/denied"), { signal: signal() });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).reason).toBe("egress_denied");
    expect(up.seen.length).toBe(before);
    expect((await fetcher("cloud", "127.0.0.1/32")(url("/allowed"), { signal: signal() })).status).toBe(200);
  });

  test("redirects are not followed; an unreachable store is a StoreError", async () => {
    up.handle((req) => (new URL(req.url).pathname === "/moved" ? new Response(null, { status: 302, headers: { location: "https://elsewhere.test/" } }) : undefined));
    const res = await fetcher("self-hosted")(url("/moved"), { signal: signal() });
    expect(res.status).toBe(302);
    const closed = new Outbound({ resolve: new Map([[`${HOST}:1`, "127.0.0.1"]]), upstreamCaFile: pki.caFile });
    const f = storeFetch(closed, new EgressGuard({ mode: "self-hosted", egressAllow: [], egressDeny: [], port: 10, gatewayPort: 20 }, closed));
    let err: unknown;
    try {
      await f(new URL(`https://${HOST}:1/x`), { signal: signal() });
    } catch (e) {
      err = e;
    }
    expect((err as StoreError).reason).toBe("unreachable");
  });
});
