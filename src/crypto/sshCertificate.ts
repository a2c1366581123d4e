// credgate's SSH certificate authority (docs/ssh.md#host-certificates): an ed25519 key that signs host
// certificates (PROTOCOL.certkeys, `ssh-ed25519-cert-v01@openssh.com`) for the names agents connect to, so an
// agent's ssh that trusts the one `@cert-authority` line accepts credgate as every intercepted host. One host key
// pair per process, certificates cached per name and renewed before they run out.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";

const CERT_TYPE = "ssh-ed25519-cert-v01@openssh.com";
const HOST_CERT = 2;
const DAY_S = 24 * 3600;

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function u64(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
}

/** An SSH `string`: length-prefixed bytes. */
function str(v: Buffer | string): Buffer {
  const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
  return Buffer.concat([u32(b.length), b]);
}

/** The 32 raw bytes of an ed25519 public key. */
function rawEd25519(key: KeyObject): Buffer {
  const der = (key.type === "public" ? key : createPublicKey(key)).export({ type: "spki", format: "der" });
  return der.subarray(der.length - 32);
}

/** An ed25519 public key's wire blob (`string "ssh-ed25519", string key`). */
export function ed25519Blob(key: KeyObject): Buffer {
  return Buffer.concat([str("ssh-ed25519"), str(rawEd25519(key))]);
}

function ed25519Signature(key: KeyObject, data: Buffer): Buffer {
  return Buffer.concat([str("ssh-ed25519"), str(sign(null, data, key))]);
}

export interface HostCertificate {
  /** The certificate's wire blob: what the agent's ssh receives as the server's host key. */
  blob: Buffer;
  /** Signs the key exchange hash with the certified host key (an `ssh-ed25519` signature blob's bare bytes). */
  signRaw(data: Buffer): Buffer;
  expiresAt: number;
}

export class SshCertificateAuthority {
  readonly #hostKey = generateKeyPairSync("ed25519");
  readonly #certs = new Map<string, HostCertificate>();

  private constructor(private readonly caKey: KeyObject) {}

  /** A new CA private key (PKCS#8 PEM); nothing is stored here. */
  static generate(): string {
    return generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  }

  static load(keyPem: string): SshCertificateAuthority {
    return new SshCertificateAuthority(createPrivateKey(keyPem));
  }

  /** `@cert-authority * ssh-ed25519 <base64> credgate`: the known_hosts line that trusts every host certificate. */
  knownHostsLine(): string {
    return `@cert-authority * ssh-ed25519 ${ed25519Blob(this.caKey).toString("base64")} credgate`;
  }

  /** A host certificate for `name` (the CONNECT host), valid 24 hours from 5 minutes ago, cached until 1 hour before it ends. */
  hostCertificate(name: string): HostCertificate {
    const now = Math.floor(Date.now() / 1000);
    const cached = this.#certs.get(name);
    if (cached && cached.expiresAt - now > 3600) return cached;
    const validBefore = now + DAY_S;
    const body = Buffer.concat([
      str(CERT_TYPE),
      str(randomBytes(32)),
      str(rawEd25519(this.#hostKey.publicKey)),
      u64(BigInt(now)),
      u32(HOST_CERT),
      str(`credgate ${name}`),
      str(str(name)),
      u64(BigInt(now - 300)),
      u64(BigInt(validBefore)),
      str(""),
      str(""),
      str(""),
      str(ed25519Blob(this.caKey)),
    ]);
    const blob = Buffer.concat([body, str(ed25519Signature(this.caKey, body))]);
    const hostKey = this.#hostKey.privateKey;
    const cert: HostCertificate = { blob, signRaw: (data) => sign(null, data, hostKey), expiresAt: validBefore };
    if (this.#certs.size >= 10_000) this.#certs.clear();
    this.#certs.set(name, cert);
    return cert;
  }
}
