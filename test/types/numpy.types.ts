/** @file Type tests of jnp signatures with several forms: where's one- and three-argument forms, piecewise's extra arguments, pad's callable mode. */
import type { Array } from "../../src/core/array.js";
import * as np from "../../src/numpy/index.js";
import { expectType } from "./expect.js";

declare const x: Array;
declare const c: Array;

// ------------------------------------------------ where: three arguments choose, one argument is nonzero
expectType<Array>()(np.where(c, x, 0));
expectType<Array[]>()(np.where(c));
expectType<Array[]>()(np.where(c, { size: 3, fillValue: -1 }));
expectType<Array[]>()(np.where(c, undefined, undefined, { size: 3 }));
// @ts-expect-error x without y is neither form
np.where(c, x);

// ------------------------------------------------ piecewise: the functions get the extra arguments, typed
expectType<Array>()(np.piecewise(x, [c], [(v: Array, k: number) => np.multiply(v, k), 0], 2));
// @ts-expect-error the extra argument must match the functions' parameter
np.piecewise(x, [c], [(v: Array, k: number) => np.multiply(v, k)], "two");

// ------------------------------------------------ gradient: one array or one per axis
expectType<Array | Array[]>()(np.gradient(x, np.array([0, 1, 3]), { edgeOrder: 2 }));
