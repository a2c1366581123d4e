// Fake Google Cloud and Azure for the cloud identity tests, over TLS on loopback (reached with CREDGATE_CONNECT_TO),
// verifying what the real issuers verify and accepting only tokens they issued:
// - oauth2.googleapis.com `POST /token`: a JWT-bearer assertion for the service account (fakeTokenEndpoints.ts);
// - storage.googleapis.com: the GCS JSON API's object read (`/storage/v1/b/<b>/o/<o>[?alt=media]`) with a Bearer
//   token it minted for a storage scope;
// - login.microsoftonline.com `POST /<tenant>/oauth2/v2.0/token`: client credentials with the app's exact client
//   secret and a `.default` scope (fakeTokenEndpoints.ts; and the authority metadata MSAL may ask for, each request
//   recorded);
// - <account>.blob.core.windows.net: a blob read with a Bearer token it minted for https://storage.azure.com.
// Anywhere, `/reflect` (with a good token) answers with the Authorization it received (the echo guard's tests).
import { createPublicKey, createHash } from "node:crypto";
import type { Server } from "bun";
import type { TestPki } from "./upstream.ts";
import { CRC32C } from "@google-cloud/storage";
import { azureAuthorityMetadata, azureToken, googleToken, type MintRules } from "./fakeTokenEndpoints.ts";

export { GOOGLE_TOKEN_URI } from "./fakeTokenEndpoints.ts";

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

const AZURE_SCOPES = new Set(["https://storage.azure.com/.default", "https://management.azure.com/.default", "https://vault.azure.net/.default", "https://graph.microsoft.com/.default", "https://cognitiveservices.azure.com/.default"]);

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

  const google = { key: gcpKey, email: accounts.gcp.email };
  const azure = { ...accounts.azure, scopes: AZURE_SCOPES };
  /** The token endpoints' timing and failures as the test has set them now. */
  const now = () => ({ live, seconds: fake.tokenSeconds, delayMs: fake.mintDelayMs, failWith: fake.failMintsWith });
  const googleRules = (): MintRules => ({ ...now(), refused: (why) => fake.google.refused.push(why), minted: (token, scope) => fake.google.mints.push({ email: google.email, scope, token }) });
  const azureRules = (): MintRules => ({ ...now(), refused: (why) => fake.azure.refused.push(why), minted: (token, scope) => fake.azure.mints.push({ tenantId: azure.tenantId, clientId: azure.clientId, scope, token }) });

  fake.server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      if (host === "oauth2.googleapis.com" && url.pathname === "/token" && req.method === "POST") return googleToken(req, google, googleRules());
      if (host === "login.microsoftonline.com") {
        const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
        if (m && req.method === "POST") return azureToken(req, m[1]!, azure, azureRules());
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
