// A real @grpc/grpc-js client for the gateway tests (run with node; the proxy comes from grpc_proxy, as a user
// sets it). argv[2]: JSON {target, caFile, calls: [{kind, text, n, texts, metadata}]}; each call's outcome is one
// JSON line on stdout. A call of kind "wait" prints "waiting" and waits for a line on stdin (the test changes
// something meanwhile); every call goes on the same channel, so on the same HTTP/2 connection.
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const fs = require("node:fs");
const path = require("node:path");
const readline = require("node:readline");

const config = JSON.parse(process.argv[2]);
const def = protoLoader.loadSync(path.join(__dirname, "echo.proto"), { defaults: true });
const Echo = grpc.loadPackageDefinition(def).credgate.test.Echo;
const client = new Echo(config.target, grpc.credentials.createSsl(fs.readFileSync(config.caFile)));
const lines = readline.createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));

function metadataOf(call) {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(call.metadata ?? {})) md.set(k, v);
  return md;
}

const failure = (err) => ({ ok: false, code: err.code, details: err.details, trailers: err.metadata ? err.metadata.getMap() : {} });

function run(call) {
  return new Promise((resolve) => {
    const md = metadataOf(call);
    let trailers = {};
    const onStatus = (s) => (trailers = s.metadata.getMap());
    switch (call.kind) {
      case "unary": {
        const c = client.Unary({ text: call.text, n: call.n ?? 0 }, md, (err, res) => setImmediate(() => resolve(err ? failure(err) : { ok: true, res, trailers })));
        c.on("status", onStatus);
        return;
      }
      case "server": {
        const msgs = [];
        const c = client.ServerStream({ text: call.text, n: call.n }, md);
        c.on("data", (m) => msgs.push(m));
        c.on("status", onStatus);
        c.on("error", (err) => resolve(failure(err)));
        c.on("end", () => setImmediate(() => resolve({ ok: true, msgs, trailers })));
        return;
      }
      case "client": {
        const c = client.ClientStream(md, (err, res) => setImmediate(() => resolve(err ? failure(err) : { ok: true, res, trailers })));
        c.on("status", onStatus);
        for (const text of call.texts) c.write({ text, n: 0 });
        c.end();
        return;
      }
      case "bidi": {
        const msgs = [];
        const c = client.Bidi(md);
        c.on("status", onStatus);
        c.on("error", (err) => resolve(failure(err)));
        c.on("end", () => setImmediate(() => resolve({ ok: true, msgs, trailers })));
        // Ping-pong: each message is sent once the previous answer came, so the call is truly interactive.
        let i = 0;
        const next = () => (i < call.texts.length ? c.write({ text: call.texts[i], n: i++ }) : c.end());
        c.on("data", (m) => {
          msgs.push(m);
          next();
        });
        next();
        return;
      }
      default:
        throw new Error(`unknown call kind ${call.kind}`);
    }
  });
}

(async () => {
  for (const call of config.calls) {
    if (call.kind === "wait") {
      console.log(JSON.stringify({ waiting: true }));
      await nextLine();
      continue;
    }
    console.log(JSON.stringify(await run(call)));
  }
  client.close();
  lines.close();
})();
