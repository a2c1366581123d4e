// A socket's turn of writes (src/gateway/writeBatch.ts): latin1 text and bytes leave joined in order, in one
// write, through the one shared join buffer; what the socket does not take survives the next batch.
import { describe, expect, test } from "bun:test";
import { BATCH_HIGH_WATER, OutgoingBytes } from "../../src/gateway/writeBatch.ts";

/** A native socket's write: copies what it takes (as Bun's does), up to `room` bytes per call. */
class RecordingSocket {
  writes: Buffer[] = [];
  constructor(public room = Infinity) {}
  write(data: Uint8Array): number {
    const n = Math.min(data.byteLength, this.room);
    this.writes.push(Buffer.from(data.subarray(0, n)));
    return n;
  }
  get all(): Buffer {
    return Buffer.concat(this.writes);
  }
}

function outgoing(): OutgoingBytes {
  // The end-of-turn flush is driven by hand here.
  return new OutgoingBytes({ flushBatch() {} });
}

describe("OutgoingBytes", () => {
  test("a head as latin1 text and body bytes leave as one write, byte for byte", () => {
    const out = outgoing();
    const socket = new RecordingSocket();
    const head = "HTTP/1.1 200 OK\r\nx-name: caf\u00e9\r\n\r\n";
    out.add(head);
    out.add(Buffer.from([0x00, 0xff, 0x41]));
    out.add("\r\n");
    // One byte per character: the é is 0xe9, not UTF-8's two bytes.
    expect(out.batchBytes).toBe(Buffer.byteLength(head, "latin1") + 3 + 2);
    expect(out.writeBatch(socket)).toBe(true);
    expect(socket.writes.length).toBe(1);
    expect([...socket.all]).toEqual([...Buffer.from(head, "latin1"), 0x00, 0xff, 0x41, 0x0d, 0x0a]);
    expect(out.writeBatch(socket)).toBeNull();
  });

  test("what the socket did not take is kept apart from the join buffer the next batch reuses", () => {
    const out = outgoing();
    const socket = new RecordingSocket(5);
    out.add("first-");
    out.add(Buffer.from("batch"));
    expect(out.writeBatch(socket)).toBe(false);
    expect(out.needsDrain).toBe(true);
    // Another socket's batch goes through the same join buffer meanwhile.
    const other = outgoing();
    other.add("OVERWRITE");
    other.add(Buffer.from("-EVERYTHING"));
    expect(other.writeBatch(new RecordingSocket())).toBe(true);
    socket.room = Infinity;
    expect(out.writeQueued(socket)).toBe(true);
    expect(socket.all.toString("latin1")).toBe("first-batch");
  });

  test("a batch larger than the join buffer, and a single buffer, are written as they are", () => {
    const out = outgoing();
    const socket = new RecordingSocket();
    const big = Buffer.alloc(BATCH_HIGH_WATER * 2, 0x61);
    out.add("head\r\n");
    out.add(big);
    expect(out.needsDrain).toBe(true);
    expect(out.writeBatch(socket)).toBe(true);
    expect(socket.all.byteLength).toBe(6 + big.byteLength);
    expect(socket.all.subarray(0, 6).toString("latin1")).toBe("head\r\n");
    const one = Buffer.from("alone");
    out.add(one);
    out.writeBatch(socket);
    expect(socket.writes.at(-1)!.toString()).toBe("alone");
  });

  test("behind queued bytes, text is queued as its latin1 bytes", () => {
    const out = outgoing();
    const socket = new RecordingSocket(0);
    out.add(Buffer.from("stuck"));
    expect(out.writeBatch(socket)).toBe(false);
    expect(out.add("\u00e9tag")).toBe(false);
    socket.room = Infinity;
    expect(out.writeQueued(socket)).toBe(true);
    expect([...socket.all]).toEqual([...Buffer.from("stuck"), 0xe9, ...Buffer.from("tag")]);
  });
});
