// An unmodified `ws` server as a WebSocket origin (run by Node, not Bun, so that it is the package's own server
// code): TLS with the certificate and key named in argv[2] and argv[3], every message echoed back as it came,
// and the subprotocol chosen as `ws` chooses it by default (the first one offered). Prints `{"port":N}` once it
// listens, then one line per connection: `{"path","protocol"}`.
const https = require("node:https");
const fs = require("node:fs");
const { WebSocketServer } = require("ws");

const server = https.createServer({ cert: fs.readFileSync(process.argv[2]), key: fs.readFileSync(process.argv[3]) });
const wss = new WebSocketServer({ server });
wss.on("connection", (ws, req) => {
  process.stdout.write(`${JSON.stringify({ path: req.url, protocol: ws.protocol })}\n`);
  ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on("error", () => {});
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
