// A recording HTTP/1.1 origin for message-framing tests (docs/gateway.md#message-framing): a raw TLS server of the
// test's own — no HTTP library between the wire and the record — that parses every request on a connection the
// way a keep-alive origin does (one after another, Content-Length or chunked framing, whatever bytes come next
// taken as the next request), and records each one it has read whole. It is what a desynchronised connection
// looks like from the far side: a smuggled request shows up here as a request nobody logged.
//
// Answers: a path starting `/early` is answered as soon as its head is read (as many servers answer a GET
// without reading its body), any other once its body has been read; in request order, each one `delay=<ms>`
// in its query asks for after the one before (and `junk=<ms>` an unsolicited response that long after it); the answer is JSON
// `{method, path, seq, key}` (`key`: the request's x-api-key, so a response that reaches the wrong agent carries
// the other agent's injected value); an HTTP/1.0 request is answered with `connection: close` and the connection
// closed after it. A head the parser cannot read is answered 400 and the connection closed.
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import * as tls from "node:tls";
import type { TestPki } from "./upstream.ts";

export interface RecordedRequest {
  /** The connection it came on (1, 2, …), and its place among all requests (0, 1, …). */
  conn: number;
  seq: number;
  method: string;
  path: string;
  version: string;
  /** Lowercased names; repeats joined with ", ". */
  headers: Record<string, string>;
  /** The raw head as received (request line and fields, without the blank line). */
  rawHead: string;
  body: Buffer;
}

export interface RecordingOrigin {
  port: number;
  requests: RecordedRequest[];
  connections: number;
  /** Heads the parser refused (answered 400). */
  refused: number;
  /** Per open connection: the request whose body is being read (path, bytes so far), for failure messages. */
  reading: Map<number, string>;
  /** Requests whose connection closed while their body was being read. */
  cutOff: string[];
  stop(): Promise<void>;
}

const MAX_HEAD = 64 * 1024;

export async function startRecordingOrigin(pki: TestPki): Promise<RecordingOrigin> {
  const sockets = new Set<tls.TLSSocket>();
  const origin: RecordingOrigin = { port: 0, requests: [], connections: 0, refused: 0, reading: new Map(), cutOff: [], stop: async () => {} };
  const server = tls.createServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile), ALPNProtocols: ["http/1.1"] }, (socket) => {
    const conn = ++origin.connections;
    const peerPort = socket.remotePort;
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      const was = origin.reading.get(conn);
      if (was !== undefined) origin.cutOff.push(`${was} (connection ${conn} port ${peerPort} closed)`);
      origin.reading.delete(conn);
    });
    socket.on("error", () => {});
    let buf: Buffer = Buffer.alloc(0);
    /** The request being read: its head, and how its body is framed. */
    let current: { method: string; path: string; version: string; headers: Record<string, string>; rawHead: string; length: number; chunked: boolean; answered: boolean; body: Buffer[] } | null = null;
    let closing = false;

    /** Answers leave in request order, each after its `delay=<ms>` (a slow endpoint holds up the ones after it). */
    let answers = Promise.resolve();
    const answer = (r: NonNullable<typeof current>, seq: number | null) => {
      if (r.answered || closing) return;
      r.answered = true;
      const text = JSON.stringify({ method: r.method, path: r.path, seq, key: r.headers["x-api-key"] ?? null });
      const close = r.version === "HTTP/1.0";
      const delay = Number(/[?&]delay=(\d+)/.exec(r.path)?.[1] ?? 0);
      answers = answers.then(async () => {
        if (delay > 0) await Bun.sleep(delay);
        if (socket.destroyed) return;
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${close ? "connection: close\r\n" : ""}\r\n${text}`);
        if (close) socket.end();
        // `junk=<ms>`: that long after the answer, a response nobody asked for.
        const junk = /[?&]junk=(\d+)/.exec(r.path)?.[1];
        if (junk !== undefined) setTimeout(() => socket.destroyed || socket.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\njunk!"), Number(junk));
      });
    };

    const refuse = () => {
      origin.refused++;
      closing = true;
      socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    };

    /** Reads a chunked body from `buf`; the body, or null when more bytes are needed; throws when malformed. */
    const readChunked = (): { body: Buffer; used: number } | null => {
      const parts: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = buf.indexOf("\r\n", at);
        if (eol < 0) return null;
        const size = parseInt(buf.subarray(at, eol).toString("latin1").split(";")[0]!, 16);
        if (!Number.isFinite(size) || size < 0) throw new Error("bad chunk size");
        at = eol + 2;
        if (size === 0) {
          // No trailers from the gateway's HTTP/1.1 side: the blank line ends the body.
          if (buf.length < at + 2) return null;
          if (buf[at] !== 13 || buf[at + 1] !== 10) throw new Error("trailers not expected");
          return { body: Buffer.concat(parts), used: at + 2 };
        }
        if (buf.length < at + size + 2) return null;
        parts.push(buf.subarray(at, at + size));
        if (buf[at + size] !== 13 || buf[at + size + 1] !== 10) throw new Error("chunk not followed by CRLF");
        at += size + 2;
      }
    };

    const parse = () => {
      while (!closing) {
        if (current === null) {
          const end = buf.indexOf("\r\n\r\n");
          if (end < 0) {
            if (buf.length > MAX_HEAD) refuse();
            return;
          }
          const rawHead = buf.subarray(0, end).toString("latin1");
          buf = buf.subarray(end + 4);
          const [line, ...fields] = rawHead.split("\r\n");
          const m = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/.exec(line!);
          if (!m) return refuse();
          const headers: Record<string, string> = {};
          for (const f of fields) {
            const colon = f.indexOf(":");
            if (colon <= 0) return refuse();
            const name = f.slice(0, colon).trim().toLowerCase();
            const value = f.slice(colon + 1).trim();
            headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
          }
          const te = headers["transfer-encoding"];
          const cl = headers["content-length"];
          if (te !== undefined && (te.toLowerCase() !== "chunked" || cl !== undefined)) return refuse();
          if (cl !== undefined && !/^\d+$/.test(cl)) return refuse();
          current = { method: m[1]!, path: m[2]!, version: m[3]!, headers, rawHead, length: cl === undefined ? 0 : Number(cl), chunked: te !== undefined, answered: false, body: [] };
          if (current.path.startsWith("/early")) answer(current, null);
        }
        const r = current;
        origin.reading.set(conn, `${r.method} ${r.path}: ${buf.length} of ${r.chunked ? "chunked" : r.length} bytes`);
        let body: Buffer;
        if (r.chunked) {
          let got: { body: Buffer; used: number } | null;
          try {
            got = readChunked();
          } catch {
            return refuse();
          }
          if (got === null) return;
          body = got.body;
          buf = buf.subarray(got.used);
        } else {
          if (buf.length < r.length) return;
          body = Buffer.from(buf.subarray(0, r.length));
          buf = buf.subarray(r.length);
        }
        current = null;
        origin.reading.delete(conn);
        const seq = origin.requests.length;
        origin.requests.push({ conn, seq, method: r.method, path: r.path, version: r.version, headers: r.headers, rawHead: r.rawHead, body });
        if (!r.answered) answer(r, seq);
        // HTTP/1.0: the connection ends after this answer (written above, in turn).
        if (r.version === "HTTP/1.0") closing = true;
      }
    };

    socket.on("data", (chunk: Buffer) => {
      if (closing) return;
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      parse();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  origin.port = (server.address() as { port: number }).port;
  origin.stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return origin;
}

/**
 * The same record from an h2 origin (node:http2, h2 only): each stream is recorded once its END_STREAM has
 * come (a stream reset before that never is), and answered then with the same JSON. There is no early answer.
 */
export async function startRecordingH2Origin(pki: TestPki): Promise<RecordingOrigin> {
  const origin: RecordingOrigin = { port: 0, requests: [], connections: 0, refused: 0, reading: new Map(), cutOff: [], stop: async () => {} };
  const server = http2.createSecureServer({ cert: readFileSync(pki.certFile), key: readFileSync(pki.keyFile), allowHTTP1: false });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  server.on("secureConnection", () => origin.connections++);
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const conn = origin.connections;
    const parts: Buffer[] = [];
    stream.on("error", () => {});
    stream.on("data", (c: Buffer) => parts.push(c));
    stream.on("end", () => {
      if (stream.destroyed) return;
      const flat: Record<string, string> = {};
      for (const [k, v] of Object.entries(headers)) if (!k.startsWith(":")) flat[k] = String(v);
      const method = String(headers[":method"]);
      const path = String(headers[":path"]);
      const seq = origin.requests.length;
      origin.requests.push({ conn, seq, method, path, version: "HTTP/2", headers: flat, rawHead: "", body: Buffer.concat(parts) });
      stream.respond({ ":status": 200, "content-type": "application/json" });
      stream.end(JSON.stringify({ method, path, seq, key: flat["x-api-key"] ?? null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  origin.port = (server.address() as { port: number }).port;
  origin.stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    });
  return origin;
}
