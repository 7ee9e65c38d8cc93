/**
 * @file The program test/parallel/distributed.test.ts starts under `mpirun -np N` (N processes of `devs` devices):
 * (scenario "collectives": also 2-d meshes, an MLP grad step, a mismatch and an early exit; "basic": collectives only)
 * runs collectives over meshes spanning the processes on the device runtime and the same calls on the single-process
 * emulation, and writes its results as JSON to <outDir>/result-<processIndex>.json (or prints them without outDir).
 * Usage: node mpi-worker.js <scenario> <devicesPerProcess> [outDir].
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { config } from "../../src/core/config.js";
const [scenario = "collectives", devs = "1", outDir = ""] = process.argv.slice(2);
config.update("numCpuDevices", Number(devs));
import {
  type Array,
  devices,
  distributed,
  grad,
  lax,
  localDevices,
  makeMesh,
  multihostUtils,
  numpy as jnp,
  pmap,
  processCount,
  processIndex,
  shardMap,
  sharding,
} from "../../src/index.js";
import { Mesh } from "../../src/parallel/mesh.js";
import { lastLaunchTimeline } from "../../src/runtime/index.js";
const { P } = sharding;
const JSArray = globalThis.Array;

/** Writes this process's results (once). */
function report(): void {
  const text = JSON.stringify({ ...out, cases });
  if (outDir) writeFileSync(join(outDir, `result-${processIndex()}.json`), text);
  else console.log(text);
}

distributed.initialize();
const me = processIndex();
const out: Record<string, unknown> = {
  processIndex: me,
  processCount: processCount(),
  devices: devices().map((d) => [d.id, d.processIndex]),
  localDevices: localDevices().map((d) => d.id),
};
const cases: { name: string; dtype: string; shape: number[]; got: number[]; want: number[]; ranOn: number[] }[] = [];
const flat = (x: Array): number[] => [x.tolist()].flat(Infinity) as number[];
const values = (shape: number[], dtype: "float32" | "int32"): Array => {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = JSArray.from({ length: n }, (_, i) =>
    dtype === "int32" ? ((i * 7919) % 201) - 100 : Math.sin(i * 1.37) * 10 + i * 0.01,
  );
  return jnp.reshape(jnp.array(v, { dtype }), shape);
};

/** g on the device runtime (collectives across processes) and on the emulation (this process alone). */
function both(name: string, g: () => Array): void {
  config.update("spmdRuntime", "emulation");
  const want = g();
  config.update("spmdRuntime", "devices");
  const before = lastLaunchTimeline();
  const got = g();
  config.update("spmdRuntime", "emulation");
  const tl = lastLaunchTimeline();
  cases.push({
    name,
    dtype: got.dtype,
    shape: [...got.shape],
    got: flat(got),
    want: flat(want),
    ranOn: tl === before ? [] : tl.map((t) => t.device),
  });
}

function collectives(mesh: Mesh, ax: string, tag: string): void {
  const n = mesh.axisSize(ax);
  const sm = (f: (b: Array) => Array, i: sharding.PartitionSpec, o: sharding.PartitionSpec, x: Array) => () =>
    shardMap(f, { mesh, inSpecs: i, outSpecs: o })(x);
  // every collective on int32 (exact); the reductions on float32 too (equal within rounding)
  for (const dt of ["float32", "int32"] as const) {
    const x = values([2 * n, 3], dt);
    both(
      `${tag} psum ${dt}`,
      sm((b) => lax.psum(b, ax), P(ax), P(), x),
    );
    both(
      `${tag} pmax ${dt}`,
      sm((b) => lax.pmax(b, ax), P(ax), P(), x),
    );
    both(
      `${tag} psumScatter ${dt}`,
      sm((b) => lax.psumScatter(b, ax, { tiled: true }), P(null, ax), P(ax), values([2 * n, 4 * n], dt)),
    );
    if (dt === "float32") continue;
    both(
      `${tag} allGather ${dt}`,
      sm((b) => lax.allGather(b, ax, { tiled: true }), P(ax), P(), x),
    );
    both(
      `${tag} allToAll ${dt}`,
      sm((b) => lax.allToAll(b, ax, 0, 1), P(null, ax), P(ax), values([n, 3 * n], dt)),
    );
    const shift = JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]);
    both(
      `${tag} ppermute ${dt}`,
      sm((b) => lax.ppermute(b, ax, shift), P(ax), P(ax), x),
    );
  }
}

try {
  const all = devices();
  if (scenario === "basic") {
    collectives(makeMesh([all.length], ["i"]), "i", "1-d");
    // meshes over some processes only: the others take part in the output exchange (spanning) or compute alone
    const two = new Mesh(all.slice(0, 2), "s"),
      one = new Mesh(all.slice(0, 1), "s");
    both("psum over processes 0 and 1", () =>
      shardMap((b: Array) => lax.psum(b, "s"), { mesh: two, inSpecs: P("s"), outSpecs: P("s") })(
        values([4, 3], "int32"),
      ),
    );
    both("psum within process 0", () =>
      shardMap((b: Array) => lax.psum(b, "s"), { mesh: one, inSpecs: P("s"), outSpecs: P() })(values([2, 3], "int32")),
    );
    both("pmap psum int32", () =>
      pmap((b: Array) => lax.psum(b, "i"), { axisName: "i" })(values([all.length, 3], "int32")),
    );
    out.allgather = (multihostUtils.processAllgather(jnp.add(jnp.arange(3), me * 10)) as Array).tolist();
    multihostUtils.syncGlobalDevices("after collectives");
  } else if (scenario === "collectives") {
    collectives(makeMesh([all.length], ["i"]), "i", "1-d");
    if (Number(devs) > 1) {
      // processes x local devices: 'p' crosses processes, 'd' stays within one, both is hierarchical
      const mesh = makeMesh([processCount(), Number(devs)], ["p", "d"]);
      const x = values([4 * processCount(), 3], "float32");
      for (const axes of [["p"], ["d"], ["p", "d"]]) {
        both(`2-d psum over ${axes.join("+")}`, () =>
          shardMap((b: Array) => lax.psum(b, axes), {
            mesh,
            inSpecs: P(["p", "d"]),
            outSpecs: P(axes.length === 2 ? null : axes[0] === "p" ? "d" : "p"),
          })(x),
        );
      }
    }
    // data-parallel MLP grad step over one device per process vs the whole batch in this process
    const dp = new Mesh(
      JSArray.from({ length: processCount() }, (_, q) => all.find((d) => d.processIndex === q)!),
      "data",
    );
    const w1 = values([5, 8], "float32"),
      w2 = values([8, 2], "float32");
    const xb = values([4 * processCount(), 5], "float32"),
      yb = values([4 * processCount(), 2], "float32");
    const loss = (p: Array[], x: Array, y: Array): Array => {
      const h = jnp.tanh(jnp.matmul(x, jnp.multiply(p[0], 0.05)));
      return jnp.mean(jnp.square(jnp.subtract(jnp.matmul(h, jnp.multiply(p[1], 0.05)), jnp.multiply(y, 0.01))));
    };
    const step = shardMap((p: Array[], x: Array, y: Array) => grad(loss)(p, x, y).map((g) => lax.pmean(g, "data")), {
      mesh: dp,
      inSpecs: [P(), P("data"), P("data")],
      outSpecs: P(),
    });
    config.update("spmdRuntime", "devices");
    const before = lastLaunchTimeline();
    const gd = step([w1, w2], xb, yb) as Array[];
    const ranOn = lastLaunchTimeline() === before ? [] : lastLaunchTimeline().map((t) => t.device);
    config.update("spmdRuntime", "emulation");
    const g1 = grad(loss)([w1, w2], xb, yb);
    gd.forEach((g, k) =>
      cases.push({
        name: `mlp grad ${k}`,
        dtype: g.dtype,
        shape: [...g.shape],
        got: flat(g),
        want: flat(g1[k]),
        ranOn,
      }),
    );
    out.allgather = (multihostUtils.processAllgather(jnp.add(jnp.arange(3), me * 10)) as Array).tolist();
    multihostUtils.syncGlobalDevices("after collectives");
    // a collective whose shapes differ between processes: every process fails naming the kinds and shapes
    const mesh = makeMesh([all.length], ["i"]);
    config.update("spmdRuntime", "devices");
    try {
      shardMap((b: Array) => lax.psum(me === 0 ? b : jnp.concatenate([b, b]), "i"), {
        mesh,
        inSpecs: P("i"),
        outSpecs: P(),
      })(values([2 * all.length, 3], "float32"));
      out.mismatch = "no error";
    } catch (e) {
      out.mismatch = (e as Error).message;
    }
    // the next collective works again
    out.after = flat(
      shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(
        jnp.ones([all.length, 2], { dtype: "int32" }),
      ),
    );
    // process 1 leaves early; the others' next collective fails naming it within the timeout
    if (me === 1) {
      report();
      process.exit(0);
    }
    config.update("collectiveTimeoutMs", 1500);
    const t0 = Date.now();
    try {
      shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(jnp.ones([all.length, 2]));
      out.early = "no error";
    } catch (e) {
      out.early = (e as Error).message;
    }
    out.earlyMs = Date.now() - t0;
  } else {
    throw new Error(`mpi-worker: unknown scenario ${scenario}`);
  }
} catch (e) {
  out.error = (e as Error).stack ?? String(e);
}
report();
