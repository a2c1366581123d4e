// What an agent's environment needs for the Google Cloud and Azure SDKs to run unmodified on placeholders
// (docs/cloud-identities.md#agent-setup): a stub service-account file (the account's email and project, a key of
// its own that is not the real one), GOOGLE_APPLICATION_CREDENTIALS and GOOGLE_CLOUD_PROJECT; AZURE_TENANT_ID,
// AZURE_CLIENT_ID and AZURE_CLIENT_SECRET=credgate-managed. From the first secret of each cloud in precedence
// order among those the agent may use.
import { generateKeyPairSync } from "node:crypto";
import { parseGcpKey } from "../core/cloudIdentity.ts";
import type { SecretRow } from "../store/rows.ts";

export const GCP_STUB_CONTAINER_PATH = "/tmp/credgate-gcp-credentials.json";
const PLACEHOLDER = "credgate-managed";
const TIER: Record<string, number> = { partner: 1, organization: 2, project: 3 };

let stubKey: string | null = null;

/** The stub's private key: made once per process, never the real one (the SDK signs with it; credgate answers). */
function stubPrivateKey(): string {
  stubKey ??= generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return stubKey;
}

/** The stub service-account file for an account. */
export function gcpStubContent(email: string, projectId: string): string {
  return JSON.stringify(
    {
      type: "service_account",
      project_id: projectId,
      private_key_id: PLACEHOLDER,
      private_key: stubPrivateKey(),
      client_email: email,
      client_id: PLACEHOLDER,
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: "https://oauth2.googleapis.com/token",
    },
    null,
    2,
  );
}

export interface CloudSetup {
  env: Record<string, string>;
  stubs: { containerPath: string; content: string }[];
}

/** The env and stub files for the cloud secrets among `usable` (the secrets the agent may inject). */
export function cloudAgentSetup(usable: readonly SecretRow[], openValue: (row: SecretRow) => string | null): CloudSetup {
  // Precedence order (docs/injection.md#precedence): tier, then catch-all path patterns first, then the older.
  const catchAll = (s: SecretRow) => (["", "*", "/*"].includes(s.pathPattern?.trim() ?? "") ? 0 : 1);
  const ordered = [...usable].sort(
    (a, b) => TIER[a.scope]! - TIER[b.scope]! || catchAll(a) - catchAll(b) || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
  );
  const env: Record<string, string> = {};
  const stubs: CloudSetup["stubs"] = [];
  // Application order: the last wins.
  const gcp = ordered.findLast((s) => s.injectionConfig?.gcpServiceAccount !== undefined);
  if (gcp) {
    const value = openValue(gcp);
    const key = value === null ? null : parseGcpKey(value);
    const projectId = key?.projectId ?? PLACEHOLDER;
    stubs.push({ containerPath: GCP_STUB_CONTAINER_PATH, content: gcpStubContent(key?.clientEmail ?? `${PLACEHOLDER}@${projectId}.iam.gserviceaccount.com`, projectId) });
    env.GOOGLE_APPLICATION_CREDENTIALS = GCP_STUB_CONTAINER_PATH;
    env.GOOGLE_CLOUD_PROJECT = projectId;
  }
  const azure = ordered.findLast((s) => s.injectionConfig?.azureClientSecret !== undefined)?.injectionConfig?.azureClientSecret;
  if (azure) {
    env.AZURE_TENANT_ID = azure.tenantId;
    env.AZURE_CLIENT_ID = azure.clientId;
    env.AZURE_CLIENT_SECRET = PLACEHOLDER;
  }
  return { env, stubs };
}
