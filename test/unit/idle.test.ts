// The idle sweep (src/gateway/idle.ts, docs/gateway.md#tunnels): one timer for every watched tunnel; a tunnel
// is closed once enough sweeps in a row found it without bytes and without anything in flight, never while
// something is in flight, and not once it was forgotten (it closed on its own).
import { expect, test } from "bun:test";
import { IdleSweeper, type Idle } from "../../src/gateway/idle.ts";
import { untilTrue } from "../support/gateway.ts";

class Tunnel implements Idle {
  active = false;
  busy = false;
  closed = false;
  closeIdle(): void {
    this.closed = true;
  }
}

test("an idle tunnel is closed; one with bytes or a request in flight is not; a forgotten one is left alone", async () => {
  const sweeper = new IdleSweeper(200);
  const idle = new Tunnel();
  const chatty = new Tunnel();
  const busy = new Tunnel();
  const forgotten = new Tunnel();
  sweeper.watch(idle, 200);
  sweeper.watch(chatty, 200);
  busy.busy = true;
  sweeper.watch(busy, 200);
  sweeper.forget(sweeper.watch(forgotten, 200));
  const keepTalking = setInterval(() => (chatty.active = true), 20);
  await untilTrue(() => idle.closed, 5000);
  // Well past its idle time, the chatty and the busy one are still open (a fixed wait: it shows they are not closed).
  await Bun.sleep(600);
  expect([chatty.closed, busy.closed, forgotten.closed]).toEqual([false, false, false]);
  clearInterval(keepTalking);
  busy.busy = false;
  await untilTrue(() => chatty.closed && busy.closed, 5000);
  expect(forgotten.closed).toBe(false);
  expect(sweeper.watching).toBe(0);
  sweeper.stop();
});

test("each tunnel has its own idle time", async () => {
  const sweeper = new IdleSweeper(100);
  const short = new Tunnel();
  const long = new Tunnel();
  sweeper.watch(short, 100);
  sweeper.watch(long, 5000);
  await untilTrue(() => short.closed, 5000);
  expect(long.closed).toBe(false);
  expect(sweeper.watching).toBe(1);
  sweeper.stop();
});
