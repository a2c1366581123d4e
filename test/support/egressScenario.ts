// Runs inside its own network namespace (test/e2e/egress-guard.test.ts starts it with `unshare -n`): loopback
// up, 169.254.169.254 (cloud metadata), 10.1.2.3 (private) and 203.0.113.7 (a public-looking address) added to
// `lo`, each with a listener that records every connection. Nothing here can leave the namespace. It starts
// credgate instances with the settings named on the command line, sends the attempts through their gateway
// port and prints one JSON document: each attempt's answer and what each listener received. A DNS server on
// loopback (test/support/dnsServer.ts) gives names for these addresses to an instance with CREDGATE_DNS_SERVERS.
import * as net from "node:net";
import { startDnsServer } from "./dnsServer.ts";
import { startCredgate, type RunningCredgate } from "./process.ts";

interface Listener {
  accepted: number;
  heads: string[];
}

function listen(host: string, port: number): Promise<Listener> {
  const state: Listener = { accepted: 0, heads: [] };
  const server = net.createServer((sock) => {
    state.accepted++;
    let buf = "";
    sock.on("error", () => {});
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      state.heads.push(buf.slice(0, end));
      buf = "";
      sock.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(state)));
}

/** Sends `head` to the gateway port on a fresh connection; the status line and body of the answer. */
function attempt(cg: RunningCredgate, head: string): Promise<{ status: number; error: string | null }> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    let buf = "";
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      sock.destroy();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(buf)?.[1] ?? 0);
      const body = buf.slice(buf.indexOf("\r\n\r\n") + 4);
      let error: string | null = null;
      try {
        error = (JSON.parse(body) as { error?: string }).error ?? null;
      } catch {}
      resolve({ status, error });
    };
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      // A CONNECT answered 200 stays open: that answer is all there is to see.
      if (/^HTTP\/1\.1 200 Connection Established\r\n\r\n/.test(buf)) return done();
      // A kept-alive answer is complete once its Content-Length has arrived (no waiting for a close).
      const end = buf.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(buf.slice(0, end))?.[1];
      if (end >= 0 && length !== undefined && Buffer.byteLength(buf.slice(end + 4), "latin1") >= Number(length)) done();
    });
    sock.on("end", done);
    sock.on("error", done);
    sock.on("connect", () => sock.write(head));
    setTimeout(done, 5000);
  });
}

const auth = (cg: RunningCredgate) => `Proxy-Authorization: Basic ${btoa(`x:${cg.keys.defaultAgentToken}`)}`;
const get = (cg: RunningCredgate, url: string) => `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\n${auth(cg)}\r\n\r\n`;
const connect = (cg: RunningCredgate, authority: string) => `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth(cg)}\r\n\r\n`;

async function secret(cg: RunningCredgate, host: string, value: string): Promise<void> {
  const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value, hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } } });
  if (r.status !== 201) throw new Error(`secret for ${host}: ${r.status}`);
}

const listeners = {
  metadata80: await listen("169.254.169.254", 80),
  metadata443: await listen("169.254.169.254", 443),
  private80: await listen("10.1.2.3", 80),
  public80: await listen("203.0.113.7", 80),
};
const SECRET = "S3CR3T-egress-0123456789";
const results: Record<string, { status: number; error: string | null }> = {};

// Self-hosted defaults, with a passthrough host and a pinned public-looking host for the cleartext rule.
const selfHosted = await startCredgate({
  env: {
    CREDGATE_PASSTHROUGH_HOSTS: "metadata.passthrough.test",
    CREDGATE_RESOLVE: "metadata.passthrough.test:443:169.254.169.254,plain.insecure.test:80:203.0.113.7,noinject.insecure.test:80:203.0.113.7",
    CREDGATE_EGRESS_DENY: "10.1.2.3/32",
  },
});
await secret(selfHosted, "169.254.169.254", SECRET);
await secret(selfHosted, "plain.insecure.test", SECRET);
const s = selfHosted;
results["connect metadata"] = await attempt(s, connect(s, "169.254.169.254:443"));
results["connect metadata hex"] = await attempt(s, connect(s, "0xa9.0xfe.0xa9.0xfe:443"));
results["connect metadata mapped"] = await attempt(s, connect(s, "[::ffff:169.254.169.254]:443"));
results["connect passthrough pinned"] = await attempt(s, connect(s, "metadata.passthrough.test:443"));
results["absolute metadata"] = await attempt(s, get(s, "http://169.254.169.254/latest/meta-data/"));
results["absolute decimal"] = await attempt(s, get(s, "http://2852039166/latest/meta-data/"));
results["absolute octal"] = await attempt(s, get(s, "http://0251.0376.0251.0376/latest/meta-data/"));
results["absolute hex"] = await attempt(s, get(s, "http://0xa9fea9fe/latest/meta-data/"));
results["absolute mapped hex"] = await attempt(s, get(s, "http://[::ffff:a9fe:a9fe]/latest/meta-data/"));
results["absolute link-local v6"] = await attempt(s, get(s, "http://[fe80::1]/"));
results["absolute unspecified"] = await attempt(s, get(s, "http://0.0.0.0/"));
results["own api port"] = await attempt(s, get(s, `http://127.0.0.1:${s.apiPort}/v1/agents`));
results["own gateway port"] = await attempt(s, connect(s, `127.0.0.1:${s.gatewayPort}`));
results["explicit deny (private)"] = await attempt(s, get(s, "http://10.1.2.3/"));
results["cleartext with a credential"] = await attempt(s, get(s, "http://plain.insecure.test/x"));
results["cleartext without a credential"] = await attempt(s, get(s, "http://noinject.insecure.test/y"));
const heardBefore = listeners.public80.heads.length;

// An explicit allow opens the metadata address; CREDGATE_PLAINTEXT_HOSTS lets the credential go in clear.
const allowing = await startCredgate({
  env: {
    CREDGATE_EGRESS_ALLOW: "169.254.169.254/32",
    CREDGATE_PLAINTEXT_HOSTS: "plain.insecure.test",
    CREDGATE_RESOLVE: "plain.insecure.test:80:203.0.113.7",
  },
});
await secret(allowing, "plain.insecure.test", SECRET);
results["explicit allow"] = await attempt(allowing, get(allowing, "http://169.254.169.254/allowed"));
results["plaintext host listed"] = await attempt(allowing, get(allowing, "http://plain.insecure.test/listed"));

// Cloud mode: loopback and private ranges too, and an operator's pin only when its address is allowed.
const cloud = await startCredgate({
  env: {
    CREDGATE_MODE: "cloud",
    CREDGATE_RESOLVE: "pinned.cloud.test:80:10.1.2.3,metadata.pt.test:443:169.254.169.254",
    CREDGATE_PASSTHROUGH_HOSTS: "*.pt.test",
  },
});
results["cloud loopback"] = await attempt(cloud, get(cloud, `http://127.0.0.1:${cloud.apiPort + 1}/`));
results["cloud private"] = await attempt(cloud, get(cloud, "http://10.1.2.3/"));
results["cloud pinned private"] = await attempt(cloud, get(cloud, "http://pinned.cloud.test/"));
results["cloud passthrough pinned to metadata"] = await attempt(cloud, connect(cloud, "metadata.pt.test:443"));
results["cloud public"] = await attempt(cloud, get(cloud, "http://203.0.113.7/cloud-public"));

// Names resolved through DNS (docs/operations.md#dns): the verdict is the answer's, kept as long as the answer.
const dns = await startDnsServer({
  "metadata.dns.test": { addresses: ["169.254.169.254"], ttl: 60 },
  "public.dns.test": { addresses: ["203.0.113.7"], ttl: 60 },
  "rebind.dns.test": { addresses: ["203.0.113.7"], ttl: 1 },
});
const resolving = await startCredgate({ env: { CREDGATE_DNS_SERVERS: dns.address } });
const r = resolving;
results["dns metadata absolute"] = await attempt(r, get(r, "http://metadata.dns.test/latest/meta-data/"));
results["dns metadata connect"] = await attempt(r, connect(r, "metadata.dns.test:443"));
results["dns metadata again"] = await attempt(r, get(r, "http://metadata.dns.test/again"));
results["dns public"] = await attempt(r, get(r, "http://public.dns.test/dns-public"));
results["rebind before"] = await attempt(r, get(r, "http://rebind.dns.test/rebind-1"));
// The name now points at the metadata address: once its 1-s answer expired, the new answer is judged.
dns.set("rebind.dns.test", { addresses: ["169.254.169.254"], ttl: 1 });
await Bun.sleep(1_100);
results["rebind after"] = await attempt(r, get(r, "http://rebind.dns.test/rebind-2"));
const dnsQueries = { metadata: dns.count("metadata.dns.test", "A"), rebind: dns.count("rebind.dns.test", "A") };
await dns.stop();

for (const cg of [selfHosted, allowing, cloud, resolving]) await cg.stop();
console.log(
  JSON.stringify({
    results,
    heard: {
      metadata80: listeners.metadata80.accepted,
      metadata443: listeners.metadata443.accepted,
      metadataHeads: listeners.metadata80.heads,
      private: listeners.private80.accepted,
      publicBeforeAllowing: listeners.public80.heads.slice(0, heardBefore),
      publicAll: listeners.public80.heads,
    },
    dnsQueries,
  }),
);
process.exit(0);
