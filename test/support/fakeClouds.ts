// Fake Google Cloud and Azure for the cloud identity tests, over TLS on loopback (reached with CREDGATE_CONNECT_TO),
// verifying what the real issuers verify and accepting only tokens they issued:
// - oauth2.googleapis.com `POST /token`: a JWT-bearer assertion, RS256-signed with the service account's key
//   (checked with its public key), `iss` the account, `aud` the token endpoint, a `scope`, at most an hour long;
// - storage.googleapis.com: the GCS JSON API's object read (`/storage/v1/b/<b>/o/<o>[?alt=media]`) with a Bearer
//   token it minted for a storage scope;
// - login.microsoftonline.com `POST /<tenant>/oauth2/v2.0/token`: client credentials with the app's exact client
//   secret and a `.default` scope (and the authority metadata MSAL may ask for, each request recorded);
// - <account>.blob.core.windows.net: a blob read with a Bearer token it minted for https://storage.azure.com.
// Anywhere, `/reflect` (with a good token) answers with the Authorization it received (the echo guard's tests).
import { createPublicKey, createHash, randomBytes, verify, type KeyObject } from "node:crypto";
import type { Server } from "bun";
import type { TestPki } from "./upstream.ts";
import { CRC32C } from "@google-cloud/storage";

export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";

export interface FakeClouds {
  server: Server<unknown>;
  port: number;
  google: { mints: { email: string; scope: string; token: string }[]; refused: string[] };
  azure: { mints: { tenantId: string; clientId: string; scope: string; token: string }[]; refused: string[]; metadata: string[] };
  /** Resource requests: host, path, the Bearer token (null when none) and whether it was accepted. */
  used: { host: string; path: string; token: string | null; ok: boolean }[];
  /** How long a mint takes (so concurrent callers overlap), ms. */
  mintDelayMs: number;
  /** `expires_in` of the tokens minted from now on, seconds. */
  tokenSeconds: number;
  /** Answer mints with this status instead, when set. */
  failMintsWith: number | null;
  stop(): Promise<void>;
}

export interface CloudAccounts {
  gcp: { email: string; publicKeyPem: string };
  azure: { tenantId: string; clientId: string; clientSecret: string };
  /** The object both stores hold: GCS `bucket/object`, Azure `container/blob`. */
  object: { container: string; name: string; content: string };
}

/** A service account's JWT-bearer assertion as Google checks it: RS256 with the account's key, iss, aud, scope, ≤ 1 h. */
export function verifyAssertion(jwt: string, key: KeyObject, email: string, aud = GOOGLE_TOKEN_URI): { scope: string } | string {
  const parts = jwt.split(".");
  if (parts.length !== 3) return "not a JWT";
  const header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString());
  if (header.alg !== "RS256") return `alg ${header.alg}`;
  if (!verify("RSA-SHA256", Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, "base64url"))) return "bad signature";
  const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString());
  if (claims.iss !== email) return `iss ${claims.iss}`;
  if (claims.aud !== aud) return `aud ${claims.aud}`;
  if (typeof claims.scope !== "string" || claims.scope === "") return "no scope";
  const now = Math.floor(Date.now() / 1000);
  if (!(claims.iat <= now + 5) || !(claims.exp > now) || claims.exp - claims.iat > 3600) return "iat/exp out of range";
  return { scope: claims.scope };
}

const AZURE_SCOPES = new Set(["https://storage.azure.com/.default", "https://management.azure.com/.default", "https://vault.azure.net/.default", "https://graph.microsoft.com/.default", "https://cognitiveservices.azure.com/.default"]);

/** The Azure AD authority metadata MSAL asks for (OpenID configuration, instance discovery) for `tenantId`. */
export function azureAuthorityMetadata(url: URL, tenantId: string): Response {
  const tenant = url.pathname.split("/")[1]!;
  if (url.pathname.endsWith("/.well-known/openid-configuration")) {
    const base = `https://login.microsoftonline.com/${tenant}`;
    return Response.json({
      token_endpoint: `${base}/oauth2/v2.0/token`,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      issuer: `https://login.microsoftonline.com/${tenant}/v2.0`,
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
    });
  }
  if (url.pathname.endsWith("/discovery/instance")) {
    return Response.json({
      tenant_discovery_endpoint: `https://login.microsoftonline.com/${tenantId}/v2.0/.well-known/openid-configuration`,
      "api-version": "1.1",
      metadata: [{ preferred_network: "login.microsoftonline.com", preferred_cache: "login.windows.net", aliases: ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"] }],
    });
  }
  return Response.json({ error: "not_found" }, { status: 404 });
}

export function startFakeClouds(pki: TestPki, accounts: CloudAccounts): FakeClouds {
  const gcpKey = createPublicKey(accounts.gcp.publicKeyPem);
  /** Live tokens and the scope they were minted for. */
  const live = new Map<string, string>();
  const fake: FakeClouds = {
    server: null as unknown as Server<unknown>,
    port: 0,
    google: { mints: [], refused: [] },
    azure: { mints: [], refused: [], metadata: [] },
    used: [],
    mintDelayMs: 300,
    tokenSeconds: 3599,
    failMintsWith: null,
    stop: () => fake.server.stop(true),
  };
  const { object } = accounts;
  const md5 = createHash("md5").update(object.content).digest("base64");
  const crc = new CRC32C();
  crc.update(Buffer.from(object.content));
  const crc32c = crc.toString();

  /** The request's Bearer token when the fake issued it for a scope `accepts`; records the use. */
  const authorized = (req: Request, host: string, path: string, accepts: (scope: string) => boolean): boolean => {
    const m = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "");
    const token = m?.[1] ?? null;
    const scope = token === null ? undefined : live.get(token);
    const ok = scope !== undefined && accepts(scope);
    fake.used.push({ host, path, token, ok });
    return ok;
  };

  async function googleToken(req: Request): Promise<Response> {
    await Bun.sleep(fake.mintDelayMs);
    const form = new URLSearchParams(await req.text());
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
      fake.google.refused.push(`grant ${form.get("grant_type")}`);
      return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
    }
    const checked = verifyAssertion(form.get("assertion") ?? "", gcpKey, accounts.gcp.email);
    if (typeof checked === "string") {
      fake.google.refused.push(checked);
      return Response.json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, { status: 400 });
    }
    if (fake.failMintsWith !== null) return Response.json({ error: "internal_failure" }, { status: fake.failMintsWith });
    const token = `ya29.${randomBytes(24).toString("base64url")}`;
    live.set(token, checked.scope);
    fake.google.mints.push({ email: accounts.gcp.email, scope: checked.scope, token });
    return Response.json({ access_token: token, expires_in: fake.tokenSeconds, token_type: "Bearer" });
  }

  async function azureToken(req: Request, tenantId: string): Promise<Response> {
    await Bun.sleep(fake.mintDelayMs);
    const form = new URLSearchParams(await req.text());
    const { azure } = accounts;
    const why =
      tenantId !== azure.tenantId
        ? `tenant ${tenantId}`
        : form.get("grant_type") !== "client_credentials"
          ? `grant ${form.get("grant_type")}`
          : form.get("client_id") !== azure.clientId
            ? `client ${form.get("client_id")}`
            : form.get("client_secret") !== azure.clientSecret
              ? "bad client secret"
              : !AZURE_SCOPES.has(form.get("scope") ?? "")
                ? `scope ${form.get("scope")}`
                : null;
    if (why) {
      fake.azure.refused.push(why);
      return Response.json({ error: "invalid_client", error_description: "AADSTS7000215: Invalid client secret provided." }, { status: 401 });
    }
    if (fake.failMintsWith !== null) return Response.json({ error: "temporarily_unavailable" }, { status: fake.failMintsWith });
    const token = `eyJ0eXAiOiJKV1QifQ.${randomBytes(24).toString("base64url")}.${randomBytes(16).toString("base64url")}`;
    live.set(token, form.get("scope")!);
    fake.azure.mints.push({ tenantId, clientId: azure.clientId, scope: form.get("scope")!, token });
    return Response.json({ token_type: "Bearer", expires_in: fake.tokenSeconds, ext_expires_in: fake.tokenSeconds, access_token: token });
  }

  fake.server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      if (host === "oauth2.googleapis.com" && url.pathname === "/token" && req.method === "POST") return googleToken(req);
      if (host === "login.microsoftonline.com") {
        const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
        if (m && req.method === "POST") return azureToken(req, m[1]!);
        fake.azure.metadata.push(url.pathname + url.search);
        return azureAuthorityMetadata(url, accounts.azure.tenantId);
      }
      if (host === "storage.googleapis.com") {
        if (!authorized(req, host, url.pathname, (s) => /cloud-platform|devstorage/.test(s))) {
          return Response.json({ error: { code: 401, message: "Invalid Credentials", errors: [{ reason: "authError" }] } }, { status: 401 });
        }
        if (url.pathname === "/reflect") return Response.json({ authorization: req.headers.get("authorization") }, { headers: { "x-reflected-authorization": req.headers.get("authorization")! } });
        const m = /^\/storage\/v1\/b\/([^/]+)\/o\/([^/]+)$/.exec(url.pathname);
        if (!m || m[1] !== object.container || decodeURIComponent(m[2]!) !== object.name) return Response.json({ error: { code: 404, message: "No such object" } }, { status: 404 });
        if (url.searchParams.get("alt") === "media") {
          return new Response(object.content, { headers: { "content-type": "text/plain", "x-goog-hash": `crc32c=${crc32c},md5=${md5}`, "x-goog-stored-content-encoding": "identity", "x-goog-generation": "1" } });
        }
        return Response.json({ kind: "storage#object", name: object.name, bucket: object.container, size: String(Buffer.byteLength(object.content)), md5Hash: md5, generation: "1", contentType: "text/plain" });
      }
      if (host.endsWith(".blob.core.windows.net")) {
        if (!authorized(req, host, url.pathname, (s) => s === "https://storage.azure.com/.default")) {
          return new Response("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>InvalidAuthenticationInfo</Code><Message>Server failed to authenticate the request.</Message></Error>", {
            status: 401,
            headers: { "content-type": "application/xml", "x-ms-error-code": "InvalidAuthenticationInfo", "www-authenticate": `Bearer authorization_uri=https://login.microsoftonline.com/${accounts.azure.tenantId}/oauth2/authorize resource_id=https://storage.azure.com` },
          });
        }
        if (url.pathname === "/reflect") return Response.json({ authorization: req.headers.get("authorization") }, { headers: { "x-reflected-authorization": req.headers.get("authorization")! } });
        if (url.pathname !== `/${object.container}/${object.name}`) return new Response("<Error><Code>BlobNotFound</Code></Error>", { status: 404, headers: { "x-ms-error-code": "BlobNotFound" } });
        return new Response(req.method === "HEAD" ? null : object.content, {
          headers: {
            "content-type": "text/plain",
            "content-length": String(Buffer.byteLength(object.content)),
            "x-ms-blob-type": "BlockBlob",
            "x-ms-version": req.headers.get("x-ms-version") ?? "2025-01-05",
            etag: '"0x8D000000000001"',
            "last-modified": new Date(0).toUTCString(),
            "content-md5": md5,
          },
        });
      }
      return new Response("unknown host", { status: 421 });
    },
  });
  fake.port = fake.server.port!;
  return fake;
}
