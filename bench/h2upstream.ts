// The h2 benchmark's origins, as their own process (bench/h2.ts): an HTTP/2-only HTTPS server (node:http2)
// answering `GET /` with the same small JSON as bench/upstream.ts, and a gRPC server (@grpc/grpc-js, TLS)
// with the test service's Unary call (test/support/grpc/echo.proto). Prints `{"port":…,"grpcPort":…}`.
// Usage: bun bench/h2upstream.ts <cert.pem> <key.pem>
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { echoService, type Msg } from "../test/support/grpc.ts";

const [certFile, keyFile] = process.argv.slice(2);
if (!certFile || !keyFile) {
  console.error("usage: bun bench/h2upstream.ts <cert.pem> <key.pem>");
  process.exit(2);
}
const cert = readFileSync(certFile);
const key = readFileSync(keyFile);
const SMALL = JSON.stringify({ ok: true, service: "bench-upstream", items: [1, 2, 3] });

const server = http2.createSecureServer({ cert, key, allowHTTP1: false });
server.on("stream", (stream: http2.ServerHttp2Stream) => {
  stream.on("error", () => {});
  stream.respond({ ":status": 200, "content-type": "application/json", "content-length": String(SMALL.length) });
  stream.end(SMALL);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));

const grpcServer = new grpc.Server();
grpcServer.addService(echoService().service, {
  Unary(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
    cb(null, { text: call.request.text, n: call.request.n + 1 });
  },
});
const grpcPort = await new Promise<number>((resolve, reject) =>
  grpcServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createSsl(null, [{ cert_chain: cert, private_key: key }], false), (err, p) => (err ? reject(err) : resolve(p))),
);
console.log(JSON.stringify({ port: (server.address() as { port: number }).port, grpcPort }));
