// The gateway, assembled: CA and leaf cache, snapshot, connection registry, the internal server and the
// front listener on the gateway port.
import type { Server } from "bun";
import type { ApiApp } from "../api/app.ts";
import type { Config } from "../config.ts";
import type { CertificateAuthority } from "../crypto/ca.ts";
import type { Services } from "../services/index.ts";
import { ConnectionRegistry } from "./connections.ts";
import type { GatewayContext } from "./context.ts";
import { startInternalServer } from "./internal.ts";
import { GatewayListener } from "./listener.ts";
import { Reachability } from "./reachability.ts";
import { GatewaySnapshot } from "./snapshot.ts";
import { LeafCache } from "./tls.ts";
import { VaultResolver } from "../vault/resolver.ts";

export class Gateway {
  readonly context: GatewayContext;
  readonly #listener: GatewayListener;
  readonly #internal: Server<undefined>;
  port = 0;

  /** The gateway with its snapshot loaded, not yet listening. */
  static async create(config: Config, services: Services, ca: CertificateAuthority, api: ApiApp): Promise<Gateway> {
    return new Gateway(config, services, ca, api, await GatewaySnapshot.create(services));
  }

  private constructor(config: Config, services: Services, ca: CertificateAuthority, api: ApiApp, snapshot: GatewaySnapshot) {
    this.context = {
      config,
      services,
      snapshot,
      registry: new ConnectionRegistry(),
      reachability: new Reachability(services.outbound),
      vault: new VaultResolver({
        host: config.opConnectHost,
        token: config.opConnectToken,
        fetch: (url, init) => services.outbound.fetch(url, init),
      }),
    };
    this.#internal = startInternalServer(this.context, api);
    const internalPort = this.#internal.port!;
    this.#listener = new GatewayListener({
      services,
      snapshot: this.context.snapshot,
      leaves: new LeafCache(ca),
      registry: this.context.registry,
      internalPort: () => internalPort,
    });
  }

  async listen(host: string, port: number): Promise<number> {
    this.port = await this.#listener.listen(host, port);
    return this.port;
  }

  /** Refuses new connections and waits (up to `drainMs`) for in-flight requests, then cuts everything. */
  async stop(drain: (work: Promise<unknown>) => Promise<void>): Promise<void> {
    this.#listener.close();
    await drain(this.#internal.stop());
    // The internal server is done when it has written its last answer into a loopback leg; the front
    // still has to relay those bytes to the client, so wait (within the drain) for the clients to go.
    await drain(this.#listener.settled());
    await this.#internal.stop(true);
    this.#listener.destroyAll();
  }
}
