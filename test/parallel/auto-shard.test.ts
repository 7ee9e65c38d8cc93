/** @file autoShard: data vs tensor parallel by shape, collectives of each plan, memory limits, running the plan, errors. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  type AutoShardPlan,
  ShapeDtypeStruct,
  autoShard,
  calibrateAutoShard,
  devicePut,
  grad,
  jit,
  lax,
  makeJaxpr,
  makeMesh,
  nn,
  numpy as jnp,
  random,
  shardMap,
  sharding,
  tree,
} from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { partitionedProgram } from "../../src/parallel/gspmd.js";
import { bytesMoved, collectiveSeconds, DEFAULT_MACHINE } from "../../src/parallel/auto-shard-cost.js";
const { P } = sharding;

interface Params {
  w1: Array;
  b1: Array;
  w2: Array;
  b2: Array;
}
interface Batch {
  x: Array;
  y: Array;
}
const predict = (p: Params, x: Array): Array =>
  jnp.add(jnp.matmul(nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1)), p.w2), p.b2);
const loss = (p: Params, b: Batch): Array => jnp.mean(jnp.square(jnp.subtract(predict(p, b.x), b.y)));
const S = (...shape: number[]) => new ShapeDtypeStruct(shape, "float32");
/** Abstract params and batch of an MLP din -> hid -> dout over a batch of B. */
const mlp = (B: number, din: number, hid: number, dout: number) =>
  [
    { w1: S(din, hid), b1: S(hid), w2: S(hid, dout), b2: S(dout) },
    { x: S(B, din), y: S(B, dout) },
  ] as unknown as [Params, Batch];

/** A plan's specs as strings, leaf by leaf, e.g. { w1: "PartitionSpec(None, 'x')", ... }. */
function specs(t: unknown): unknown {
  return tree.map((s: sharding.NamedSharding) => String(s.spec), t as never);
}
const all = (r: ReturnType<typeof autoShard>): AutoShardPlan[] => [r, ...r.rejected];
const byName = (r: ReturnType<typeof autoShard>, prefix: string): AutoShardPlan => {
  const p = all(r).find((q) => q.strategy.startsWith(prefix));
  assert.ok(
    p,
    `no plan named ${prefix}* among ${all(r)
      .map((q) => q.strategy)
      .join("; ")}`,
  );
  return p;
};
const rep = "PartitionSpec()";

test("large batch, small weights: data parallel; the gradient needs one all-reduce per parameter, the forward none", () => {
  const mesh = makeMesh([2], ["x"]);
  const [p, b] = mlp(4096, 64, 64, 8);
  const r = autoShard(grad(loss), mesh, p, b);
  assert.match(r.strategy, /^data parallel over "x"/);
  assert.deepEqual(specs(r.inShardings), [
    { b1: rep, b2: rep, w1: rep, w2: rep },
    { x: "PartitionSpec('x')", y: "PartitionSpec('x')" },
  ]);
  // gradients come back replicated, like the parameters they update
  assert.deepEqual(specs(r.outShardings), { b1: rep, b2: rep, w1: rep, w2: rep });
  // one psum over "x" per gradient, of exactly the gradient's bytes (leaves in key order: b1, b2, w1, w2)
  const c = r.estimate.collectives;
  assert.deepEqual(
    c.map((x) => [x.kind, x.axes, x.bytes]),
    [64 * 4, 8 * 4, 64 * 64 * 4, 64 * 8 * 4].map((n) => ["psum", ["x"], n]),
  );
  // each priced by the alpha-beta model: latency + 2(n-1)/n bytes / bandwidth
  for (const x of c) assert.equal(x.seconds, collectiveSeconds("psum", x.bytes, 2, DEFAULT_MACHINE));
  assert.equal(
    r.estimate.commSeconds,
    c.reduce((t, x) => t + x.seconds, 0),
  );
  assert.ok(r.estimate.seconds < byName(r, "tensor parallel").estimate.seconds);
  assert.ok(r.estimate.seconds < byName(r, "replicated").estimate.seconds);
  // the forward pass of a data-parallel plan (per-example outputs) communicates nothing
  const fwd = autoShard(predict, mesh, p, b.x);
  assert.match(fwd.strategy, /^data parallel/);
  assert.deepEqual(fwd.estimate.collectives, []);
  assert.deepEqual(specs(fwd.outShardings), "PartitionSpec('x')");
  // the mean loss itself needs one scalar all-reduce
  assert.deepEqual(
    byName(autoShard(loss, mesh, p, b), "data parallel").estimate.collectives.map((x) => [x.kind, x.bytes]),
    [["psum", 4]],
  );
});

test("small batch, large weights: Megatron tensor parallel, one all-reduce forward", () => {
  const mesh = makeMesh([2], ["x"]);
  const [p, b] = mlp(16, 512, 2048, 512);
  const r = autoShard(grad(loss), mesh, p, b);
  assert.match(r.strategy, /^tensor parallel over "x"/);
  const [ps, bs] = specs(r.inShardings) as [Record<string, string>, Record<string, string>];
  // column-parallel first layer, row-parallel second; the batch replicated
  assert.equal(ps.w1, "PartitionSpec(None, 'x')");
  assert.equal(ps.w2, "PartitionSpec('x')");
  assert.deepEqual(bs, { x: rep, y: rep });
  assert.ok(r.estimate.seconds < byName(r, "data parallel").estimate.seconds);
  // the Megatron forward pass: exactly one all-reduce, of the second matmul's [16, 512] partial sums
  const fwd = byName(autoShard(predict, { mesh, refine: false }, p, b.x), "tensor parallel");
  assert.deepEqual(
    fwd.estimate.collectives.map((x) => [x.kind, x.axes, x.bytes]),
    [["psum", ["x"], 16 * 512 * 4]],
  );
  // and the data-parallel alternative pays an all-reduce of every (large) gradient
  const dp = byName(r, "data parallel").estimate.collectives;
  assert.equal(dp.length, 4);
  assert.equal(
    dp.reduce((t, x) => t + x.bytes, 0),
    4 * (512 * 2048 + 2048 + 2048 * 512 + 512),
  );
});

test("ZeRO/FSDP: parameters gathered before use, gradients reduce-scattered back onto their shards", () => {
  const mesh = makeMesh([4], ["x"]);
  const [p, b] = mlp(64, 128, 256, 32);
  const z = byName(autoShard(grad(loss), mesh, p, b), "ZeRO/FSDP");
  const [ps] = specs(z.inShardings) as [Record<string, string>];
  // each parameter split along its largest dimension
  assert.deepEqual(ps, {
    b1: "PartitionSpec('x')",
    b2: "PartitionSpec('x')",
    w1: "PartitionSpec(None, 'x')",
    w2: "PartitionSpec('x')",
  });
  const kinds = z.estimate.collectives.map((c) => c.kind);
  assert.equal(kinds.filter((k) => k === "psum_scatter").length, 4, kinds.join());
  assert.ok(kinds.includes("all_gather"));
  // no gradient is all-reduced (the partitioner's backward may still reduce an activation-sized partial sum)
  const paramBytes = [128 * 256, 256, 256 * 32, 32].map((n) => 4 * n);
  assert.ok(!z.estimate.collectives.some((c) => c.kind === "psum" && paramBytes.includes(c.bytes)), kinds.join());
  // a reduce-scatter moves (n-1)/n of its operand, half an all-reduce
  assert.equal(bytesMoved("psum_scatter", 1024, 4), 768);
  assert.equal(bytesMoved("psum", 1024, 4), 1536);
  assert.equal(bytesMoved("all_gather", 256, 4), 768);
});

test("a memory limit that excludes replicated parameters picks a sharded-parameter plan", () => {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const [p, b] = mlp(1024, 256, 512, 256);
  const free = autoShard(grad(loss), { mesh, optimizerStateFactor: 2 }, p, b);
  const paramsReplicated = (q: AutoShardPlan) =>
    Object.values(specs(q.inShardings[0]) as Record<string, string>).every((s) => s === rep);
  const repPeaks = all(free)
    .filter(paramsReplicated)
    .map((q) => q.estimate.peakBytesPerDevice);
  assert.ok(repPeaks.length >= 2);
  const limit = Math.min(...repPeaks) - 1;
  const r = autoShard(grad(loss), { mesh, optimizerStateFactor: 2, memoryLimitBytes: limit }, p, b);
  assert.ok(!paramsReplicated(r), `${r.strategy} keeps the parameters replicated`);
  assert.ok(r.estimate.peakBytesPerDevice <= limit);
  for (const q of r.rejected.filter(paramsReplicated))
    assert.match((q as { reason: string }).reason, /exceeds memoryLimitBytes/);
  // the optimizer state is counted per device: 2 parameter-sized buffers more for the replicated plan
  const noOpt = byName(autoShard(grad(loss), { mesh, refine: false }, p, b), "replicated").estimate.peakBytesPerDevice;
  const withOpt = byName(free, "replicated").estimate.peakBytesPerDevice;
  assert.equal(withOpt - noOpt, 2 * 4 * (256 * 512 + 512 + 512 * 256 + 256));
  assert.throws(
    () => autoShard(grad(loss), { mesh, memoryLimitBytes: 1000 }, p, b),
    /autoShard: no plan fits memoryLimitBytes 1000 .* needs \d+ bytes per device/,
  );
});

test("FLOPs and peak memory per device follow the shapes", () => {
  const mesh = makeMesh([2], ["x"]);
  const mm = (a: Array, w: Array): Array => jnp.matmul(a, w);
  const r = autoShard(mm, { mesh, argRoles: ["data", "params"] }, S(64, 32), S(32, 16));
  assert.equal(byName(r, "replicated").estimate.flops, 2 * 64 * 32 * 16);
  const dp = byName(r, "data parallel");
  assert.equal(dp.estimate.flops, 64 * 32 * 16);
  // inputs (a's half, all of w) + the output's half
  assert.equal(dp.estimate.peakBytesPerDevice, 4 * (32 * 32 + 32 * 16 + 32 * 16));
});

test("the chosen plan (and every rejected one) run with devicePut + jit gives the unsharded loss", () => {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const [k1, k2, k3, k4] = [1, 2, 3, 4].map((s) => random.key(s));
  const params: Params = {
    w1: random.normal(k1, [8, 16]),
    b1: jnp.linspace(-1, 1, 16) as Array,
    w2: random.normal(k2, [16, 4]),
    b2: jnp.linspace(0, 1, 4) as Array,
  };
  const batch: Batch = { x: random.normal(k3, [32, 8]), y: random.normal(k4, [32, 4]) };
  const want = Number(loss(params, batch));
  const r = autoShard(loss, mesh, params, batch);
  assert.ok(r.rejected.length >= 8);
  for (const plan of all(r)) {
    const args = [params, batch].map((a, i) =>
      tree.map((x: Array, s: sharding.NamedSharding) => devicePut(x, s), a as never, plan.inShardings[i] as never),
    ) as [Params, Batch];
    const got = Number(jit(loss, { inShardings: plan.inShardings, outShardings: plan.outShardings })(...args));
    assert.ok(Math.abs(got - want) <= 1e-5 * Math.abs(want), `${plan.strategy}: ${got} vs ${want}`);
  }
  // the data-parallel plan's specs as a shardMap step (the mean of the per-block means) give the same loss
  const dp = byName(r, "data parallel over (");
  const inSpecs = dp.inShardings.map((t) => tree.map((s: sharding.NamedSharding) => s.spec, t as never));
  const axes = ["data", "model"];
  const step = shardMap((p: Params, b: Batch) => lax.pmean(loss(p, b), axes), {
    mesh,
    inSpecs: inSpecs as never,
    outSpecs: P(),
  });
  assert.ok(Math.abs(Number(step(params, batch)) - want) <= 1e-5 * Math.abs(want));
});

test("bad input: indivisible mesh axes, non-array leaves, bad roles and options name the problem", () => {
  const mesh3 = makeMesh([3], ["x"]);
  const [p, b] = mlp(16, 8, 32, 4);
  assert.throws(
    () => autoShard(grad(loss), mesh3, p, b),
    /autoShard: mesh axis "x" of size 3 divides no dimension of any argument \(shapes args\[0\]\.b1: \(32\)/,
  );
  const mesh = makeMesh([2], ["x"]);
  assert.throws(
    () => autoShard((q: Params, _lr: unknown) => q.w1, mesh, p, { lr: 0.1 }),
    /autoShard: argument leaf args\[1\]\.lr is number; every leaf must be an Array or a ShapeDtypeStruct/,
  );
  assert.throws(
    () => autoShard(grad(loss), { mesh, argRoles: ["params"] }, p, b),
    /autoShard: argRoles must list one role per argument \(2\)/,
  );
  assert.throws(
    () => autoShard(grad(loss), { mesh, argRoles: ["params", "batch"] as never }, p, b),
    /autoShard: argRoles\[1\] must be "params", "data" or "replicated", got "batch"/,
  );
  assert.throws(() => autoShard(grad(loss), { mesh, memoryLimit: 5 } as never, p, b), /unknown option "memoryLimit"/);
  assert.throws(
    () => autoShard(grad(loss), { mesh, machine: { flops: 1 } } as never, p, b),
    /unknown machine constant "flops"/,
  );
  assert.throws(
    () => autoShard(grad(loss), [2] as never, p, b),
    /the second argument must be a Mesh or an options object/,
  );
  assert.throws(() => autoShard(grad(loss), mesh), /pass f's example arguments after the mesh/);
  assert.throws(() => autoShard(grad(loss), { mesh, refine: 1 } as never, p, b), /autoShard: refine must be a boolean/);
  assert.throws(
    () => autoShard(grad(loss), { mesh, memoryLimitBytes: -1 }, p, b),
    /autoShard: memoryLimitBytes must be a positive number, got -1/,
  );
});

test(
  "calibrateAutoShard measures positive machine constants on the device runtime, which autoShard accepts",
  {
    skip: deviceRuntimeUnavailable() ?? false,
  },
  () => {
    config.update("spmdRuntime", "emulation");
    let m: ReturnType<typeof calibrateAutoShard>;
    try {
      m = calibrateAutoShard({ repeats: 1 });
      // the runtime setting is restored
      assert.equal(config.spmdRuntime, "emulation");
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
    assert.deepEqual(Object.keys(m).sort(), Object.keys(DEFAULT_MACHINE).sort());
    for (const [k, v] of Object.entries(m)) assert.ok(Number.isFinite(v) && v > 0, `${k} = ${v}`);
    const [p, b] = mlp(64, 8, 16, 4);
    const r = autoShard(grad(loss), { mesh: makeMesh([2], ["x"]), machine: m }, p, b);
    assert.ok(r.estimate.seconds > 0);
    assert.throws(
      () => calibrateAutoShard({ devices: 1 }),
      /calibrateAutoShard: devices must be an integer in \[2, 8\]/,
    );
  },
);

test("plans are priced on the partitioner's program: a vocab-sharded embedding gives one partial-sum reduction, reshape keeps a major split", () => {
  const mesh = makeMesh([2, 4], ["x", "y"]);
  const part = (cj: ReturnType<typeof trace>, ...dims: string[][][]) =>
    partitionedProgram(
      mesh,
      cj,
      dims,
      cj.jaxpr.outvars.map(() => null),
    );
  const kb = (r: ReturnType<typeof part>) => r.cost.collectives.map((c) => [c.kind, c.axes, c.bytes]);
  const trace = (f: (...a: Array[]) => Array, ...args: Array[]) => makeJaxpr(f)(...(args as never[]));
  const Z = (...shape: number[]) => jnp.zeros(shape);
  const emb = trace((e, i) => jnp.take(e, i, { axis: 0 }), Z(64, 8), jnp.zeros([16], { dtype: "int32" }));
  // table split along the vocabulary: each block looks up its rows, one psum of the [16, 8] result
  assert.deepEqual(kb(part(emb, [["x"], []], [[]])), [["psum", ["x"], 16 * 8 * 4]]);
  // table split along the features, ids along the batch: no communication, the result split both ways
  const w2 = part(emb, [[], ["x"]], [["y"]]);
  assert.deepEqual([kb(w2), w2.outDims[0]], [[], [["y"], ["x"]]]);
  // reshape [8, 6] -> [48]: a split of the major dimension carries over, of the minor one needs a gather
  const flat = trace((a) => jnp.reshape(a, [48]), Z(8, 6));
  const major = part(flat, [["x"], []]);
  assert.deepEqual([kb(major), major.outDims[0]], [[], [["x"]]]);
  assert.deepEqual(kb(part(flat, [[], ["x"]])), [["all_gather", ["x"], 8 * 3 * 4]]);
  // a max over a sharded dimension: a local max, then one pmax of the (small) result
  assert.deepEqual(
    kb(
      part(
        trace((a) => jnp.max(a, { axis: 1 }), Z(8, 6)),
        [[], ["x"]],
      ),
    ),
    [["pmax", ["x"], 8 * 4]],
  );
});
