#!/usr/bin/env bun
// Entry of the credgate executable. `credgate tunnel` is ssh's ProxyCommand (docs/ssh.md#the-agent-side), started
// once per SSH connection: it loads only itself. With every command loaded it took 0.2 s and 82 MB to start from
// source, alone 0.05–0.13 s and 41 MB; the clone through it ran at 0.73× of direct against 0.93–0.98× through
// socat (bench/README.md).
if (process.argv[2] === "tunnel") await import("./tunnelMain.ts");
else await import("./program.ts");

export {};
