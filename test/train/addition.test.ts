/** @file The addition task: encoding (answers reversed), held-out problems never in training batches, exact match. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Array, numpy as jnp } from "../../src/index.js";
import {
  AdditionTask,
  EQUALS,
  PLUS,
  additionLayout,
  answerText,
  encodeProblem,
  exactMatch,
  greedyAnswers,
  promptText,
} from "../../src/train/addition.js";

test("a problem encodes as a, +, b, =, then the sum's digits least-significant first", () => {
  assert.deepEqual(encodeProblem({ a: 357, b: 468 }, 3), [3, 5, 7, PLUS, 4, 6, 8, EQUALS, 5, 2, 8, 0]);
  assert.deepEqual(encodeProblem({ a: 999, b: 999 }, 3).slice(8), [8, 9, 9, 1]); // 1998 reversed
  assert.deepEqual(encodeProblem({ a: 7, b: 5 }, 2), [0, 7, PLUS, 0, 5, EQUALS, 2, 1, 0]);
  assert.equal(promptText({ a: 7, b: 45 }, 3), "007+045=");
  assert.equal(answerText([5, 2, 8, 0]), "0825");
  assert.deepEqual(additionLayout(3), { digits: 3, seq: 11, equalsAt: 7, answerDigits: 4 });
  assert.throws(() => additionLayout(0), /additionLayout: digits must be an integer in \[1, 7\], got 0/);
});

test("held-out problems never appear in training batches; batches are a pure function of (seed, step)", () => {
  const t = new AdditionTask(2, 5, 500); // half of the 10,000 two-digit problems held out
  assert.equal(t.heldOut.length, 500);
  assert.equal(new Set(t.heldOut.map((p) => p.a * 100 + p.b)).size, 500);
  for (let step = 1; step <= 50; step++) for (const p of t.trainProblems(step, 64)) assert.ok(!t.isHeldOut(p));
  assert.deepEqual(t.trainProblems(7, 16), new AdditionTask(2, 5, 500).trainProblems(7, 16));
  assert.notDeepEqual(t.trainProblems(7, 16), t.trainProblems(8, 16));
  const b = t.batch(t.trainProblems(1, 3));
  assert.deepEqual(b.tokens.shape, [3, 8]);
  const tok = b.tokens.tolist() as number[][],
    tgt = b.targets.tolist() as number[][];
  for (let r = 0; r < 3; r++) assert.deepEqual(tgt[r].slice(0, 7), tok[r].slice(1)); // shifted by one
  assert.deepEqual((b.mask.tolist() as number[][])[0], [0, 0, 0, 0, 0, 1, 1, 1]);
});

test("greedy decoding feeds each predicted digit back; exact match counts whole answers", () => {
  const t = new AdditionTask(3, 0, 20);
  const { seq, equalsAt } = t.layout;
  // an oracle that reads the operands from the prompt and predicts the next reversed sum digit at each position
  const oracle = (tokens: Array): Array => {
    const rows = tokens.tolist() as number[][];
    return jnp.array(
      rows.map((r) => {
        const full = encodeProblem({ a: +r.slice(0, 3).join(""), b: +r.slice(4, 7).join("") }, 3);
        // the prediction at position i is token i + 1; check the fed-back digits are the oracle's own
        for (let i = equalsAt + 1; i < seq; i++) if (r[i] !== 0) assert.equal(r[i], full[i]);
        return full.slice(1);
      }),
      { dtype: "int32" },
    );
  };
  const answers = greedyAnswers(t.layout, t.heldOut, oracle);
  assert.equal(exactMatch(t.layout, t.heldOut, answers), 1);
  const p = t.heldOut[0];
  assert.equal(answerText(answers[0]), String(p.a + p.b).padStart(4, "0"));
  // one wrong digit in one answer of 20: 95%
  answers[3][2] = (answers[3][2] + 1) % 10;
  assert.equal(exactMatch(t.layout, t.heldOut, answers), 19 / 20);
  assert.deepEqual(greedyAnswers(t.layout, [], oracle), []);
});
