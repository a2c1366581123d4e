// The client side of SCRAM-SHA-256 and SCRAM-SHA-256-PLUS (RFC 5802, RFC 7677) as credgate answers a PostgreSQL server
// with a database credential's password (docs/databases.md#upstream-tls-and-authentication). The user name is sent
// empty, as libpq does: the server takes the startup message's. The server must prove that it knows the password too
// (its signature in the final message); one that cannot is refused. Channel binding is `tls-server-end-point` (RFC
// 5929): a hash of the server certificate the TLS connection saw, so a relay that terminates TLS with another
// certificate cannot pass the exchange on.
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";
import { saslprep } from "./saslprep.ts";

export const SCRAM = "SCRAM-SHA-256";
export const SCRAM_PLUS = "SCRAM-SHA-256-PLUS";

/**
 * How the client stands on channel binding: `none` without TLS (gs2 `n`); `unused` on TLS when the server did not
 * offer -PLUS (gs2 `y`: a server that did offer it then knows the offer was stripped on the way); or the
 * `tls-server-end-point` hash of the server's certificate (gs2 `p=tls-server-end-point`, mechanism -PLUS).
 */
export type ChannelBinding = { kind: "none" } | { kind: "unused" } | { kind: "tls-server-end-point"; data: Uint8Array };

/** The most PBKDF2 iterations a server may ask for (PostgreSQL's default is 4096): a bound on the work a hostile server can cause. */
export const MAX_ITERATIONS = 10_000_000;

export class ScramError extends Error {}

/** Keys derived from a password, salt and iteration count: kept for reconnections (the PBKDF2 is the dear part). */
interface Keys {
  clientKey: Buffer;
  serverKey: Buffer;
}

const KEYS_MAX = 256;
const derived = new Map<string, Keys>();

function hmac(key: Uint8Array, data: string | Uint8Array): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

async function keysFor(password: string, salt: Buffer, iterations: number): Promise<Keys> {
  const id = createHash("sha256").update(password).update("\0").update(salt).update(`\0${iterations}`).digest("base64");
  const kept = derived.get(id);
  if (kept) return kept;
  // Asynchronous: the iterations run off the event loop, so a slow login does not stall the gateway.
  const salted = await new Promise<Buffer>((resolve, reject) =>
    pbkdf2(Buffer.from(saslprep(password), "utf8"), salt, iterations, 32, "sha256", (err, key) => (err ? reject(err) : resolve(key))),
  );
  const clientKey = hmac(salted, "Client Key");
  const keys = { clientKey, serverKey: hmac(salted, "Server Key") };
  if (derived.size >= KEYS_MAX) derived.clear();
  derived.set(id, keys);
  return keys;
}

/** Splits `a=1,b=2` into its attributes (values may contain `=`). */
function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(",")) {
    if (part.length < 2 || part[1] !== "=") throw new ScramError(`the server sent a malformed SCRAM message`);
    out.set(part[0]!, part.slice(2));
  }
  return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Printable ASCII except `,` (RFC 5802 `printable`). */
const NONCE = /^[\x21-\x2B\x2D-\x7E]+$/;

export class ScramClient {
  readonly mechanism: string;
  readonly #password: string;
  readonly #user: string;
  readonly #nonce: string;
  readonly #gs2: string;
  readonly #binding: ChannelBinding;
  #clientFirstBare = "";
  #serverSignature: Buffer | null = null;
  #done = false;

  constructor(password: string, binding: ChannelBinding, opts: { user?: string; nonce?: string } = {}) {
    this.#password = password;
    this.#binding = binding;
    this.#user = (opts.user ?? "").replace(/=/g, "=3D").replace(/,/g, "=2C");
    this.#nonce = opts.nonce ?? randomBytes(18).toString("base64");
    this.#gs2 = binding.kind === "tls-server-end-point" ? "p=tls-server-end-point,," : binding.kind === "unused" ? "y,," : "n,,";
    this.mechanism = binding.kind === "tls-server-end-point" ? SCRAM_PLUS : SCRAM;
  }

  /** client-first-message. */
  first(): string {
    this.#clientFirstBare = `n=${this.#user},r=${this.#nonce}`;
    return this.#gs2 + this.#clientFirstBare;
  }

  /** client-final-message, from the server-first-message. */
  async final(serverFirst: string): Promise<string> {
    const attrs = attributes(serverFirst);
    if (attrs.has("m")) throw new ScramError("the server asked for a SCRAM extension credgate does not know");
    const nonce = attrs.get("r");
    const salt = attrs.get("s");
    const iterationsText = attrs.get("i");
    if (nonce === undefined || salt === undefined || iterationsText === undefined) throw new ScramError("the server sent a malformed SCRAM message");
    if (!nonce.startsWith(this.#nonce) || nonce.length === this.#nonce.length || !NONCE.test(nonce)) throw new ScramError("the server's SCRAM nonce does not extend credgate's");
    if (!BASE64.test(salt) || salt.length === 0) throw new ScramError("the server sent a malformed SCRAM salt");
    if (!/^[1-9][0-9]{0,9}$/.test(iterationsText)) throw new ScramError("the server sent a malformed SCRAM iteration count");
    const iterations = Number(iterationsText);
    if (iterations > MAX_ITERATIONS) throw new ScramError(`the server asked for ${iterations} SCRAM iterations (at most ${MAX_ITERATIONS})`);
    const { clientKey, serverKey } = await keysFor(this.#password, Buffer.from(salt, "base64"), iterations);
    const bindingInput = this.#binding.kind === "tls-server-end-point" ? Buffer.concat([Buffer.from(this.#gs2), this.#binding.data]) : Buffer.from(this.#gs2);
    const withoutProof = `c=${bindingInput.toString("base64")},r=${nonce}`;
    const authMessage = `${this.#clientFirstBare},${serverFirst},${withoutProof}`;
    const storedKey = createHash("sha256").update(clientKey).digest();
    const proof = xor(clientKey, hmac(storedKey, authMessage));
    this.#serverSignature = hmac(serverKey, authMessage);
    return `${withoutProof},p=${proof.toString("base64")}`;
  }

  /** Checks the server-final-message: the server proves it knows the password (or says why it refused). */
  verify(serverFinal: string): void {
    if (this.#serverSignature === null) throw new ScramError("the server ended SCRAM before its first message");
    const attrs = attributes(serverFinal);
    const error = attrs.get("e");
    if (error !== undefined) throw new ScramError(`the server refused the SCRAM exchange (${error})`);
    const v = attrs.get("v");
    if (v === undefined || !BASE64.test(v)) throw new ScramError("the server sent a malformed SCRAM final message");
    const signature = Buffer.from(v, "base64");
    if (signature.length !== this.#serverSignature.length || !timingSafeEqual(signature, this.#serverSignature)) {
      throw new ScramError("the server could not prove that it knows the password (wrong SCRAM server signature)");
    }
    this.#done = true;
  }

  /** Whether the server's signature was verified. */
  get done(): boolean {
    return this.#done;
  }
}

// --- tls-server-end-point (RFC 5929 §4.1) ---

/** Hash names by signature algorithm OID; MD5 and SHA-1 signatures are bound with SHA-256. */
const SIGNATURE_HASHES: Record<string, string> = {
  "1.2.840.113549.1.1.4": "sha256", // md5WithRSAEncryption
  "1.2.840.113549.1.1.5": "sha256", // sha1WithRSAEncryption
  "1.2.840.113549.1.1.14": "sha224",
  "1.2.840.113549.1.1.11": "sha256",
  "1.2.840.113549.1.1.12": "sha384",
  "1.2.840.113549.1.1.13": "sha512",
  "1.2.840.10045.4.1": "sha256", // ecdsa-with-SHA1
  "1.2.840.10045.4.3.1": "sha224",
  "1.2.840.10045.4.3.2": "sha256",
  "1.2.840.10045.4.3.3": "sha384",
  "1.2.840.10045.4.3.4": "sha512",
  "1.2.840.10040.4.3": "sha256", // dsa-with-sha1
  "2.16.840.1.101.3.4.3.1": "sha224", // dsa-with-sha224
  "2.16.840.1.101.3.4.3.2": "sha256", // dsa-with-sha256
};
/** Digest OIDs (RSASSA-PSS names its hash in its parameters). */
const DIGESTS: Record<string, string> = {
  "1.3.14.3.2.26": "sha256", // SHA-1
  "2.16.840.1.101.3.4.2.4": "sha224",
  "2.16.840.1.101.3.4.2.1": "sha256",
  "2.16.840.1.101.3.4.2.2": "sha384",
  "2.16.840.1.101.3.4.2.3": "sha512",
};
const RSASSA_PSS = "1.2.840.113549.1.1.10";

interface Tlv {
  tag: number;
  start: number; // of the content
  end: number;
}

function tlv(der: Uint8Array, at: number): Tlv {
  const tag = der[at];
  let len = der[at + 1];
  if (tag === undefined || len === undefined) throw new ScramError("the server certificate is not DER");
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new ScramError("the server certificate is not DER");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (der[start + i] ?? 0);
    start += n;
  }
  const end = start + len;
  if (end > der.length) throw new ScramError("the server certificate is not DER");
  return { tag, start, end };
}

function oid(der: Uint8Array, t: Tlv): string {
  if (t.tag !== 0x06 || t.end <= t.start) throw new ScramError("the server certificate is not DER");
  const first = der[t.start]!;
  const parts = [Math.floor(first / 40), first % 40];
  let v = 0;
  for (let i = t.start + 1; i < t.end; i++) {
    v = v * 128 + (der[i]! & 0x7f);
    if (!(der[i]! & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join(".");
}

/** The hash RFC 5929 binds a certificate with, from its outer signatureAlgorithm. */
export function certificateBindingHash(der: Uint8Array): string {
  const cert = tlv(der, 0);
  const tbs = tlv(der, cert.start);
  const algorithm = tlv(der, tbs.end);
  if (cert.tag !== 0x30 || tbs.tag !== 0x30 || algorithm.tag !== 0x30) throw new ScramError("the server certificate is not DER");
  const id = oid(der, tlv(der, algorithm.start));
  if (id === RSASSA_PSS) {
    // RSASSA-PSS-params ::= SEQUENCE { hashAlgorithm [0] AlgorithmIdentifier DEFAULT sha1, … }
    const params = tlv(der, tlv(der, algorithm.start).end);
    if (params.end > algorithm.end || params.tag !== 0x30 || params.start === params.end) return "sha256";
    const first = tlv(der, params.start);
    if (first.tag !== 0xa0) return "sha256";
    const hash = DIGESTS[oid(der, tlv(der, tlv(der, first.start).start))];
    if (hash) return hash;
  }
  const hash = SIGNATURE_HASHES[id];
  if (!hash) throw new ScramError(`channel binding is not defined for the server certificate's signature algorithm (${id})`);
  return hash;
}

/** The `tls-server-end-point` channel binding data of a server certificate (DER). */
export function tlsServerEndPoint(der: Uint8Array): Uint8Array {
  return createHash(certificateBindingHash(der)).update(der).digest();
}
