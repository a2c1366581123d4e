// HTTP/2 frames (RFC 9113 §4 and RFC 9113 §6): the types, flags, error codes and settings the gateway uses, the
// builders of the frames it writes, and `unpad` for the padded ones it reads. A frame is a 9-byte header (length,
// type, flags, stream id) then its payload.
export const FRAME_HEADER = 9;
export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;

export const END_STREAM = 0x1;
export const ACK = 0x1;
export const END_HEADERS = 0x4;
export const PADDED = 0x8;
export const PRIORITY_FLAG = 0x20;

export const NO_ERROR = 0x0;
export const PROTOCOL_ERROR = 0x1;
export const INTERNAL_ERROR = 0x2;
export const FLOW_CONTROL_ERROR = 0x3;
export const STREAM_CLOSED = 0x5;
export const FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7;
export const CANCEL = 0x8;
export const COMPRESSION_ERROR = 0x9;
export const ENHANCE_YOUR_CALM = 0xb;

export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** The window every stream and the connection start with (RFC 9113 §6.9.2). */
export const DEFAULT_WINDOW = 65_535;
export const MAX_WINDOW = 0x7fff_ffff;
export const DEFAULT_MAX_FRAME = 16_384;

export function frameHeader(length: number, type: number, flags: number, stream: number): Buffer {
  const h = Buffer.allocUnsafe(FRAME_HEADER);
  h[0] = (length >>> 16) & 0xff;
  h[1] = (length >>> 8) & 0xff;
  h[2] = length & 0xff;
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & MAX_WINDOW, 5);
  return h;
}

/** A whole frame in one buffer (control frames: small). */
export function frame(type: number, flags: number, stream: number, payload: Uint8Array | null): Buffer {
  const length = payload ? payload.byteLength : 0;
  const out = Buffer.allocUnsafe(FRAME_HEADER + length);
  out[0] = (length >>> 16) & 0xff;
  out[1] = (length >>> 8) & 0xff;
  out[2] = length & 0xff;
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(stream & MAX_WINDOW, 5);
  if (payload) out.set(payload, FRAME_HEADER);
  return out;
}

export function settingsFrame(settings: [id: number, value: number][]): Buffer {
  const payload = Buffer.allocUnsafe(settings.length * 6);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(SETTINGS, 0, 0, payload);
}

export const SETTINGS_ACK = frame(SETTINGS, ACK, 0, null);

export function windowUpdate(stream: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment, 0);
  return frame(WINDOW_UPDATE, 0, stream, payload);
}

export function rstStream(stream: number, code: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(code, 0);
  return frame(RST_STREAM, 0, stream, payload);
}

export function goaway(lastStream: number, code: number): Buffer {
  const payload = Buffer.allocUnsafe(8);
  payload.writeUInt32BE(lastStream & MAX_WINDOW, 0);
  payload.writeUInt32BE(code, 4);
  return frame(GOAWAY, 0, 0, payload);
}

export function pingAck(payload: Uint8Array): Buffer {
  return frame(PING, ACK, 0, payload);
}

/**
 * A header block as HEADERS plus as many CONTINUATION frames as `maxFrame` requires (one write: nothing may
 * come between them, RFC 9113 §4.3).
 */
export function headerFrames(stream: number, block: Buffer, endStream: boolean, maxFrame: number): Buffer {
  const flagsEnd = endStream ? END_STREAM : 0;
  if (block.length <= maxFrame) return frame(HEADERS, flagsEnd | END_HEADERS, stream, block);
  const parts: Buffer[] = [];
  for (let at = 0; at < block.length; at += maxFrame) {
    const last = at + maxFrame >= block.length;
    const type = at === 0 ? HEADERS : CONTINUATION;
    const flags = (at === 0 ? flagsEnd : 0) | (last ? END_HEADERS : 0);
    parts.push(frame(type, flags, stream, block.subarray(at, Math.min(block.length, at + maxFrame))));
  }
  return Buffer.concat(parts);
}

/**
 * A DATA or HEADERS payload without its padding (PADDED flag) and the `extra` bytes after the pad length (HEADERS'
 * priority fields); null when the padding is longer than the frame.
 */
export function unpad(flags: number, payload: Buffer, extra: number): Buffer | null {
  if ((flags & PADDED) === 0) return extra === 0 ? payload : payload.length < extra ? null : payload.subarray(extra);
  if (payload.length < 1) return null;
  const pad = payload[0]!;
  if (1 + extra + pad > payload.length) return null;
  return payload.subarray(1 + extra, payload.length - pad);
}
