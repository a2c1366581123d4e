// An HTTP/2 agent that floods control frames and never reads (CVE-2019-9512 ping flood, CVE-2019-9515 settings
// flood), run with node so that a paused socket really stops reading: inside a CONNECT tunnel to the gateway,
// TLS with ALPN h2, the preface, then `bytes` of PING (or SETTINGS) frames as fast as the socket takes them,
// reading nothing. It stops when all are written, when the connection closes, or when no write has gone for
// `stallMs` (the gateway stopped reading). Then it reads everything the gateway sent until the connection ends
// (or `readMs` pass without a byte). argv[2]: JSON {gatewayPort, token, authority, caFile, kind: "ping"|
// "settings"|"unread", bytes, stallMs?, readMs?, path?, holdMs?}. Prints `{"progress": n}` lines as it writes,
// then one result line {sent, stalled, writeError, pingAcks, settingsAcks, goaway (error code or null), ended}.
// Kind "unread" floods nothing: it opens every window as wide as it goes, asks for `path`, prints
// `{"asked": true}`, reads nothing for `holdMs`, and exits.
const { connectH2Tunnel } = require("./connectTunnel.cjs");

const cfg = JSON.parse(process.argv[2]);
const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

function frame(type, flags, stream, payload) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** 64 KiB or so of one kind of frame. */
function chunkOf(kind) {
  const frames = [];
  for (let size = 0, i = 0; size < 64 * 1024; i++) {
    let f;
    if (kind === "ping") {
      const p = Buffer.alloc(8);
      p.writeUInt32BE(i, 4);
      f = frame(6, 0, 0, p);
    } else {
      // SETTINGS_HEADER_TABLE_SIZE 4096: a real setting, applied every time.
      const p = Buffer.alloc(6);
      p.writeUInt16BE(1, 0);
      p.writeUInt32BE(4096, 2);
      f = frame(4, 0, 0, p);
    }
    frames.push(f);
    size += f.length;
  }
  return Buffer.concat(frames);
}

(async () => {
  const { secure } = await connectH2Tunnel(cfg, { pause: true });
  if (secure.alpnProtocol !== "h2") throw new Error(`ALPN chose ${secure.alpnProtocol}`);
  secure.pause();
  let closed = false;
  let writeError = null;
  secure.on("close", () => (closed = true));
  secure.on("error", (e) => (writeError = e.code || e.message));
  secure.write(Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"));
  secure.write(frame(4, 0, 0, Buffer.alloc(0)));

  if (cfg.kind === "unread") {
    // SETTINGS_INITIAL_WINDOW_SIZE 2^31-1, the connection window to 2^31-1: only TCP holds the gateway back.
    const p = Buffer.alloc(6);
    p.writeUInt16BE(4, 0);
    p.writeUInt32BE(0x7fffffff, 2);
    secure.write(frame(4, 0, 0, p));
    const inc = Buffer.alloc(4);
    inc.writeUInt32BE(0x7fffffff - 65535);
    secure.write(frame(8, 0, 0, inc));
    const lit = (n, v) => Buffer.concat([Buffer.from([0, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
    const block = Buffer.concat([lit(":method", "GET"), lit(":scheme", "https"), lit(":authority", cfg.authority), lit(":path", cfg.path)]);
    secure.write(frame(1, 0x5, 1, block));
    print({ asked: true });
    await new Promise((r) => setTimeout(r, cfg.holdMs));
    secure.destroy();
    process.exit(0);
  }
  const chunk = chunkOf(cfg.kind);
  const stallMs = cfg.stallMs ?? 3000;
  let written = 0;
  let stalled = false;
  let lastProgress = 0;
  while (written < cfg.bytes && !closed && writeError === null) {
    const ok = secure.write(chunk);
    written += chunk.length;
    if (written - lastProgress >= 4 * 1024 * 1024) {
      lastProgress = written;
      print({ progress: written - secure.writableLength });
    }
    if (ok) continue;
    const drained = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), stallMs);
      secure.once("drain", () => {
        clearTimeout(timer);
        resolve(true);
      });
      secure.once("close", () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!drained) {
      stalled = true;
      break;
    }
  }
  const sent = written - secure.writableLength;

  // Now read what the gateway sent.
  let buf = Buffer.alloc(0);
  let pingAcks = 0;
  let settingsAcks = 0;
  let goaway = null;
  let ended = closed;
  await new Promise((resolve) => {
    let timer = null;
    const readMs = cfg.readMs ?? 10_000;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(resolve, readMs);
    };
    arm();
    secure.on("data", (c) => {
      arm();
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3];
        const flags = buf[4];
        if (type === 6 && flags & 1) pingAcks++;
        if (type === 4 && flags & 1) settingsAcks++;
        if (type === 7 && goaway === null) goaway = buf.readUInt32BE(9 + 4);
        buf = buf.subarray(9 + len);
      }
    });
    secure.on("end", () => {
      ended = true;
      clearTimeout(timer);
      resolve();
    });
    secure.on("close", () => {
      ended = true;
      clearTimeout(timer);
      resolve();
    });
    secure.resume();
  });
  print({ sent, stalled, writeError, pingAcks, settingsAcks, goaway, ended });
  secure.destroy();
  process.exit(0);
})().catch((e) => {
  print({ error: e.message });
  process.exit(1);
});
