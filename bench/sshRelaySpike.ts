// A minimal terminating SSH relay, for the SSH implementation comparison only (bench/sshImplementations.ts,
// docs/ssh.md#the-ssh-implementation); not product code. It is the SSH server to the agent (a host key of its
// own, every client accepted), logs in to the real sshd with the stored key (its host key pinned), and relays
// what the agent opens, in one of two libraries:
//   devtunnels  @microsoft/dev-tunnels-ssh: the server session piped to the client session (the library's own
//               session pipe relays channels, requests, data, EOF and the exit status);
//   ssh2        ssh2: exec channels relayed by hand (credgate's interception without the checks).
// No judging, no logging, no CONNECT: the transport of each library alone, in its own Bun process so its memory
// can be read (VmHWM). Run: `bun bench/sshRelaySpike.ts <impl> <upstream port> <user> <key file> <host key line>`;
// prints one JSON line `{port, hostKey}` (the agent side's known_hosts key) once listening.
import { readFileSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";

const [impl, upstreamPortArg, user, keyFile, hostKeyLine] = process.argv.slice(2) as [string, string, string, string, string];
const upstreamPort = Number(upstreamPortArg);
/** The pinned upstream host key: the base64 blob of `<hosts> <type> <base64>`. */
const pinned = Buffer.from(hostKeyLine.trim().split(/\s+/)[2]!, "base64");
const pinnedType = hostKeyLine.trim().split(/\s+/)[1]!;

function dial(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port: upstreamPort }, () => resolve(s));
    s.setNoDelay(true);
    s.once("error", reject);
  });
}

async function devTunnels(): Promise<{ serve(sock: Socket): void; hostKey: string }> {
  const ssh = await import("@microsoft/dev-tunnels-ssh");
  const keys = await import("@microsoft/dev-tunnels-ssh-keys");
  const config = () => new ssh.SshSessionConfiguration();
  // dev-tunnels has no ed25519 (neither host nor user keys) and reads no OpenSSH-format private key: ECDSA, PKCS#8.
  const hostKey = await ssh.SshAlgorithms.publicKey.ecdsaSha2Nistp256!.generateKeyPair();
  const userKey = await keys.importKey(readFileSync(keyFile, "utf8"));
  return {
    hostKey: await keys.exportPublicKey(hostKey),
    serve(sock: Socket) {
      sock.setNoDelay(true);
      const agent = new ssh.SshServerSession(config());
      agent.credentials.publicKeys = [hostKey];
      agent.onAuthenticating((e) => {
        // The tunnel would have authenticated the agent already: any client authentication passes.
        e.authenticationPromise = Promise.resolve({});
      });
      const run = async () => {
        const upstream = new ssh.SshClientSession(config());
        upstream.onAuthenticating((e) => {
          if (e.authenticationType !== ssh.SshAuthenticationType.serverPublicKey) return;
          e.authenticationPromise = (async () => {
            const blob = await e.publicKey!.getPublicKeyBytes();
            return blob && Buffer.from(blob).equals(pinned) ? {} : null;
          })();
        });
        // Upstream first: the agent's channels are piped only once both sessions are up.
        await upstream.connect(new ssh.NodeStream(await dial()));
        if (!(await upstream.authenticate({ username: user, publicKeys: [userKey] }))) throw new Error("upstream login failed");
        // The pipe before the agent's session connects: a channel opened before it would not be piped.
        const piped = agent.pipe(upstream);
        await agent.connect(new ssh.NodeStream(sock));
        await piped;
      };
      run().catch((err) => {
        console.error(`devtunnels relay: ${(err as Error).message}`);
        sock.destroy();
      });
    },
  };
}

async function ssh2Relay(): Promise<{ serve(sock: Socket): void; hostKey: string }> {
  const ssh2 = (await import("ssh2")).default;
  const { generateEd25519 } = await import("../src/crypto/sshKeys.ts");
  const hostPem = generateEd25519("").privateKey;
  const parsed = ssh2.utils.parseKey(hostPem) as import("ssh2").ParsedKey;
  const privateKey = readFileSync(keyFile, "utf8");
  return {
    hostKey: `${parsed.type} ${parsed.getPublicSSH().toString("base64")}`,
    serve(sock: Socket) {
      sock.setNoDelay(true);
      const server = new ssh2.Server({ hostKeys: [hostPem], algorithms: { cipher: ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"] as never } });
      server.on("connection", (client) => {
        client.on("error", () => {});
        client.on("authentication", (ctx) => ctx.accept());
        client.on("ready", () => {
          let upstream: Promise<import("ssh2").Client> | null = null;
          const up = () =>
            (upstream ??= dial().then(
              (s) =>
                new Promise((resolve, reject) => {
                  const c = new ssh2.Client();
                  c.on("ready", () => resolve(c)).on("error", reject);
                  c.connect({ sock: s, username: user, privateKey, algorithms: { serverHostKey: [pinnedType] as never }, hostVerifier: (k: Buffer) => k.equals(pinned) });
                }),
            ));
          client.on("close", () => void upstream?.then((c) => c.end(), () => {}));
          client.on("session", (accept) => {
            const session = accept();
            session.on("exec", async (acceptExec, _reject, info) => {
              const channel = acceptExec();
              const c = await up().catch((err: Error) => {
                channel.stderr.write(`relay: ${err.message}\n`);
                channel.exit(1);
                channel.end();
                return null;
              });
              if (c === null) return;
              c.exec(info.command, (err, remote) => {
                if (err) return channel.exit(1), channel.end();
                channel.pipe(remote);
                remote.pipe(channel, { end: false });
                remote.stderr.pipe(channel.stderr, { end: false });
                let code = 1;
                remote.on("exit", (n: number) => (code = n));
                remote.on("close", () => {
                  channel.exit(code);
                  channel.end();
                });
              });
            });
          });
        });
      });
      server.injectSocket(sock as never);
    },
  };
}

const relay = impl === "devtunnels" ? await devTunnels() : await ssh2Relay();
const listener = createServer((sock) => relay.serve(sock));
listener.listen(0, "127.0.0.1", () => {
  const port = (listener.address() as { port: number }).port;
  console.log(JSON.stringify({ port, hostKey: relay.hostKey.trim() }));
});
