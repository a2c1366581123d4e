// Change events between instances on one PostgreSQL database: each committed event is NOTIFYed on one
// channel with the sender's instance id; every other instance delivers it to its own listeners. When the
// LISTEN connection comes back after a drop, notifications may have been missed: a `reload` event makes
// every cached view start over.
import type { ChangeEvent, EventBus, EventTransport } from "./bus.ts";
import { log } from "../observability/log.ts";
import type { Notifier } from "../store/store.ts";

export const EVENTS_CHANNEL = "credgate_events";

export async function attachNotifyTransport(bus: EventBus, notifier: Notifier, instanceId: string): Promise<void> {
  let ready = false;
  const unlisten = await notifier.subscribe(
    EVENTS_CHANNEL,
    (payload) => {
      let message: { from?: string; event?: ChangeEvent };
      try {
        message = JSON.parse(payload);
      } catch {
        return;
      }
      if (message.from !== instanceId && message.event) bus.deliver(message.event);
    },
    () => {
      // The first call is the initial subscription; later ones follow a reconnect.
      if (ready) {
        log.warn("change events reconnected: reloading every cached view");
        bus.deliver({ kind: "reload" });
      }
      ready = true;
    },
  );
  const transport: EventTransport = {
    publish(event) {
      notifier.publish(EVENTS_CHANNEL, JSON.stringify({ from: instanceId, event })).catch((err: Error) => {
        // The database is unreachable: other instances will reload when their LISTEN reconnects.
        log.warn("change event not published", { kind: event.kind, error: err.message });
      });
    },
    stop: () => unlisten(),
  };
  bus.attach(transport);
}
