// A CONNECT tunnel through the gateway for the node-run h2 agents (h2client.cjs, h2flood.cjs): the raw socket
// once the gateway answered 200, paused when `pause` is set (a flooder that must not read anything after it).
const net = require("node:net");

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

module.exports = { connectTunnel };
