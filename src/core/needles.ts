// One multi-needle matcher for every byte scan of the gateway (docs/injection.md#placeholders,
// docs/guards.md#echo-guard, docs/guards.md#credential-leak-guard): placeholder substitution, the echo guard's
// redaction and the credential leak guard all look for a fixed set of strings in a stream of bytes (or in a
// header value, a string of latin1 characters), leftmost-longest, and may see a string split across chunks.
//
// The search is Wu-Manber's: a window of the shortest needle's length slides over the text; the hash of its last
// three bytes says how far it may jump (a needle can only start where its own three-byte blocks line up), and
// only a window whose last block ends some needle's window is compared byte by byte. With needles of 8 bytes
// and more, most windows jump 5-6 bytes at once: far fewer steps than one per byte (Aho-Corasick), and one
// small table per set: about 1 GB/s for 600 needles (50 secrets' forms) where indexOf per needle manages
// 10 MB/s. A set of a few needles (one or two placeholders) is searched with indexOf per needle instead, the
// next place of each remembered, which memchr makes five times faster still (bench/README.md).
//
// Pure: it compiles once (per snapshot, or per set of injected values) and allocates nothing per scan.

/** Needles are bytes: a string needle is taken as UTF-8. */
export type Needle = string | Uint8Array;

/** What `find` returns when a needle may start at the given offset but the text ends before it could be told. */
export const NEED_MORE = -2;
export const NOT_FOUND = -1;

const BLOCK = 3;
/** Up to this many needles, indexOf per needle beats the shift table. */
const FEW = 4;
/** The window never exceeds this: shifts fit a byte. */
const MAX_WINDOW = 128;

function bytesOf(n: Needle): Uint8Array {
  return typeof n === "string" ? Buffer.from(n, "utf8") : n;
}

function hash3(a: number, b: number, c: number, mask: number): number {
  return (Math.imul((a << 16) | (b << 8) | c, 0x9e3779b1) >>> 8) & mask;
}

/** Lexicographic comparison of `a[from…to)` with the first bytes of `b`: <0, 0 (a prefix of b), >0. */
function comparePrefix(a: Uint8Array, from: number, to: number, b: Uint8Array): number {
  const n = Math.min(to - from, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[from + i]! - b[i]!;
    if (d !== 0) return d;
  }
  return to - from > b.length ? 1 : 0;
}

export class NeedleSet {
  /** The needles as given (in bytes), indexed as given. */
  readonly needles: readonly Uint8Array[];
  readonly minLength: number;
  readonly maxLength: number;
  /** The needle the last successful `find` matched. */
  lastNeedle = -1;
  readonly #window: number;
  readonly #mask: number;
  readonly #shift: Uint8Array;
  /** Candidates per hash of a window's last block: needle indices, longest first (CSR layout). */
  readonly #candStart: Int32Array;
  readonly #cand: Int32Array;
  /** Needle indices in lexicographic order of their bytes (for the "is this tail a prefix of a needle" question). */
  readonly #sorted: Int32Array;
  /** A set of a few needles: the next place of each in the text last searched (-1: none), from `#memoFrom` on. */
  readonly #few: Int32Array | null;
  #memoText: Uint8Array | null = null;
  #memoFrom = 0;
  #tailText: Uint8Array | null = null;
  #tailFrom = 0;
  #tailLength = 0;

  constructor(needles: readonly Needle[]) {
    const list = needles.map(bytesOf);
    if (list.length === 0) throw new Error("a needle set needs at least one needle");
    let min = Infinity;
    let max = 0;
    for (const n of list) {
      min = Math.min(min, n.length);
      max = Math.max(max, n.length);
    }
    if (min < BLOCK) throw new Error(`needles must be at least ${BLOCK} bytes long`);
    this.needles = list;
    this.minLength = min;
    this.maxLength = max;
    const m = Math.min(min, MAX_WINDOW);
    this.#window = m;
    // About eight slots per block of the needles' windows, 2^10 to 2^16 slots (one byte each).
    const blocks = list.length * (m - BLOCK + 1);
    let bits = 10;
    while (bits < 16 && 1 << bits < blocks * 8) bits++;
    const size = 1 << bits;
    this.#mask = size - 1;
    const shift = new Uint8Array(size).fill(m - BLOCK + 1);
    const buckets = new Map<number, number[]>();
    list.forEach((n, idx) => {
      for (let q = BLOCK - 1; q < m; q++) {
        const h = hash3(n[q - 2]!, n[q - 1]!, n[q]!, this.#mask);
        const s = m - 1 - q;
        if (s < shift[h]!) shift[h] = s;
        if (s === 0) {
          let b = buckets.get(h);
          if (!b) buckets.set(h, (b = []));
          b.push(idx);
        }
      }
    });
    this.#shift = shift;
    const candStart = new Int32Array(size + 1);
    for (const [h, b] of buckets) candStart[h + 1] = b.length;
    for (let i = 0; i < size; i++) candStart[i + 1]! += candStart[i]!;
    const cand = new Int32Array(candStart[size]!);
    for (const [h, b] of buckets) {
      b.sort((x, y) => list[y]!.length - list[x]!.length || x - y);
      cand.set(b, candStart[h]!);
    }
    this.#candStart = candStart;
    this.#cand = cand;
    this.#sorted = Int32Array.from(list.map((_, i) => i).sort((x, y) => Buffer.compare(Buffer.from(list[x]!), Buffer.from(list[y]!)) || x - y));
    this.#few = list.length <= FEW ? new Int32Array(list.length) : null;
  }

  /**
   * The start of the leftmost needle in `text[from…to)`, the longest there (its index in `lastNeedle`);
   * NOT_FOUND. With `final` false the text may go on after `to`: when a needle could start at an offset but
   * runs past `to` (the text's tail is the start of a needle), the answer is NEED_MORE and `lastNeedle` holds
   * that offset (nothing before it matched): the caller holds the bytes from there back for the next chunk.
   */
  find(text: Uint8Array, from: number, to: number, final = true): number {
    if (this.#few !== null && to === text.length) return this.#findFew(text, from, final);
    const m = this.#window;
    const shift = this.#shift;
    const mask = this.#mask;
    let pos = from + m - 1;
    while (pos < to) {
      const h = hash3(text[pos - 2]!, text[pos - 1]!, text[pos]!, mask);
      const s = shift[h]!;
      if (s !== 0) {
        pos += s;
        continue;
      }
      const start = pos - m + 1;
      const end = this.#candStart[h + 1]!;
      for (let c = this.#candStart[h]!; c < end; c++) {
        const idx = this.#cand[c]!;
        const n = this.needles[idx]!;
        const fits = start + n.length <= to;
        const len = fits ? n.length : to - start;
        let i = 0;
        while (i < len && text[start + i] === n[i]) i++;
        if (i < len) continue;
        if (!fits) {
          if (final) continue;
          this.lastNeedle = start;
          return NEED_MORE;
        }
        this.lastNeedle = idx;
        return start;
      }
      pos++;
    }
    return final ? NOT_FOUND : this.#tail(text, from, to);
  }

  /** `find` for a few needles: indexOf per needle, each one's next place kept while the same text is searched on. */
  #findFew(text: Uint8Array, from: number, final: boolean): number {
    const next = this.#few!;
    if (text !== this.#memoText || from === 0 || from < this.#memoFrom) {
      this.#memoText = text;
      next.fill(-2);
    }
    this.#memoFrom = from;
    const buf = Buffer.isBuffer(text) ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
    let best = -1;
    let bestLen = 0;
    let bestNeedle = -1;
    for (let i = 0; i < next.length; i++) {
      let at = next[i]!;
      if (at !== -1 && at < from) next[i] = at = buf.indexOf(this.needles[i]!, from);
      if (at === -1) continue;
      const len = this.needles[i]!.length;
      if (best === -1 || at < best || (at === best && len > bestLen)) {
        best = at;
        bestLen = len;
        bestNeedle = i;
      }
    }
    this.lastNeedle = bestNeedle;
    if (final) return best === -1 ? NOT_FOUND : best;
    // A longer needle may start at or before the match and run past the end: that decides first. (The tail is
    // the same for every search of a text until the search passes its start: reckoned once.)
    const lo = Math.max(from, text.length - this.maxLength + 1);
    if (from === 0 || text !== this.#tailText || lo !== this.#tailFrom) {
      this.#tailText = text;
      this.#tailFrom = lo;
      this.#tailLength = this.partialTail(text, lo, text.length);
    }
    const tail = this.#tailLength;
    if (tail > 0 && (best === -1 || text.length - tail <= best)) {
      this.lastNeedle = text.length - tail;
      return NEED_MORE;
    }
    return best === -1 ? NOT_FOUND : best;
  }

  /** At the end of a text that goes on: NEED_MORE when its tail is the start of a needle, else NOT_FOUND. */
  #tail(text: Uint8Array, from: number, to: number): number {
    const tail = this.partialTail(text, from, to);
    if (tail === 0) return NOT_FOUND;
    this.lastNeedle = to - tail;
    return NEED_MORE;
  }

  /** `find` over a string of byte-valued characters (a header value, a request target: latin1). Always final. */
  findInString(text: string, from = 0): number {
    const m = this.#window;
    const shift = this.#shift;
    const mask = this.#mask;
    const to = text.length;
    let pos = from + m - 1;
    while (pos < to) {
      const h = hash3(text.charCodeAt(pos - 2) & 0xff, text.charCodeAt(pos - 1) & 0xff, text.charCodeAt(pos) & 0xff, mask);
      const s = shift[h]!;
      if (s !== 0) {
        pos += s;
        continue;
      }
      const start = pos - m + 1;
      const end = this.#candStart[h + 1]!;
      for (let c = this.#candStart[h]!; c < end; c++) {
        const idx = this.#cand[c]!;
        const n = this.needles[idx]!;
        if (start + n.length > to) continue;
        let i = 0;
        while (i < n.length && text.charCodeAt(start + i) === n[i]) i++;
        if (i < n.length) continue;
        this.lastNeedle = idx;
        return start;
      }
      pos++;
    }
    return NOT_FOUND;
  }

  /**
   * How many bytes at the end of `text[from…to)` are the start of a needle that may complete in the next
   * chunk: the longest tail that is a proper prefix of some needle. With the shift table, tails that fill a
   * window were judged by the search itself, so only shorter ones are looked at.
   */
  partialTail(text: Uint8Array, from: number, to: number): number {
    const first = Math.max(from, to - (this.#few !== null ? this.maxLength : this.#window) + 1);
    for (let s = first; s < to; s++) if (this.#isPrefix(text, s, to)) return to - s;
    return 0;
  }

  /** Whether `text[from…to)` is a prefix of some needle (binary search over the sorted needles). */
  #isPrefix(text: Uint8Array, from: number, to: number): boolean {
    const sorted = this.#sorted;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (comparePrefix(text, from, to, this.needles[sorted[mid]!]!) > 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < sorted.length && comparePrefix(text, from, to, this.needles[sorted[lo]!]!) === 0;
  }
}
