#!/bin/sh
exec /work/main/node_modules/bun/bin/bun.exe --cpu-prof --cpu-prof-md --cpu-prof-dir=/tmp/dbrelay-prof /work/wt/dbrelay/cli/main.ts "$@"
