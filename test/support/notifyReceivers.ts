// Receivers for credgate's notifications (docs/policy.md#notifications), each an HTTPS server on loopback with a
// leaf of the test PKI (credgate trusts it through CREDGATE_UPSTREAM_CA_FILE and reaches it through
// CREDGATE_RESOLVE). Each records what arrived; each answers as the real thing does:
// - a webhook receiver of our own, which checks the signature with its own HMAC code (not credgate's);
// - a fake Slack incoming webhook: it checks the message the way Slack does (a `text` or `blocks`, known
//   block types, url buttons) and answers `200 ok` as text/html, or Slack's error words (`invalid_blocks`, …);
// - a fake ntfy server: it reads the plain-text body and the Title/Priority/Tags/Actions headers (the
//   simple `action, label, url; …` form) and answers the message as JSON, as ntfy's publish endpoint does.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Server } from "bun";
import type { TestPki } from "./upstream.ts";

export interface Arrival {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Webhooks: whether the signature matched the secret the receiver was given (null: no secret yet). */
  verified: boolean | null;
  /** What the receiver answered. */
  status: number;
}

export interface Receiver {
  port: number;
  /** The URL of `path` on this receiver under the test host name `host` (pinned to it with CREDGATE_RESOLVE). */
  url(host: string, path: string): string;
  arrivals: Arrival[];
  /** How to answer the next request on `path` (after the vendor checks); default: the vendor's success. */
  script(path: string, answers: ("ok" | "fail" | "hang")[]): void;
  /** The webhook secret to verify signatures of `path` with. */
  secret(path: string, secret: string): void;
  /** Requests now held open by a `hang` answer; release() answers them all. */
  hanging: number;
  release(): void;
  stop(): Promise<void>;
}

type Kind = "webhook" | "slack" | "ntfy";

/** Our own check of `X-Credgate-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export function signatureValid(secret: string, header: string | undefined, body: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m) return false;
  const expected = createHmac("sha256", secret).update(`${m[1]}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, "hex"));
}

const SLACK_BLOCKS = new Set(["header", "section", "actions", "context", "divider", "image", "input", "rich_text", "file", "video"]);

/** Slack's own checks of an incoming-webhook message, as far as this message uses them; null when it is fine. */
function slackProblem(body: string): string | null {
  let msg: any;
  try {
    msg = JSON.parse(body);
  } catch {
    return "invalid_payload";
  }
  if (typeof msg !== "object" || msg === null) return "invalid_payload";
  if (!msg.text && !Array.isArray(msg.blocks)) return "no_text";
  if (msg.blocks !== undefined) {
    if (!Array.isArray(msg.blocks) || msg.blocks.length > 50) return "invalid_blocks";
    for (const b of msg.blocks) {
      if (!SLACK_BLOCKS.has(b?.type)) return "invalid_blocks";
      if (b.type === "header" && (b.text?.type !== "plain_text" || typeof b.text.text !== "string" || b.text.text.length > 150)) return "invalid_blocks";
      if (b.type === "section" && (typeof b.text?.text !== "string" || b.text.text.length > 3000 || !["plain_text", "mrkdwn"].includes(b.text.type))) return "invalid_blocks";
      if (b.type === "actions") {
        if (!Array.isArray(b.elements) || b.elements.length === 0 || b.elements.length > 25) return "invalid_blocks";
        for (const e of b.elements) {
          if (e.type !== "button" || e.text?.type !== "plain_text" || typeof e.text.text !== "string" || e.text.text.length > 75) return "invalid_blocks";
          if (e.url !== undefined && (typeof e.url !== "string" || e.url.length > 3000 || !/^https?:\/\//.test(e.url))) return "invalid_blocks";
          if (e.style !== undefined && !["primary", "danger"].includes(e.style)) return "invalid_blocks";
        }
      }
    }
  }
  return null;
}

/** ntfy's simple action format: `<action>, <label>, <url>[, clear=true]` separated by `;`. */
function ntfyActions(header: string | undefined): { action: string; label: string; url: string }[] {
  if (!header) return [];
  return header.split(";").map((part) => {
    const [action, label, url] = part.split(",").map((s) => s.trim());
    return { action: action!, label: label!, url: url! };
  });
}

/** ntfy decodes RFC 2047 encoded words in the Title header. */
function decodeWord(value: string | undefined): string | undefined {
  const m = /^=\?UTF-8\?B\?([A-Za-z0-9+/=]+)\?=$/i.exec(value ?? "");
  return m ? Buffer.from(m[1]!, "base64").toString("utf8") : value;
}

export function startReceiver(pki: TestPki, kind: Kind): Receiver {
  const arrivals: Arrival[] = [];
  const scripts = new Map<string, ("ok" | "fail" | "hang")[]>();
  const secrets = new Map<string, string>();
  const hung = new Set<() => void>();
  const server: Server<unknown> = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      const secret = secrets.get(path);
      const arrival: Arrival = { path, headers, body, verified: kind === "webhook" && secret ? signatureValid(secret, headers["x-credgate-signature"], body) : null, status: 0 };
      arrivals.push(arrival);
      const answer = (res: Response) => {
        arrival.status = res.status;
        return res;
      };
      const next = scripts.get(path)?.shift() ?? "ok";
      if (next === "hang") {
        return new Promise<Response>((resolve) => {
          const done = () => {
            hung.delete(done);
            resolve(answer(new Response("late", { status: 200 })));
          };
          hung.add(done);
        });
      }
      if (next === "fail") return answer(new Response("receiver failed on purpose", { status: 503 }));
      switch (kind) {
        case "webhook":
          return answer(arrival.verified === false ? new Response("bad signature", { status: 401 }) : new Response(null, { status: 204 }));
        case "slack": {
          const problem = req.method !== "POST" ? "invalid_payload" : slackProblem(body);
          return answer(problem ? new Response(problem, { status: 400, headers: { "content-type": "text/html" } }) : new Response("ok", { headers: { "content-type": "text/html" } }));
        }
        case "ntfy": {
          const now = Math.floor(Date.now() / 1000);
          return answer(
            Response.json({
              id: crypto.randomUUID().replace(/-/g, "").slice(0, 12),
              time: now,
              expires: now + 43200,
              event: "message",
              topic: path.slice(1),
              title: decodeWord(headers.title),
              message: body,
              priority: Number(headers.priority ?? 3),
              tags: headers.tags ? headers.tags.split(",") : undefined,
              actions: ntfyActions(headers.actions).map((a) => ({ id: crypto.randomUUID().slice(0, 10), ...a, clear: false })),
            }),
          );
        }
      }
    },
  });
  return {
    port: server.port!,
    url: (host, path) => `https://${host}:${server.port}${path}`,
    arrivals,
    script: (path, answers) => scripts.set(path, [...answers]),
    secret: (path, secret) => secrets.set(path, secret),
    get hanging() {
      return hung.size;
    },
    release: () => {
      for (const done of [...hung]) done();
    },
    stop: async () => {
      for (const done of [...hung]) done();
      await server.stop(true);
    },
  };
}
