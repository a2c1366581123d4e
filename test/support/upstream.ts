// Real TLS upstream servers for gateway tests: a throwaway CA and leaf made with the openssl CLI (not our
// own CA code), and Bun.serve with that leaf, recording every request it receives. Tests reach it through
// credgate with CREDGATE_UPSTREAM_CA_FILE=<ca> and CREDGATE_RESOLVE=<host>:<port>:127.0.0.1.
import type { Server, ServerWebSocket } from "bun";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./tmp.ts";

export interface TestPki {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

function openssl(args: string[], cwd: string): void {
  const r = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr.toString()}`);
}

/** A CA and one leaf valid for every name in `names` (DNS names and IP literals). */
export function makePki(names: string[]): TestPki {
  const dir = tempDir();
  const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(",");
  writeFileSync(join(dir, "leaf.ext"), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`);
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
  openssl(["req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "2", "-subj", "/CN=credgate test upstream CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", "ca.pem"], dir);
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "leaf.key"], dir);
  openssl(["req", "-new", "-key", "leaf.key", "-subj", `/CN=${names[0]}`, "-out", "leaf.csr"], dir);
  openssl(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-sha256", "-extfile", "leaf.ext", "-out", "leaf.pem"], dir);
  return { dir, caFile: join(dir, "ca.pem"), certFile: join(dir, "leaf.pem"), keyFile: join(dir, "leaf.key") };
}

export interface SeenRequest {
  method: string;
  /** Host header as received. */
  host: string;
  /** Path and query as received. */
  url: string;
  headers: Record<string, string>;
  bodyBytes: number;
  bodySha256: string;
}

export type UpstreamHandler = (req: Request, seen: SeenRequest) => Response | Promise<Response> | undefined;

export interface TestUpstream {
  server: Server<unknown>;
  port: number;
  seen: SeenRequest[];
  /** Replaces the default echo for requests it answers (returning undefined falls back to the echo). */
  handle(fn: UpstreamHandler): void;
  stop(): Promise<void>;
}

/**
 * An HTTPS upstream. By default it answers every request with JSON echoing what it saw; WebSocket upgrades on
 * `/ws` are accepted and echo every message back prefixed with `echo:`.
 */
export function startUpstream(pki: TestPki): TestUpstream {
  const seen: SeenRequest[] = [];
  let custom: UpstreamHandler | null = null;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    maxRequestBodySize: 1024 * 1024 * 1024,
    async fetch(req, srv) {
      const url = new URL(req.url);
      const headers = Object.fromEntries(req.headers);
      if (url.pathname === "/ws" && req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        seen.push({ method: req.method, host: req.headers.get("host") ?? "", url: url.pathname + url.search, headers, bodyBytes: 0, bodySha256: "" });
        if (srv.upgrade(req, { data: undefined, headers: { "x-upstream-secret-header": "should-not-reach-agent" } })) return undefined;
      }
      const record: SeenRequest = { method: req.method, host: req.headers.get("host") ?? "", url: url.pathname + url.search, headers, bodyBytes: 0, bodySha256: "" };
      seen.push(record);
      const answer = custom ? await custom(req, record) : undefined;
      if (answer) return answer;
      const body = new Uint8Array(await req.arrayBuffer());
      record.bodyBytes = body.byteLength;
      record.bodySha256 = new Bun.CryptoHasher("sha256").update(body).digest("hex");
      return Response.json({ method: req.method, url: record.url, host: record.host, headers, bodyBytes: record.bodyBytes, bodySha256: record.bodySha256 });
    },
    websocket: {
      message(ws: ServerWebSocket<unknown>, message) {
        ws.send(`echo:${typeof message === "string" ? message : Buffer.from(message).toString()}`);
      },
    },
  });
  return {
    server,
    port: server.port!,
    seen,
    handle(fn) {
      custom = fn;
    },
    stop: async () => {
      await server.stop(true);
    },
  };
}
