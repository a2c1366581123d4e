// Fake AWS Secrets Manager, Google Secret Manager and Azure Key Vault (with Google's and Azure AD's token endpoints)
// on one TLS server on loopback, told apart by Host (reach it with CREDGATE_CONNECT_TO, or connectTo.cjs for Node
// clients). Each verifies what the real service verifies, in its wire format, and answers in its error shapes:
// - secretsmanager.<region>.amazonaws.com: AWS JSON 1.1 GetSecretValue whose SigV4 signature verifies with the real
//   key (fakeAws.ts's verifier, written from AWS's algorithm), for service `secretsmanager` in the host's region;
// - oauth2.googleapis.com `POST /token`: a JWT-bearer assertion RS256-signed with the service account's key (checked
//   with its public key), iss, aud, a cloud-platform scope (fakeTokenEndpoints.ts);
// - secretmanager.googleapis.com `GET /v1/projects/*/secrets/*/versions/*:access`: a bearer token this fake minted,
//   or a self-signed JWT of the service account (what Google's client libraries send) — payload data and CRC-32C;
// - login.microsoftonline.com `POST /<tenant>/oauth2/v2.0/token`: client credentials with the exact tenant, client
//   and secret and the Key Vault scope (fakeTokenEndpoints.ts; and the authority metadata MSAL asks for);
// - <vault>.vault.azure.net `GET /secrets/<name>[/<version>]`: a known api-version, a token minted for
//   https://vault.azure.net; no token → 401 with Key Vault's challenge (the SDK's first request).
// Error answers carry STORE_ANSWER_CANARY in their messages, so tests can show the store's answer never reaches an agent.
import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from "node:crypto";
import type { Server } from "bun";
import { crc32c } from "../../src/core/crc32c.ts";
import { verify as verifySigV4, type FakeAwsKey } from "./fakeAws.ts";
import { azureAuthorityMetadata, azureToken, googleToken, type MintRules } from "./fakeTokenEndpoints.ts";
import type { TestPki } from "./upstream.ts";

export const STORE_ANSWER_CANARY = "store-answer-canary-7d1f";
export const SECRET_STORE_HOSTS = ["secretsmanager.us-east-1.amazonaws.com", "secretsmanager.eu-west-1.amazonaws.com", "oauth2.googleapis.com", "secretmanager.googleapis.com", "login.microsoftonline.com", "prodvault.vault.azure.net", "othervault.vault.azure.net"];
/** The API versions of Key Vault the fake knows (the official client's list). */
const KEY_VAULT_VERSIONS = new Set(["2016-10-01", "7.0", "7.1", "7.2", "7.3", "7.4", "7.5", "7.6", "2025-07-01"]);
const KEY_VAULT_SCOPE = "https://vault.azure.net/.default";
const CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform";

export interface StoreAccounts {
  aws: FakeAwsKey;
  gcp: { email: string; publicKeyPem: string };
  azure: { tenantId: string; clientId: string; clientSecret: string };
}

export interface StoreCall {
  host: string;
  path: string;
  /** How the caller authenticated: "sigv4", "minted", "self-signed", "none", or why it was refused. */
  auth: string;
  status: number;
}

export interface FakeSecretStores {
  server: Server<unknown>;
  port: number;
  /** AWS: name → SecretString or SecretBinary. */
  aws: Map<string, { string: string } | { binary: Uint8Array }>;
  /** Google: `<project>/<secret>` → versions (1-based; "latest" is the last). */
  google: Map<string, string[]>;
  /** Azure: `<vault>/<secret>` → value. */
  azure: Map<string, string>;
  /** Names (as above) whose reads are denied to the caller. */
  denied: Set<string>;
  /** Google secrets answered with a wrong CRC-32C. */
  corrupt: Set<string>;
  /** Every store answers 503 while set (token endpoints keep working). */
  outage: boolean;
  calls: StoreCall[];
  mints: { issuer: "google" | "azure"; token: string; scope: string }[];
  refusedMints: string[];
  /** Revokes a token it minted (the stores then refuse it with 401). */
  revoke(token: string): void;
  stop(): Promise<void>;
}

const awsError = (status: number, type: string, message: string) =>
  Response.json({ __type: type, message: `${message} (${STORE_ANSWER_CANARY})` }, { status, headers: { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": "fake" } });
const googleError = (code: number, status: string, message: string) => Response.json({ error: { code, message: `${message} (${STORE_ANSWER_CANARY})`, status } }, { status: code });
const azureError = (status: number, code: string, message: string, inner?: string, headers: Record<string, string> = {}) =>
  Response.json({ error: { code, message: `${message} (${STORE_ANSWER_CANARY})`, ...(inner ? { innererror: { code: inner } } : {}) } }, { status, headers });

/** A self-signed service-account JWT as Google's client libraries send it: signed by the key, iss, aud or scope, ≤ 1 h. */
function selfSignedJwt(jwt: string, key: KeyObject, email: string): boolean {
  const parts = jwt.split(".");
  if (parts.length !== 3) return false;
  try {
    if (!verifySignature("RSA-SHA256", Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, "base64url"))) return false;
    const c = JSON.parse(Buffer.from(parts[1]!, "base64url").toString());
    const now = Math.floor(Date.now() / 1000);
    const audience = c.aud === "https://secretmanager.googleapis.com/" || (typeof c.scope === "string" && c.scope.split(" ").includes(CLOUD_PLATFORM));
    return c.iss === email && audience && c.exp > now && c.exp - c.iat <= 3600;
  } catch {
    return false;
  }
}

export function startFakeSecretStores(pki: TestPki, accounts: StoreAccounts): FakeSecretStores {
  const gcpKey = createPublicKey(accounts.gcp.publicKeyPem);
  /** Tokens this fake minted → the scope they carry. */
  const live = new Map<string, string>();
  const fake: FakeSecretStores = {
    server: null as unknown as Server<unknown>,
    port: 0,
    aws: new Map(),
    google: new Map(),
    azure: new Map(),
    denied: new Set(),
    corrupt: new Set(),
    outage: false,
    calls: [],
    mints: [],
    refusedMints: [],
    revoke: (token) => void live.delete(token),
    stop: () => fake.server.stop(true),
  };

  async function secretsManager(req: Request, host: string, region: string): Promise<Response> {
    const call: StoreCall = { host, path: new URL(req.url).pathname, auth: "sigv4", status: 200 };
    fake.calls.push(call);
    const answer = (r: Response) => ((call.status = r.status), r);
    const body = Buffer.from(await req.arrayBuffer());
    try {
      const target = req.url.replace(/^https?:\/\/[^/]+/, "");
      const q = target.indexOf("?");
      const v = verifySigV4(req, q === -1 ? target : target.slice(0, q), q === -1 ? "" : target.slice(q + 1), accounts.aws, req.headers.get("x-amz-content-sha256") ?? createHash("sha256").update(body).digest("hex"));
      if (v.service !== "secretsmanager" || v.region !== region) throw new Error(`credential scope ${v.region}/${v.service}`);
    } catch (err) {
      call.auth = (err as Error).message.split("\n")[0]!;
      const unknownKey = call.auth.startsWith("InvalidAccessKeyId");
      return answer(awsError(400, unknownKey ? "UnrecognizedClientException" : "InvalidSignatureException", unknownKey ? "The security token included in the request is invalid." : "The request signature we calculated does not match the signature you provided."));
    }
    if (req.method !== "POST" || call.path !== "/") return answer(awsError(404, "UnknownOperationException", "Unknown operation"));
    if (req.headers.get("x-amz-target") !== "secretsmanager.GetSecretValue") return answer(awsError(400, "UnknownOperationException", `Unknown operation ${req.headers.get("x-amz-target")}`));
    if (!(req.headers.get("content-type") ?? "").startsWith("application/x-amz-json-1.1")) return answer(awsError(400, "SerializationException", "wrong content type"));
    if (fake.outage) return answer(awsError(503, "ServiceUnavailable", "Service unavailable"));
    let input: { SecretId?: unknown };
    try {
      input = JSON.parse(body.toString());
    } catch {
      return answer(awsError(400, "SerializationException", "Start of structure or map found where not expected."));
    }
    const name = String(input.SecretId ?? "");
    const secret = fake.aws.get(name);
    if (fake.denied.has(name)) return answer(awsError(400, "AccessDeniedException", `User: arn:aws:iam::123456789012:user/credgate is not authorized to perform: secretsmanager:GetSecretValue on resource: ${name}`));
    if (!secret) return answer(awsError(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."));
    const arn = `arn:aws:secretsmanager:${region}:123456789012:secret:${name}-AbCdEf`;
    return answer(
      Response.json(
        { ARN: arn, Name: name, VersionId: "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111", ...("string" in secret ? { SecretString: secret.string } : { SecretBinary: Buffer.from(secret.binary).toString("base64") }), VersionStages: ["AWSCURRENT"], CreatedDate: 1.523477145713e9 },
        { headers: { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": "fake" } },
      ),
    );
  }

  function secretManager(req: Request, url: URL): Response {
    const call: StoreCall = { host: url.hostname, path: url.pathname, auth: "none", status: 200 };
    fake.calls.push(call);
    const answer = (r: Response) => ((call.status = r.status), r);
    const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    call.auth = bearer === undefined ? "none" : live.get(bearer)?.split(" ").includes(CLOUD_PLATFORM) ? "minted" : selfSignedJwt(bearer, gcpKey, accounts.gcp.email) ? "self-signed" : "bad token";
    if (call.auth === "none" || call.auth === "bad token") return answer(googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token."));
    const m = /^\/v1\/projects\/([^/]+)\/secrets\/([^/]+)\/versions\/([^/]+?)(?::|%3A)access$/i.exec(url.pathname);
    if (req.method !== "GET" || !m) return answer(googleError(404, "NOT_FOUND", "Method not found."));
    if (fake.outage) return answer(googleError(503, "UNAVAILABLE", "The service is currently unavailable."));
    const [project, secret, version] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), decodeURIComponent(m[3]!)];
    const id = `${project}/${secret}`;
    if (fake.denied.has(id)) return answer(googleError(403, "PERMISSION_DENIED", `Permission 'secretmanager.versions.access' denied for resource 'projects/${project}/secrets/${secret}/versions/${version}'`));
    const versions = fake.google.get(id);
    const n = version === "latest" ? (versions?.length ?? 0) : Number(version);
    const data = versions?.[n - 1];
    if (data === undefined) return answer(googleError(404, "NOT_FOUND", `Secret [projects/${project}/secrets/${secret}] not found or has no versions.`));
    const bytes = Buffer.from(data);
    const crc = crc32c(bytes) ^ (fake.corrupt.has(id) ? 1 : 0);
    return answer(Response.json({ name: `projects/123456789/secrets/${secret}/versions/${n}`, payload: { data: bytes.toString("base64"), dataCrc32C: String(crc >>> 0) } }));
  }

  const rules = (issuer: "google" | "azure"): MintRules => ({
    live,
    seconds: 3599,
    refusalSuffix: STORE_ANSWER_CANARY,
    refused: (why) => fake.refusedMints.push(why),
    minted: (token, scope) => fake.mints.push({ issuer, token, scope }),
  });
  const google = { key: gcpKey, email: accounts.gcp.email, acceptsScope: (scope: string) => scope.split(" ").includes(CLOUD_PLATFORM) };
  const azure = { ...accounts.azure, scopes: new Set([KEY_VAULT_SCOPE]) };

  function keyVault(req: Request, url: URL, vault: string): Response {
    const call: StoreCall = { host: url.hostname, path: url.pathname + url.search, auth: "none", status: 200 };
    fake.calls.push(call);
    const answer = (r: Response) => ((call.status = r.status), r);
    const version = url.searchParams.get("api-version");
    if (version === null || !KEY_VAULT_VERSIONS.has(version)) return answer(azureError(400, "BadParameter", `The specified version (${version}) is not recognized. Consider using the latest supported version (7.6).`));
    const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    const challenge = { "www-authenticate": `Bearer authorization="https://login.microsoftonline.com/${accounts.azure.tenantId}", resource="https://vault.azure.net"` };
    if (bearer === undefined) return answer(azureError(401, "Unauthorized", "AKV10000: Request is missing a Bearer or PoP token.", undefined, challenge));
    call.auth = live.get(bearer) === KEY_VAULT_SCOPE ? "minted" : "bad token";
    if (call.auth !== "minted") return answer(azureError(401, "Unauthorized", "AKV10032: Invalid issuer.", undefined, challenge));
    const m = /^\/secrets\/([^/]+)\/?([^/]*)$/.exec(url.pathname);
    if (req.method !== "GET" || !m) return answer(azureError(400, "BadParameter", "Operation not supported."));
    if (fake.outage) return answer(azureError(503, "ServiceUnavailable", "The service is unavailable."));
    const id = `${vault}/${m[1]}`;
    if (fake.denied.has(id)) return answer(azureError(403, "Forbidden", "Caller is not authorized to perform action on resource.", "ForbiddenByRbac"));
    const value = fake.azure.get(id);
    if (value === undefined) return answer(azureError(404, "SecretNotFound", `A secret with (name/id) ${m[1]} was not found in this key vault.`));
    const secretId = `https://${vault}.vault.azure.net/secrets/${m[1]}/0123456789abcdef0123456789abcdef`;
    return answer(Response.json({ value, id: secretId, attributes: { enabled: true, created: 1700000000, updated: 1700000000, recoveryLevel: "Recoverable+Purgeable", recoverableDays: 90 }, tags: {} }));
  }

  fake.server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      const aws = /^secretsmanager\.([a-z0-9-]+)\.amazonaws\.com$/.exec(host);
      if (aws) return secretsManager(req, host, aws[1]!);
      if (host === "oauth2.googleapis.com" && url.pathname === "/token" && req.method === "POST") return googleToken(req, google, rules("google"));
      if (host === "secretmanager.googleapis.com") return secretManager(req, url);
      if (host === "login.microsoftonline.com") {
        const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
        return m && req.method === "POST" ? azureToken(req, m[1]!, azure, rules("azure")) : azureAuthorityMetadata(url, accounts.azure.tenantId);
      }
      const vault = /^([a-z0-9-]+)\.vault\.azure\.net$/.exec(host);
      if (vault) return keyVault(req, url, vault[1]!);
      return new Response("unknown host", { status: 421 });
    },
  });
  fake.port = fake.server.port!;
  return fake;
}
