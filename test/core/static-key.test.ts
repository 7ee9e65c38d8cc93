/** @file Static-argument keys: equal exactly when the values are equal (by value, structure or identity), clear errors for non-hashable values. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { array } from "../../src/numpy/core.js";
import { UnhashableStaticError, paramsKey, staticArgKey } from "../../src/core/static-key.js";

const key = (v: unknown) => staticArgKey("f", "static argument 0", v);

test("scalars: Object.is equality, and no cross-type collisions", () => {
  const vals: unknown[] = [
    0,
    -0,
    1,
    -1,
    1.5,
    Infinity,
    -Infinity,
    NaN,
    null,
    undefined,
    true,
    false,
    "1",
    "",
    "null",
    1n,
    0n,
    Symbol("a"),
    Symbol("a"),
  ];
  const keys = vals.map(key);
  // every pair of distinct values gets distinct keys (JSON.stringify maps Infinity, -Infinity and NaN to null)
  assert.equal(new Set(keys).size, vals.length);
  assert.equal(key(NaN), key(0 / 0));
  assert.equal(key(1), key(1.0));
  assert.equal(key(2 ** 53), key(2 ** 53));
  const s = Symbol("s");
  assert.equal(key(s), key(s));
});

test("plain arrays and objects compare structurally, in any key order; nesting is kept", () => {
  assert.equal(key([1, "a", [null, true]]), key([1, "a", [null, true]]));
  assert.equal(key({ a: 1, b: { c: [2] } }), key({ b: { c: [2] }, a: 1 }));
  const distinct = [
    [1, 2],
    [[1], 2],
    [1, [2]],
    ["1", 2],
    [1, 2, undefined],
    { a: 1 },
    { a: "1" },
    { b: 1 },
    { a: [1] },
    [],
    {},
  ];
  assert.equal(new Set(distinct.map(key)).size, distinct.length);
  assert.equal(key(Object.create(null) as object), key({}));
});

test("functions and class instances compare by identity", () => {
  const f = (x: number) => x,
    g = (x: number) => x;
  assert.equal(key(f), key(f));
  assert.notEqual(key(f), key(g));
  assert.notEqual(key({ act: f }), key({ act: g }));
  assert.equal(key({ act: f }), key({ act: f }));
  class P {
    constructor(readonly v: number) {}
  }
  const p = new P(1);
  assert.equal(key(p), key(p));
  assert.notEqual(key(p), key(new P(1)));
  assert.notEqual(key(Math.sin), key(Math.cos));
});

test("non-hashable static values raise naming the function, the argument and the offending part", () => {
  const cases: [unknown, string[]][] = [
    [array([1, 2]), ["static argument 0 is a jaxts Array i32[2]"]],
    [new Float32Array(2), ["static argument 0 is a Float32Array"]],
    [new ArrayBuffer(4), ["ArrayBuffer"]],
    [new Map([[1, 2]]), ["a Map"]],
    [new Set([1]), ["a Set"]],
    [{ w: [1, new Set()] }, ["static argument 0 (at w[1]) is a Set"]],
  ];
  for (const [v, frags] of cases) {
    assert.throws(
      () => key(v),
      (e: Error) => {
        assert.ok(e instanceof UnhashableStaticError && e instanceof TypeError);
        assert.ok(e.message.startsWith("f: non-hashable static arguments are not supported"), e.message);
        for (const fr of frags) assert.ok(e.message.includes(fr), `${e.message} should include ${fr}`);
        return true;
      },
    );
  }
  const cyc: unknown[] = [1];
  cyc.push(cyc);
  assert.throws(() => key(cyc), /static argument 0 \(at \[1\]\) is a cyclic structure/);
});

test("paramsKey never throws: buffers and cycles fall back to identity", () => {
  const t = new Float32Array(2);
  assert.equal(paramsKey({ a: t }), paramsKey({ a: t }));
  assert.notEqual(paramsKey({ a: t }), paramsKey({ a: new Float32Array(2) }));
  assert.notEqual(paramsKey({ lo: Infinity }), paramsKey({ lo: -Infinity }));
  assert.notEqual(paramsKey({ lo: NaN }), paramsKey({ lo: null }));
});
