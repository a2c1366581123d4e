// The gateway's certificate authority (ECDSA P-256, 10 years, CN "credgate Gateway CA"), kept as
// <data dir>/ca.pem + ca.key (0600) and reused across restarts, and the leaf certificates it signs for
// intercepted hosts: one leaf key pair per process, certificates valid 24 h (notBefore = now − 5 min).
// Certificates are written in DER here (der.ts): X.509 v3, ecdsa-with-SHA256, the extensions below.
import { createHash, createPrivateKey, generateKeyPairSync, sign, X509Certificate, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import { parseAddress } from "../core/addressRules.ts";
import * as der from "./der.ts";

const HOUR = 3600 * 1000;

const OID = {
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
};
const SIGNATURE_ALGORITHM = der.sequence(der.objectIdentifier(OID.ecdsaWithSha256));
/** Key usage bits (RFC 5280 §4.2.1.3). */
const DIGITAL_SIGNATURE = 0;
const KEY_CERT_SIGN = 5;
const CRL_SIGN = 6;

function toPem(bytes: Uint8Array, label: string): string {
  const b64 = Buffer.from(bytes).toString("base64").replace(/(.{64})/g, "$1\n").trimEnd();
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

function serialNumber(): Uint8Array {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0]! &= 0x7f; // positive
  return bytes;
}

function name(attributes: [oid: string, value: string][]): Uint8Array {
  return der.sequence(...attributes.map(([oid, value]) => der.set(der.sequence(der.objectIdentifier(oid), der.utf8String(value)))));
}

function extension(oid: string, critical: boolean, value: Uint8Array): Uint8Array {
  return critical ? der.sequence(der.objectIdentifier(oid), der.boolean(true), der.octetString(value)) : der.sequence(der.objectIdentifier(oid), der.octetString(value));
}

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits of a SubjectPublicKeyInfo. */
function keyIdentifier(spki: Uint8Array): Uint8Array {
  const [, bits] = der.children(spki, der.readElement(spki, 0));
  return createHash("sha1").update(spki.subarray(bits!.contentStart + 1, bits!.end)).digest();
}

/** A subjectAltName entry: a dNSName, or an iPAddress as its 4 or 16 bytes. */
function generalName(value: string): Uint8Array {
  const family = isIP(value);
  if (family === 0) return der.implicit(2, Buffer.from(value, "latin1"));
  const address = parseAddress(value)!;
  const bits = family === 6 && !address.v6 ? (0xffffn << 32n) | address.bits : address.bits;
  const size = family === 6 ? 16 : 4;
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = Number((bits >> BigInt(8 * (size - 1 - i))) & 0xffn);
  return der.implicit(7, bytes);
}

interface CertificateFields {
  issuer: Uint8Array;
  subject: Uint8Array;
  notBefore: Date;
  notAfter: Date;
  spki: Uint8Array;
  extensions: Uint8Array[];
}

function certificate(f: CertificateFields, signingKey: KeyObject): Uint8Array {
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)), // v3
    der.unsignedInteger(serialNumber()),
    SIGNATURE_ALGORITHM,
    f.issuer,
    der.sequence(der.time(f.notBefore), der.time(f.notAfter)),
    f.subject,
    f.spki,
    der.explicit(3, der.sequence(...f.extensions)),
  );
  const signature = sign("sha256", tbs, { key: signingKey, dsaEncoding: "der" });
  return der.sequence(tbs, SIGNATURE_ALGORITHM, der.bitString(signature));
}

/** What a leaf needs from its CA's certificate: the subject, byte for byte, and the key identifier. */
function issuerOf(certPem: string): { subject: Uint8Array; keyId: Uint8Array } {
  const raw = new Uint8Array(new X509Certificate(certPem).raw);
  const [tbs] = der.children(raw, der.readElement(raw, 0));
  const fields = der.children(raw, tbs!);
  const at = fields[0]!.tag === 0xa0 ? 1 : 0; // the version is optional
  const subject = fields[at + 4]!;
  const spki = fields[at + 5]!;
  // The CA's own subjectKeyIdentifier when it has one (so the leaf's authorityKeyIdentifier matches it).
  const wanted = Buffer.from(der.objectIdentifier(OID.subjectKeyIdentifier));
  const extensions = fields.find((e) => e.tag === 0xa3);
  for (const ext of extensions ? der.children(raw, der.children(raw, extensions)[0]!) : []) {
    const parts = der.children(raw, ext);
    if (!wanted.equals(raw.subarray(parts[0]!.start, parts[0]!.end))) continue;
    const value = parts[parts.length - 1]!;
    const keyId = der.readElement(raw, value.contentStart);
    return { subject: raw.slice(subject.start, subject.end), keyId: raw.slice(keyId.contentStart, keyId.end) };
  }
  return { subject: raw.slice(subject.start, subject.end), keyId: keyIdentifier(raw.subarray(spki.start, spki.end)) };
}

function newKeyPair(): { spki: Uint8Array; privateKey: KeyObject; pkcs8Pem: string } {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { spki: publicKey.export({ type: "spki", format: "der" }), privateKey, pkcs8Pem: privateKey.export({ type: "pkcs8", format: "pem" }) as string };
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
    private readonly issuer: { subject: Uint8Array; keyId: Uint8Array },
    private readonly caKey: KeyObject,
    private readonly leafSpki: Uint8Array,
    private readonly leafKeyPem: string,
  ) {}

  /** A new CA (certificate and private key, PEM); nothing is stored here. Validity: 10 years from 5 minutes ago. */
  static async generate(validity?: { notBefore: Date; notAfter: Date }): Promise<CaMaterial> {
    const keys = newKeyPair();
    const now = Date.now();
    const subject = name([
      [OID.commonName, "credgate Gateway CA"],
      [OID.organization, "credgate"],
    ]);
    const cert = certificate(
      {
        issuer: subject,
        subject,
        notBefore: validity?.notBefore ?? new Date(now - 5 * 60 * 1000),
        notAfter: validity?.notAfter ?? new Date(now + 10 * 365 * 24 * HOUR),
        spki: keys.spki,
        extensions: [
          extension(OID.basicConstraints, true, der.sequence(der.boolean(true), der.smallInteger(0))),
          extension(OID.keyUsage, true, der.namedBits([KEY_CERT_SIGN, CRL_SIGN])),
          extension(OID.subjectKeyIdentifier, false, der.octetString(keyIdentifier(keys.spki))),
        ],
      },
      keys.privateKey,
    );
    return { certPem: toPem(cert, "CERTIFICATE"), keyPem: keys.pkcs8Pem };
  }

  /** The CA from its certificate and key, with a fresh leaf key pair for this process. */
  static async load(material: CaMaterial): Promise<CertificateAuthority> {
    const caKey = createPrivateKey(material.keyPem);
    const leaf = newKeyPair();
    return new CertificateAuthority(material.certPem, issuerOf(material.certPem), caKey, leaf.spki, leaf.pkcs8Pem);
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
    const cert = certificate(
      {
        issuer: this.issuer.subject,
        subject: name([[OID.commonName, host.replace(/[,=+<>#;"\\]/g, "")]]),
        notBefore: new Date(now - 5 * 60 * 1000),
        notAfter,
        spki: this.leafSpki,
        extensions: [
          extension(OID.basicConstraints, true, der.sequence()),
          extension(OID.keyUsage, true, der.namedBits([DIGITAL_SIGNATURE])),
          extension(OID.extKeyUsage, false, der.sequence(der.objectIdentifier(OID.serverAuth))),
          extension(OID.subjectAltName, false, der.sequence(...list.map(generalName))),
          extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicit(0, this.issuer.keyId))),
        ],
      },
      this.caKey,
    );
    return { certPem: toPem(cert, "CERTIFICATE") + this.certPem, keyPem: this.leafKeyPem, notAfter };
  }
}
