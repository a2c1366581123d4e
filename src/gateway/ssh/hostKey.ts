// The host key credgate presents to an agent's ssh (docs/ssh.md#host-certificates): the CA-signed certificate
// for the CONNECT host, in the shape ssh2's server takes a parsed key. ssh2 has no host certificates, so the key
// object says it is of type `ssh-ed25519-cert-v01@openssh.com` (offered and sent as the host key), and signs
// the exchange hash with the certified ed25519 key. A certificate's signature is of its plain key type
// (PROTOCOL.certkeys), while ssh2 names the signature after the negotiated algorithm: when it asks for the
// signature, the key renames the negotiated algorithm of its own connection's key exchange to `ssh-ed25519`
// (read once more, for that name, right after; nothing reads it later).
import type { ParsedKey } from "ssh2";
import { ssh2 } from "../../crypto/ssh2Module.ts";
import type { HostCertificate } from "../../crypto/sshCertificate.ts";
import { generateEd25519 } from "../../crypto/sshKeys.ts";

export const CERT_ALGORITHM = "ssh-ed25519-cert-v01@openssh.com";

/** Any parsed ed25519 key: the prototype that makes ssh2 take our object as a parsed private key. */
let template: ParsedKey | null = null;
function parsedTemplate(): ParsedKey {
  if (!template) {
    template = ssh2().utils.parseKey(generateEd25519("").privateKey) as ParsedKey;
  }
  return template;
}

/** What the key reaches at signing time: the connection's protocol, set once ssh2 announces the connection. */
export interface CertifiedHostKey {
  key: ParsedKey;
  bind(protocol: unknown): void;
}

export function certifiedHostKey(cert: HostCertificate): CertifiedHostKey {
  let protocol: { _kex?: { negotiated?: { serverHostKey?: string } } } | null = null;
  const key = Object.create(parsedTemplate()) as ParsedKey & Record<string, unknown>;
  Object.defineProperty(key, "type", { value: CERT_ALGORITHM });
  key.getPublicSSH = () => cert.blob;
  key.sign = (data: Buffer) => {
    const negotiated = protocol?._kex?.negotiated;
    if (negotiated?.serverHostKey === CERT_ALGORITHM) negotiated.serverHostKey = "ssh-ed25519";
    return cert.signRaw(data);
  };
  return { key, bind: (p) => (protocol = p as typeof protocol) };
}
