/** @file Preloaded (--import) by the device matrix test's child processes: prints how many device launches the process made. */
import { launchCount, synchronize } from "../../src/runtime/index.js";
// dispatch is asynchronous: a launch still in flight at exit is counted once it settles
process.on("exit", () => {
  synchronize();
  process.stderr.write(`jaxts-device-launches ${launchCount()}\n`);
});
