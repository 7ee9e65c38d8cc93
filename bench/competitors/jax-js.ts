/** @file Benchmark contender: @jax-js/jax on its Wasm device (Node: init("cpu", "wasm")). */
import { blockUntilReady, lax, defaultDevice, init, jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import type { Case, CaseBody, Contender, WorkloadId } from "../harness.js";
import { ADD_N, LENET, MATMUL_SIZES, MLP, TANH_N, lenetData, mlpData, packageVersion, randomF32 } from "../harness.js";

type Arr = np.Array;
type Params = { w1: Arr; b1: Arr; w2: Arr; b2: Arr };

const NAME = "jax-js";

/*
 * Ownership: jax-js counts references. Passing an array to any function consumes one reference,
 * `.ref` adds one, `.dispose()` drops one. Inputs kept across calls are passed as `x.ref`; every
 * output is awaited with blockUntilReady (jax-js is lazy: nothing runs before that) and disposed.
 */

function mk(data: Float32Array, shape: number[]): Arr {
  return np.array(data).reshape(shape);
}

/** Mean softmax cross-entropy of the MLP; consumes `p`, `x`, `y`. */
function mlpLoss(p: Params, x: Arr, y: Arr): Arr {
  const h = nn.relu(np.matmul(x, p.w1).add(p.b1));
  const logits = np.matmul(h, p.w2).add(p.b2);
  const logp = nn.logSoftmax(logits, -1);
  return np.sum(logp.mul(y)).mul(-1 / MLP.batch);
}

/** A fresh jitted train step: [loss, newParams] = step(params, x, y); SGD inside the jit. */
function makeStep() {
  return jit((p: Params, x: Arr, y: Arr): [Arr, Params] => {
    const [loss, g] = valueAndGrad(mlpLoss)(tree.ref(p), x, y);
    const upd = (w: Arr, gw: Arr): Arr => w.sub(gw.mul(MLP.lr));
    const next: Params = { w1: upd(p.w1, g.w1), b1: upd(p.b1, g.b1), w2: upd(p.w2, g.w2), b2: upd(p.b2, g.b2) };
    return [loss, next];
  });
}

function mlpInputs(): { params: Params; x: Arr; y: Arr } {
  const d = mlpData();
  return {
    params: {
      w1: mk(d.w1, [MLP.inDim, MLP.hidden]),
      b1: mk(d.b1, [MLP.hidden]),
      w2: mk(d.w2, [MLP.hidden, MLP.outDim]),
      b2: mk(d.b2, [MLP.outDim]),
    },
    x: mk(d.x, [MLP.batch, MLP.inDim]),
    y: mk(d.y, [MLP.batch, MLP.outDim]),
  };
}

type LenetParams = { k1: Arr; b1: Arr; k2: Arr; b2: Arr; w3: Arr; b3: Arr };
/** conv (NCHW/OIHW, VALID) + bias -> relu -> 2x2/2 max pool (lax.reduceWindow over the two trailing dims); consumes its inputs. */
function convBlock(x: Arr, k: Arr, b: Arr): Arr {
  const h = lax.convGeneralDilated(x, k, [1, 1], "VALID");
  const r = nn.relu(h.add(b.reshape([1, -1, 1, 1])));
  return lax.reduceWindow(r, (w: Arr) => np.max(w), [2, 2], [2, 2]);
}
function lenetLoss(p: LenetParams, x: Arr, y: Arr): Arr {
  const h = convBlock(convBlock(x, p.k1, p.b1), p.k2, p.b2).reshape([LENET.batch, LENET.flat]);
  const logp = nn.logSoftmax(np.matmul(h, p.w3).add(p.b3), -1);
  return np.sum(logp.mul(y)).mul(-1 / LENET.batch);
}
function makeLenetStep() {
  return jit((p: LenetParams, x: Arr, y: Arr): [Arr, LenetParams] => {
    const [loss, g] = valueAndGrad(lenetLoss)(tree.ref(p), x, y);
    const upd = (w: Arr, gw: Arr): Arr => w.sub(gw.mul(LENET.lr));
    return [
      loss,
      {
        k1: upd(p.k1, g.k1),
        b1: upd(p.b1, g.b1),
        k2: upd(p.k2, g.k2),
        b2: upd(p.b2, g.b2),
        w3: upd(p.w3, g.w3),
        b3: upd(p.b3, g.b3),
      },
    ];
  });
}

/** A training-step case body: params threaded through `step` call after call; everything is freed at teardown. */
function trainLoop<P extends object>(
  free: (f: () => void) => void,
  step: ((p: P, x: Arr, y: Arr) => [Arr, P]) & { dispose(): void },
  params: P,
  x: Arr,
  y: Arr,
): CaseBody {
  let p = params;
  free(() => {
    tree.dispose(p);
    x.dispose();
    y.dispose();
    step.dispose();
  });
  return async () => {
    const [loss, next] = step(p, x.ref, y.ref);
    p = next;
    await blockUntilReady([loss, next]);
    loss.dispose();
  };
}

/** A case whose state lives in closure variables released by `teardown`. */
function jcase(workload: WorkloadId, note: string, setup: (free: (f: () => void) => void) => Promise<CaseBody>): Case {
  const frees: (() => void)[] = [];
  return {
    name: NAME,
    workload,
    note,
    setup: () => setup((f) => frees.push(f)),
    teardown() {
      while (frees.length) frees.pop()!();
    },
  };
}

function cases(): Case[] {
  const out: Case[] = [];

  out.push(
    jcase(
      "mlp-compile",
      "fresh jit(step) (valueAndGrad + SGD), first call incl. trace, kernel compile, run, blockUntilReady",
      async (free) => {
        const { params, x, y } = mlpInputs();
        return trainLoop(free, makeStep(), params, x, y);
      },
    ),
  );

  for (const n of MATMUL_SIZES) {
    out.push(
      jcase(`matmul-${n}` as WorkloadId, "jit(matmul), blockUntilReady", async (free) => {
        const a = mk(randomF32(n * n, 10 + n), [n, n]);
        const b = mk(randomF32(n * n, 20 + n), [n, n]);
        const mm = jit((p: Arr, q: Arr) => np.matmul(p, q));
        free(() => {
          a.dispose();
          b.dispose();
          mm.dispose();
        });
        return async () => {
          const c = mm(a.ref, b.ref);
          await c.blockUntilReady();
          c.dispose();
        };
      }),
    );
  }

  out.push(
    jcase(
      "mlp-step",
      "jit(valueAndGrad(loss) + SGD update), params threaded through, blockUntilReady(loss, params)",
      async (free) => {
        const { params, x, y } = mlpInputs();
        return trainLoop(free, makeStep(), params, x, y);
      },
    ),
  );

  out.push(
    jcase(
      "lenet-step",
      "jit(valueAndGrad(loss) + SGD update): lax.convGeneralDilated + lax.reduceWindow(max), params threaded through",
      async (free) => {
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
        return trainLoop(free, makeLenetStep(), params, mk(d.x, [batch, 1, size, size]), mk(d.y, [batch, outDim]));
      },
    ),
  );

  out.push(
    jcase("tanh-1e7", "jit(x => tanh(2x+1)), blockUntilReady", async (free) => {
      const x = np.array(randomF32(TANH_N, 30));
      const f = jit((v: Arr) => np.tanh(v.mul(2).add(1)));
      free(() => {
        x.dispose();
        f.dispose();
      });
      return async () => {
        const r = f(x.ref);
        await r.blockUntilReady();
        r.dispose();
      };
    }),
  );

  out.push(
    jcase(
      "add-eager-4096",
      "np.add + blockUntilReady (jax-js is lazy: the op only runs when realized); no readback",
      async (free) => {
        const a = np.array(randomF32(ADD_N, 40));
        const b = np.array(randomF32(ADD_N, 41));
        free(() => {
          a.dispose();
          b.dispose();
        });
        return async () => {
          const c = np.add(a.ref, b.ref);
          await c.blockUntilReady();
          c.dispose();
        };
      },
    ),
  );

  out.push(
    jcase("add-jit-4096", "jit((x, y) => x + y) call + blockUntilReady; no readback", async (free) => {
      const a = np.array(randomF32(ADD_N, 40));
      const b = np.array(randomF32(ADD_N, 41));
      const f = jit((p: Arr, q: Arr) => p.add(q));
      free(() => {
        a.dispose();
        b.dispose();
        f.dispose();
      });
      return async () => {
        const c = f(a.ref, b.ref);
        await c.blockUntilReady();
        c.dispose();
      };
    }),
  );

  return out;
}

export const jaxJs: Contender = {
  name: NAME,
  version: `@jax-js/jax ${packageVersion("@jax-js/jax")}`,
  notes: ['device "wasm" via init("cpu", "wasm"); single-threaded Wasm in Node'],
  async init() {
    const devs = await init("cpu", "wasm");
    if (!devs.includes("wasm")) throw new Error(`wasm device unavailable (got ${devs.join(", ")})`);
    defaultDevice("wasm");
  },
  cases,
};
