// A CONNECT tunnel through the gateway for the node-run h2 agents (h2client.cjs, h2flood.cjs, h2EarlyAnswers.cjs):
// the raw socket once the gateway answered 200, paused when `pause` is set (a flooder that must not read anything
// after it); or TLS inside it, offering h2 and trusting the gateway CA in `cfg.caFile`.
const fs = require("node:fs");
const net = require("node:net");
const tls = require("node:tls");

function connectTunnel(cfg, { pause = false } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect(cfg.gatewayPort, "127.0.0.1", () => {
      const auth = Buffer.from(`x:${cfg.token}`).toString("base64");
      s.write(`CONNECT ${cfg.authority} HTTP/1.1\r\nHost: ${cfg.authority}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
    });
    let buf = Buffer.alloc(0);
    const onData = (c) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      s.off("data", onData);
      if (pause) s.pause();
      if (!buf.subarray(0, end).toString().startsWith("HTTP/1.1 200")) return reject(new Error(buf.toString()));
      resolve(s);
    };
    s.on("data", onData);
    s.on("error", reject);
  });
}

/** TLS to `cfg.authority`'s host inside a CONNECT tunnel, ALPN offering h2: `secure`, and `raw` (the tunnel's socket). */
async function connectH2Tunnel(cfg, opts) {
  const raw = await connectTunnel(cfg, opts);
  const host = cfg.authority.replace(/:\d+$/, "");
  const secure = tls.connect({ socket: raw, servername: host, ca: fs.readFileSync(cfg.caFile), ALPNProtocols: ["h2"] });
  await new Promise((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  return { raw, secure };
}

module.exports = { connectTunnel, connectH2Tunnel };
