/**
 * @file autoShard's choice against the alternative (`node dist/bench/auto-shard.js [--devices=2] [--quick]`, also run
 * by `npm run bench`): for a 2-layer MLP training step at a large-batch shape and a large-weight shape, autoShard
 * picks a plan; both the data-parallel and the Megatron tensor-parallel step then run as shardMap programs on the
 * device runtime (spmdRuntime "devices"), interleaved, and the row prints which was faster and by how much.
 */
import { config } from "../src/core/config.js";

const nDev = Number(process.argv.find((a) => a.startsWith("--devices="))?.slice(10) ?? 2);
const quick = process.argv.includes("--quick");
config.update("numCpuDevices", nDev);
const {
  autoShard,
  grad,
  lax,
  makeMesh,
  numpy: jnp,
  random,
  shardMap,
  sharding,
  devicePut,
} = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
type Arr = import("../src/core/array.js").Array;
const { NamedSharding, P } = sharding;

const why = rt.deviceRuntimeUnavailable();
if (why) {
  console.log(`autoShard bench: device runtime unavailable: ${why}`);
  process.exit(0);
}
config.update("spmdRuntime", "devices");
config.update("deviceIntraOpThreads", 1);

interface Params {
  w1: Arr;
  b1: Arr;
  w2: Arr;
  b2: Arr;
}
const loss = (p: Params, b: { x: Arr; y: Arr }): Arr => {
  const h = jnp.maximum(jnp.add(jnp.matmul(b.x, p.w1), p.b1), 0);
  return jnp.mean(jnp.square(jnp.subtract(jnp.add(jnp.matmul(h, p.w2), p.b2), b.y)));
};

/**
 * One step's gradients written by hand for a block of the batch and a block of the hidden units (so both plans run
 * the same arithmetic): `tp` sums the second matmul's partial products over the mesh (Megatron's one all-reduce);
 * otherwise (data parallel) the gradients are summed over the mesh at the end. `scale` = 2 / (global batch * out).
 */
function stepBody(tp: boolean, scale: number) {
  return (w1: Arr, b1: Arr, w2: Arr, b2: Arr, x: Arr, y: Arr): Arr[] => {
    const z1 = jnp.add(jnp.matmul(x, w1), b1);
    const h = jnp.maximum(z1, 0);
    let o = jnp.matmul(h, w2);
    if (tp) o = lax.psum(o, "d") as Arr;
    const dout = jnp.multiply(jnp.subtract(jnp.add(o, b2), y), scale);
    const db2 = jnp.sum(dout, { axis: 0 });
    const dw2 = jnp.matmul(jnp.transpose(h), dout);
    const dz1 = jnp.multiply(jnp.matmul(dout, jnp.transpose(w2)), jnp.greater(z1, 0));
    const g = [jnp.matmul(jnp.transpose(x), dz1), jnp.sum(dz1, { axis: 0 }), dw2, db2];
    return tp ? g : g.map((t) => lax.psum(t, "d") as Arr);
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const rows: string[] = [];
const mesh = makeMesh([nDev], ["d"]);
for (const [label, B, din, hid, dout] of [
  ["large batch, small weights", 8192, 64, 64, 8],
  ["small batch, large weights", 16, 512, 2048, 512],
] as const) {
  const [k1, k2, k3, k4] = [1, 2, 3, 4].map((s) => random.key(s));
  const params: Params = {
    w1: jnp.multiply(random.normal(k1, [din, hid]), 0.05),
    b1: jnp.zeros([hid]),
    w2: jnp.multiply(random.normal(k2, [hid, dout]), 0.05),
    b2: jnp.zeros([dout]),
  };
  const batch = { x: random.normal(k3, [B, din]), y: random.normal(k4, [B, dout]) };
  const plan = autoShard(grad(loss), mesh, params, batch);
  const dataParallel = plan.strategy.startsWith("data parallel");
  const want = grad(loss)(params, batch) as unknown as Params;
  const scale = 2 / (B * dout);
  // both plans as shardMap steps; Megatron also splits b1 with w1's columns
  const specs = {
    dp: [P(), P(), P(), P(), P("d"), P("d")],
    tp: [P(null, "d"), P("d"), P("d"), P(), P(), P()],
  };
  const steps = (["dp", "tp"] as const).map((k) => {
    const f = shardMap(stepBody(k === "tp", scale) as (...a: Arr[]) => Arr[], {
      mesh,
      inSpecs: specs[k],
      outSpecs: k === "tp" ? [P(null, "d"), P("d"), P("d"), P()] : P(),
    });
    const args = [params.w1, params.b1, params.w2, params.b2, batch.x, batch.y].map((a, i) =>
      devicePut(a, new NamedSharding(mesh, specs[k][i])),
    );
    const got = f(...args) as Arr[];
    const err = Math.max(
      ...[want.w1, want.b1, want.w2, want.b2].map((w, i) => Number(jnp.max(jnp.abs(jnp.subtract(w, got[i] as Arr))))),
    );
    if (!(err < 1e-4)) throw new Error(`bench/auto-shard: the ${k} step's gradients differ from grad(loss) by ${err}`);
    return () => {
      for (const o of f(...args) as Arr[]) o.blockUntilReady();
    };
  });
  const reps = quick ? 5 : 21;
  for (let i = 0; i < 3; i++) steps.forEach((s) => s());
  const ts = [[], []] as number[][];
  for (let i = 0; i < reps; i++)
    steps.forEach((s, k) => {
      const t = performance.now();
      s();
      ts[k].push(performance.now() - t);
    });
  const [tDp, tTp] = ts.map(median);
  const [tChosen, tOther] = dataParallel ? [tDp, tTp] : [tTp, tDp];
  const est = plan.estimate.seconds * 1e3;
  rows.push(
    `MLP grad step ${B}x${din}-${hid}-${dout} (${label}), ${nDev} devices: autoShard chose ${plan.strategy} ` +
      `(estimate ${est.toFixed(2)} ms); data parallel ${tDp.toFixed(2)} ms, tensor parallel ${tTp.toFixed(2)} ms: ` +
      `the choice is ${(tOther / tChosen).toFixed(2)}x the speed of the other  ${tOther >= tChosen ? "faster: yes" : "faster: NO"}`,
  );
}
config.update("spmdRuntime", "emulation");
console.log(`autoShard (device runtime, 1 intra-op thread per device, medians${quick ? ", quick" : ""})`);
for (const r of rows) console.log(r);
