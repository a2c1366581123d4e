// The preload `credgate run` gives every Node process (NODE_OPTIONS=--require, bundled to one CommonJS file with
// undici at build time: run/preloadBundle.ts). Node 20 sends neither fetch() nor the http/https modules through
// HTTPS_PROXY on its own, so this routes both:
// - fetch(): undici's EnvHttpProxyAgent as the global dispatcher (OpenAI and Anthropic SDKs, anything on fetch);
// - http/https: every agent's connections (the global agents and any other http.Agent, as axios, got and
//   node-fetch based SDKs use) are opened through a CONNECT tunnel to the proxy, TLS running inside it as usual.
// NO_PROXY is honoured by both. Nothing here may break Node: a failure is a warning, and Node runs unproxied.
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as tls from "node:tls";
import { EnvHttpProxyAgent, Pool, setGlobalDispatcher, type buildConnector } from "undici";
import { proxyFor } from "./proxyEnv.ts";
import { openTunnel } from "./tunnel.ts";

const MARK = Symbol.for("credgate.proxied");
type CreateConnection = http.Agent["createConnection"] & { [MARK]?: true };

/** Wraps an agent prototype's createConnection: proxied targets get a tunnel, the others the original. */
function routeAgent(proto: http.Agent, secure: boolean): void {
  const original: CreateConnection = proto.createConnection;
  if (original[MARK]) return;
  const routed: CreateConnection = function (this: http.Agent, options, done) {
    const host = options.host ?? options.hostname ?? "localhost";
    const port = Number(options.port) || (secure ? 443 : 80);
    const proxy = options.socketPath ? null : proxyFor(secure, host, port, process.env);
    if (!proxy || !done) return original.call(this, options, done);
    openTunnel(proxy, host, port, (err, tunnel) => {
      // Node's agent takes `(err)` alone for a failure (its typings ask for a stream either way).
      if (err || !tunnel) return (done as (err: Error) => void)(err ?? new Error("no tunnel"));
      if (!secure) return done(null, tunnel);
      // TLS to the target inside the tunnel, with the request's own TLS options (CA, servername, client cert).
      done(null, tls.connect({ ...(options as tls.ConnectionOptions), host, port, socket: tunnel }));
    });
    return undefined;
  };
  routed[MARK] = true;
  proto.createConnection = routed;
}

try {
  // undici names an https:// proxy given by IP address in SNI, which TLS forbids (Node warns, DEP0123): the
  // proxy's connections leave without one. The gateway's certificate carries its IP addresses as SANs.
  const clientFactory = (origin: URL, opts: Pool.Options) => {
    const connect = opts.connect as buildConnector.connector;
    const withoutIpName: buildConnector.connector = (o, callback) => connect({ ...o, servername: o.servername && net.isIP(o.servername) ? undefined : o.servername }, callback);
    return new Pool(origin, { ...opts, connect: withoutIpName });
  };
  setGlobalDispatcher(new EnvHttpProxyAgent({ clientFactory } as EnvHttpProxyAgent.Options));
} catch (err) {
  process.emitWarning(`credgate: could not route fetch() through the gateway: ${(err as Error).message}`);
}
try {
  routeAgent(https.Agent.prototype, true);
  routeAgent(http.Agent.prototype, false);
} catch (err) {
  process.emitWarning(`credgate: could not route the http and https modules through the gateway: ${(err as Error).message}`);
}
