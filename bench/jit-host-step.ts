/**
 * @file The host time of devices.js's data-parallel MLP step written with jit + NamedSharding vs shardMap
 * (`node dist/bench/jit-host-step.js [--steps=N] [--block=N] [--profile=FILE] [--only=jit|sm]`): the two steps take
 * turns in blocks, and each call's host time is split by the launch's native stamps into the JS work before the launch,
 * the launch itself, the work after it until the call returns, and the wait for the outputs; JS-thread CPU per step from schedstat.
 */
import { readFileSync } from "node:fs";
import { startCpuProfile } from "./cpu-profile.js";
import { jsThreadNs as jsNs } from "./schedstat.js";
import { config } from "../src/core/config.js";
import { mlpProblem } from "./mlp-problem.js";

const arg = (name: string, d: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? d;
const steps = Number(arg("steps", "400"));
const block = Number(arg("block", "8"));
const only = arg("only", "");
config.update("numCpuDevices", 2);
config.update("spmdRuntime", "devices");
config.update("deviceIntraOpThreads", 1);
const jaxts = await import("../src/index.js");
const { devicePut, grad, jit, lax, makeMesh, numpy: jnp, runtime: rt, shardMap, sharding } = jaxts;
type Arr = import("../src/core/array.js").Array;
const { NamedSharding, P } = sharding;
const { params, xb, yb, loss } = mlpProblem(jaxts);
const mesh = makeMesh([2], ["data"]);
const S = (s: ReturnType<typeof P>) => new NamedSharding(mesh, s);

let returned = 0;
/** A step loop body over resident parameters (the bench's: wait for the new parameters, free the old ones). */
function loop(step: (p: Arr[], x: Arr, y: Arr) => Arr[], pS: InstanceType<typeof NamedSharding>[]): () => void {
  let p = params.map((w, i) => devicePut(w, pS[i]));
  const x = devicePut(xb, S(P("data"))),
    y = devicePut(yb, S(P("data")));
  return () => {
    const next = step(p, x, y);
    returned = rt.nowUs();
    for (const o of next) o.blockUntilReady();
    for (const w of p) w.dispose();
    p = next;
  };
}
const smStep = shardMap(
  (p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.1 / 2)));
  },
  { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() },
) as (p: Arr[], x: Arr, y: Arr) => Arr[];
const pS = params.map(() => S(P()));
const jitStep = jit(
  (p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.1)));
  },
  { inShardings: [pS, S(P("data")), S(P("data"))], outShardings: pS },
) as (p: Arr[], x: Arr, y: Arr) => Arr[];
const cases = [
  { name: "jit + NamedSharding", run: loop(jitStep, pS) },
  { name: "shardMap", run: loop(smStep, pS) },
].filter((c) => !only || (only === "jit") === c.name.startsWith("jit"));

/** Per call, microseconds: total, before the launch, the launch, after it until the call returned, then the rest. */
const parts = cases.map(() => ({
  total: [] as number[],
  before: [] as number[],
  launch: [] as number[],
  after: [] as number[],
  rest: [] as number[],
  js: 0,
}));
const timed = (k: number): void => {
  const c = parts[k];
  const j0 = jsNs();
  const t0 = rt.nowUs();
  cases[k].run();
  const t1 = rt.nowUs();
  c.js += jsNs() - j0;
  const st = rt.lastLaunchStamps();
  c.total.push(t1 - t0);
  if (st) {
    c.before.push(st.enter - t0);
    c.launch.push(st.submitted - st.enter);
    c.after.push(returned - st.submitted);
    c.rest.push(t1 - returned);
  }
};
for (let i = 0; i < 20; i++) for (const c of cases) c.run();
const profile = arg("profile", "");
const stopProfile = await startCpuProfile(profile || undefined);
for (let i = 0, round = 0; i < steps; i += block, round++) {
  const order = cases.map((_, k) => k);
  if (round % 2) order.reverse();
  for (const k of order) for (let j = 0; j < block; j++) timed(k);
}
await stopProfile();
const med = (a: number[]): number => [...a].sort((u, v) => u - v)[a.length >> 1] ?? NaN;
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
for (const [k, c] of parts.entries())
  console.log(
    `${cases[k].name}: ${(med(c.total) / 1000).toFixed(3)} ms per step (median of ${c.total.length}); before launch ${med(c.before).toFixed(0)} us, launch ${med(c.launch).toFixed(0)} us, after it until the call returned ${med(c.after).toFixed(0)} us, then wait and dispose ${med(c.rest).toFixed(0)} us; JS CPU ${(c.js / 1e6 / c.total.length).toFixed(3)} ms`,
  );
if (parts.length === 2)
  console.log(`ratio jit / shardMap: ${(med(parts[0].total) / med(parts[1].total)).toFixed(3)}x (load ${load})`);
else console.log(`load ${load}`);
