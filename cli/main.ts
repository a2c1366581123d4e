#!/usr/bin/env bun
// Entry of the credgate executable: one commander program, one file per command group.
import { Command } from "commander";
import { VERSION } from "../src/version.ts";
import { registerDoctor } from "./doctor.ts";
import { registerKeys } from "./keys.ts";
import { registerMigrate } from "./migrate.ts";
import { registerRotateMasterKey } from "./rotateMasterKey.ts";
import { registerRun } from "./run.ts";
import { registerServe } from "./serve.ts";

const program = new Command()
  .name("credgate")
  .description("Credential-injection gateway for AI agents")
  .version(VERSION, "-v, --version", "print the version")
  .enablePositionalOptions();

registerServe(program);
registerKeys(program);
registerRun(program);
registerMigrate(program);
registerDoctor(program);
registerRotateMasterKey(program);

await program.parseAsync(process.argv);
