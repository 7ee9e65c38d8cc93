#!/usr/bin/env node
/** @file The `jaxts` command: `jaxts train ...` runs the training job, `jaxts trace ...` the profiler's trace tools, `jaxts devices` lists the devices. */
import { pathToFileURL } from "node:url";

/** Dispatches on the first word; the profiler CLI prints the usage of everything else. */
export async function cliMain(args: readonly string[]): Promise<number> {
  if (args[0] === "train") return (await import("./train/cli.js")).trainMain(args.slice(1));
  if (args[0] === "devices") {
    process.stdout.write(`${(await import("./parallel/devices-report.js")).devicesReport()}\n`);
    return 0;
  }
  const code = (await import("./profiler/cli.js")).main(args);
  if (code === 2 && args[0] !== "trace") process.stderr.write("  jaxts train --help\n  jaxts devices\n");
  return code;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = await cliMain(process.argv.slice(2));
