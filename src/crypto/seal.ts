// AES-256-GCM sealing of everything secret at rest: `v1:base64(iv):base64(tag):base64(ct)`, 12-byte IV.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

export class Sealer {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("master key must be 32 bytes");
    this.#key = key;
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return `v1:${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${ct.toString("base64")}`;
  }

  /** A 32-byte key for one purpose (e.g. signing OAuth state), derived from the master key with HKDF-SHA256. */
  deriveKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.#key, Buffer.alloc(0), `credgate:${purpose}`, 32));
  }

  open(sealed: string): string {
    const parts = sealed.split(":");
    if (parts.length !== 4 || parts[0] !== "v1") throw new Error("sealed value has an unknown format");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(parts[1]!, "base64"));
    decipher.setAuthTag(Buffer.from(parts[2]!, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(parts[3]!, "base64")), decipher.final()]).toString("utf8");
  }
}
