/** @file Preloaded (--import) by the device matrix test's child processes: prints how many device launches the process made. */
import { launchCount } from "../../src/runtime/index.js";
process.on("exit", () => { process.stderr.write(`jaxts-device-launches ${launchCount()}\n`); });
