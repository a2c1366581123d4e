// Routing by the path alone (docs/api.md#routing): the real process, spoken to over raw sockets so that
// the Host header can be anything — short (1-3 characters, which once shifted where the path was read
// from), empty, malformed — on the API port and on the gateway port's control paths. The route is chosen by
// the request target only, and authentication still applies to it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startCredgate, type RunningCredgate } from "../support/process.ts";

let c: RunningCredgate;
beforeAll(async () => {
  c = await startCredgate();
});
afterAll(async () => {
  await c?.stop();
});

interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** One request on its own connection, written byte for byte as given (`host: null` sends no Host line). */
async function raw(port: number, method: string, target: string, host: string | null, headers: Record<string, string> = {}): Promise<RawResponse> {
  const lines = [`${method} ${target} HTTP/1.1`];
  if (host !== null) lines.push(`Host: ${host}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  lines.push("Connection: close", "", "");
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, "127.0.0.1", () => socket.write(lines.join("\r\n")));
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("end", () => resolve(Buffer.concat(chunks)));
    socket.on("error", reject);
  });
  const text = bytes.toString("utf8");
  const split = text.indexOf("\r\n\r\n");
  const [statusLine, ...headerLines] = text.slice(0, split).split("\r\n");
  const parsed = new Map(headerLines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as const));
  let body = text.slice(split + 4);
  if (parsed.get("transfer-encoding") === "chunked") {
    let out = "";
    for (let rest = body; ; ) {
      const eol = rest.indexOf("\r\n");
      const size = parseInt(rest.slice(0, eol), 16);
      if (!size) break;
      out += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    body = out;
  }
  return { status: Number(statusLine!.split(" ")[1]), headers: parsed, body };
}

const unknown = (method: string, path: string) => ({ error: { message: `Unrecognized request URL (${method}: ${path}).`, type: "not_found_error" } });
const UNAUTHORIZED = { error: { message: "Invalid API key or token.", type: "authentication_error" } };

// Short hosts (the old fault), the usual ones, and hosts Bun does not take as a host name (then the request
// URL is the bare target): each must route exactly like `Host: localhost`.
const HOSTS = ["x", "ab", "abc", "", "localhost", "127.0.0.1:1", "[::1]", "a/b", "a?b", "x".repeat(300)];

describe("the API port", () => {
  test.each(HOSTS)("Host %p: /v1/agents is the agent list (401 without a key), /aa/v1/agents and /v/agents are unknown", async (host) => {
    const auth = { authorization: `Bearer ${c.keys.projectApiKey}` };
    const list = await raw(c.apiPort, "GET", "/v1/agents", host, auth);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body).map((a: { identifier: string }) => a.identifier)).toEqual(["default"]);
    const alias = await raw(c.apiPort, "GET", "/api/agents?x=1", host, auth);
    expect(JSON.parse(alias.body)).toEqual(JSON.parse(list.body));
    const anonymous = await raw(c.apiPort, "GET", "/v1/agents", host);
    expect([anonymous.status, JSON.parse(anonymous.body)]).toEqual([401, UNAUTHORIZED]);
    // Paths that end in a real route once a few characters are dropped from their start.
    for (const path of ["/aa/v1/agents", "/a/v1/agents", "/abc/v1/agents", "/v/agents", "/xx/api/agents"]) {
      const r = await raw(c.apiPort, "GET", path, host, auth);
      expect([r.status, JSON.parse(r.body)]).toEqual([404, unknown("GET", path)]);
    }
    // A route without authentication, and a write: chosen by the path too.
    const health = await raw(c.apiPort, "GET", "/v1/health", host);
    expect([health.status, JSON.parse(health.body).status]).toEqual([200, "ok"]);
    const shiftedHealth = await raw(c.apiPort, "GET", "/zz/v1/health", host);
    expect(shiftedHealth.status).toBe(404);
    const shiftedWrite = await raw(c.apiPort, "DELETE", `/aa/v1/agents/${JSON.parse(list.body)[0].id}`, host, auth);
    expect([shiftedWrite.status, JSON.parse(shiftedWrite.body)]).toEqual([404, unknown("DELETE", `/aa/v1/agents/${JSON.parse(list.body)[0].id}`)]);
  });

  test("the dashboard's pages are chosen by the path too", async () => {
    for (const host of ["x", "ab", ""]) {
      const page = await raw(c.apiPort, "GET", "/", host);
      expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
      const shifted = await raw(c.apiPort, "GET", "/aa/v1/openapi.json", host);
      expect(shifted.status).toBe(404);
      const doc = await raw(c.apiPort, "GET", "/v1/openapi.json", host);
      expect(JSON.parse(doc.body).openapi).toBe("3.1.0");
    }
  });

  test("a request without a Host header is refused before routing (HTTP/1.1 requires one)", async () => {
    const r = await raw(c.apiPort, "GET", "/v1/health", null);
    expect(r.status).toBe(400);
  });
});

describe("the gateway port's control paths", () => {
  test.each(["x", "ab", "abc", "localhost"])("Host %p: /v1/health answers, /aa/v1/health is unknown", async (host) => {
    const health = await raw(c.gatewayPort, "GET", "/v1/health", host);
    expect([health.status, JSON.parse(health.body).status]).toEqual([200, "ok"]);
    const shifted = await raw(c.gatewayPort, "GET", "/aa/v1/health", host);
    expect([shifted.status, JSON.parse(shifted.body)]).toEqual([404, unknown("GET", "/aa/v1/health")]);
  });
});
