// WebSocket frames read and rewritten in one direction of a relay (docs/gateway.md#websocket): data frames are
// unmasked, their payload passed through the direction's scans (NeedleStreams: placeholder substitution, the leak
// guard, the echo guard's redaction), and framed again with the new length (re-masked with the frame's own key
// in the client → server direction). A frame whose payload is all there is rewritten as one frame; one that spans
// reads goes on as fragments as it arrives (only the bytes a scan holds back wait), so memory stays bounded.
// Placeholder substitution reads a message from its first frame to its FIN, so a placeholder split across frames
// is still found. The guards read every payload — data, PING, PONG, the reason of a CLOSE (its code kept) — as one
// stream, a message's end carried over as context (NeedleStream.endMessage), so a value split across frames,
// messages, or a message and a control frame is found; control frames are also read as a stream of their own, so a
// value split across two PINGs with a message between them is found too (docs/guards.md#echo-guard). A control frame is at most 125 bytes
// (RFC 6455): it is read whole and, grown by a redaction, cut to 125 again. A frame credgate cannot read — a
// control frame longer than 125 bytes or fragmented, or one with an RSV bit (an extension's: compressed) — throws
// UnreadableFrame; a scan that throws (a leak) throws too; both are the caller's to handle.
import type { NeedleStream } from "../core/needleStream.ts";

/** One scan of a direction, made when the relay starts. */
export interface FrameScan {
  readonly stream: NeedleStream;
  /**
   * A guard's (leak guard, echo guard): a second scan of the same needles, for control frames alone. A guard's
   * `stream` reads control frames too, and a message's end stays its context for the next. Null: placeholder
   * substitution, which reads data frames only, message by message.
   */
  readonly controls: NeedleStream | null;
}

/** A frame that cannot be read, so cannot be let through. */
export class UnreadableFrame extends Error {}

const NOTHING = Buffer.alloc(0);
const CLOSE = 8;
const MAX_CONTROL = 125;

/** The longest prefix of `bytes` of at most `max` bytes that does not cut a UTF-8 character. */
function utf8Prefix(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  let end = max;
  // Back off continuation bytes (10xxxxxx) to the start of the character that would be cut.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

export class FrameRewriter {
  #pending: Buffer = NOTHING;
  /** Payload bytes still to come in the current frame (-1: between frames). */
  #left = -1;
  #control = false;
  #fin = false;
  #opcode = 0;
  #mask: Buffer | null = null;
  #maskAt = 0;
  /** The payload of the current control frame, as it arrives (at most 125 bytes). */
  #controlParts: Buffer[] = [];
  /** A frame of the current message has gone out (so the next goes out as a continuation). */
  #messageOpen = false;
  /** The opcode of the current message's first frame. */
  #messageOpcode = 0;
  readonly #guards: readonly FrameScan[];
  /** When `push` threw: the frames of that chunk before the one it could not let through, ready to go on. */
  beforeFailure: Buffer = NOTHING;

  constructor(
    private readonly scans: readonly FrameScan[],
    /** Frames in this direction are masked (client → server). */
    private readonly masked: boolean,
  ) {
    this.#guards = scans.filter((s) => s.controls !== null);
  }

  /** The bytes to send on for what arrived. */
  push(chunk: Buffer): Buffer {
    let buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    this.#pending = NOTHING;
    const out: Buffer[] = [];
    try {
      this.#read(buf, out);
    } catch (err) {
      this.beforeFailure = Buffer.concat(out);
      throw err;
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  #read(buf: Buffer, out: Buffer[]): void {
    let at = 0;
    while (at < buf.length) {
      if (this.#left === -1) {
        const header = this.#readHeader(buf, at);
        if (header === 0) {
          this.#pending = Buffer.from(buf.subarray(at));
          break;
        }
        at += header;
        if ((this.#left as number) === 0) this.#frameDone(out, NOTHING);
        continue;
      }
      const n = Math.min(this.#left, buf.length - at);
      const piece = buf.subarray(at, at + n);
      at += n;
      this.#left -= n;
      if (this.#control) {
        this.#controlParts.push(this.#unmask(piece));
        if (this.#left === 0) this.#frameDone(out, NOTHING);
        continue;
      }
      this.#data(out, piece);
    }
  }

  /** Reads a frame header at `at`; its length, or 0 when it is not all there yet. */
  #readHeader(buf: Buffer, at: number): number {
    if (buf.length - at < 2) return 0;
    const b0 = buf[at]!;
    const b1 = buf[at + 1]!;
    const isMasked = (b1 & 0x80) !== 0;
    let len = b1 & 0x7f;
    let size = 2;
    if (len === 126) {
      if (buf.length - at < 4) return 0;
      len = buf.readUInt16BE(at + 2);
      size = 4;
    } else if (len === 127) {
      if (buf.length - at < 10) return 0;
      len = Number(buf.readBigUInt64BE(at + 2));
      size = 10;
    }
    if (isMasked) {
      if (buf.length - at < size + 4) return 0;
      this.#mask = Buffer.from(buf.subarray(at + size, at + size + 4));
      size += 4;
    } else this.#mask = null;
    this.#fin = (b0 & 0x80) !== 0;
    this.#opcode = b0 & 0x0f;
    this.#control = this.#opcode >= 8;
    // RSV bits belong to an extension (permessage-deflate's RSV1: a compressed message): unreadable here.
    if ((b0 & 0x70) !== 0) throw new UnreadableFrame("a frame with an RSV bit set (an extension credgate did not offer)");
    if (this.#control && (len > MAX_CONTROL || !this.#fin)) throw new UnreadableFrame("a control frame longer than 125 bytes or fragmented");
    this.#left = len;
    this.#maskAt = 0;
    return size;
  }

  #data(out: Buffer[], piece: Buffer): void {
    const plain = this.#unmask(piece);
    if (!this.#messageOpen) this.#messageOpcode = this.#opcode;
    let bytes: Uint8Array = plain;
    for (const scan of this.scans) bytes = scan.stream.push(bytes);
    if (this.#left > 0) {
      // The frame goes on in the next read: what is ready goes out now, as a fragment.
      if (bytes.byteLength > 0) this.#emit(out, bytes, false);
      return;
    }
    this.#frameDone(out, bytes);
  }

  /** The end of a frame (a data frame's last payload bytes given): it goes out, with what the scans held at a FIN. */
  #frameDone(out: Buffer[], bytes: Uint8Array): void {
    this.#left = -1;
    if (this.#control) return this.#controlDone(out);
    if (!this.#messageOpen) this.#messageOpcode = this.#opcode;
    if (this.#fin) {
      const scans = this.scans;
      for (let i = 0; i < scans.length; i++) {
        const scan = scans[i]!;
        let rest: Uint8Array = scan.controls !== null ? scan.stream.endMessage() : scan.stream.end();
        for (let j = i + 1; j < scans.length && rest.byteLength > 0; j++) rest = scans[j]!.stream.push(rest);
        if (rest.byteLength > 0) bytes = bytes.byteLength === 0 ? rest : Buffer.concat([bytes, rest]);
      }
    }
    this.#emit(out, bytes, this.#fin);
    if (this.#fin) this.#messageOpen = false;
  }

  /** A whole control frame: its payload (a CLOSE's reason, after its code) read by the guards, cut to 125 bytes. */
  #controlDone(out: Buffer[]): void {
    const payload = this.#controlParts.length === 1 ? this.#controlParts[0]! : Buffer.concat(this.#controlParts);
    this.#controlParts = [];
    const isClose = this.#opcode === CLOSE;
    const head = isClose && payload.length >= 2 ? payload.subarray(0, 2) : NOTHING;
    let text: Uint8Array = payload.subarray(head.length);
    for (const guard of this.#guards) {
      text = guard.stream.aside(text);
      const controls = guard.controls!;
      const read = controls.push(text);
      const rest = controls.endMessage();
      text = rest.length === 0 ? read : Buffer.concat([read, rest]);
    }
    const room = MAX_CONTROL - head.length;
    // A CLOSE reason is UTF-8, which a cut must not break; a PING's payload is bytes.
    if (text.length > room) text = isClose ? utf8Prefix(text, room) : text.subarray(0, room);
    this.#frame(out, this.#opcode, true, head.length === 0 ? text : Buffer.concat([head, text]));
  }

  #unmask(piece: Buffer): Buffer {
    const mask = this.#mask;
    if (mask === null) return piece;
    const plain = Buffer.allocUnsafe(piece.length);
    let m = this.#maskAt;
    for (let i = 0; i < piece.length; i++, m++) plain[i] = piece[i]! ^ mask[m & 3]!;
    this.#maskAt = m & 3;
    return plain;
  }

  /** One frame of the current message: the message's opcode first, continuations after. */
  #emit(out: Buffer[], payload: Uint8Array, fin: boolean): void {
    const opcode = this.#messageOpen ? 0 : this.#messageOpcode;
    this.#messageOpen = true;
    this.#frame(out, opcode, fin, payload);
  }

  /** One frame, masked with the frame's key where frames are. */
  #frame(out: Buffer[], opcode: number, fin: boolean, payload: Uint8Array): void {
    const len = payload.byteLength;
    const mask = this.masked ? (this.#mask ?? Buffer.from([0, 0, 0, 0])) : null;
    const size = (len < 126 ? 2 : len < 65536 ? 4 : 10) + (mask ? 4 : 0);
    const frame = Buffer.allocUnsafe(size + len);
    frame[0] = (fin ? 0x80 : 0) | opcode;
    const maskBit = mask ? 0x80 : 0;
    let at = 2;
    if (len < 126) frame[1] = maskBit | len;
    else if (len < 65536) {
      frame[1] = maskBit | 126;
      frame.writeUInt16BE(len, 2);
      at = 4;
    } else {
      frame[1] = maskBit | 127;
      frame.writeBigUInt64BE(BigInt(len), 2);
      at = 10;
    }
    if (mask) {
      mask.copy(frame, at);
      at += 4;
      for (let i = 0; i < len; i++) frame[at + i] = payload[i]! ^ mask[i & 3]!;
    } else frame.set(payload, at);
    out.push(frame);
  }
}
