// `node -r ./connectTo.cjs`: curl's --connect-to for a Node client under test (an official cloud SDK pointed at a
// fake): every TLS connection to a `host:port` listed in CONNECT_TO (`host:port:address:port,…`, the format of
// CREDGATE_CONNECT_TO) dials the address and port instead, keeping the host for SNI and certificate checks.
const tls = require("node:tls");

const routes = new Map();
for (const entry of (process.env.CONNECT_TO || "").split(",").filter(Boolean)) {
  const [host, port, address, toPort] = entry.split(":");
  routes.set(`${host}:${port}`, { address, port: Number(toPort) });
}

const connect = tls.connect;
tls.connect = function (...args) {
  const options = args[0];
  if (options && typeof options === "object") {
    const host = options.servername || options.host;
    const route = routes.get(`${host}:${options.port || 443}`);
    if (route) args[0] = { ...options, host: route.address, port: route.port, servername: host };
  }
  return connect.apply(this, args);
};
