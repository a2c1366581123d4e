// The little of ASN.1 DER (X.690) that certificates need: a writer for the structures the gateway CA issues
// and a reader that finds fields in a certificate it loads. Written here rather than taken from a certificate
// library: the one it replaced cost the serving process ~14 MB of resident memory for two functions.

/** A DER element: tag byte and content. */
export function tlv(tag: number, content: Uint8Array): Uint8Array {
  const n = content.length;
  let head: number[];
  if (n < 0x80) head = [tag, n];
  else {
    const lengthBytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) lengthBytes.unshift(v & 0xff);
    head = [tag, 0x80 | lengthBytes.length, ...lengthBytes];
  }
  const out = new Uint8Array(head.length + n);
  out.set(head, 0);
  out.set(content, head.length);
  return out;
}

export const sequence = (...items: Uint8Array[]): Uint8Array => tlv(0x30, Buffer.concat(items));
export const set = (...items: Uint8Array[]): Uint8Array => tlv(0x31, Buffer.concat(items));
export const boolean = (value: boolean): Uint8Array => tlv(0x01, Uint8Array.of(value ? 0xff : 0x00));
export const octetString = (bytes: Uint8Array): Uint8Array => tlv(0x04, bytes);
export const utf8String = (text: string): Uint8Array => tlv(0x0c, Buffer.from(text, "utf8"));
/** [n] EXPLICIT: constructed, wrapping a whole element. */
export const explicit = (n: number, element: Uint8Array): Uint8Array => tlv(0xa0 | n, element);
/** [n] IMPLICIT of a primitive type: the content under a context tag. */
export const implicit = (n: number, content: Uint8Array): Uint8Array => tlv(0x80 | n, content);

/** A non-negative INTEGER from its big-endian magnitude, in the fewest bytes DER allows. */
export function unsignedInteger(magnitude: Uint8Array): Uint8Array {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const bytes = magnitude.subarray(start);
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Uint8Array.of(0), bytes]) : bytes);
}

export const smallInteger = (n: number): Uint8Array => unsignedInteger(Uint8Array.of(n));

export function objectIdentifier(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  const out = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift(0x80 | (v & 0x7f));
    out.push(...base128);
  }
  return tlv(0x06, Uint8Array.from(out));
}

/** A BIT STRING of whole bytes. */
export const bitString = (bytes: Uint8Array): Uint8Array => tlv(0x03, Buffer.concat([Uint8Array.of(0), bytes]));

/** A BIT STRING of named bits (bit 0 = the first byte's high bit), trailing zero bits dropped as DER asks. */
export function namedBits(bits: number[]): Uint8Array {
  const last = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(last / 8) + 1);
  for (const b of bits) bytes[Math.floor(b / 8)]! |= 0x80 >> b % 8;
  return tlv(0x03, Buffer.concat([Uint8Array.of(7 - (last % 8)), bytes]));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), to the second. */
export function time(date: Date): Uint8Array {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "") + "Z";
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), "latin1")) : tlv(0x18, Buffer.from(digits, "latin1"));
}

/** An element found by the reader: its tag, and where its content lies in the buffer. */
export interface Element {
  tag: number;
  /** The whole element (tag and length included). */
  start: number;
  contentStart: number;
  end: number;
}

/** The element at `offset` of `der`; throws on anything malformed or running past the end. */
export function readElement(der: Uint8Array, offset: number): Element {
  if (offset + 2 > der.length) throw new Error("truncated DER");
  const tag = der[offset]!;
  let length = der[offset + 1]!;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || contentStart + count > der.length) throw new Error("unsupported DER length");
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[contentStart + i]!;
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > der.length) throw new Error("truncated DER");
  return { tag, start: offset, contentStart, end };
}

/** The elements inside a constructed element, in order. */
export function children(der: Uint8Array, parent: Element): Element[] {
  const out: Element[] = [];
  for (let at = parent.contentStart; at < parent.end; ) {
    const child = readElement(der, at);
    out.push(child);
    at = child.end;
  }
  return out;
}
