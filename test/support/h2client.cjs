// Node's own HTTP/2 client (http2.connect) inside a CONNECT tunnel to the gateway, as an agent's runtime opens
// it: CONNECT with the agent's token, TLS trusting the gateway CA with ALPN h2, then every request a stream on
// that one connection, all at once. argv[2]: JSON {gatewayPort, token, authority, caFile, requests: [{path,
// method, body, slow}]}. One JSON line per response as it completes ({i, status, headers, bytes, text}); a
// `slow` request reads its first chunk, then nothing until every other request has completed (its stream's
// window fills and stays full), then the rest. The last line is {done: true, alpn}.
const http2 = require("node:http2");
const { connectH2Tunnel } = require("./connectTunnel.cjs");

const cfg = JSON.parse(process.argv[2]);
const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

(async () => {
  const { secure } = await connectH2Tunnel(cfg);
  const session = http2.connect(`https://${cfg.authority}`, { createConnection: () => secure });
  session.on("error", (e) => print({ sessionError: e.message }));
  let othersLeft = cfg.requests.filter((r) => !r.slow).length;
  const releaseSlow = [];
  const all = cfg.requests.map(
    (r, i) =>
      new Promise((resolve) => {
        const req = session.request({ ":method": r.method ?? "GET", ":path": r.path, ...(r.headers ?? {}) }, { endStream: r.body === undefined });
        if (r.body !== undefined) req.end(r.body);
        let headers = {};
        let bytes = 0;
        let text = "";
        req.on("response", (h) => (headers = h));
        req.on("data", (c) => {
          bytes += c.length;
          if (text.length < 2000) text += c.toString("latin1");
          if (r.slow && bytes === c.length) {
            req.pause();
            releaseSlow.push(() => req.resume());
            if (othersLeft === 0) releaseSlow.shift()();
          }
        });
        req.on("error", (e) => {
          print({ i, error: e.message, code: e.code });
          resolve();
        });
        req.on("close", () => {
          if (bytes === 0 && !headers[":status"]) return resolve();
          print({ i, status: headers[":status"], headers, bytes, text: text.slice(0, 2000), rstCode: req.rstCode });
          if (!r.slow && --othersLeft === 0) for (const fn of releaseSlow.splice(0)) fn();
          resolve();
        });
      }),
  );
  await Promise.all(all);
  print({ done: true, alpn: secure.alpnProtocol });
  session.close();
})().catch((e) => {
  print({ fatal: e.message });
  process.exit(1);
});
