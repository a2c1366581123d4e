// The egress stage (docs/guards.md#egress-guard) with the real guard of a self-hosted configuration: a
// CONNECT to a refused address is answered 403 before the tunnel opens, and its verdict stays on the tunnel
// for a passthrough dial; a request's address is judged again and kept as the one to dial; a name that does
// not resolve fails the request (502), but not the CONNECT.
import { describe, expect, test } from "bun:test";
import { EgressGuard } from "../../../src/gateway/egressGuard.ts";
import { egressStage } from "../../../src/gateway/stages/egress.ts";
import { testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { loadConfig } from "../../../src/runtime/config.ts";
import { Outbound } from "../../../src/services/outbound.ts";
import { outcome } from "./helpers.ts";

const config = loadConfig({ dataDir: "/nonexistent", port: 10254, gatewayPort: 10255 }, {});
const stage = egressStage({ egress: new EgressGuard(config, new Outbound(config)) });
const UNRESOLVABLE = "nothing-here.invalid";

const metadataRefusal = {
  error: "egress_denied",
  message: "credgate does not connect to 169.254.169.254 (169.254.169.254): the destination is an internal or reserved address.",
  host: "169.254.169.254",
  address: "169.254.169.254",
};

describe("connect", () => {
  test("the metadata address → 403 egress_denied, decision blocked; the verdict stays on the tunnel", async () => {
    const tunnel = testTunnel({ authority: "169.254.169.254:443" });
    expect(await outcome(stage.connect!(tunnel))).toEqual({ decision: "blocked", status: 403, headers: {}, body: metadataRefusal });
    expect(tunnel.egress?.kind).toBe("denied");
  });

  test("an allowed address passes, with the address to dial; an unresolvable name passes too (its requests fail)", async () => {
    const tunnel = testTunnel({ authority: "127.0.0.1:8443" });
    expect(await outcome(stage.connect!(tunnel))).toBe("pass");
    expect(tunnel.egress).toEqual({ kind: "dial", target: expect.objectContaining({ address: "127.0.0.1", port: 8443 }) });
    const unresolved = testTunnel({ authority: `${UNRESOLVABLE}:443` });
    expect(await outcome(stage.connect!(unresolved))).toBe("pass");
    expect(unresolved.egress?.kind).toBe("unresolved");
  });

  test("credgate's own gateway port is refused", async () => {
    const o = await outcome(stage.connect!(testTunnel({ authority: "127.0.0.1:10255" })));
    expect(o).toMatchObject({ decision: "blocked", status: 403, body: { error: "egress_denied", address: "127.0.0.1" } });
  });

  test("and its database listener's port (docs/databases.md#the-listener), unless the listener is off", async () => {
    const o = await outcome(stage.connect!(testTunnel({ authority: "127.0.0.1:10256" })));
    expect(o).toMatchObject({ decision: "blocked", status: 403, body: { error: "egress_denied", address: "127.0.0.1" } });
    const off = loadConfig({ dataDir: "/nonexistent", port: 10254, gatewayPort: 10255, dbPort: 0 }, {});
    const offStage = egressStage({ egress: new EgressGuard(off, new Outbound(off)) });
    expect(await outcome(offStage.connect!(testTunnel({ authority: "127.0.0.1:10256" })))).toBe("pass");
  });
});

describe("request", () => {
  test("an allowed address passes and is what will be dialled", async () => {
    const rq = testRequest({ target: "http://127.0.0.1:8080/x" });
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.dial).toEqual(expect.objectContaining({ address: "127.0.0.1", port: 8080 }));
  });

  test("a refused address → 403 egress_denied (x-should-retry: false), decision blocked, nothing to dial", async () => {
    const rq = testRequest({ target: "http://0xa9fea9fe/latest/meta-data/" });
    const o = await outcome(stage.request!(rq));
    expect(o).toMatchObject({ decision: "blocked", status: 403, headers: { "x-should-retry": "false" }, body: metadataRefusal });
    expect(rq.dial).toBeNull();
  });

  test("a name that does not resolve → 502 upstream_unreachable, decision error", async () => {
    const o = await outcome(stage.request!(testRequest({ tunnel: UNRESOLVABLE, target: "/x" })));
    expect(o).toMatchObject({ decision: "error", status: 502, body: { error: "upstream_unreachable", message: expect.stringMatching(/^credgate could not connect to nothing-here\.invalid:443: E[A-Z]+$/) } });
  });
});
