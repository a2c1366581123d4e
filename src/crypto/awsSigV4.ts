// Re-signing an agent's AWS request with the real key (docs/injection.md#aws-signature-v4): presigned URLs and
// chunk signatures with @smithy/signature-v4 (the AWS SDK's own signer); the header signature of every request
// with the same canonical request built here, which is several times cheaper (see signHeaders). What the agent signed with, or
// whether it signed at all, does not matter: the request is signed again over `host` and its `x-amz-*` headers,
// with the payload hash it declared; a presigned URL is signed again in query form, keeping its date and expiry.
import { createHash, createHmac } from "node:crypto";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { HttpRequest, QueryParameterBag } from "@smithy/types";
import { scopeOfCredential, type AwsScope } from "../core/awsScope.ts";

export interface AwsKey {
  accessKeyId: string;
  secretAccessKey: string;
}

/** The SHA-256 of nothing: the payload hash of a request without a body. */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
export const STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
export const STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** The query parameters of a SigV4 presigned URL that the new signature replaces. */
const PRESIGN_PARAMS = ["x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires", "x-amz-signedheaders", "x-amz-signature", "x-amz-security-token"];

/** How the agent's request is signed, as far as re-signing needs to know. */
export type AgentSigning =
  | { kind: "header"; scope: AwsScope | null }
  | { kind: "presigned"; scope: AwsScope | null; date: Date; expires: number; signedHeaders: string[] }
  | { kind: "unsupported"; reason: string };

/** One query pair as the agent wrote it, and decoded. */
interface QueryPair {
  raw: string;
  key: string;
  value: string;
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function parseQuery(query: string): QueryPair[] {
  if (query === "") return [];
  return query.split("&").map((raw) => {
    const eq = raw.indexOf("=");
    return eq === -1 ? { raw, key: decode(raw), value: "" } : { raw, key: decode(raw.slice(0, eq)), value: decode(raw.slice(eq + 1)) };
  });
}

/** `20250301T120000Z` → Date; null when it is not that form. */
export function parseAmzDate(s: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Reads how the agent signed: its Authorization header or its presigned query. */
export function agentSigning(authorization: string | null, query: QueryPair[]): AgentSigning {
  const param = (name: string) => query.find((p) => p.key.toLowerCase() === name)?.value;
  const signature = param("x-amz-signature");
  if (signature !== undefined) {
    if (param("x-amz-algorithm") !== "AWS4-HMAC-SHA256") return { kind: "unsupported", reason: "presigned URL is not SigV4" };
    const date = parseAmzDate(param("x-amz-date") ?? "");
    const expires = Number(param("x-amz-expires"));
    if (!date || !Number.isInteger(expires) || expires < 1) return { kind: "unsupported", reason: "presigned URL without a valid date and expiry" };
    const scope = scopeOfCredential(param("x-amz-credential") ?? "");
    const signedHeaders = (param("x-amz-signedheaders") ?? "host").toLowerCase().split(";").filter(Boolean);
    return { kind: "presigned", scope, date, expires, signedHeaders };
  }
  if (query.some((p) => p.key === "AWSAccessKeyId" || p.key === "Signature")) return { kind: "unsupported", reason: "SigV2 presigned URL" };
  if (authorization === null) return { kind: "header", scope: null };
  if (authorization.startsWith("AWS4-HMAC-SHA256 ")) {
    const m = /Credential=([^,\s]+)/.exec(authorization);
    return { kind: "header", scope: m ? scopeOfCredential(m[1]!) : null };
  }
  if (authorization.startsWith("AWS4-ECDSA-P256-SHA256")) return { kind: "unsupported", reason: "SigV4a" };
  if (authorization.startsWith("AWS ")) return { kind: "unsupported", reason: "SigV2" };
  // Some other scheme (a bearer token meant for something else): sign as if the agent had not.
  return { kind: "header", scope: null };
}

/** Whether a declared payload hash is one re-signing can keep (the body is not changed). */
export function isKnownPayloadHash(hash: string): boolean {
  return hash === UNSIGNED_PAYLOAD || hash === STREAMING_UNSIGNED_TRAILER || hash === STREAMING_SIGNED || hash === STREAMING_SIGNED_TRAILER || HEX_SHA256.test(hash);
}

/** `yyyymmddThhmmssZ` */
export function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

const sha256 = Hash.bind(null, "sha256");

/** One signer per key and path style: S3 signs the path as sent, every other service escapes it once more. */
export class AwsSigner {
  readonly #plain: SignatureV4;
  readonly #escaped: SignatureV4;
  readonly #keys = new Map<string, Buffer>();

  constructor(readonly key: AwsKey) {
    const credentials = { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
    this.#plain = new SignatureV4({ credentials, region: "us-east-1", service: "s3", sha256, uriEscapePath: false, applyChecksum: false });
    this.#escaped = new SignatureV4({ credentials, region: "us-east-1", service: "s3", sha256, uriEscapePath: true, applyChecksum: false });
  }

  #for(scope: AwsScope): SignatureV4 {
    return scope.service === "s3" ? this.#plain : this.#escaped;
  }

  /**
   * Header signing: the Authorization value for `method path?query` with `headers` (host and the x-amz-*
   * headers to sign, lowercase names, x-amz-content-sha256 among them) at `date`. The canonical request is built
   * here rather than by the library's `sign`, which costs about 120 µs a request against about 20 µs for this
   * (bench/README.md); test/unit/awsSigV4.test.ts checks both give the same signature.
   */
  signHeaders(method: string, path: string, query: QueryPair[], headers: Record<string, string>, scope: AwsScope, date: Date): { authorization: string; signature: string } {
    const longDate = amzDate(date);
    const all: Record<string, string> = { ...headers, "x-amz-date": longDate };
    const names = Object.keys(all).sort();
    let canonicalHeaders = "";
    for (const n of names) canonicalHeaders += `${n}:${all[n]!.trim().replace(/\s+/g, " ")}\n`;
    const signedHeaders = names.join(";");
    const canonical = `${method}\n${canonicalPath(path, scope.service !== "s3")}\n${canonicalQuery(query)}\n${canonicalHeaders}\n${signedHeaders}\n${all["x-amz-content-sha256"] ?? EMPTY_SHA256}`;
    const credential = credentialScope(date, scope);
    const toSign = `AWS4-HMAC-SHA256\n${longDate}\n${credential}\n${createHash("sha256").update(canonical).digest("hex")}`;
    const signature = createHmac("sha256", this.#signingKey(longDate.slice(0, 8), scope)).update(toSign).digest("hex");
    return { authorization: `AWS4-HMAC-SHA256 Credential=${this.key.accessKeyId}/${credential}, SignedHeaders=${signedHeaders}, Signature=${signature}`, signature };
  }

  /** The derived key of a day, region and service (kept: the same few serve every request of a day). */
  #signingKey(shortDate: string, scope: AwsScope): Buffer {
    const id = `${shortDate}/${scope.region}/${scope.service}`;
    let key = this.#keys.get(id);
    if (key === undefined) {
      const hmac = (k: string | Buffer, data: string) => createHmac("sha256", k).update(data).digest();
      key = hmac(hmac(hmac(hmac(`AWS4${this.key.secretAccessKey}`, shortDate), scope.region), scope.service), "aws4_request");
      if (this.#keys.size >= 16) this.#keys.clear();
      this.#keys.set(id, key);
    }
    return key;
  }

  /** Query signing: the presigned URL's new query, the agent's other parameters kept as they were written. */
  async presign(method: string, path: string, query: QueryPair[], headers: Record<string, string>, scope: AwsScope, date: Date, expires: number): Promise<string> {
    const kept = query.filter((p) => !PRESIGN_PARAMS.includes(p.key.toLowerCase()));
    // S3 presigned URLs carry no payload hash (UNSIGNED-PAYLOAD); the others sign an empty body.
    const payload = scope.service === "s3" ? UNSIGNED_PAYLOAD : EMPTY_SHA256;
    const request: HttpRequest = {
      method,
      protocol: "https:",
      hostname: headers.host!,
      path,
      query: bag(kept),
      headers: { ...headers, "x-amz-content-sha256": payload },
      body: undefined,
    };
    const hidden = new Set(["x-amz-content-sha256"]);
    const signed = await this.#for(scope).presign(request, {
      signingDate: date,
      expiresIn: expires,
      signingRegion: scope.region,
      signingService: scope.service,
      unsignableHeaders: hidden,
      unhoistableHeaders: new Set([...hidden, ...Object.keys(headers)]),
    });
    const q = signed.query as Record<string, string>;
    const auth = ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"].map(
      (name) => `${name}=${encodeRfc3986(q[name]!)}`,
    );
    return [...kept.map((p) => p.raw), ...auth].join("&");
  }

  /** Signs a string-to-sign with the key derived for `date` and `scope` (chunk and trailer signatures). */
  signString(stringToSign: string, scope: AwsScope, date: Date): Promise<string> {
    return this.#for(scope).sign(stringToSign, { signingDate: date, signingRegion: scope.region, signingService: scope.service });
  }
}

function bag(pairs: QueryPair[]): QueryParameterBag {
  const out: Record<string, string | string[]> = {};
  for (const { key, value } of pairs) {
    const had = out[key];
    out[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return out;
}

/** The canonical URI: S3's path as sent; every other service's normalised and each segment encoded once more. */
function canonicalPath(raw: string, escape: boolean): string {
  // An empty path is the root, as the SDK's request object makes it.
  const path = raw === "" ? "/" : raw;
  if (!escape) return path;
  const segments: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  const normalized = `${path.startsWith("/") ? "/" : ""}${segments.join("/")}${segments.length > 0 && path.endsWith("/") ? "/" : ""}`;
  return encodeRfc3986(normalized).replace(/%2F/g, "/");
}

/** The canonical query: pairs encoded, sorted by key then value, the signature itself left out. */
function canonicalQuery(pairs: QueryPair[]): string {
  if (pairs.length === 0) return "";
  const encoded: [string, string][] = [];
  for (const { key, value } of pairs) if (key.toLowerCase() !== "x-amz-signature") encoded.push([encodeRfc3986(key), `${encodeRfc3986(key)}=${encodeRfc3986(value)}`]);
  encoded.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return encoded.map((e) => e[1]).join("&");
}

function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `date/region/service/aws4_request` */
export function credentialScope(date: Date, scope: AwsScope): string {
  return `${amzDate(date).slice(0, 8)}/${scope.region}/${scope.service}/aws4_request`;
}
