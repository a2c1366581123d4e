// The gateway's certificate authority (ECDSA P-256, 10 years, CN "credgate Gateway CA"), kept as
// <data dir>/ca.pem + ca.key (0600) and reused across restarts, and the leaf certificates it signs for
// intercepted hosts: one leaf key pair per process, certificates valid 24 h (notBefore = now − 5 min).
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const HOUR = 3600 * 1000;

x509.cryptoProvider.set(crypto);

function toPem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString("base64").replace(/(.{64})/g, "$1\n").trimEnd();
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

function fromPem(pem: string): ArrayBuffer {
  const b64 = pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  const buf = Buffer.from(b64, "base64");
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
}

function serialNumber(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0]! &= 0x7f; // positive
  return Buffer.from(bytes).toString("hex");
}

/** A CA as stored: the certificate and its private key, PEM. */
export interface CaMaterial {
  certPem: string;
  keyPem: string;
}

export interface Leaf {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

export class CertificateAuthority {
  private constructor(
    readonly certPem: string,
    private readonly cert: x509.X509Certificate,
    private readonly caKey: CryptoKey,
    private readonly leafKeys: CryptoKeyPair,
    private readonly leafKeyPem: string,
  ) {}

  /** A new CA (certificate and private key, PEM); nothing is stored here. */
  static async generate(): Promise<CaMaterial> {
    const keys = (await crypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as CryptoKeyPair;
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serialNumber(),
      name: "CN=credgate Gateway CA, O=credgate",
      notBefore: new Date(now - 5 * 60 * 1000),
      notAfter: new Date(now + 10 * 365 * 24 * HOUR),
      signingAlgorithm: ALG,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return { certPem: cert.toString("pem") + "\n", keyPem: toPem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY") };
  }

  /** The CA from its certificate and key, with a fresh leaf key pair for this process. */
  static async load(material: CaMaterial): Promise<CertificateAuthority> {
    const caKey = await crypto.subtle.importKey("pkcs8", fromPem(material.keyPem), ALG, false, ["sign"]);
    const leafKeys = (await crypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as CryptoKeyPair;
    const leafKeyPem = toPem(await crypto.subtle.exportKey("pkcs8", leafKeys.privateKey), "PRIVATE KEY");
    return new CertificateAuthority(material.certPem, new x509.X509Certificate(material.certPem), caKey, leafKeys, leafKeyPem);
  }

  /** Loads `<dataDir>/ca.pem` + `ca.key`, creating them on first start (the embedded store's CA). */
  static async loadOrCreate(dataDir: string): Promise<CertificateAuthority> {
    const certFile = join(dataDir, "ca.pem");
    const keyFile = join(dataDir, "ca.key");
    if (existsSync(certFile) && existsSync(keyFile)) {
      return CertificateAuthority.load({ certPem: readFileSync(certFile, "utf8"), keyPem: readFileSync(keyFile, "utf8") });
    }
    const material = await CertificateAuthority.generate();
    writeFileSync(keyFile, material.keyPem, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    writeFileSync(certFile, material.certPem, { mode: 0o644 });
    return CertificateAuthority.load(material);
  }

  /**
   * A leaf for a hostname or IP literal (or several: the first is the subject's CN), signed by this CA, with the
   * shared leaf key.
   */
  async issueLeaf(names: string | string[]): Promise<Leaf> {
    const list = typeof names === "string" ? [names] : names;
    const host = list[0]!;
    const now = Date.now();
    const notAfter = new Date(now + 24 * HOUR);
    const sans = list.map((name) => (isIP(name) ? { type: "ip" as const, value: name } : { type: "dns" as const, value: name }));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject: `CN=${host.replace(/[,=+<>#;"\\]/g, "")}`,
      issuer: this.cert.subject,
      notBefore: new Date(now - 5 * 60 * 1000),
      notAfter,
      signingAlgorithm: ALG,
      publicKey: this.leafKeys.publicKey,
      signingKey: this.caKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(sans),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert, false),
      ],
    });
    return { certPem: cert.toString("pem") + "\n" + this.certPem, keyPem: this.leafKeyPem, notAfter };
  }
}
