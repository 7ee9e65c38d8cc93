/**
 * @file The synthetic task of the training job: fixed-width n-digit addition ("357+468=" -> "0825"), answers emitted
 * least-significant digit first (so each digit depends only on digits already seen: carries are causal), a held-out
 * set of problems never drawn for training, and exact-match accuracy by greedy decoding.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";

/** Token ids: the digits 0-9 are themselves; then "+" and "=". */
export const PLUS = 10;
export const EQUALS = 11;
/** The task's vocabulary size. */
export const ADDITION_VOCAB = 12;

/** A problem: two operands below 10^digits. */
export interface Problem {
  a: number;
  b: number;
}

/** The fixed layout of one example for `digits`-digit operands. */
export interface AdditionLayout {
  digits: number;
  /** Tokens fed to the model: a, "+", b, "=", the answer's first n digits (the last answer digit is only a target). */
  seq: number;
  /** Index (in the inputs) of the "=" token, whose prediction is the first answer digit. */
  equalsAt: number;
  /** Answer digits (digits + 1: the carry digit included). */
  answerDigits: number;
}

export function additionLayout(digits: number): AdditionLayout {
  if (!Number.isInteger(digits) || digits < 1 || digits > 7)
    throw new Error(`additionLayout: digits must be an integer in [1, 7], got ${digits}`);
  return { digits, seq: 3 * digits + 2, equalsAt: 2 * digits + 1, answerDigits: digits + 1 };
}

/** A 32-bit mixing hash (splitmix-style finalizer) for seeding per-step generators. */
export function mix32(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** mulberry32: a small deterministic uniform [0, 1) generator. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const digitsOf = (x: number, n: number): number[] => {
  const out: number[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(Math.floor(x / 10 ** i) % 10);
  return out;
};

/** The full token sequence (length seq + 1): a, "+", b, "=", then a + b's digits least-significant first. */
export function encodeProblem(p: Problem, digits: number): number[] {
  const sum = digitsOf(p.a + p.b, digits + 1).reverse();
  return [...digitsOf(p.a, digits), PLUS, ...digitsOf(p.b, digits), EQUALS, ...sum];
}

/** "357+468=" for a problem (operands zero-padded to the fixed width). */
export const promptText = (p: Problem, digits: number): string =>
  `${String(p.a).padStart(digits, "0")}+${String(p.b).padStart(digits, "0")}=`;

/** The answer digits as printed (most significant first) from the model's reversed answer tokens. */
export const answerText = (reversed: readonly number[]): string => [...reversed].reverse().join("");

/** The train/held-out split of the problem space. */
export class AdditionTask {
  readonly layout: AdditionLayout;
  readonly heldOut: Problem[];
  private readonly heldOutKeys: Set<number>;
  private readonly space: number;

  /** `heldOut` problems are drawn once from `seed` and never appear in a training batch. */
  constructor(
    readonly digits: number,
    readonly seed: number,
    heldOut: number,
  ) {
    this.layout = additionLayout(digits);
    this.space = 10 ** digits;
    if (!Number.isInteger(heldOut) || heldOut < 1 || heldOut > (this.space * this.space) / 2)
      throw new Error(
        `AdditionTask: the held-out set size must be in [1, ${(this.space * this.space) / 2}] for ${digits}-digit operands, got ${heldOut}`,
      );
    this.heldOutKeys = new Set();
    this.heldOut = [];
    const r = rng(mix32(seed, 0x7e57));
    while (this.heldOut.length < heldOut) {
      const p = this.draw(r);
      const k = this.key(p);
      if (this.heldOutKeys.has(k)) continue;
      this.heldOutKeys.add(k);
      this.heldOut.push(p);
    }
  }

  private key(p: Problem): number {
    return p.a * this.space + p.b;
  }
  private draw(r: () => number): Problem {
    return { a: Math.floor(r() * this.space), b: Math.floor(r() * this.space) };
  }
  /** Whether a problem belongs to the held-out set. */
  isHeldOut(p: Problem): boolean {
    return this.heldOutKeys.has(this.key(p));
  }

  /** The training problems of step `step` (a pure function of seed and step, so a resumed run sees the same data). */
  trainProblems(step: number, batch: number): Problem[] {
    const r = rng(mix32(this.seed, step, 0xba7c));
    const out: Problem[] = [];
    while (out.length < batch) {
      const p = this.draw(r);
      if (!this.isHeldOut(p)) out.push(p);
    }
    return out;
  }

  /**
   * Model inputs for problems: tokens and targets (the sequence shifted by one) [batch, seq] int32, and the loss
   * mask [batch, seq] float32: 1 at the answer positions (the "=" and the first n answer digits predict the answer).
   */
  batch(problems: readonly Problem[]): { tokens: Array; targets: Array; mask: Array } {
    const { seq, equalsAt } = this.layout;
    const toks: number[][] = [],
      tgts: number[][] = [],
      mask: number[][] = [];
    for (const p of problems) {
      const s = encodeProblem(p, this.digits);
      toks.push(s.slice(0, seq));
      tgts.push(s.slice(1));
      mask.push(s.slice(1).map((_, j) => (j >= equalsAt ? 1 : 0)));
    }
    return {
      tokens: jnp.array(toks, { dtype: "int32" }),
      targets: jnp.array(tgts, { dtype: "int32" }),
      mask: jnp.array(mask, { dtype: "float32" }),
    };
  }
}

/**
 * Greedy decoding of the answers: `predict(tokens)` returns the argmax token at every position [batch, seq] (one
 * jit'd forward); the prompt is filled in one answer digit at a time (causal attention ignores the zeros after it).
 * Returns each problem's answer tokens, least-significant first.
 */
export function greedyAnswers(
  layout: AdditionLayout,
  problems: readonly Problem[],
  predict: (tokens: Array) => Array,
): number[][] {
  const { seq, equalsAt, answerDigits, digits } = layout;
  if (problems.length === 0) return [];
  const rows = problems.map((p) => {
    const s = encodeProblem(p, digits).slice(0, equalsAt + 1);
    while (s.length < seq) s.push(0);
    return s;
  });
  const answers = problems.map(() => [] as number[]);
  for (let i = 0; i < answerDigits; i++) {
    const pred = predict(jnp.array(rows, { dtype: "int32" })).tolist() as number[][];
    const at = equalsAt + i;
    pred.forEach((r, b) => {
      answers[b].push(r[at]);
      if (at + 1 < seq) rows[b][at + 1] = r[at];
    });
  }
  return answers;
}

/** Exact-match accuracy: the fraction of problems whose every answer digit is right. */
export function exactMatch(layout: AdditionLayout, problems: readonly Problem[], answers: readonly number[][]): number {
  let ok = 0;
  problems.forEach((p, i) => {
    const want = encodeProblem(p, layout.digits).slice(layout.equalsAt + 1);
    if (want.every((d, j) => answers[i][j] === d)) ok++;
  });
  return ok / Math.max(1, problems.length);
}
