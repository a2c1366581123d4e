// Google Secret Manager (docs/secret-stores.md#google-secret-manager): `gcp-sm://projects/<p>/secrets/<s>[/versions/<v>]`
// is one `…/versions/<v>:access` call (REST v1) with a bearer token minted for credgate's own service account
// (CREDGATE_GCP_SERVICE_ACCOUNT_FILE, read at each mint so a rotated key file is picked up). The value is the
// payload's data, checked against its CRC-32C when Google sends one, and required to be UTF-8 text.
import { readFile } from "node:fs/promises";
import { parseGcpKey } from "../../core/cloudIdentity.ts";
import { crc32c } from "../../core/crc32c.ts";
import type { StoreRef } from "../../core/storeRefs.ts";
import { gcpTokenRequest, type TokenRequest } from "../../core/tokenExchange.ts";
import { gcpAssertion } from "../../crypto/gcpAssertion.ts";
import { AccessToken } from "./accessToken.ts";
import { codeOf, storeRequest, utf8 } from "./cloudRequest.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";

const LABEL = "Google Secret Manager";
export const SECRET_MANAGER_HOST = "secretmanager.googleapis.com";
const SCOPE = "https://www.googleapis.com/auth/cloud-platform";

export function googleSecretManagerFrom(ctx: StoreContext): SecretStore | null {
  const file = ctx.config.gcpServiceAccountFile;
  if (file === null) return null;
  const mintRequest = async (): Promise<TokenRequest> => {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      throw new StoreError("service_account_file", `CREDGATE_GCP_SERVICE_ACCOUNT_FILE could not be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    const key = parseGcpKey(text);
    if (key === null) throw new StoreError("service_account_file", "CREDGATE_GCP_SERVICE_ACCOUNT_FILE is not a Google service-account JSON key");
    // Signed for the wall clock, which Google checks (ctx.now is the cache's clock).
    return gcpTokenRequest(key.tokenUri, gcpAssertion(key, SCOPE));
  };
  const token = new AccessToken("Google", mintRequest, ctx.fetch, ctx.now);

  return {
    async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
      if (ref.kind !== "gcp-sm") throw new StoreError("wrong_store", `${LABEL} cannot read ${ref.kind}:// references`);
      const name = `projects/${ref.project}/secrets/${ref.secret}/versions/${ref.version}`;
      const path = ["projects", ref.project, "secrets", ref.secret, "versions", ref.version].map(encodeURIComponent).join("/");
      const bearer = await token.get(signal);
      const answer = await storeRequest(ctx.fetch, LABEL, new URL(`https://${SECRET_MANAGER_HOST}/v1/${path}:access`), {
        method: "GET",
        headers: { authorization: `Bearer ${bearer}`, accept: "application/json" },
        signal,
      });
      if (answer.status === 401) token.drop(bearer);
      if (answer.status !== 200) throw refusal(answer.status, answer.json, name);
      return payloadText(answer.json, name);
    },
  };
}

/** The payload's data as text, after its checksum. */
function payloadText(json: unknown, name: string): string {
  const payload = (json as { payload?: { data?: unknown; dataCrc32C?: unknown } } | null)?.payload;
  if (typeof payload?.data !== "string") throw new StoreError("bad_response", `${LABEL} answered without a payload for ${name}`);
  const bytes = Buffer.from(payload.data, "base64");
  // int64 in JSON is a decimal string; a number is accepted too.
  if (payload.dataCrc32C !== undefined && String(payload.dataCrc32C) !== String(crc32c(bytes))) {
    throw new StoreError("checksum_mismatch", `${LABEL}'s payload for ${name} does not match its CRC-32C checksum`);
  }
  const text = utf8(bytes);
  if (text === null) throw new StoreError("binary_value", `${name} holds binary data that is not UTF-8 text`);
  if (text === "") throw new StoreError("empty_value", `${name} is empty`);
  return text;
}

/** Google's error status (`error.status`) as a StoreError; its message is not repeated. */
function refusal(status: number, json: unknown, name: string): StoreError {
  const code = codeOf((json as { error?: { status?: unknown } } | null)?.error?.status);
  switch (code ?? status) {
    case "NOT_FOUND":
    case 404:
      return new StoreError("not_found", `${LABEL} has no ${name}`);
    case "PERMISSION_DENIED":
    case 403:
      return new StoreError("access_denied", `${LABEL} denied credgate's service account access to ${name} (PERMISSION_DENIED)`);
    case "UNAUTHENTICATED":
    case 401:
      return new StoreError("credentials_refused", `${LABEL} refused credgate's token (UNAUTHENTICATED)`);
    case "FAILED_PRECONDITION":
      return new StoreError("version_unavailable", `${name} is disabled or destroyed (FAILED_PRECONDITION)`);
    default:
      return new StoreError("store_error", `${LABEL} answered ${status}${code ? ` ${code}` : ""} for ${name}`);
  }
}
