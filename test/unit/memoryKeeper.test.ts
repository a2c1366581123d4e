// The memory keeper's policy (src/gateway/memory.ts) on a clock and an RSS the test moves: full collections
// under growth at most once a second, one when the gateway goes quiet, and a shrink only when the quiet
// collection leaves the gateway well above its idle size.
import { expect, test } from "bun:test";
import { MemoryKeeper, type MemoryControls } from "../../src/gateway/memory.ts";

const MB = 1024 * 1024;

/** A process whose RSS the test sets; a collection brings it to `afterCollect`, a shrink to `afterShrink`. */
function fakeProcess(startMb: number) {
  const state = { rss: startMb * MB, t: 0, afterCollect: startMb * MB, afterShrink: startMb * MB, log: [] as string[] };
  const controls: MemoryControls = {
    rss: () => state.rss,
    now: () => state.t,
    collect: () => {
      state.log.push(`collect@${state.t}`);
      state.rss = state.afterCollect;
    },
    shrink: () => {
      state.log.push(`shrink@${state.t}`);
      state.rss = state.afterShrink;
    },
  };
  return { state, keeper: new MemoryKeeper(controls, 0) };
}

/** The keeper's checks every 250 ms from `from` to `to`, with a request before each one when `busy`. */
function run(p: ReturnType<typeof fakeProcess>, from: number, to: number, busy: boolean): void {
  for (let t = from; t <= to; t += 250) {
    p.state.t = t;
    if (busy) p.keeper.noteRequest();
    p.keeper.check();
  }
}

test("growth under load: a full collection when RSS is 8 MB past the last one, at most once a second", () => {
  const p = fakeProcess(80);
  p.state.afterCollect = 82 * MB;
  // RSS climbs 5 MB between checks while requests keep coming.
  for (let t = 10_000; t <= 12_500; t += 250) {
    p.state.t = t;
    p.state.rss += 5 * MB;
    p.keeper.noteRequest();
    p.keeper.check();
  }
  // 90 > 80 + 8 at 10 250; then 92 > 82 + 8 already at 10 750, but the next may only come a second later.
  expect(p.state.log).toEqual(["collect@10250", "collect@11250", "collect@12250"]);
});

test("going quiet after light traffic collects once and does not shrink", () => {
  const p = fakeProcess(80);
  // The first quiet collection sets the idle size.
  run(p, 0, 0, true);
  run(p, 250, 1500, false);
  expect(p.state.log).toEqual(["collect@1000"]);
  // Light traffic again: RSS stays within 8 MB of idle.
  p.state.rss = 84 * MB;
  p.state.afterCollect = 83 * MB;
  run(p, 2000, 2000, true);
  run(p, 2250, 3500, false);
  expect(p.state.log).toEqual(["collect@1000", "collect@3000"]);
});

test("going quiet after a load that left memory behind: the collection, then a shrink", () => {
  const p = fakeProcess(80);
  run(p, 0, 0, true);
  run(p, 250, 1500, false);
  // A load: RSS 140 MB; the quiet collection leaves 97 MB (17 over idle); the shrink brings it to 83.
  p.state.rss = 140 * MB;
  p.state.afterCollect = 97 * MB;
  p.state.afterShrink = 83 * MB;
  run(p, 2000, 6000, true);
  const duringLoad = p.state.log.length;
  run(p, 6250, 8000, false);
  expect(p.state.log.slice(duringLoad)).toEqual(["collect@7000", "shrink@7000"]);
  expect(p.state.rss).toBe(83 * MB);
});
