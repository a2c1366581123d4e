// The endpoints the Google Cloud and Azure SDKs ask for a token, answered by the gateway itself with placeholder
// tokens (docs/cloud-identities.md#placeholders), for an agent that may use a secret of that cloud: the Google
// token endpoint (a JWT-bearer assertion or a refresh token), the GCE metadata server, the Azure AD token endpoint
// and the Azure managed-identity endpoint. The SDKs then send their placeholder as a Bearer token, and the
// cloud-token stage puts the real one in its place. Nothing here is dialled: the metadata hosts
// (metadata.google.internal, 169.254.169.254) are answered whole — a path credgate does not serve is 404 — in
// absolute-form and inside a plain CONNECT tunnel, whose CONNECT the egress guard then lets open (`tunnel.local`).
// Before the egress stage, which would refuse the link-local address. Any other request: one Set lookup, PASS.
import { AZURE_PLACEHOLDER_TOKEN, GCP_PLACEHOLDER_TOKEN } from "../../core/cloudIdentity.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import type { AgentCredentials } from "../snapshot.ts";
import { answer, PASS, type ConnectVerdict, type RequestVerdict, type Stage } from "../stage.ts";
import type { Tunnel } from "../tunnel.ts";
import type { VaultResolver } from "../../vault/resolver.ts";

const GOOGLE_TOKEN_HOSTS = new Set(["oauth2.googleapis.com", "www.googleapis.com"]);
const METADATA_HOSTS = new Set(["metadata.google.internal", "169.254.169.254"]);
const AZURE_LOGIN_HOST = "login.microsoftonline.com";
const HOSTS = new Set([...GOOGLE_TOKEN_HOSTS, ...METADATA_HOSTS, AZURE_LOGIN_HOST]);
const MAX_BODY = 64 * 1024;
const TOKEN_SECONDS = 3599;
const GCE_PREFIX = "/computeMetadata/v1/";
const AZURE_MI_PATH = "/metadata/identity/oauth2/token";
const AZURE_TOKEN_PATH = /^\/[^/]+\/oauth2\/v2\.0\/token$/;

export interface GcpIdentity {
  email: string;
  projectId: string;
}

/**
 * What an agent's view says about its cloud identities: whether it may use one of each cloud, and who it is — for
 * a Google key kept in a vault or a store, the reference it is read from (the key says who it is).
 */
export interface CloudView {
  gcp: { identity: GcpIdentity } | { ref: string } | null;
  azure: { clientId: string } | null;
}

export interface CloudPlaceholdersDeps {
  /** Values kept outside credgate: a Google key in a store names its account (services.stores). */
  vault: Pick<VaultResolver, "peek" | "resolve">;
}

const views = new WeakMap<AgentCredentials, CloudView>();

/**
 * The agent's cloud identities (once per agent view): of each cloud, the secret first in precedence — the one that
 * wins, as its token does on a request both match (project over organization over partner; docs/injection.md#precedence).
 */
export function cloudViewOf(creds: AgentCredentials): CloudView {
  let view = views.get(creds);
  if (view === undefined) {
    view = { gcp: null, azure: null };
    // Application order: a later secret wins.
    for (const s of creds.injectable) {
      const cfg = s.injection;
      if (cfg?.gcpServiceAccount !== undefined) view.gcp = s.value === null && s.valueRef !== null ? { ref: s.valueRef } : { identity: gcpIdentity(s.value) };
      if (cfg?.azureClientSecret !== undefined) view.azure = { clientId: cfg.azureClientSecret.clientId };
    }
    views.set(creds, view);
  }
  return view;
}

/**
 * Who the agent's Google account is on the metadata server: read from a key kept in a vault or a store once its
 * value is known — from the cache when it is there, else read now (a metadata request is the SDK's setup, not the
 * hot path); a key that cannot be read answers with the placeholders, and the request that needs it gets the 502.
 */
function identityOf(gcp: NonNullable<CloudView["gcp"]>, vault: CloudPlaceholdersDeps["vault"]): GcpIdentity | Promise<GcpIdentity> {
  if ("identity" in gcp) return gcp.identity;
  const known = vault.peek(gcp.ref);
  if (known !== undefined) return gcpIdentity(known.ok ? known.value : null);
  return vault.resolve(gcp.ref).then((found) => gcpIdentity(found.ok ? found.value : null));
}

/** The account's email and project, read from the key (placeholders when it is unknown or not a key). */
function gcpIdentity(value: string | null): GcpIdentity {
  try {
    const key = JSON.parse(value ?? "");
    return { email: typeof key.client_email === "string" ? key.client_email : "default", projectId: typeof key.project_id === "string" ? key.project_id : "credgate-managed" };
  } catch {
    return { email: "default", projectId: "credgate-managed" };
  }
}

const tokenAnswer = (token: string) => answer("allowed", gatewayJson(200, { access_token: token, expires_in: TOKEN_SECONDS, token_type: "Bearer" }));

/** A GCE metadata answer: always with `Metadata-Flavor: Google`, as the SDKs check. */
function gce(status: number, body: string, json = false): RequestVerdict {
  return answer(
    "allowed",
    new Response(body, { status, headers: { "metadata-flavor": "Google", "content-type": json ? "application/json" : "application/text", "content-length": String(Buffer.byteLength(body)) } }),
  );
}

const notFound = () => gce(404, "Not Found\n");

/** The GCE metadata server, for the paths the SDKs read. */
function metadata(rq: ProxyRequest, gcp: GcpIdentity): RequestVerdict {
  if (rq.agentHeaders.get("metadata-flavor") !== "Google") return gce(403, "Missing Metadata-Flavor:Google header.\n");
  const query = rq.target.includes("?") ? new URLSearchParams(rq.target.slice(rq.target.indexOf("?") + 1)) : null;
  const path = rq.path.slice(GCE_PREFIX.length);
  const account = /^instance\/service-accounts\/([^/]+)\/(.*)$/.exec(path);
  if (account && (account[1] === "default" || account[1] === gcp.email)) {
    switch (account[2]) {
      case "email":
        return gce(200, gcp.email);
      case "token":
        return gce(200, JSON.stringify({ access_token: GCP_PLACEHOLDER_TOKEN, expires_in: TOKEN_SECONDS, token_type: "Bearer" }), true);
      case "scopes":
        return gce(200, "https://www.googleapis.com/auth/cloud-platform\n");
      case "aliases":
        return gce(200, "default\n");
      case "":
        return query?.get("recursive") === "true"
          ? gce(200, JSON.stringify({ aliases: ["default"], email: gcp.email, scopes: ["https://www.googleapis.com/auth/cloud-platform"] }), true)
          : gce(200, "aliases\nemail\nidentity\nscopes\ntoken\n");
    }
    return notFound();
  }
  switch (path) {
    case "project/project-id":
      return gce(200, gcp.projectId);
    case "universe/universe-domain":
      return gce(200, "googleapis.com");
    case "instance":
    case "instance/":
      return gce(200, "service-accounts/\n");
    case "instance/service-accounts":
    case "instance/service-accounts/":
      return gce(200, `default/\n${gcp.email}/\n`);
    case "project":
    case "project/":
      return gce(200, "project-id\n");
  }
  return notFound();
}

/** The Azure managed-identity endpoint (IMDS): the standard answer for the resource asked. */
function managedIdentity(rq: ProxyRequest, azure: NonNullable<CloudView["azure"]>): RequestVerdict {
  if (rq.agentHeaders.get("metadata")?.toLowerCase() !== "true") {
    // What IMDS answers without the header (the SDKs probe with exactly that).
    return answer("allowed", gatewayJson(400, { error: "invalid_request", error_description: "Required metadata header not specified" }));
  }
  const query = new URLSearchParams(rq.target.includes("?") ? rq.target.slice(rq.target.indexOf("?") + 1) : "");
  const resource = query.get("resource") ?? "https://management.azure.com/";
  const now = Math.floor(Date.now() / 1000);
  return answer(
    "allowed",
    gatewayJson(200, {
      access_token: AZURE_PLACEHOLDER_TOKEN,
      client_id: azure.clientId,
      expires_in: String(TOKEN_SECONDS),
      expires_on: String(now + TOKEN_SECONDS),
      ext_expires_in: String(TOKEN_SECONDS),
      not_before: String(now),
      resource,
      token_type: "Bearer",
    }),
  );
}

function grantOf(body: Uint8Array): string | null {
  const text = new TextDecoder().decode(body);
  try {
    const v = JSON.parse(text);
    if (v && typeof v === "object" && typeof v.grant_type === "string") return v.grant_type;
  } catch {}
  return new URLSearchParams(text).get("grant_type");
}

/** The Google token endpoint: a service account's JWT-bearer exchange or a refresh; any other grant goes on. */
async function googleToken(rq: ProxyRequest): Promise<RequestVerdict> {
  const head = await rq.peekBody(MAX_BODY + 1);
  if (head.byteLength > MAX_BODY) return PASS;
  const grant = grantOf(head);
  if (grant !== "urn:ietf:params:oauth:grant-type:jwt-bearer" && grant !== "refresh_token") return PASS;
  await rq.body?.cancel().catch(() => {});
  return tokenAnswer(GCP_PLACEHOLDER_TOKEN);
}

function request(rq: ProxyRequest, vault: CloudPlaceholdersDeps["vault"]): RequestVerdict | Promise<RequestVerdict> {
  const view = cloudViewOf(rq.credentials);
  if (view.gcp === null && view.azure === null) return PASS;
  if (METADATA_HOSTS.has(rq.host)) {
    if (rq.path.startsWith(GCE_PREFIX) && view.gcp !== null) {
      const identity = identityOf(view.gcp, vault);
      return identity instanceof Promise ? identity.then((id) => metadata(rq, id)) : metadata(rq, identity);
    }
    if (rq.path === AZURE_MI_PATH && rq.host === "169.254.169.254" && view.azure !== null) return managedIdentity(rq, view.azure);
    return notFound();
  }
  if (rq.method !== "POST") return PASS;
  if (rq.host === AZURE_LOGIN_HOST) {
    if (view.azure === null || !AZURE_TOKEN_PATH.test(rq.path)) return PASS;
    rq.body?.cancel().catch(() => {});
    return tokenAnswer(AZURE_PLACEHOLDER_TOKEN);
  }
  if (view.gcp === null || !((rq.host === "oauth2.googleapis.com" && rq.path === "/token") || (rq.host === "www.googleapis.com" && rq.path === "/oauth2/v4/token"))) return PASS;
  return googleToken(rq);
}

export function cloudPlaceholdersStage({ vault }: CloudPlaceholdersDeps): Stage {
  return {
    name: "cloud-placeholders",
    reads: ["agent"],
    provides: [],
    connect(tunnel: Tunnel): ConnectVerdict {
      // A tunnel to a metadata host is answered here, request by request: it must open, and is never dialled.
      if (METADATA_HOSTS.has(tunnel.host)) {
        const view = cloudViewOf(tunnel.credentials);
        if (view.gcp !== null || view.azure !== null) tunnel.local = true;
      }
      return PASS;
    },
    request(rq) {
      // Synchronous for every other request: one lookup.
      if (!HOSTS.has(rq.host)) return PASS;
      return request(rq, vault);
    },
  };
}
