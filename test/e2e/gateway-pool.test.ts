// Pooled upstream connections (docs/gateway.md#forwarding) through the real process: a request sent on a kept connection
// that the upstream had meanwhile closed, with nothing answered, goes again on a fresh connection when it has no
// body; a request with a body is not sent twice (502). The upstream is a TLS server of this test that drops
// every connection's second request unanswered, as a server does that closes idle connections at its own pace.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as tls from "node:tls";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { gatewayCa, openTlsTunnel, rawRequest, resolveEntries } from "../support/gateway.ts";

const HOST = "pool.gateway.test";

let cg: RunningCredgate;
let server: tls.Server;
let port: number;
let ca: { pem: string; file: string };
/** What the upstream saw, in order: the connection's number and the request line. */
const seen: { connection: number; line: string }[] = [];

beforeAll(async () => {
  const pki = makePki([HOST]);
  let connections = 0;
  server = tls.createServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile), ALPNProtocols: ["http/1.1"] }, (sock) => {
    const connection = ++connections;
    let requests = 0;
    let buf = "";
    sock.on("error", () => {});
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
        const head = buf.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        seen.push({ connection, line: head.slice(0, head.indexOf("\r\n")) });
        if (++requests === 2) {
          sock.destroy();
          return;
        }
        const body = `answered on connection ${connection}`;
        sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      }
    });
  });
  port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], port) } });
  ca = await gatewayCa(cg);
});

afterAll(async () => {
  await cg?.stop();
  server?.close();
});

async function viaGateway(method: string, path: string, body?: string) {
  const t = await openTlsTunnel(cg.gatewayPort, `${HOST}:${port}`, cg.keys.defaultAgentToken, ca.pem, HOST);
  t.tls.write(rawRequest(method, path, `${HOST}:${port}`, [], body));
  const res = await t.reader.response();
  t.tls.destroy();
  return res;
}

describe("a pooled connection the upstream closed", () => {
  test("a request without a body goes again on a fresh connection; one with a body gets 502, sent once", async () => {
    const first = await viaGateway("GET", "/one");
    expect(first.status).toBe(200);
    expect(first.text).toBe("answered on connection 1");

    // Sent on the pooled connection 1, which drops it unanswered: sent again on connection 2.
    const second = await viaGateway("GET", "/two");
    expect(second.status).toBe(200);
    expect(second.text).toBe("answered on connection 2");
    expect(seen.filter((s) => s.line === "GET /two HTTP/1.1").map((s) => s.connection)).toEqual([1, 2]);

    // Connection 2 is pooled now and drops its second request: a body is never sent twice.
    const third = await viaGateway("POST", "/three", "payload");
    expect(third.status).toBe(502);
    expect(JSON.parse(third.text)).toMatchObject({ error: "upstream_unreachable" });
    expect(seen.filter((s) => s.line === "POST /three HTTP/1.1").map((s) => s.connection)).toEqual([2]);
  });
});
