// AWS Signature V4 (docs/injection.md#aws-signature-v4): a request to a host an `awsSigV4` secret matches is
// signed again with the real key, whatever the agent signed it with (agents hold a placeholder key id). Header
// signatures, the payload-hash modes, signed chunked uploads (every chunk re-signed while the body streams) and
// presigned URLs. Two stages: `aws-check`, where injection happens, decides how the request will be signed (or
// answers 502 credential_unavailable when it cannot be, before policy holds or budgets see it) and counts the
// signature; `aws-sign`, last before forwarding, signs — so that a request an approval held is signed when it
// is released (a signature is good for 15 minutes).
import { signingScope, type AwsScope } from "../../core/awsScope.ts";
import type { AwsSigV4Config } from "../../core/records/secrets.ts";
import { clockNow } from "../../runtime/clock.ts";
import { credentialUnavailableFor } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import type { CompiledSecret } from "../snapshot.ts";
import { PASS, type RequestVerdict, type Stage } from "../stage.ts";
import { looksChunkSigned, resignChunks } from "../signing/awsChunked.ts";
import {
  agentSigning,
  AwsSigner,
  credentialScope,
  EMPTY_SHA256,
  isKnownPayloadHash,
  parseQuery,
  STREAMING_SIGNED,
  STREAMING_SIGNED_TRAILER,
  UNSIGNED_PAYLOAD,
  amzDate,
} from "../../crypto/awsSigV4.ts";
import { createHash } from "node:crypto";

/** A body this long or shorter is hashed for a request that declares no payload hash; a longer one cannot be. */
export const MAX_HASHED_BODY = 16 * 1024 * 1024;

/** One signer per secret as the snapshot compiled it (a changed secret is a new object). */
const signers = new WeakMap<CompiledSecret, AwsSigner>();

function signerFor(secret: CompiledSecret, value: string): AwsSigner {
  let signer = signers.get(secret);
  if (signer === undefined || signer.key.secretAccessKey !== value) {
    signer = new AwsSigner({ accessKeyId: secret.injection!.awsSigV4!.accessKeyId, secretAccessKey: value });
    signers.set(secret, signer);
  }
  return signer;
}

function splitTarget(target: string): { path: string; query: string } {
  const hash = target.indexOf("#");
  const t = hash === -1 ? target : target.slice(0, hash);
  const q = t.indexOf("?");
  return q === -1 ? { path: t, query: "" } : { path: t.slice(0, q), query: t.slice(q + 1) };
}

/** Host and the agent's x-amz-* headers (lowercase names), minus what the new signature replaces. */
function headersToSign(rq: ProxyRequest): Record<string, string> {
  const out: Record<string, string> = { host: rq.authority };
  for (const [name] of rq.headers) {
    const lower = name.toLowerCase();
    if (!lower.startsWith("x-amz-") || lower === "x-amz-date" || lower === "x-amz-security-token") continue;
    out[lower] = rq.headers.get(lower)!;
  }
  return out;
}

/** How the request will be signed (aws-check), done by aws-sign. Private to the two stages. */
interface AwsPlan {
  signer: AwsSigner;
  scope: AwsScope;
  /** A presigned URL: re-signed in query form with the agent's date, expiry and signed headers. */
  presigned: { date: Date; expires: number; signedHeaders: string[] } | null;
  /** The x-amz-content-sha256 of a signed chunked body (its chunks are signed again), else null. */
  chunked: string | null;
}

/**
 * aws-check's plan for a request, which aws-sign takes. Kept here, not on the request: only these two stages know
 * it. Only a request with a signing secret ever has one (and aws-sign looks only then), and an entry goes with its
 * request.
 */
const plans = new WeakMap<ProxyRequest, AwsPlan>();

function plan(rq: ProxyRequest, signer: AwsSigner, scope: AwsScope, chunked: string | null, presigned: AwsPlan["presigned"] = null): RequestVerdict {
  plans.set(rq, { signer, scope, presigned, chunked });
  rq.recordInjection(signer.key.secretAccessKey);
  // The real key id goes out in the credential scope: the echo guard redacts it too (docs/guards.md#echo-guard).
  rq.recordInjection(signer.key.accessKeyId, 0);
  return PASS;
}

/** A presigned URL's new signature, in the query the signer wrote. */
const QUERY_SIGNATURE = /(?:^|&)X-Amz-Signature=([0-9a-fA-F]+)/;

/** The header-signing plan; a signed chunked body must decode before anything goes on. */
function planHeaders(rq: ProxyRequest, signer: AwsSigner, scope: AwsScope, bodyHash: string | null): RequestVerdict | Promise<RequestVerdict> {
  if (bodyHash !== null) rq.headers.set("x-amz-content-sha256", bodyHash);
  const payload = rq.headers.get("x-amz-content-sha256")!;
  if (rq.body === null || (payload !== STREAMING_SIGNED && payload !== STREAMING_SIGNED_TRAILER)) return plan(rq, signer, scope, null);
  return rq.peekBody(256).then((head) => (looksChunkSigned(head) ? plan(rq, signer, scope, payload) : credentialUnavailableFor(rq, "The aws-chunked body does not decode.")));
}

async function hashBody(rq: ProxyRequest): Promise<string | null> {
  if (rq.body === null) return EMPTY_SHA256;
  const head = await rq.peekBody(MAX_HASHED_BODY + 1);
  if (head.byteLength > MAX_HASHED_BODY) return null;
  return createHash("sha256").update(head).digest("hex");
}

function check(rq: ProxyRequest, secret: CompiledSecret, value: string): RequestVerdict | Promise<RequestVerdict> {
  const cfg: AwsSigV4Config = secret.injection!.awsSigV4!;
  const agent = agentSigning(rq.headers.get("authorization"), parseQuery(splitTarget(rq.upstreamTarget).query));
  if (agent.kind === "unsupported") return credentialUnavailableFor(rq, `The request is signed with ${agent.reason}, which credgate cannot re-sign.`);
  const scope = signingScope({ region: cfg.region, service: cfg.service }, agent.scope, rq.host);
  if (scope === null) return credentialUnavailableFor(rq, "No AWS region and service are known for this host: set them on the secret.");
  const signer = signerFor(secret, value);
  if (agent.kind === "presigned") {
    // The library refuses what AWS would (an expiry over 7 days): refused here, before anything else.
    if (agent.expires > 7 * 24 * 3600) return credentialUnavailableFor(rq, "The presigned URL's expiry is longer than AWS allows (7 days).");
    return plan(rq, signer, scope, null, { date: agent.date, expires: agent.expires, signedHeaders: agent.signedHeaders });
  }
  const declared = rq.headers.get("x-amz-content-sha256");
  if (declared !== null) {
    if (!isKnownPayloadHash(declared)) return credentialUnavailableFor(rq, "The request declares a payload hash credgate cannot keep.");
    return planHeaders(rq, signer, scope, null);
  }
  // No declared hash: S3 takes UNSIGNED-PAYLOAD, every other service the body's hash.
  if (scope.service === "s3") return planHeaders(rq, signer, scope, UNSIGNED_PAYLOAD);
  return hashBody(rq).then((hash) => (hash === null ? credentialUnavailableFor(rq, "The body is too large to sign.") : planHeaders(rq, signer, scope, hash)));
}

/** Decides how a request to a host an AWS secret matches will be signed, or refuses it (docs/injection.md#aws-signature-v4). */
export function awsCheckStage(): Stage {
  return {
    name: "aws-check",
    reads: ["secrets"],
    provides: ["awsPlan"],
    request(rq) {
      const signing = rq.signing;
      if (signing.length === 0) return PASS;
      // The last matching AWS secret wins, as later writes do (docs/injection.md#precedence).
      for (let i = signing.length - 1; i >= 0; i--) {
        const { secret, value } = signing[i]!;
        if (secret.injection?.awsSigV4 !== undefined) return check(rq, secret, value);
      }
      return PASS;
    },
  };
}

/** The new header signature, and for a signed chunked body the new chain on each chunk as it streams. */
function signHeaders(rq: ProxyRequest, p: AwsPlan, path: string, query: string): RequestVerdict {
  const date = new Date(clockNow());
  rq.headers.delete("authorization");
  rq.headers.delete("x-amz-security-token");
  rq.headers.delete("x-amz-date");
  const { authorization, signature } = p.signer.signHeaders(rq.method, path, parseQuery(query), headersToSign(rq), p.scope, date);
  const longDate = amzDate(date);
  rq.headers.set("x-amz-date", longDate);
  rq.headers.set("authorization", authorization);
  // Good for 15 minutes with the date beside it (with UNSIGNED-PAYLOAD, for any body): an upstream that reflects
  // the request must not hand it to the agent (docs/guards.md#echo-guard).
  rq.recordInjection(signature, 0);
  if (p.chunked !== null && rq.body !== null) {
    const { signer, scope } = p;
    rq.body = resignChunks(rq.body, {
      longDate,
      scope: credentialScope(date, scope),
      seed: signature,
      trailer: p.chunked === STREAMING_SIGNED_TRAILER,
      sign: (s) => signer.signString(s, scope, date),
    });
  }
  return PASS;
}

function presign(rq: ProxyRequest, p: AwsPlan, path: string, query: string): Promise<RequestVerdict> {
  const { date, expires, signedHeaders } = p.presigned!;
  const headers: Record<string, string> = { host: rq.authority };
  for (const name of signedHeaders) if (name !== "host" && rq.headers.has(name)) headers[name] = rq.headers.get(name)!;
  return p.signer.presign(rq.method, path, parseQuery(query), headers, p.scope, date, expires).then(
    (newQuery): RequestVerdict => {
      rq.upstreamTarget = `${path}?${newQuery}`;
      // A working URL for as long as its expiry (up to 7 days): neither the signature nor the query that carries
      // it may come back to the agent (docs/guards.md#echo-guard).
      const signature = QUERY_SIGNATURE.exec(newQuery)?.[1];
      if (signature !== undefined) rq.recordInjection(signature, 0);
      rq.recordInjection(newQuery, 0);
      rq.headers.delete("x-amz-security-token");
      return PASS;
    },
    (err: unknown) => credentialUnavailableFor(rq, `The request cannot be signed: ${err instanceof Error ? err.message : String(err)}.`),
  );
}

/** Signs what aws-check planned, at the current time, last before the request is forwarded. */
export function awsSignStage(): Stage {
  return {
    name: "aws-sign",
    // It signs the request as it leaves: after the placeholders are replaced in what it signs, and after an
    // approval that may have held it longer than a signature is good for.
    reads: ["secrets", "awsPlan", "placeholdersReplaced", "approval"],
    provides: [],
    request(rq) {
      if (rq.signing.length === 0) return PASS;
      const p = plans.get(rq);
      if (p === undefined) return PASS;
      const { path, query } = splitTarget(rq.upstreamTarget);
      return p.presigned !== null ? presign(rq, p, path, query) : signHeaders(rq, p, path, query);
    },
  };
}
