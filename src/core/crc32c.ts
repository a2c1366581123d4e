// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum Google Secret Manager sends with a payload
// (docs/secret-stores.md#google-secret-manager) so a reader can tell a damaged value from the stored one. Pure.

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** The CRC-32C of `bytes`, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
