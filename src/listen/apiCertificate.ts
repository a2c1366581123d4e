// The certificate of the API port when it speaks HTTPS (docs/operations.md#tls): a PEM pair read from
// CREDGATE_TLS_CERT_FILE/CREDGATE_TLS_KEY_FILE and re-read when either file changes (a renewal by certbot or
// acme.sh applies without a restart), or a leaf of the gateway CA reissued before it expires.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import type { ApiTls } from "../runtime/config.ts";
import type { CertificateAuthority } from "../crypto/ca.ts";
import { log } from "../observability/log.ts";

export interface TlsPair {
  cert: string;
  key: string;
}

/** How often the files are looked at: renewals are rare, a second's delay is nothing. */
const POLL_MS = 1000;
/** A gateway-CA leaf lives a day; a new one is issued when an hour is left. */
const RENEW_BEFORE_MS = 3600 * 1000;

/** Reads and checks the pair; the message names the variable whose file is at fault. */
export function readPair(certFile: string, keyFile: string): TlsPair {
  const read = (variable: string, file: string) => {
    try {
      return readFileSync(file, "utf8");
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const why = e.code === "ENOENT" ? "no such file" : e.code === "EACCES" ? "permission denied" : e.code === "EISDIR" ? "it is a directory" : e.message;
      throw new Error(`${variable}: cannot read ${file}: ${why}`);
    }
  };
  const cert = read("CREDGATE_TLS_CERT_FILE", certFile);
  const key = read("CREDGATE_TLS_KEY_FILE", keyFile);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new Error(`CREDGATE_TLS_CERT_FILE: ${certFile} holds no PEM certificate`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new Error(`CREDGATE_TLS_KEY_FILE: ${keyFile} holds no PEM private key (an encrypted key is not supported)`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new Error(`CREDGATE_TLS_KEY_FILE: the key in ${keyFile} does not belong to the certificate in ${certFile} (CREDGATE_TLS_CERT_FILE)`);
  }
  return { cert, key };
}

function fingerprint(file: string): string {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return "missing";
  }
}

export class ApiCertificate {
  #pair: TlsPair;
  #timer: Timer | null = null;
  readonly #listeners: ((pair: TlsPair) => void)[] = [];

  private constructor(pair: TlsPair) {
    this.#pair = pair;
  }

  /** null for plain HTTP; a bad pair of files throws with the one line to print. */
  static async open(tls: ApiTls, ca: CertificateAuthority, names: string[]): Promise<ApiCertificate | null> {
    if (tls.kind === "none") return null;
    if (tls.kind === "files") {
      const cert = new ApiCertificate(readPair(tls.certFile, tls.keyFile));
      cert.#watchFiles(tls.certFile, tls.keyFile);
      return cert;
    }
    const issue = async () => {
      const leaf = await ca.issueLeaf(names);
      return { pair: { cert: leaf.certPem, key: leaf.keyPem }, renewAt: leaf.notAfter.getTime() - RENEW_BEFORE_MS };
    };
    const first = await issue();
    const cert = new ApiCertificate(first.pair);
    cert.#renewAt(first.renewAt, issue);
    return cert;
  }

  get pair(): TlsPair {
    return this.#pair;
  }

  /** `fn` gets every new pair; the listener serves it to new connections. */
  onChange(fn: (pair: TlsPair) => void): void {
    this.#listeners.push(fn);
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #set(pair: TlsPair): void {
    this.#pair = pair;
    for (const fn of this.#listeners) fn(pair);
  }

  #watchFiles(certFile: string, keyFile: string): void {
    let seen = fingerprint(certFile) + fingerprint(keyFile);
    let warned = "";
    const look = () => {
      const now = fingerprint(certFile) + fingerprint(keyFile);
      if (now !== seen) {
        try {
          const pair = readPair(certFile, keyFile);
          seen = now;
          warned = "";
          if (pair.cert !== this.#pair.cert || pair.key !== this.#pair.key) {
            this.#set(pair);
            log.info("API certificate reloaded", { certFile });
          }
        } catch (err) {
          // Mid-renewal the two files can disagree for a moment: keep serving the old pair and look again.
          const message = (err as Error).message;
          if (message !== warned) log.warn("API certificate not reloaded: the current one stays in use", { reason: message });
          warned = message;
        }
      }
      this.#timer = setTimeout(look, POLL_MS);
      this.#timer.unref();
    };
    this.#timer = setTimeout(look, POLL_MS);
    this.#timer.unref();
  }

  #renewAt(at: number, issue: () => Promise<{ pair: TlsPair; renewAt: number }>): void {
    this.#timer = setTimeout(
      async () => {
        try {
          const next = await issue();
          this.#set(next.pair);
          this.#renewAt(next.renewAt, issue);
        } catch (err) {
          log.error("API certificate not renewed", { reason: (err as Error).message });
          this.#renewAt(Date.now() + 60_000, issue);
        }
      },
      Math.max(0, at - Date.now()),
    );
    this.#timer.unref();
  }
}
