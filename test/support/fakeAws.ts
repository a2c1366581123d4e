// A fake AWS endpoint for the signing tests: a TLS server that checks every request's Signature V4 against the
// real key — header signatures, presigned URLs, and every chunk and trailer signature of an aws-chunked body —
// with a verifier written here from AWS's published algorithm (not the gateway's signer), and answers as S3
// (PutObject, GetObject, ListObjectsV2, path-style and virtual-hosted) and STS (GetCallerIdentity) do, XML
// included. A request whose signature does not verify gets S3's 403 SignatureDoesNotMatch. An object key under
// `reflect/` is answered, once the signature verified, with the request's target, Authorization and X-Amz-Date
// in the body and in headers, as an origin that reflects the request would (the echo guard's tests).
import { createHash, createHmac } from "node:crypto";
import type { Server } from "bun";
import type { TestPki } from "./upstream.ts";

export interface FakeAwsKey {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface AwsSeen {
  method: string;
  host: string;
  url: string;
  /** How the request was signed. */
  mode: "header" | "presigned";
  keyId: string;
  region: string;
  service: string;
  payloadHash: string;
  chunkSignatures: number;
  trailers: Record<string, string>;
  bodyBytes: number;
  /** The signature's time (epoch seconds), from x-amz-date or X-Amz-Date. */
  signedAt: number | null;
  /** Why verification failed; null when it passed. */
  failure: string | null;
  /** The Authorization header as received. */
  authorization: string | null;
}

export interface FakeAws {
  server: Server<unknown>;
  port: number;
  seen: AwsSeen[];
  objects: Map<string, Uint8Array>;
  stop(): Promise<void>;
}

const EMPTY = createHash("sha256").update("").digest("hex");
const sha256hex = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

/** RFC 3986 percent-encoding of every byte but the unreserved ones. */
function uriEncode(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
}

function canonicalQuery(rawQuery: string, skip: string | null): string {
  if (rawQuery === "") return "";
  const pairs = rawQuery
    .split("&")
    .filter(Boolean)
    .map((p) => {
      const eq = p.indexOf("=");
      return eq === -1 ? [decode(p), ""] : [decode(p.slice(0, eq)), decode(p.slice(eq + 1))];
    })
    .filter(([k]) => k !== skip)
    .map(([k, v]) => [uriEncode(k!), uriEncode(v!)] as const);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

/** S3 signs the path as sent; every other service the path with each segment encoded once more. */
function canonicalPath(rawPath: string, service: string): string {
  if (service === "s3") return rawPath || "/";
  return rawPath
    .split("/")
    .map((seg) => uriEncode(seg))
    .join("/");
}

function canonicalHeaders(headers: Headers, signed: string[]): string {
  return signed.map((n) => `${n}:${(headers.get(n) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
}

export interface Verified {
  keyId: string;
  date: string;
  region: string;
  service: string;
  signature: string;
  key: Buffer;
  mode: "header" | "presigned";
}

/** Checks the request's signature (header or query form); throws a message on failure. */
export function verify(req: Request, rawPath: string, rawQuery: string, key: FakeAwsKey, payloadHash: string): Verified {
  const url = new URL(req.url);
  const auth = req.headers.get("authorization");
  let credential: string, signedHeaders: string, signature: string, longDate: string, mode: "header" | "presigned";
  if (url.searchParams.has("X-Amz-Signature")) {
    mode = "presigned";
    if (url.searchParams.get("X-Amz-Algorithm") !== "AWS4-HMAC-SHA256") throw new Error("unsupported algorithm");
    credential = url.searchParams.get("X-Amz-Credential")!;
    signedHeaders = url.searchParams.get("X-Amz-SignedHeaders")!;
    signature = url.searchParams.get("X-Amz-Signature")!;
    longDate = url.searchParams.get("X-Amz-Date")!;
    const expires = Number(url.searchParams.get("X-Amz-Expires"));
    const at = Date.UTC(+longDate.slice(0, 4), +longDate.slice(4, 6) - 1, +longDate.slice(6, 8), +longDate.slice(9, 11), +longDate.slice(11, 13), +longDate.slice(13, 15));
    if (Date.now() > at + expires * 1000) throw new Error("Request has expired");
  } else {
    mode = "header";
    const m = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth ?? "");
    if (!m) throw new Error(`malformed Authorization: ${auth}`);
    [, credential, signedHeaders, signature] = m as unknown as [string, string, string, string];
    longDate = req.headers.get("x-amz-date") ?? "";
    const at = Date.UTC(+longDate.slice(0, 4), +longDate.slice(4, 6) - 1, +longDate.slice(6, 8), +longDate.slice(9, 11), +longDate.slice(11, 13), +longDate.slice(13, 15));
    if (!(Math.abs(Date.now() - at) < 15 * 60 * 1000)) throw new Error("RequestTimeTooSkewed");
  }
  const [keyId, date, region, service, term] = credential.split("/");
  if (keyId !== key.accessKeyId) throw new Error(`InvalidAccessKeyId: ${keyId}`);
  if (term !== "aws4_request" || date !== longDate.slice(0, 8)) throw new Error("malformed credential scope");
  const names = signedHeaders.split(";");
  if (!names.includes("host")) throw new Error("host is not signed");
  for (const [name] of req.headers) if (name.startsWith("x-amz-") && !names.includes(name) && mode === "header") throw new Error(`${name} is not signed`);
  const canonical = [
    req.method,
    canonicalPath(rawPath, service!),
    canonicalQuery(rawQuery, mode === "presigned" ? "X-Amz-Signature" : null),
    canonicalHeaders(req.headers, names),
    signedHeaders,
    payloadHash,
  ].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${longDate}\n${scope}\n${sha256hex(canonical)}`;
  const k = signingKey(key.secretAccessKey, date!, region!, service!);
  const expected = hmac(k, toSign).toString("hex");
  if (expected !== signature) throw new Error(`SignatureDoesNotMatch (canonical request:\n${canonical})`);
  return { keyId: keyId!, date: longDate, region: region!, service: service!, signature, key: k, mode };
}

/** Decodes an aws-chunked body; with `signed`, checks every chunk (and trailer) signature in the chain. */
function decodeChunked(body: Buffer, signed: { v: Verified; scope: string } | null): { data: Buffer; chunks: number; trailers: Record<string, string> } {
  let at = 0;
  let previous = signed?.v.signature ?? "";
  const parts: Buffer[] = [];
  let chunks = 0;
  const readLine = () => {
    const end = body.indexOf("\r\n", at);
    if (end === -1) throw new Error("truncated aws-chunked body");
    const line = body.subarray(at, end).toString("latin1");
    at = end + 2;
    return line;
  };
  for (;;) {
    const line = readLine();
    const m = /^([0-9a-fA-F]+)(?:;chunk-signature=([0-9a-f]{64}))?$/.exec(line);
    if (!m) throw new Error(`bad chunk line ${line}`);
    const size = parseInt(m[1]!, 16);
    const data = body.subarray(at, at + size);
    at += size;
    if (signed) {
      if (!m[2]) throw new Error("chunk without signature");
      const toSign = `AWS4-HMAC-SHA256-PAYLOAD\n${signed.v.date}\n${signed.scope}\n${previous}\n${EMPTY}\n${sha256hex(data)}`;
      const expected = hmac(signed.v.key, toSign).toString("hex");
      if (expected !== m[2]) throw new Error(`chunk ${chunks} signature does not match`);
      previous = expected;
      chunks++;
    }
    if (size === 0) break;
    parts.push(Buffer.from(data));
    if (body.subarray(at, at + 2).toString() !== "\r\n") throw new Error("chunk not followed by CRLF");
    at += 2;
  }
  const trailers: Record<string, string> = {};
  const canonical: string[] = [];
  for (;;) {
    const line = readLine();
    if (line === "") break;
    const c = line.indexOf(":");
    const name = line.slice(0, c).toLowerCase();
    const value = line.slice(c + 1).trim();
    if (name === "x-amz-trailer-signature") {
      if (!signed) throw new Error("trailer signature on an unsigned body");
      const toSign = `AWS4-HMAC-SHA256-TRAILER\n${signed.v.date}\n${signed.scope}\n${previous}\n${sha256hex(canonical.join(""))}`;
      if (hmac(signed.v.key, toSign).toString("hex") !== value) throw new Error("trailer signature does not match");
      continue;
    }
    trailers[name] = value;
    canonical.push(`${name}:${value}\n`);
  }
  if (at !== body.length) throw new Error("bytes after the aws-chunked body");
  return { data: Buffer.concat(parts), chunks, trailers };
}

function xml(status: number, body: string, extra: Record<string, string> = {}): Response {
  return new Response(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`, { status, headers: { "content-type": "application/xml", "x-amz-request-id": "FAKE", ...extra } });
}

function s3Error(status: number, code: string, message: string): Response {
  return xml(status, `<Error><Code>${code}</Code><Message>${message.replace(/[<&>]/g, " ")}</Message><RequestId>FAKE</RequestId></Error>`);
}

/** S3 virtual-hosted (`<bucket>.s3.…`) or path-style: bucket and key of a request. */
function bucketAndKey(host: string, rawPath: string): { bucket: string; key: string } {
  const hostname = host.replace(/:\d+$/, "");
  const virtual = /^(.+)\.s3[.-]/.exec(hostname);
  const path = decode(rawPath).replace(/^\//, "");
  if (virtual) return { bucket: virtual[1]!, key: path };
  const slash = path.indexOf("/");
  return slash === -1 ? { bucket: path, key: "" } : { bucket: path.slice(0, slash), key: path.slice(slash + 1) };
}

export function startFakeAws(pki: TestPki, key: FakeAwsKey): FakeAws {
  const seen: AwsSeen[] = [];
  const objects = new Map<string, Uint8Array>();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    idleTimeout: 0,
    maxRequestBodySize: 1024 * 1024 * 1024,
    async fetch(req) {
      // The raw target as sent (URL would normalise it).
      const target = req.url.replace(/^https?:\/\/[^/]+/, "");
      const q = target.indexOf("?");
      const rawPath = q === -1 ? target : target.slice(0, q);
      const rawQuery = q === -1 ? "" : target.slice(q + 1);
      const host = req.headers.get("host") ?? "";
      const body = Buffer.from(await req.arrayBuffer());
      const record: AwsSeen = { method: req.method, host, url: target, mode: "header", keyId: "", region: "", service: "", payloadHash: "", chunkSignatures: 0, trailers: {}, bodyBytes: body.length, signedAt: null, failure: null, authorization: req.headers.get("authorization") };
      seen.push(record);
      let payload: Buffer = body;
      try {
        const presigned = new URL(req.url).searchParams.has("X-Amz-Signature");
        const declared = req.headers.get("x-amz-content-sha256");
        const isS3 = /(^|\.)s3[.-]/.test(host) || host.startsWith("s3.");
        const payloadHash = presigned ? (isS3 ? "UNSIGNED-PAYLOAD" : EMPTY) : (declared ?? sha256hex(body));
        record.payloadHash = payloadHash;
        const v = verify(req, rawPath, rawQuery, key, payloadHash);
        const d = v.date;
        const signedAt = Date.UTC(+d.slice(0, 4), +d.slice(4, 6) - 1, +d.slice(6, 8), +d.slice(9, 11), +d.slice(11, 13), +d.slice(13, 15)) / 1000;
        Object.assign(record, { mode: v.mode, keyId: v.keyId, region: v.region, service: v.service, signedAt });
        if (payloadHash.startsWith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD")) {
          const d = decodeChunked(body, { v, scope: `${v.date.slice(0, 8)}/${v.region}/${v.service}/aws4_request` });
          payload = d.data;
          record.chunkSignatures = d.chunks;
          record.trailers = d.trailers;
        } else if (payloadHash === "STREAMING-UNSIGNED-PAYLOAD-TRAILER") {
          const d = decodeChunked(body, null);
          payload = d.data;
          record.trailers = d.trailers;
        } else if (/^[0-9a-f]{64}$/.test(payloadHash) && sha256hex(body) !== payloadHash) {
          throw new Error("XAmzContentSHA256Mismatch");
        }
        const decodedLength = req.headers.get("x-amz-decoded-content-length");
        if (decodedLength !== null && Number(decodedLength) !== payload.length) throw new Error("IncompleteBody");
      } catch (err) {
        record.failure = (err as Error).message;
        return s3Error(403, "SignatureDoesNotMatch", record.failure);
      }
      if (record.service === "sts") {
        const form = new URLSearchParams(payload.toString() || rawQuery);
        if (form.get("Action") !== "GetCallerIdentity") return xml(400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>");
        return xml(
          200,
          `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/credgate-test</Arn><UserId>${key.accessKeyId}</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
        );
      }
      const { bucket, key: objectKey } = bucketAndKey(host, rawPath);
      if (objectKey.startsWith("reflect/")) {
        const reflected = { url: target, authorization: req.headers.get("authorization"), amzDate: req.headers.get("x-amz-date") };
        const headers: Record<string, string> = { "x-reflected-url": target };
        if (reflected.authorization) headers["x-reflected-authorization"] = reflected.authorization;
        return Response.json(reflected, { headers });
      }
      if (req.method === "PUT" && objectKey) {
        objects.set(`${bucket}/${objectKey}`, payload);
        return new Response(null, { status: 200, headers: { etag: `"${createHash("md5").update(payload).digest("hex")}"`, "x-amz-request-id": "FAKE" } });
      }
      if ((req.method === "GET" || req.method === "HEAD") && objectKey) {
        const data = objects.get(`${bucket}/${objectKey}`);
        if (!data) return s3Error(404, "NoSuchKey", "The specified key does not exist.");
        return new Response(req.method === "HEAD" ? null : data, {
          headers: { "content-type": "application/octet-stream", "content-length": String(data.length), etag: `"${createHash("md5").update(data).digest("hex")}"`, "last-modified": new Date().toUTCString() },
        });
      }
      if (req.method === "GET" && !objectKey) {
        const prefix = new URL(req.url).searchParams.get("prefix") ?? "";
        const keys = [...objects.keys()].filter((k) => k.startsWith(`${bucket}/${prefix}`)).map((k) => k.slice(bucket.length + 1)).sort();
        const contents = keys
          .map((k) => `<Contents><Key>${k}</Key><LastModified>2025-01-01T00:00:00.000Z</LastModified><ETag>"x"</ETag><Size>${objects.get(`${bucket}/${k}`)!.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`)
          .join("");
        return xml(200, `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${bucket}</Name><Prefix>${prefix}</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`);
      }
      return s3Error(400, "NotImplemented", `${req.method} ${rawPath}`);
    },
  });
  return { server, port: server.port!, seen, objects, stop: () => server.stop(true) };
}
