// What credgate relies on inside `ssh2` (docs/ssh.md#the-ssh-implementation), checked so that an upgrade that
// changes it fails here, loudly, rather than in an agent's `git clone`: the exact version package.json pins,
// a parsed key object that ssh2 still takes through its prototype (hostKey.ts hands it `Object.create(parsed)`
// with another `type`), a host key type ssh2 offers as given, the connection's `_protocol._kex.negotiated`
// that hostKey.ts renames at signing time, and, end to end, OpenSSH's ssh accepting the host certificate from
// an in-process ssh2 server built the way the gateway builds it.
import { describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import type { Connection, ParsedKey } from "ssh2";
import { ssh2 } from "../../src/crypto/ssh2Module.ts";
import { SshCertificateAuthority, type HostCertificate } from "../../src/crypto/sshCertificate.ts";
import { generateEd25519 } from "../../src/crypto/sshKeys.ts";
import { CERT_ALGORITHM, certifiedHostKey } from "../../src/gateway/ssh/hostKey.ts";
import { tempDir } from "../support/tmp.ts";

const ROOT = join(import.meta.dir, "../..");

/** Fails with a sentence that says which of ssh2's internals moved and what of ours depends on it. */
function must(ok: boolean, what: string): void {
  if (!ok) throw new Error(`ssh2's internals changed: ${what} (src/gateway/ssh/hostKey.ts relies on it; see docs/ssh.md#the-ssh-implementation)`);
}

describe("ssh2, as credgate uses it", () => {
  test("package.json pins the exact version installed", () => {
    const pinned = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).dependencies.ssh2 as string;
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(JSON.parse(readFileSync(require.resolve("ssh2/package.json"), "utf8")).version).toBe(pinned);
  });

  test("a parsed key works through its prototype, with the certificate type in place of its own", () => {
    const parsed = ssh2().utils.parseKey(generateEd25519("").privateKey) as ParsedKey;
    must(!(parsed instanceof Error) && parsed.type === "ssh-ed25519", "utils.parseKey no longer reads OpenSSH's ed25519 format");
    for (const fn of ["sign", "getPublicSSH", "getPrivatePEM", "isPrivateKey"] as const) must(typeof parsed[fn] === "function", `a parsed key has no ${fn}()`);
    const derived = Object.create(parsed) as ParsedKey;
    Object.defineProperty(derived, "type", { value: CERT_ALGORITHM });
    // ssh2 tells a parsed key by a symbol it reads through the prototype chain: the same object comes back.
    must(ssh2().utils.parseKey(derived as never) === derived, "utils.parseKey no longer passes a derived parsed key through");
    // The server takes it and offers its `type` as a host key algorithm.
    let server: InstanceType<ReturnType<typeof ssh2>["Server"]> | null = null;
    try {
      server = new (ssh2().Server)({ hostKeys: [{ key: derived } as never] });
    } catch (err) {
      must(false, `Server refuses the derived host key: ${(err as Error).message}`);
    }
    expect(server).not.toBeNull();
  });

  test("OpenSSH's ssh accepts the host certificate from an ssh2 server built like the gateway's; the kex state is where hostKey.ts looks", async () => {
    const ca = SshCertificateAuthority.load(SshCertificateAuthority.generate());
    const cert = ca.hostCertificate("certified.test");
    const seen: { protocol: unknown; atSigning: unknown } = { protocol: undefined, atSigning: undefined };
    let protocol: { _kex?: { negotiated?: { serverHostKey?: string } } } | undefined;
    // Reads what ssh2 negotiated at the moment the certificate's key signs (after hostKey.ts renamed it).
    const watched: HostCertificate = { ...cert, signRaw: (data) => ((seen.atSigning = protocol?._kex?.negotiated?.serverHostKey), cert.signRaw(data)) };
    const hostKey = certifiedHostKey(watched);
    const listener = createServer((sock) => {
      const server = new (ssh2().Server)({ hostKeys: [{ key: hostKey.key } as never], ident: "credgate" });
      server.on("connection", (client: Connection) => {
        seen.protocol = (client as unknown as { _protocol: unknown })._protocol;
        protocol = seen.protocol as typeof protocol;
        hostKey.bind(seen.protocol);
        client.on("error", () => {});
        client.on("authentication", (ctx) => ctx.accept());
        client.on("ready", () =>
          client.on("session", (accept) =>
            accept().on("exec", (acceptExec, _reject, info) => {
              const channel = acceptExec();
              channel.write(`ran ${info.command}\n`);
              channel.exit(0);
              channel.end();
            }),
          ),
        );
      });
      server.injectSocket(sock as never);
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const dir = tempDir("credgate-ssh2-internals-");
    writeFileSync(join(dir, "known_hosts"), `${ca.knownHostsLine()}\n`);
    try {
      const port = (listener.address() as AddressInfo).port;
      const proc = spawn(
        ["ssh", "-v", "-F", "/dev/null", "-p", String(port), "-o", `UserKnownHostsFile=${join(dir, "known_hosts")}`, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=none", "-o", `HostKeyAlias=certified.test`, "git@127.0.0.1", "probe"],
        { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
      );
      const timer = setTimeout(() => proc.kill(), 30_000);
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      clearTimeout(timer);
      must(typeof seen.protocol === "object" && seen.protocol !== null, "a server Connection no longer has _protocol");
      must(seen.atSigning === "ssh-ed25519", `_protocol._kex.negotiated.serverHostKey read ${JSON.stringify(seen.atSigning)} when the host key signed (the certificate's signature must be named ssh-ed25519)`);
      expect(stderr).toContain("Server host certificate: ssh-ed25519-cert-v01@openssh.com");
      expect(stdout).toBe("ran probe\n");
      expect(code).toBe(0);
    } finally {
      listener.close();
    }
  });
});
