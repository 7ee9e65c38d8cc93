/** @file Type tests of optim: init/update keep the updates' type, applyUpdates takes updates shaped like the params. */
import type { Array } from "../../src/core/array.js";
import * as ops from "../../src/primitives/ops.js";
import { adam, applyUpdates, chain, sgd } from "../../src/optim/index.js";
import type { OptState } from "../../src/optim/index.js";
import { grad } from "../../src/transforms/api.js";
import { expectType } from "./expect.js";

type Params = { w: Array; b: Array };
declare const params: Params;
declare const x: Array;
const loss = (p: Params, xs: Array): Array => ops.reduceSum(ops.mul(ops.add(p.w, p.b), xs), [0]);
const opt = chain(sgd(0.1), adam(1e-3));
const state: OptState = opt.init(params);
const g = grad(loss)(params, x);
const [updates, next] = opt.update(g, state, params);
expectType<Params>()(updates);
expectType<OptState>()(next);
const stepped = applyUpdates(params, updates);
expectType<Params>()(stepped);
// @ts-expect-error updates must have the params' structure
applyUpdates(params, { w: x });
// @ts-expect-error params passed to update share the updates' structure
opt.update(g, state, x);
