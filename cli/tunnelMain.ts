// `credgate tunnel` alone (cli/main.ts): commander and the tunnel, nothing of the server.
import { Command } from "commander";
import { registerTunnel } from "./tunnel.ts";

const program = new Command().name("credgate").enablePositionalOptions();
registerTunnel(program);
await program.parseAsync(process.argv);
