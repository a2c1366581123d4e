// Runs inside its own network namespace (test/e2e/cloud-metadata-netns.test.ts starts it with `unshare -n`):
// loopback up, 169.254.169.254 on `lo` with a listener on port 80 that records every connection, and
// metadata.google.internal resolving to it through a DNS server on loopback. credgate is started with the
// metadata address explicitly allowed (CREDGATE_EGRESS_ALLOW), so that only its own answering keeps it from
// dialling: an agent with a Google and an Azure secret asks the GCE metadata server and the Azure
// managed-identity endpoint in absolute-form and inside plain CONNECT :80 tunnels; then an agent with no cloud
// secret asks the same address (a control: its request does reach the listener). Prints one JSON document.
import * as net from "node:net";
import { generateKeyPairSync } from "node:crypto";
import { startDnsServer } from "./dnsServer.ts";
import { startCredgate, type RunningCredgate } from "./process.ts";

const heard: string[] = [];
const server = net.createServer((sock) => {
  let buf = "";
  sock.on("error", () => {});
  sock.on("data", (d: Buffer) => {
    buf += d.toString("latin1");
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    heard.push(buf.slice(0, buf.indexOf("\r\n")));
    buf = "";
    sock.end("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nlistener");
  });
});
await new Promise<void>((resolve) => server.listen(80, "169.254.169.254", resolve));

/** Sends `bytes` on a fresh connection to the gateway; everything it answers until it closes or goes quiet. */
function exchange(cg: RunningCredgate, steps: string[]): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
    let buf = "";
    let step = 0;
    const finish = () => {
      sock.destroy();
      resolve(buf);
    };
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      // A CONNECT answered: send the request inside the tunnel.
      if (step === 1 && steps.length > 1 && buf.includes("\r\n\r\n")) {
        step = 2;
        sock.write(steps[1]!);
      }
      const lastHead = buf.lastIndexOf("HTTP/1.1 ");
      const rest = buf.slice(lastHead);
      const end = rest.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, end))?.[1];
      if ((steps.length === 1 || step === 2) && end >= 0 && length !== undefined && Buffer.byteLength(rest.slice(end + 4), "latin1") >= Number(length)) finish();
    });
    sock.on("end", finish);
    sock.on("error", finish);
    sock.on("connect", () => {
      step = 1;
      sock.write(steps[0]!);
    });
    setTimeout(finish, 5000);
  });
}

const dns = await startDnsServer({ "metadata.google.internal": { addresses: ["169.254.169.254"], ttl: 60 } });
const cg = await startCredgate({ env: { CREDGATE_EGRESS_ALLOW: "169.254.169.254/32", CREDGATE_DNS_SERVERS: dns.address } });
const key = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const value = JSON.stringify({ type: "service_account", project_id: "ns-project", private_key: key, client_email: "ns@ns-project.iam.gserviceaccount.com", token_uri: "https://oauth2.googleapis.com/token" });
for (const body of [
  { name: "gcp", type: "generic", value, injectionConfig: { gcpServiceAccount: {} } },
  { name: "azure", type: "generic", value: "client-secret", hostPattern: "*.blob.core.windows.net", injectionConfig: { azureClientSecret: { tenantId: "11111111-2222-3333-4444-555555555555", clientId: "66666666-7777-8888-9999-000000000000" } } },
]) {
  const r = await cg.api("POST", "/v1/secrets", { body });
  if (r.status !== 201) throw new Error(`secret ${body.name}: ${r.status} ${r.text}`);
}
const other = await cg.api("POST", "/v1/agents", { body: { name: "no-cloud", identifier: "no-cloud", mode: "grants" } });
const otherToken = (await cg.api("POST", `/v1/agents/${other.body.id}/regenerate-token`)).body.accessToken as string;

const auth = (token: string) => `Proxy-Authorization: Basic ${btoa(`x:${token}`)}\r\n`;
const gce = "/computeMetadata/v1/project/project-id";
const mi = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F";
const agent = cg.keys.defaultAgentToken;
const answers: Record<string, string> = {};
for (const host of ["169.254.169.254", "metadata.google.internal"]) {
  answers[`absolute gce ${host}`] = await exchange(cg, [`GET http://${host}${gce} HTTP/1.1\r\nHost: ${host}\r\nMetadata-Flavor: Google\r\n${auth(agent)}\r\n`]);
  answers[`tunnel gce ${host}`] = await exchange(cg, [`CONNECT ${host}:80 HTTP/1.1\r\nHost: ${host}:80\r\n${auth(agent)}\r\n`, `GET ${gce} HTTP/1.1\r\nHost: ${host}\r\nMetadata-Flavor: Google\r\n\r\n`]);
  answers[`tunnel other path ${host}`] = await exchange(cg, [`CONNECT ${host}:80 HTTP/1.1\r\nHost: ${host}:80\r\n${auth(agent)}\r\n`, `GET /latest/meta-data/ HTTP/1.1\r\nHost: ${host}\r\n\r\n`]);
}
answers["absolute mi"] = await exchange(cg, [`GET http://169.254.169.254${mi} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n${auth(agent)}\r\n`]);
answers["tunnel mi"] = await exchange(cg, [`CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n${auth(agent)}\r\n`, `GET ${mi} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n`]);
const heardByCloudAgent = [...heard];
answers["control: no cloud secret"] = await exchange(cg, [`GET http://169.254.169.254${gce} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata-Flavor: Google\r\n${auth(otherToken)}\r\n`]);

await cg.stop();
await dns.stop();
console.log(JSON.stringify({ answers, heardByCloudAgent, heardAll: heard }));
process.exit(0);
