// A fake GitHub for the GitHub App tests, speaking GitHub's wire format over TLS for api.github.com and
// github.com (reached with CREDGATE_CONNECT_TO): `POST /app/installations/<id>/access_tokens` verifies the app's
// RS256 JWT with the app's public key (signature, `iss`, `iat`/`exp` within GitHub's 10 minutes) and answers 201
// `{token, expires_at}` as GitHub does, counting every mint; the API (`api.github.com`) takes only
// `Authorization: Bearer <a minted token>` (or GitHub's `token` scheme); git over HTTPS on `github.com` takes only
// Basic `x-access-token:<a minted token>` and answers 401 with a Basic challenge otherwise, as GitHub does. On
// either host, `/reflect` (with a good token) answers with the Authorization it received, in the body and a
// header, as an origin that reflects the request would (the echo guard's tests).
import { createPublicKey, type KeyObject } from "node:crypto";
import { randomBytes } from "node:crypto";
import type { Server } from "bun";
import type { UpstreamHandler } from "./upstream.ts";
import type { TestPki } from "./upstream.ts";
import { lifetimeOk, rs256Claims } from "./rs256Jwt.ts";

export interface FakeGithub {
  server: Server<unknown>;
  port: number;
  /** Every mint GitHub granted, in order. */
  mints: { installationId: number; appId: number; token: string }[];
  /** Mint attempts refused, with why. */
  refused: string[];
  /** Tokens seen on API and git requests. */
  used: { host: string; path: string; token: string | null; scheme: string | null }[];
  /** How long a mint takes (so concurrent callers overlap), ms. */
  mintDelayMs: number;
  /** How long minted tokens live (GitHub: an hour). */
  tokenLifetimeMs: number;
  /** Answer mints with this status instead (e.g. 500), when set. */
  failMintsWith: number | null;
  stop(): Promise<void>;
}

function verifyJwt(jwt: string, key: KeyObject, appId: number): string | null {
  const claims = rs256Claims(jwt, key);
  if (typeof claims === "string") return claims;
  if (String(claims.iss) !== String(appId)) return `iss ${claims.iss}`;
  if (!lifetimeOk(claims, 660)) return "iat/exp out of range";
  return null;
}

export function startFakeGithub(pki: TestPki, app: { appId: number; publicKeyPem: string }, git: UpstreamHandler): FakeGithub {
  const key = createPublicKey(app.publicKeyPem);
  const live = new Set<string>();
  const fake: FakeGithub = {
    server: null as unknown as Server<unknown>,
    port: 0,
    mints: [],
    refused: [],
    used: [],
    mintDelayMs: 300,
    tokenLifetimeMs: 3600_000,
    failMintsWith: null,
    stop: () => fake.server.stop(true),
  };
  fake.server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      const auth = req.headers.get("authorization");
      const mint = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
      if (host === "api.github.com" && mint && req.method === "POST") {
        await Bun.sleep(fake.mintDelayMs);
        const why = auth?.startsWith("Bearer ") ? verifyJwt(auth.slice(7), key, app.appId) : "no bearer JWT";
        if (why) {
          fake.refused.push(why);
          return Response.json({ message: "A JSON web token could not be decoded", documentation_url: "https://docs.github.com/rest" }, { status: 401 });
        }
        if (fake.failMintsWith !== null) return Response.json({ message: "Server Error" }, { status: fake.failMintsWith });
        const token = `ghs_${randomBytes(18).toString("base64url")}`;
        live.add(token);
        fake.mints.push({ installationId: Number(mint[1]), appId: app.appId, token });
        return Response.json({ token, expires_at: new Date(Date.now() + fake.tokenLifetimeMs).toISOString().replace(/\.\d{3}Z$/, "Z"), permissions: { contents: "read" }, repository_selection: "all" }, { status: 201 });
      }
      if (host === "api.github.com") {
        const m = /^(Bearer|token) (.+)$/.exec(auth ?? "");
        fake.used.push({ host, path: url.pathname, token: m?.[2] ?? null, scheme: m?.[1] ?? null });
        if (!m || !live.has(m[2]!)) return Response.json({ message: "Bad credentials" }, { status: 401 });
        if (url.pathname === "/reflect") return Response.json({ authorization: auth }, { headers: { "x-reflected-authorization": auth! } });
        return Response.json({ total_count: 1, repositories: [{ full_name: "acme/repo" }] });
      }
      if (host === "github.com") {
        const basic = /^Basic (.+)$/.exec(auth ?? "");
        const [user, token] = basic ? Buffer.from(basic[1]!, "base64").toString().split(":") : [null, null];
        fake.used.push({ host, path: url.pathname, token: token ?? null, scheme: basic ? "Basic" : null });
        if (user !== "x-access-token" || !live.has(token ?? "")) return new Response("Authentication failed", { status: 401, headers: { "www-authenticate": 'Basic realm="GitHub"' } });
        if (url.pathname === "/reflect") return Response.json({ authorization: auth, token }, { headers: { "x-reflected-authorization": auth! } });
        const answer = await git(req, { method: req.method, host, url: url.pathname + url.search, headers: {}, bodyBytes: 0, bodySha256: "" });
        return answer ?? new Response("not found", { status: 404 });
      }
      return new Response("unknown host", { status: 421 });
    },
  });
  fake.port = fake.server.port!;
  return fake;
}
