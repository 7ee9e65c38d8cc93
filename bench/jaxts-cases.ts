/** @file jaxts side of the benchmark suite: the same workloads as the competitors, through jaxts's public API. */
import * as jax from "../src/index.js";
import { type Array, config, nn, numpy as jnp } from "../src/index.js";
import type { Case, CaseBody, WorkloadId } from "./harness.js";
import { ADD_N, LENET, MATMUL_SIZES, MLP, TANH_N, lenetData, mlpData, randomF32 } from "./harness.js";

export type Params = { w1: Array; b1: Array; w2: Array; b2: Array };
const NAME = "jaxts";
const mk = (data: Float32Array, shape: number[]): Array => jnp.reshape(jnp.array(data), shape);

export function mlpLoss(p: Params, x: Array, y: Array): Array {
  const h = nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1));
  const logits = jnp.add(jnp.matmul(h, p.w2), p.b2);
  return jnp.multiply(jnp.sum(jnp.multiply(nn.logSoftmax(logits, -1), y)), -1 / MLP.batch);
}
function makeStep() {
  return jax.jit(
    (p: Params, x: Array, y: Array): [Array, Params] => {
      const [loss, g] = jax.valueAndGrad(mlpLoss)(p, x, y) as [Array, Params];
      const upd = (w: Array, gw: Array) => jnp.subtract(w, jnp.multiply(gw, MLP.lr));
      return [loss, { w1: upd(p.w1, g.w1), b1: upd(p.b1, g.b1), w2: upd(p.w2, g.w2), b2: upd(p.b2, g.b2) }];
    },
    { donateArgnums: 0 },
  );
}
export function mlpInputs() {
  const d = mlpData();
  return {
    params: {
      w1: mk(d.w1, [MLP.inDim, MLP.hidden]),
      b1: mk(d.b1, [MLP.hidden]),
      w2: mk(d.w2, [MLP.hidden, MLP.outDim]),
      b2: mk(d.b2, [MLP.outDim]),
    } as Params,
    x: mk(d.x, [MLP.batch, MLP.inDim]),
    y: mk(d.y, [MLP.batch, MLP.outDim]),
  };
}
type LenetParams = { k1: Array; b1: Array; k2: Array; b2: Array; w3: Array; b3: Array };
/** conv (NCHW/OIHW, VALID) + bias -> relu -> 2x2/2 max pool, through jax.lax. */
function convBlock(x: Array, k: Array, b: Array): Array {
  const h = jax.lax.convGeneralDilated(x, k, [1, 1], "VALID");
  const r = nn.relu(jnp.add(h, jnp.reshape(b, [1, -1, 1, 1])));
  return jax.lax.reduceWindowMax(r, [1, 1, 2, 2], [1, 1, 2, 2], "VALID");
}
function lenetLoss(p: LenetParams, x: Array, y: Array): Array {
  const h = jnp.reshape(convBlock(convBlock(x, p.k1, p.b1), p.k2, p.b2), [LENET.batch, LENET.flat]);
  const logits = jnp.add(jnp.matmul(h, p.w3), p.b3);
  return jnp.multiply(jnp.sum(jnp.multiply(nn.logSoftmax(logits, -1), y)), -1 / LENET.batch);
}
/** A training-step case: one untimed step (trace + compile), then each timed call feeds the parameters back and frees the loss. */
function feedBack<P>(step: (p: P, x: Array, y: Array) => [Array, P], params: P, x: Array, y: Array): CaseBody {
  [, params] = step(params, x, y);
  return () => {
    const [loss, p] = step(params, x, y);
    params = p;
    loss.blockUntilReady();
    loss.dispose();
  };
}

const c = (workload: WorkloadId, note: string, setup: () => Promise<CaseBody>): Case => ({
  name: NAME,
  workload,
  note,
  setup,
});

export const jaxtsCases: Case[] = [
  c(
    "mlp-compile",
    "fresh jit(step) (valueAndGrad + SGD), first call: trace, ONNX compile, session creation, run",
    async () => {
      const { params, x, y } = mlpInputs();
      return () => {
        const step = makeStep();
        const [loss] = step(params, x, y);
        loss.blockUntilReady();
      };
    },
  ),
  ...MATMUL_SIZES.map((n) =>
    c(`matmul-${n}` as WorkloadId, `jit(matmul) f32 ${n}x${n}, output disposed`, async () => {
      const a = mk(randomF32(n * n, 10 + n), [n, n]),
        b = mk(randomF32(n * n, 20 + n), [n, n]);
      const f = jax.jit((u: Array, v: Array) => jnp.matmul(u, v));
      f(a, b).blockUntilReady();
      return () => {
        const c = f(a, b);
        c.blockUntilReady();
        c.dispose();
      };
    }),
  ),
  c("mlp-step", "jit(valueAndGrad(loss)) + SGD step, params donated and fed back, loss disposed", async () => {
    const { params, x, y } = mlpInputs();
    return feedBack(makeStep(), params, x, y);
  }),
  c(
    "lenet-step",
    "jit(valueAndGrad(loss)) + SGD step; lax.convGeneralDilated + reduceWindowMax lowered to ORT Conv / MaxPool; params donated",
    async () => {
      const { batch, size, c1, c2, k, flat, outDim } = LENET;
      const d = lenetData();
      const params: LenetParams = {
        k1: mk(d.k1, [c1, 1, k, k]),
        b1: mk(d.b1, [c1]),
        k2: mk(d.k2, [c2, c1, k, k]),
        b2: mk(d.b2, [c2]),
        w3: mk(d.w3, [flat, outDim]),
        b3: mk(d.b3, [outDim]),
      };
      const x = mk(d.x, [batch, 1, size, size]),
        y = mk(d.y, [batch, outDim]);
      const step = jax.jit(
        (p: LenetParams, xs: Array, ys: Array): [Array, LenetParams] => {
          const [loss, g] = jax.valueAndGrad(lenetLoss)(p, xs, ys) as [Array, LenetParams];
          const upd = (w: Array, gw: Array) => jnp.subtract(w, jnp.multiply(gw, LENET.lr));
          return [loss, jax.tree.map(upd, p, g) as LenetParams];
        },
        { donateArgnums: 0 },
      );
      return feedBack(step, params, x, y);
    },
  ),
  c(
    "tanh-1e7",
    "jit(x => tanh(2x+1)) on 1e7 float32, output disposed; runs as a fused elementwise kernel (native AVX-512, this thread plus a helper thread)",
    async () => {
      const x = jnp.array(randomF32(TANH_N, 30));
      const f = jax.jit((v: Array) => jnp.tanh(jnp.add(jnp.multiply(v, 2), 1)));
      f(x).blockUntilReady();
      return () => {
        const y = f(x);
        y.blockUntilReady();
        y.dispose();
      };
    },
  ),
  c("add-eager-4096", "eager jnp.add of two 4096-element float32 arrays, output disposed", async () => {
    const a = jnp.array(randomF32(ADD_N, 40)),
      b = jnp.array(randomF32(ADD_N, 41));
    jnp.add(a, b);
    return () => {
      const c = jnp.add(a, b);
      c.blockUntilReady();
      c.dispose();
    };
  }),
  c(
    "add-jit-4096",
    "jit(add) call on two 4096-element float32 arrays, output disposed; a pure elementwise program, so it runs as a fused native kernel (through ONNX Runtime: ~10 µs, see notes/onnx-runtime.md)",
    async () => {
      const a = jnp.array(randomF32(ADD_N, 40)),
        b = jnp.array(randomF32(ADD_N, 41));
      const f = jax.jit((u: Array, v: Array) => jnp.add(u, v));
      f(a, b);
      return () => {
        const c = f(a, b);
        c.blockUntilReady();
        c.dispose();
      };
    },
  ),
];

export async function jaxtsInit(): Promise<void> {
  if (config.backend !== "onnx") throw new Error(`jaxts bench expects the ONNX Runtime backend, got ${config.backend}`);
}

export const jaxtsNotes: string[] = [
  "jaxts: ONNX Runtime CPU execution provider (the libonnxruntime of onnxruntime-node, driven by jaxts's native runner: outputs written into pooled buffers); jit compiles one session per (jaxpr, avals) (all cores with spinning for large programs, one thread for small ones); eager ops use cached per-primitive sessions.",
  "float32 GEMMs with M, N >= 512 and K >= 128 run in jaxts's own SGEMM (AVX-512, registered with ORT as the custom op jaxts.Gemm, on ORT's intra-op threads: the matmuls and the MLP's weight-gradient update); the others (the MLP's forward and small products) in ORT's MLAS Gemm.",
  "inside ONNX programs, connected exact float32 elementwise nodes run as one native fused pass (custom op jaxts.Fused), e.g. the MLP's relu gradient.",
  "jitted pure float32 elementwise programs run as one fused kernel instead (jaxts's native addon: AVX-512 vectors, one pass over memory, large calls shared with a native helper thread); all outputs come from a buffer pool that disposed, donated and garbage-collected arrays feed.",
];
