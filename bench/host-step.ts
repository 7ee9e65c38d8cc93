/**
 * @file The JS thread's CPU per data-parallel MLP step (`node dist/bench/host-step.js [--devices=1|2] [--steps=N]`):
 * the bench's shardMap step in a loop that waits for every step, JS-thread CPU from its schedstat, no other work.
 * `--pmap-tiny`: devices.js's pmap of a tiny function (2x16 float32) instead, with the median native stamps.
 */
import { readFileSync } from "node:fs";
import { jsThreadNs as jsNs } from "./schedstat.js";
import { startCpuProfile } from "./cpu-profile.js";
import { config } from "../src/core/config.js";
import { mlpProblem } from "./mlp-problem.js";

const n = Number(process.argv.find((a) => a.startsWith("--devices="))?.slice(10) ?? 2);
const steps = Number(process.argv.find((a) => a.startsWith("--steps="))?.slice(8) ?? 1000);
config.update("numCpuDevices", Math.max(2, n));
config.update("spmdRuntime", "devices");
config.update("deviceIntraOpThreads", 1);
const jaxts = await import("../src/index.js");
const { devicePut, grad, lax, makeMesh, numpy: jnp, pmap, runtime: rt, shardMap, sharding } = jaxts;
const tinyMode = process.argv.includes("--pmap-tiny");
type Arr = import("../src/core/array.js").Array;
const { NamedSharding, P } = sharding;
const { params, xb, yb, loss } = mlpProblem(jaxts);
const mesh = makeMesh([n], ["data"]);
const step = shardMap(
  (p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.1 / n)));
  },
  { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() },
);
let p = params.map((w) => devicePut(w, new NamedSharding(mesh, P())));
const x = devicePut(xb, new NamedSharding(mesh, P("data"))),
  y = devicePut(yb, new NamedSharding(mesh, P("data")));
/** The JS thread's user and system CPU (ms, tick-granular) from its /proc stat: user time is the least load-sensitive. */
const jsUserSys = (): [number, number] => {
  const f = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return [Number(rest[11]) * 10, Number(rest[12]) * 10];
};
const tinyFn = pmap((v: Arr): Arr => jnp.add(jnp.multiply(jnp.sin(v), 2), 1), "i");
const xs = jnp.reshape(jnp.arange(32, undefined, undefined, { dtype: "float32" }), [2, 16]);
const launchUs: number[] = [],
  wakeUs: number[] = [];
const run = (k: number): void => {
  if (tinyMode) {
    for (let i = 0; i < k; i++) {
      tinyFn(xs).blockUntilReady().dispose();
      const st = rt.lastLaunchStamps();
      if (st) {
        launchUs.push(st.submitted - st.enter);
        wakeUs.push(st.woke - st.complete);
      }
    }
    return;
  }
  for (let i = 0; i < k; i++) {
    config.update("spmdShardUpdates", false);
    const next = step(p, x, y) as Arr[];
    for (const o of next) o.blockUntilReady();
    for (const w of p) w.dispose();
    p = next;
  }
};
run(20);
launchUs.length = wakeUs.length = 0;
// --pause-ms=N: print the pid and sleep before the measured steps (time to attach `perf record -t PID`)
const pause = Number(process.argv.find((a) => a.startsWith("--pause-ms="))?.slice(11) ?? 0);
if (pause > 0) {
  console.log(`pid ${process.pid}`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause);
}
// --profile=FILE: a CPU profile (node:inspector, 50 us sampling) of the measured steps only, not the setup
const profile = process.argv.find((a) => a.startsWith("--profile="))?.slice(10);
const stopProfile = await startCpuProfile(profile || undefined);
const u0 = jsUserSys();
const j0 = jsNs(),
  t0 = performance.now();
run(steps);
const js = (jsNs() - j0) / 1e6 / steps,
  wall = (performance.now() - t0) / steps;
const u1 = jsUserSys();
const [user, sys] = [(u1[0] - u0[0]) / steps, (u1[1] - u0[1]) / steps];
await stopProfile();
const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
const med = (a: number[]): number => [...a].sort((u, v) => u - v)[a.length >> 1] ?? NaN;
if (tinyMode)
  console.log(
    `pmap tiny: JS ${(js * 1000).toFixed(1)} us (user ${(user * 1000).toFixed(1)}), wall ${(wall * 1000).toFixed(1)} us per call; median devLaunch ${med(launchUs).toFixed(1)} us, complete->woke ${med(wakeUs).toFixed(1)} us (${steps} calls, load ${load})`,
  );
else
  console.log(
    `${n}x1 step: JS ${js.toFixed(3)} ms (user ${user.toFixed(3)}, system ${sys.toFixed(3)}), wall ${wall.toFixed(3)} ms per step (${steps} steps, load ${load})`,
  );
