// AWS Secrets Manager (docs/secret-stores.md#aws-secrets-manager): `aws-sm://<region>/<name>[#<json field>]` is one
// GetSecretValue call (AWS JSON 1.1, `X-Amz-Target: secretsmanager.GetSecretValue`) signed with credgate's own key
// (CREDGATE_AWS_ACCESS_KEY_ID / _SECRET_ACCESS_KEY) by the gateway's SigV4 signer. The value is the secret's
// SecretString, or its SecretBinary when that is UTF-8 text; `#field` picks one field of a JSON object.
import type { StoreRef } from "../../core/storeRefs.ts";
import { amzDate, AwsSigner } from "../../crypto/awsSigV4.ts";
import { allSet, codeOf, storeRequest, utf8 } from "./cloudRequest.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";

const LABEL = "AWS Secrets Manager";

/** The regional endpoint; China's regions are under amazonaws.com.cn. */
export function secretsManagerHost(region: string): string {
  return `secretsmanager.${region}.amazonaws.com${region.startsWith("cn-") ? ".cn" : ""}`;
}

export function awsSecretsManagerFrom(ctx: StoreContext): SecretStore | null {
  const set = allSet({ CREDGATE_AWS_ACCESS_KEY_ID: ctx.config.awsAccessKeyId, CREDGATE_AWS_SECRET_ACCESS_KEY: ctx.config.awsSecretAccessKey });
  if (set === null) return null;
  const signer = new AwsSigner({ accessKeyId: set.CREDGATE_AWS_ACCESS_KEY_ID, secretAccessKey: set.CREDGATE_AWS_SECRET_ACCESS_KEY });

  return {
    async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
      if (ref.kind !== "aws-sm") throw new StoreError("wrong_store", `${LABEL} cannot read ${ref.kind}:// references`);
      const host = secretsManagerHost(ref.region);
      const body = JSON.stringify({ SecretId: ref.name });
      const date = new Date(ctx.now());
      const signed: Record<string, string> = {
        "content-type": "application/x-amz-json-1.1",
        host,
        "x-amz-content-sha256": new Bun.CryptoHasher("sha256").update(body).digest("hex"),
        "x-amz-target": "secretsmanager.GetSecretValue",
      };
      const { authorization } = signer.signHeaders("POST", "/", [], signed, { region: ref.region, service: "secretsmanager" }, date);
      const { host: _host, ...headers } = signed;
      const answer = await storeRequest(ctx.fetch, LABEL, new URL(`https://${host}/`), {
        method: "POST",
        headers: { ...headers, "x-amz-date": amzDate(date), authorization, accept: "application/json" },
        body,
        signal,
      });
      if (answer.status !== 200) throw refusal(answer.status, answer.headers, answer.json, ref.name, ref.region);
      return fieldOf(secretText(answer.json, ref.name), ref.name, ref.field);
    },
  };
}

/** SecretString, else SecretBinary decoded when it is UTF-8 text. */
function secretText(json: unknown, name: string): string {
  const b = (json ?? {}) as { SecretString?: unknown; SecretBinary?: unknown };
  if (typeof b.SecretString === "string") return b.SecretString;
  if (typeof b.SecretBinary === "string") {
    const text = utf8(Buffer.from(b.SecretBinary, "base64"));
    if (text === null) throw new StoreError("binary_value", `AWS secret "${name}" holds binary data that is not UTF-8 text`);
    return text;
  }
  throw new StoreError("bad_response", `${LABEL} answered without SecretString or SecretBinary for "${name}"`);
}

/** The whole text, or one field of it as a JSON object (strings as they are, numbers and booleans as written). */
function fieldOf(text: string, name: string, field: string | null): string {
  if (field === null) {
    if (text === "") throw new StoreError("empty_value", `AWS secret "${name}" is empty`);
    return text;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new StoreError("not_json", `AWS secret "${name}" is not a JSON object, so it has no field "${field}"`);
  if (!Object.hasOwn(json, field)) throw new StoreError("field_not_found", `AWS secret "${name}" has no field "${field}"`);
  const v = (json as Record<string, unknown>)[field];
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (typeof v !== "string") throw new StoreError("field_not_text", `field "${field}" of AWS secret "${name}" is not a string`);
  if (v === "") throw new StoreError("empty_value", `field "${field}" of AWS secret "${name}" is empty`);
  return v;
}

/** AWS's error code (`__type`, or the x-amzn-ErrorType header) as a StoreError; its Message is not repeated. */
function refusal(status: number, headers: Headers, json: unknown, name: string, region: string): StoreError {
  const type = (json as { __type?: unknown } | null)?.__type ?? headers.get("x-amzn-errortype")?.split(":")[0];
  const code = codeOf(typeof type === "string" ? type.slice(type.lastIndexOf("#") + 1) : null);
  switch (code) {
    case "ResourceNotFoundException":
      return new StoreError("not_found", `${LABEL} has no secret "${name}" in ${region}`);
    case "AccessDeniedException":
      return new StoreError("access_denied", `${LABEL} denied credgate's AWS identity access to "${name}" (AccessDeniedException)`);
    case "UnrecognizedClientException":
    case "InvalidSignatureException":
    case "IncompleteSignature":
    case "SignatureDoesNotMatch":
    case "InvalidClientTokenId":
      return new StoreError("credentials_refused", `AWS refused credgate's AWS credentials (${code})`);
    case "DecryptionFailure":
      return new StoreError("decryption_failed", `${LABEL} could not decrypt "${name}" with its KMS key (DecryptionFailure)`);
    default:
      return new StoreError("store_error", `${LABEL} answered ${status}${code ? ` ${code}` : ""} for "${name}"`);
  }
}
