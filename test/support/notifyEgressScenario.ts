// Runs inside its own network namespace (test/e2e/notifications-egress.test.ts starts it with `unshare -n`):
// loopback up and 169.254.169.254 (cloud metadata) added to `lo` with listeners on 80 and 443 that count every
// connection. Notification channels pointed at that address, in its several spellings, are tried through a
// real credgate: by a test send and by a queued delivery (an approval.requested raised by a request held at the
// gateway). Prints one JSON document: what each attempt reported, and what the listeners received.
import * as net from "node:net";
import { startCredgate, type RunningCredgate } from "./process.ts";

function listen(host: string, port: number): Promise<{ accepted: number }> {
  const state = { accepted: 0 };
  const server = net.createServer((sock) => {
    state.accepted++;
    sock.on("error", () => {});
    sock.end("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(state)));
}

const metadata80 = await listen("169.254.169.254", 80);
const metadata443 = await listen("169.254.169.254", 443);
// The upstream of the held request (never reached: the request is denied).
const upstream = net.createServer((sock) => sock.destroy());
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", () => resolve()));
const upstreamPort = (upstream.address() as net.AddressInfo).port;

const cg: RunningCredgate = await startCredgate({ env: { CREDGATE_RESOLVE: `held.egress.test:${upstreamPort}:127.0.0.1`, CREDGATE_APPROVAL_POLL_SECONDS: "1" } });
const results: Record<string, unknown> = {};

const URLS: Record<string, string> = {
  literal: "https://169.254.169.254/hook",
  hex: "https://0xa9fea9fe/hook",
  mapped: "https://[::ffff:169.254.169.254]/hook",
};
const channels: Record<string, string> = {};
for (const [name, url] of Object.entries(URLS)) {
  const created = await cg.api("POST", "/v1/notifications/channels", { body: { kind: "webhook", url } });
  results[`create ${name}`] = created.status;
  channels[name] = created.body.id;
  results[`test ${name}`] = (await cg.api("POST", `/v1/notifications/channels/${created.body.id}/test`)).body;
}
// Plain http to it is not even accepted.
results["create http"] = (await cg.api("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: "http://169.254.169.254/hook" } })).body;

// A queued delivery of a real event: a request held at the gateway.
await cg.api("POST", "/v1/policy/rules", { body: { name: "ask", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "held.egress.test" }] } });
await cg.api("POST", "/v1/policy/publish");
const agent = net.connect({ host: "127.0.0.1", port: cg.gatewayPort });
agent.on("error", () => {});
agent.write(`GET http://held.egress.test:${upstreamPort}/x HTTP/1.1\r\nHost: held.egress.test:${upstreamPort}\r\nProxy-Authorization: Basic ${btoa(`x:${cg.keys.defaultAgentToken}`)}\r\n\r\n`);
let approvalId = "";
for (let i = 0; i < 100 && !approvalId; i++) {
  approvalId = (await cg.api("GET", "/v1/approvals/pending")).body.requests[0]?.id ?? "";
  if (!approvalId) await Bun.sleep(100);
}
results.held = approvalId !== "";
let delivery: any = null;
for (let i = 0; i < 100; i++) {
  delivery = (await cg.api("GET", `/v1/notifications/deliveries?channelId=${channels.literal}`)).body.data[0] ?? null;
  if (delivery?.attempts >= 1) break;
  await Bun.sleep(100);
}
results.delivery = delivery;
await cg.api("POST", `/v1/approvals/${approvalId}/decision`, { body: { decision: "deny" } });
agent.destroy();
await cg.stop();
console.log(JSON.stringify({ results, heard: { metadata80: metadata80.accepted, metadata443: metadata443.accepted } }));
process.exit(0);
