// The gateway's multi-needle matcher and its stream reader (docs/guards.md#echo-guard,
// docs/injection.md#placeholders): leftmost-longest matches, checked against a plain search over random texts and
// needle sets, in one piece and cut into random chunks; both search strategies (a few needles, many).
import { describe, expect, test } from "bun:test";
import { NEED_MORE, NeedleSet, NOT_FOUND } from "../../src/core/needles.ts";
import { NeedleStream, replaceInString } from "../../src/core/needleStream.ts";

/** Leftmost-longest, non-overlapping, by brute force. */
function reference(text: string, needles: string[]): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  while (at < text.length) {
    let best: [number, number] | null = null;
    for (let s = at; s < text.length && best === null; s++) {
      for (let i = 0; i < needles.length; i++) {
        if (text.startsWith(needles[i]!, s) && (best === null || needles[i]!.length > needles[best[1]]!.length)) best = [s, i];
      }
    }
    if (!best) break;
    out.push(best);
    at = best[0] + needles[best[1]]!.length;
  }
  return out;
}

function found(set: NeedleSet, text: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  for (;;) {
    const s = set.find(text, at, text.length);
    if (s < 0) break;
    out.push([s, set.lastNeedle]);
    at = s + set.needles[set.lastNeedle]!.length;
  }
  return out;
}

/** A pseudo-random generator with a seed, so a failure can be replayed. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function word(r: () => number, alphabet: string, min: number, max: number): string {
  const n = min + Math.floor(r() * (max - min + 1));
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

/** A text made of random letters and, here and there, needles and needle prefixes. */
function textWith(r: () => number, needles: string[], alphabet: string, length: number): string {
  let s = "";
  while (s.length < length) {
    const p = r();
    if (p < 0.1) s += needles[Math.floor(r() * needles.length)];
    else if (p < 0.15) {
      const n = needles[Math.floor(r() * needles.length)]!;
      s += n.slice(0, 1 + Math.floor(r() * (n.length - 1)));
    } else s += word(r, alphabet, 1, 12);
  }
  return s;
}

/** Reads `text` through a stream in random chunks, replacing every needle by `<index>`. */
function streamed(set: NeedleSet, text: Buffer, r: () => number): string {
  const stream = new NeedleStream(set, { replacement: (i) => Buffer.from(`<${i}>`) });
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < text.length) {
    const n = 1 + Math.floor(r() * 40);
    out.push(stream.push(text.subarray(at, at + n)));
    at += n;
  }
  out.push(stream.end());
  return Buffer.concat(out).toString("latin1");
}

function replacedByReference(text: string, needles: string[]): string {
  let out = "";
  let at = 0;
  for (const [s, i] of reference(text, needles)) {
    out += text.slice(at, s) + `<${i}>`;
    at = s + needles[i]!.length;
  }
  return out + text.slice(at);
}

describe("NeedleSet", () => {
  for (const [label, count] of [
    ["a few needles (indexOf per needle)", 3],
    ["many needles (shift table)", 40],
  ] as const) {
    test(`${label}: leftmost-longest like a plain search, whole and streamed in random chunks`, () => {
      for (let seed = 1; seed <= 60; seed++) {
        const r = rng(seed * 7919 + count);
        const alphabet = seed % 2 === 0 ? "abc" : "abcdefghijklmnopqrstuvwxyz0123456789";
        const needles = [...new Set(Array.from({ length: count }, () => word(r, alphabet, 3 + (seed % 6), 20)))];
        // Some needles inside others, so that longest-first matters.
        if (needles.length > 2) needles.push(needles[0]! + needles[1]!);
        const set = new NeedleSet(needles);
        const text = textWith(r, needles, alphabet, 600);
        const bytes = Buffer.from(text, "latin1");
        expect(found(set, bytes)).toEqual(reference(text, needles));
        expect(streamed(set, bytes, r)).toBe(replacedByReference(text, needles));
        expect(replaceInString(text, set, (i) => `<${i}>`)).toBe(replacedByReference(text, needles));
      }
    });
  }

  test("find on a text that goes on: a needle running past the end asks for more, from where it starts", () => {
    for (const needles of [["credgate-placeholder-1"], Array.from({ length: 10 }, (_, i) => `needle-number-${i}-xyz`)]) {
      const set = new NeedleSet(needles);
      const text = Buffer.from(`some text ${needles[0]!.slice(0, 15)}`);
      expect(set.find(text, 0, text.length, false)).toBe(NEED_MORE);
      expect(set.lastNeedle).toBe(10);
      expect(set.find(text, 0, text.length, true)).toBe(NOT_FOUND);
      expect(set.partialTail(text, 0, text.length)).toBe(15);
      const plain = Buffer.from("nothing of the kind here\n\n");
      expect(set.find(plain, 0, plain.length, false)).toBe(NOT_FOUND);
      expect(set.partialTail(plain, 0, plain.length)).toBe(0);
    }
  });

  test("a stream holds back only a possible start of a needle: an SSE event goes on whole", () => {
    const set = new NeedleSet(["sk-live-0123456789abcdef"]);
    const stream = new NeedleStream(set, { replacement: () => Buffer.from("credgate-redacted") });
    expect(Buffer.from(stream.push(Buffer.from("data: first\n\n"))).toString()).toBe("data: first\n\n");
    expect(Buffer.from(stream.push(Buffer.from("data: sk-live-0123"))).toString()).toBe("data: ");
    expect(Buffer.from(stream.push(Buffer.from("456789abcdef\n\n"))).toString()).toBe("credgate-redacted\n\n");
    expect(stream.end().byteLength).toBe(0);
  });

  test("a handler that keeps a needle leaves the bytes as they were; one that throws stops the stream", () => {
    const set = new NeedleSet(["allowed-value-1", "forbidden-value"]);
    const stream = new NeedleStream(set, {
      replacement(i) {
        if (i === 1) throw new Error("leak");
        return null;
      },
    });
    const chunk = Buffer.from("x allowed-value-1 y");
    expect(stream.push(chunk)).toBe(chunk);
    expect(() => stream.push(Buffer.from("forbidden-va"))).not.toThrow();
    expect(() => stream.push(Buffer.from("lue"))).toThrow("leak");
  });

  test("needles shorter than three bytes, or none, are refused", () => {
    expect(() => new NeedleSet([])).toThrow();
    expect(() => new NeedleSet(["ab"])).toThrow();
  });
});

describe("NeedleStream across messages (docs/guards.md#echo-guard)", () => {
  const redactor = (needles: string[]) => new NeedleStream(new NeedleSet(needles), { replacement: () => Buffer.from("[R]") });
  const text = (b: Uint8Array) => Buffer.from(b).toString();
  /** Each message pushed in `cuts` pieces, then ended; what each message became. */
  function messages(s: NeedleStream, msgs: string[][]): string[] {
    return msgs.map((pieces) => pieces.map((p) => text(s.push(Buffer.from(p)))).join("") + text(s.endMessage()));
  }

  test("a message's end is handed on whole; a value completed by the next message is replaced from where it continues", () => {
    const s = redactor(["SECRET-VALUE", "OTHER-ONE-TWO"]);
    expect(messages(s, [["one SECR"], ["ET-VALUE two"], ["three"]])).toEqual(["one SECR", "[R] two", "three"]);
  });

  test("split over three messages, and over pieces of one", () => {
    const s = redactor(["SECRET-VALUE"]);
    expect(messages(s, [["a SEC"], ["RET"], ["-VA", "LUE b"]])).toEqual(["a SEC", "RET", "[R] b"]);
  });

  test("a value whole in one message is replaced once, not again when the next message starts", () => {
    const s = redactor(["SECRET-VALUE", "SECRET-VALUE-LONGER"]);
    expect(messages(s, [["x SECRET-VALUE"], ["y"]])).toEqual(["x [R]", "y"]);
  });

  test("a control frame between messages continues the stream; one inside a message is read after the held bytes", () => {
    const s = redactor(["SECRET-VALUE"]);
    expect(messages(s, [["m SECRE"]])).toEqual(["m SECRE"]);
    expect(text(s.aside(Buffer.from("T-VALUE ping")))).toBe("[R] ping");
    expect(text(s.aside(Buffer.from("SECRET-")))).toBe("SECRET-");
    expect(messages(s, [["VALUE"]])).toEqual(["[R]"]);
    // Inside a message whose tail is held: the unit is read after it, and the message goes on as if nothing came.
    expect(text(s.push(Buffer.from("n SECRET")))).toBe("n ");
    expect(text(s.aside(Buffer.from("-VALUE")))).toBe("[R]");
    expect(text(s.push(Buffer.from("-VALUE end")))).toBe("[R] end");
  });

  test("a handler that throws sees a value split across messages", () => {
    const s = new NeedleStream(new NeedleSet(["SECRET-VALUE"]), {
      replacement: () => {
        throw new Error("leak");
      },
    });
    s.push(Buffer.from("a SECRE"));
    s.endMessage();
    expect(() => s.push(Buffer.from("T-VALUE"))).toThrow("leak");
  });
});
