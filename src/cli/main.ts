#!/usr/bin/env node
// The `sandcastle-queue` command. Before anything else it checks that this Node can run the program: the program's
// modules need a newer Node than some machines' default, and on an older one the first import would fail with a
// stack trace. So this file imports only what the oldest Node can load, says in one line which Node it needs,
// and loads the program (program.ts) only after that.
import { nodeRefusal } from "./node-version.js";
import { PACKAGE } from "./package-info.js";

const refusal = nodeRefusal(process.versions.node, PACKAGE.engines.node, process.execPath);
if (refusal !== null) {
  process.stderr.write(`sandcastle-queue: ${refusal}\n`);
  process.exitCode = 1;
} else {
  const { main } = await import("./program.js");
  await main();
}
