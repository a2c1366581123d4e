// The credgate program (cli/main.ts loads it): one commander program, one file per command group.
import { Command } from "commander";
import { VERSION } from "../src/runtime/version.ts";
import { registerAudit } from "./audit.ts";
import { registerBackup } from "./backup.ts";
import { registerDoctor } from "./doctor.ts";
import { registerGatewayWorker } from "./gatewayWorker.ts";
import { registerPartner } from "./partner.ts";
import { registerKeys } from "./keys.ts";
import { registerMigrate } from "./migrate.ts";
import { registerRotateMasterKey } from "./rotateMasterKey.ts";
import { registerRun } from "./run.ts";
import { registerServe } from "./serve.ts";
import { registerTunnel } from "./tunnel.ts";

const program = new Command()
  .name("credgate")
  .description("Credential-injection gateway for AI agents")
  .version(VERSION, "-v, --version", "print the version")
  .enablePositionalOptions();

registerServe(program);
registerKeys(program);
registerRun(program);
registerTunnel(program);
registerMigrate(program);
registerDoctor(program);
registerRotateMasterKey(program);
registerBackup(program);
registerAudit(program);
registerPartner(program);
registerGatewayWorker(program);

// `serve` is the default command, so commander would read an unknown word as an argument of `serve`.
const word = process.argv[2];
const known = new Set(["help", ...program.commands.flatMap((c) => [c.name(), ...c.aliases()])]);
if (word !== undefined && !word.startsWith("-") && !known.has(word)) {
  process.stderr.write(`credgate: unknown command '${word}'\n\n${program.helpInformation()}`);
  process.exit(1);
}

await program.parseAsync(process.argv);
