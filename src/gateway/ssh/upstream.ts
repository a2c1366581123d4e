// The SSH server side (docs/ssh.md#upstream): credgate dials the host the egress guard judged (the CONNECT's
// verdict), offers only the host key algorithms of the keys pinned for that name, accepts only a pinned key (a
// mismatch ends before anything is sent, authentication included), and logs in as the secret's user with the
// stored key. AES-GCM first (OpenSSL does it; ssh2 under Bun offers no chacha20-poly1305).
import type { Socket } from "node:net";
import type { Client } from "ssh2";
import { ssh2 } from "../../crypto/ssh2Module.ts";
import { hostKeyAlgorithmsFor, pinnedKeysFor } from "../../core/sshRules.ts";
import type { Outbound } from "../../services/outbound.ts";
import type { EgressVerdict } from "../egressGuard.ts";
import type { SshCredential } from "../snapshot.ts";

const CONNECT_TIMEOUT_MS = 10_000;
const CIPHERS = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr"];

/** `key`: the stored key could not be had or read (storedKey.ts); the others are the server's. */
export type UpstreamFailure = { kind: "host-key" | "unreachable" | "login" | "key"; message: string };

export interface UpstreamTarget {
  host: string;
  port: number;
  credential: SshCredential;
  key: string;
  egress: EgressVerdict | null;
}

/** A logged-in SSH connection to the real server, or why there is none (never naming the key). */
export async function connectUpstream(outbound: Pick<Outbound, "connect">, t: UpstreamTarget): Promise<Client | UpstreamFailure> {
  const pinned = pinnedKeysFor(t.credential.knownHosts, t.host);
  if (pinned.length === 0) return { kind: "host-key", message: hostKeyMessage(t.host) };
  if (t.egress === null || t.egress.kind !== "dial") {
    return { kind: "unreachable", message: `credgate: could not connect to ${t.host}:${t.port}: ${t.egress?.kind === "unresolved" ? t.egress.reason : "no egress verdict"}` };
  }
  let sock: Socket;
  try {
    sock = await outbound.connect(t.host, t.port, { tls: false, timeoutMs: CONNECT_TIMEOUT_MS, target: t.egress.target });
  } catch (err) {
    return { kind: "unreachable", message: `credgate: could not connect to ${t.host}:${t.port}: ${(err as Error).message}` };
  }
  sock.setNoDelay(true);
  return new Promise((resolve) => {
    const client = new (ssh2().Client)();
    let hostKeyRefused = false;
    let settled = false;
    const settle = (v: Client | UpstreamFailure) => {
      if (settled) return;
      settled = true;
      resolve(v);
    };
    client.on("ready", () => settle(client));
    client.on("error", (err) => {
      client.end();
      sock.destroy();
      if (hostKeyRefused) settle({ kind: "host-key", message: hostKeyMessage(t.host) });
      else settle({ kind: (err as { level?: string }).level === "client-authentication" ? "login" : "unreachable", message: `credgate: could not log in to ${t.host}: ${err.message}` });
    });
    client.on("close", () => settle({ kind: "unreachable", message: `credgate: ${t.host} closed the connection` }));
    client.connect({
      sock,
      username: t.credential.user,
      privateKey: t.key,
      readyTimeout: CONNECT_TIMEOUT_MS,
      algorithms: { serverHostKey: hostKeyAlgorithmsFor(pinned) as never, cipher: CIPHERS as never },
      hostVerifier: (key: Buffer) => {
        const ok = pinned.some((p) => p.blob.equals(key));
        if (!ok) hostKeyRefused = true;
        return ok;
      },
    });
  });
}

export function hostKeyMessage(host: string): string {
  return `credgate: host key of ${host} does not match the secret's knownHosts`;
}
