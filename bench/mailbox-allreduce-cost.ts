/**
 * @file What one all-reduce costs synchronously vs as a mailbox Start/Done pair (no compute to hide it behind):
 * `node dist/bench/mailbox-allreduce-cost.js [--reps=N]`. Per size and device count: ms per launch and the threads'
 * CPU per launch (Linux schedstat, all threads but the JS thread), sync (overlap off), async (overlap on,
 * JAXTS_ASYNC_SELECT=every: the pass's previous choice) and the cost model's choice (overlap on), interleaved.
 */
import { otherThreadsNs } from "./schedstat.js";
import { availableParallelism, loadavg } from "node:os";
import { config } from "../src/core/config.js";
const { jit, lax, makeMesh, numpy: jnp, shardMap, sharding } = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
const { withCollectiveOverlap } = await import("../src/parallel/overlap-collectives.js");

config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice(7) ?? 30);
const P = sharding.PartitionSpec;

/** [on-CPU ms, runqueue-wait ms] summed over this process's threads other than the JS thread. */
const threadMs = (): [number, number] => {
  const [run, wait] = otherThreadsNs();
  return [run / 1e6, wait / 1e6];
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

type Mode = "sync" | "async (every)" | "cost model";
const MODES: Mode[] = ["sync", "async (every)", "cost model"];
const load0 = loadavg()[0];
console.log(
  `mailbox all-reduce cost (${availableParallelism()} cores, load ${load0.toFixed(1)}; ${reps} interleaved rounds of 10 launches)`,
);
for (const n of [2, 4]) {
  const mesh = makeMesh([n], ["x"]);
  for (const kib of [4, 64, 256, 1024]) {
    const per = (kib << 10) / 4;
    const x = jnp.ones([n, per], { dtype: "float32" });
    const f = jit(
      shardMap((b: import("../src/index.js").Array) => lax.psum(jnp.sin(b), "x"), {
        mesh,
        inSpecs: P("x"),
        outSpecs: P(),
      }),
    );
    const run = (m: Mode) => {
      const saved = process.env.JAXTS_ASYNC_SELECT;
      if (m === "async (every)") process.env.JAXTS_ASYNC_SELECT = "every";
      try {
        return withCollectiveOverlap(m !== "sync", () => f(x));
      } finally {
        if (saved === undefined) delete process.env.JAXTS_ASYNC_SELECT;
        else process.env.JAXTS_ASYNC_SELECT = saved;
      }
    };
    for (const m of MODES) for (let i = 0; i < 3; i++) run(m).blockUntilReady();
    const ms = new Map<Mode, number[]>(MODES.map((m) => [m, []])),
      cpu = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
    for (let r = 0; r < reps; r++)
      for (const m of MODES) {
        const c0 = threadMs()[0],
          t0 = performance.now();
        for (let i = 0; i < 10; i++) run(m).blockUntilReady();
        ms.get(m)!.push((performance.now() - t0) / 10);
        cpu.get(m)!.push((threadMs()[0] - c0) / 10);
      }
    console.log(
      `${n} devices, ${kib} KiB per device: ` +
        MODES.map((m) => `${m} ${median(ms.get(m)!).toFixed(3)} ms (CPU ${median(cpu.get(m)!).toFixed(3)})`).join(", "),
    );
  }
}
console.log(`load ${load0.toFixed(1)} -> ${loadavg()[0].toFixed(1)}`);
rt.synchronize();
