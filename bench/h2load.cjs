// The h2 benchmark's load client (bench/h2.ts), run with node: its http2 and @grpc/grpc-js clients are the
// reference ones. One HTTP/2 connection — straight to the origin, or a CONNECT tunnel to the gateway with TLS
// (ALPN h2) inside — keeping `streams` requests in flight for `durationMs` after a warm-up; or one gRPC
// channel (grpc_proxy set by the caller for the gateway) keeping `streams` unary calls in flight. Prints one
// JSON line {rps, p50, p99, count, errors}.
//   node bench/h2load.cjs '{"kind":"h2"|"grpc","host","port","caFile","proxy":{host,port,token}|null,"streams","warmupMs","durationMs"}'
const http2 = require("node:http2");
const net = require("node:net");
const tls = require("node:tls");
const fs = require("node:fs");
const path = require("node:path");

const cfg = JSON.parse(process.argv[2]);
const ca = fs.readFileSync(cfg.caFile);

function tunnel() {
  return new Promise((resolve, reject) => {
    const s = net.connect(cfg.proxy.port, cfg.proxy.host, () => {
      const auth = Buffer.from(`x:${cfg.proxy.token}`).toString("base64");
      s.write(`CONNECT ${cfg.host}:${cfg.port} HTTP/1.1\r\nHost: ${cfg.host}:${cfg.port}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
    });
    let buf = Buffer.alloc(0);
    const onData = (c) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      s.off("data", onData);
      if (!buf.toString("latin1", 0, 12).startsWith("HTTP/1.1 200")) return reject(new Error(buf.toString()));
      resolve(s);
    };
    s.on("data", onData);
    s.on("error", reject);
  });
}

async function h2Session() {
  const socket = cfg.proxy ? await tunnel() : net.connect(cfg.port, "127.0.0.1");
  const ip = net.isIP(cfg.host) !== 0;
  const secure = tls.connect({ socket, host: cfg.host, ...(ip ? {} : { servername: cfg.host }), ca, ALPNProtocols: ["h2"] });
  await new Promise((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  if (secure.alpnProtocol !== "h2") throw new Error(`ALPN chose ${secure.alpnProtocol}`);
  return http2.connect(`https://${cfg.host}:${cfg.port}`, { createConnection: () => secure });
}

function h2Call(session) {
  return new Promise((resolve) => {
    const req = session.request({ ":method": "GET", ":path": "/" });
    let status = 0;
    req.on("response", (h) => (status = h[":status"]));
    req.on("data", () => {});
    req.on("error", () => resolve(false));
    req.on("end", () => resolve(status === 200));
  });
}

async function grpcCaller() {
  const grpc = require("@grpc/grpc-js");
  const protoLoader = require("@grpc/proto-loader");
  const def = protoLoader.loadSync(path.join(__dirname, "../test/support/grpc/echo.proto"), { defaults: true });
  const Echo = grpc.loadPackageDefinition(def).credgate.test.Echo;
  const client = new Echo(`${cfg.host}:${cfg.port}`, grpc.credentials.createSsl(ca));
  return () => new Promise((resolve) => client.Unary({ text: "bench", n: 1 }, (err, res) => resolve(!err && res.n === 2)));
}

(async () => {
  const call = cfg.kind === "grpc" ? await grpcCaller() : ((s) => () => h2Call(s))(await h2Session());
  const latencies = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const t0 = performance.now();
      const ok = await call();
      if (!measuring) continue;
      if (ok) latencies.push(performance.now() - t0);
      else errors++;
    }
  };
  const workers = Array.from({ length: cfg.streams }, worker);
  await new Promise((r) => setTimeout(r, cfg.warmupMs));
  measuring = true;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, cfg.durationMs));
  measuring = false;
  const elapsed = performance.now() - start;
  stop = true;
  await Promise.all(workers);
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  console.log(JSON.stringify({ rps: (latencies.length / elapsed) * 1000, p50: q(0.5), p99: q(0.99), count: latencies.length, errors }));
  process.exit(0);
})().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
