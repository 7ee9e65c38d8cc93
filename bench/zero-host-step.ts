/**
 * @file The JS thread's CPU per training step of bench/training.ts's ZeRO-3 and data-parallel cases (with
 * JAXTS_CALLER_RUNS=never: host work only; the default also runs a device rank on it) (`node dist/bench/zero-host-step.js --case=zero4|zero2|dp2
 * [--buckets=KiB] [--steps=N] [--profile=FILE]`): the training bench's step in a loop that waits for every step.
 */
import { jsThreadNs } from "./schedstat.js";
import { startCpuProfile } from "./cpu-profile.js";
import { config } from "../src/core/config.js";

const arg = (k: string): string | undefined => process.argv.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
const which = arg("case") ?? "zero4";
const CASES: Record<string, [number, 0 | 3]> = { zero4: [4, 3], zero2: [2, 3], dp2: [2, 0] };
if (!CASES[which])
  throw new Error(`zero-host-step: --case must be one of ${Object.keys(CASES).join(", ")}, got ${which}`);
const [n, stage] = CASES[which];
const steps = Number(arg("steps") ?? 200);
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
const buckets = arg("buckets");
if (buckets) config.update("collectiveCombineBytes", Number(buckets) << 10);
const { makeMesh } = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
const zero = await import("../src/models/zero.js");
const why = rt.deviceRuntimeUnavailable();
if (why) {
  console.log(`zero-host-step: skipped (${why})`);
  process.exit(0);
}
const { asLayered, layered, opt, p0, targets, tokens } = await import("./transformer-problem.js");
const mesh = makeMesh([n], ["data"]);
let state = zero.zeroShardState(asLayered(p0), opt, mesh, { stage }); // p0 is this process's only user
// --donate=0: keep every old state (fresh output buffers each step) instead of donating it to the step
const donate = arg("donate") !== "0";
const step = zero.makeZeroTrainStep(layered, opt, mesh, { stage, overlap: arg("overlap") === "1", donate });

/** One step; returns the wall microseconds of the rank the JS thread ran (0 when it ran none). */
const run = (): number => {
  const [l, next] = step(state, tokens, targets);
  l.item();
  state = next;
  rt.synchronize();
  const st = rt.lastLaunchStamps();
  const tl = rt.lastLaunchTimeline();
  return st && st.callerRank >= 0 ? tl[st.callerRank].end - tl[st.callerRank].start : 0;
};
for (let i = 0; i < 10; i++) run();
const stopProfile = await startCpuProfile(arg("profile"));
const l0 = rt.launchCount();
let rankUs = 0,
  ran = 0;
const j0 = jsThreadNs(),
  t0 = performance.now();
for (let i = 0; i < steps; i++) {
  const us = run();
  rankUs += us;
  if (us > 0) ran++;
}
const js = (jsThreadNs() - j0) / 1e6 / steps,
  wall = (performance.now() - t0) / steps;
await stopProfile();
const rank = rankUs / 1000 / steps;
const load = (await import("node:os")).loadavg()[0].toFixed(1);
// the rank's wall span includes its waits in collectives: the rank's CPU is this run's JS CPU less a
// JAXTS_CALLER_RUNS=never run's (host work only), not the span
console.log(
  `${which}${buckets ? ` buckets ${buckets} KiB` : ""}: wall ${wall.toFixed(2)} ms/step; JS thread CPU ${js.toFixed(2)} ms/step; ` +
    `it ran a rank in ${ran}/${steps} steps (the rank's wall span, waits included, ${rank.toFixed(2)} ms/step); ` +
    `${((rt.launchCount() - l0) / steps).toFixed(1)} launches/step; ` +
    `JAXTS_CALLER_RUNS=${process.env.JAXTS_CALLER_RUNS ?? "auto"}, donate ${donate} (load ${load})`,
);
