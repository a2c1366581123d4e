// Node's HTTP/2 client (http2.connect inside a CONNECT tunnel, as h2client.cjs) sending, one after the other on
// ONE connection, POSTs whose bodies (`bodies`: their sizes, more than the stream's flow-control window) the
// gateway answers before reading them, then one plain GET on the same connection. Each POST is sent once the one
// before has its whole answer (a POST with no answer within `answerMs` ends the series); then the GET; then every
// POST's stream gets up to `closeMs` to have been closed (cleanly once the body went out, or by the server's
// RST_STREAM NO_ERROR). argv[2]: JSON {gatewayPort, token, authority, caFile, blockedPath, afterPath, bodies,
// answerMs, closeMs}. Prints one JSON line: {posts: [{status, bytes, rstCode}], after: {status, bytes, text,
// timeout?}, sessionError, wrote}; rstCode is null for a stream still open; `wrote` is every byte the client sent
// on the connection.
const http2 = require("node:http2");
const { connectH2Tunnel } = require("./connectTunnel.cjs");

const cfg = JSON.parse(process.argv[2]);

/** Sends one request: `answer` resolves with the whole answer (or a timeout); `req` is kept for its rstCode. */
function exchange(session, headers, body, answerMs) {
  const req = session.request(headers, { endStream: body === null });
  const out = { status: null, bytes: 0, text: "" };
  const answer = new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ...out, timeout: true }), answerMs);
    req.on("response", (h) => (out.status = h[":status"]));
    req.on("data", (c) => {
      out.bytes += c.length;
      if (out.text.length < 500) out.text += c.toString("utf8");
    });
    req.on("error", (e) => (out.error = e.code || e.message));
    const done = () => {
      clearTimeout(timer);
      resolve(out);
    };
    req.on("end", done);
    req.on("close", done);
  });
  if (body !== null) req.end(body);
  return { answer, req, out };
}

/**
 * How the stream closed at the HTTP/2 layer (its rstCode: 0 for the server's RST_STREAM NO_ERROR or a clean end),
 * null while it is open. Read from `closed`, not the 'close' event: Node holds that back on a stream that still has
 * request body to write when it is reset with NO_ERROR just as its answer's last bytes arrive, and never emits it.
 */
const closedCode = (req) => (req.closed ? req.rstCode : null);

(async () => {
  const { raw, secure } = await connectH2Tunnel(cfg);
  // Node counts the request bodies it still holds against the session's memory (10 MB by default, past which it
  // refuses new streams itself with ENHANCE_YOUR_CALM): room enough that only the gateway decides here.
  const session = http2.connect(`https://${cfg.authority}`, { createConnection: () => secure, maxSessionMemory: 256 });
  const result = { posts: [], after: null, sessionError: null };
  session.on("error", (e) => (result.sessionError = e.message));
  session.on("goaway", (code) => (result.sessionError = `GOAWAY ${code}`));
  const posts = [];
  for (let i = 0; i < cfg.bodies.length; i++) {
    const body = Buffer.alloc(cfg.bodies[i], 0x61);
    const x = exchange(session, { ":method": "POST", ":path": `${cfg.blockedPath}/${i}`, "content-type": "application/octet-stream" }, body, cfg.answerMs);
    posts.push(x);
    if ((await x.answer).timeout) break;
  }
  const after = exchange(session, { ":method": "GET", ":path": cfg.afterPath }, null, cfg.answerMs);
  result.after = await after.answer;
  // The streams answered early have had time to close (their server's RST_STREAM follows each answer at once).
  const deadline = Date.now() + cfg.closeMs;
  while (Date.now() < deadline && posts.some((x) => closedCode(x.req) === null)) await new Promise((r) => setTimeout(r, 20));
  result.posts = posts.map((x) => ({ status: x.out.status, bytes: x.out.bytes, rstCode: closedCode(x.req), ...(x.out.error ? { error: x.out.error } : {}) }));
  result.wrote = raw.bytesWritten;
  process.stdout.write(JSON.stringify(result) + "\n");
  session.destroy();
  secure.destroy();
})().catch((e) => {
  process.stdout.write(JSON.stringify({ fatal: e.message }) + "\n");
  process.exit(1);
});
