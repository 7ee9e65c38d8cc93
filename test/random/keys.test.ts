/** @file How key arrays print: JAX's `Array((2,), dtype=key<fry>) overlaying:` and str() of the uint32 key data. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { random } from "../../src/index.js";

test("a split key prints its data the way str(np.ndarray) does (columns right-aligned, no commas)", () => {
  // the words are JAX's split(key(0)) (threefry partitionable, JAX's default since 0.5)
  const keys = random.split(random.key(0));
  assert.equal(
    String(keys),
    "Array((2,), dtype=key<fry>) overlaying:\n[[1797259609 2579123966]\n [ 928981903 3453687069]]",
  );
  assert.equal(
    String(random.keyData(keys)),
    "Array([[1797259609, 2579123966],\n       [ 928981903, 3453687069]], dtype=uint32)",
  );
});

test("many keys print summarized, with NumPy's ' ...' row", () => {
  const lines = String(random.split(random.key(0), 600)).split("\n");
  assert.equal(lines[0], "Array((600,), dtype=key<fry>) overlaying:");
  assert.equal(lines.length, 8);
  assert.equal(lines[4], " ...");
  for (const l of [...lines.slice(2, 4), ...lines.slice(5, 7)]) assert.match(l, /^ \[ *\d+ +\d+\]$/);
  assert.match(lines[7], /^ \[ *\d+ +\d+\]\]$/);
});
