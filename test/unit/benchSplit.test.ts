// `npm run bench:split` (bench/split.ts) charges each CPU-profile sample to the part of the gateway whose code
// is on the stack: here on a profile shaped like the real one, where both sides' socket writes leave from the
// shared end-of-turn batch (writeBatch.ts) and the memory keeper forces collections.
import { expect, test } from "bun:test";
import { splitProfile } from "../../bench/split.ts";

const SRC = "file:///work/credgate/src/";

test("writes count for the side whose socket they write; the keeper's collections count as GC; stages as pipeline", () => {
  const frames: [id: number, fn: string, url: string, children: number[]][] = [
    [1, "(root)", "", [2, 8, 10, 12]],
    [2, "flushAll", `${SRC}gateway/writeBatch.ts`, [3, 5]],
    [3, "flushBatch", `${SRC}gateway/client/socket.ts`, [4]],
    [4, "write", `${SRC}gateway/writeBatch.ts`, [7]],
    [5, "flushBatch", `${SRC}gateway/upstream/originConnection.ts`, [6]],
    [6, "write", `${SRC}gateway/writeBatch.ts`, [14]],
    [7, "write", "", []],
    [14, "write", "", []],
    [8, "#collect", `${SRC}gateway/memory.ts`, [9]],
    [9, "gc", "", []],
    [10, "inject", `${SRC}gateway/stages/inject.ts`, [11]],
    [11, "applyInjection", `${SRC}core/inject.ts`, []],
    [12, "(garbage collector)", "", []],
  ];
  const profile = {
    nodes: frames.map(([id, functionName, url, children]) => ({ id, callFrame: { functionName, url }, children })),
    // Three front writes, two upstream writes, one forced collection, two stage samples, one bare GC sample.
    samples: [7, 7, 7, 14, 14, 9, 11, 10, 12],
  };
  expect(splitProfile(profile)).toEqual({ front: 3, upstream: 2, pipeline: 2, other: 2 });
});
