// `credgate tunnel <host> <port>`: stdin and stdout joined to a CONNECT tunnel through the gateway, as ssh's
// ProxyCommand (docs/ssh.md#the-agent-side). The proxy is HTTPS_PROXY (what `credgate run` sets: the agent's
// token is in it), or --proxy.
import type { Command } from "commander";
import { openTunnel } from "../src/run/tunnel.ts";
import { fail } from "./fail.ts";

export function registerTunnel(program: Command): void {
  program
    .command("tunnel")
    .description("join stdin/stdout to host:port through the gateway (ssh ProxyCommand: credgate tunnel %h %p)")
    .argument("<host>", "the host to reach")
    .argument("<port>", "its port")
    .option("--proxy <url>", "the gateway proxy URL with the agent token (default: HTTPS_PROXY)")
    .action((host: string, port: string, flags: { proxy?: string }) => {
      const raw = flags.proxy ?? process.env.HTTPS_PROXY ?? process.env.https_proxy;
      const n = Number(port);
      if (!raw) return fail(new Error("no proxy: set HTTPS_PROXY to http://x:<agent token>@<gateway>, or pass --proxy"));
      if (!Number.isInteger(n) || n < 1 || n > 65535) return fail(new Error(`port must be between 1 and 65535, got ${port}`));
      let proxy: URL;
      try {
        proxy = new URL(raw);
      } catch {
        return fail(new Error("the proxy URL is not a URL"));
      }
      openTunnel(proxy, host, n, (err, socket) => {
        if (err || !socket) return fail(err ?? new Error("no tunnel"));
        socket.setNoDelay(true);
        process.stdin.pipe(socket);
        socket.pipe(process.stdout);
        socket.on("close", () => process.exit(0));
        socket.on("error", () => process.exit(1));
        process.stdin.on("end", () => socket.end());
      });
    });
}
