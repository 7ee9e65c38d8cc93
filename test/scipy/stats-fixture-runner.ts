/** @file Shared runner for test/fixtures/scipy-stats.json (scripts/fixtures/gen-scipy-stats.py): eager and jit cases, coverage. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { Array } from "../../src/core/array.js";
import * as S from "../../src/scipy/stats.js";
import { jit } from "../../src/transforms/api.js";
import { type Case, fixtureCases, runCase } from "../numpy/struct-fixtures.js";

type Fn = (...a: unknown[]) => unknown;
/** Every scipy.stats function by fixture name: "<family>.<method>" for the distributions, the bare name otherwise. */
export const FNS: Record<string, Fn> = {};
for (const [k, v] of Object.entries(S)) {
  if (typeof v === "function") FNS[k] = v as Fn;
  else for (const [m, f] of Object.entries(v as object)) if (typeof f === "function") FNS[`${k}.${m}`] = f as Fn;
}

// gaussianKde cases: "gaussianKde.<method or property>" with args (dataset, bwMethod, weights, ...method args);
// integrateKde's method args are the other estimate's (dataset, bwMethod)
for (const m of [
  "evaluate",
  "pdf",
  "logpdf",
  "integrateBox1d",
  "integrateGaussian",
  "integrateKde",
  "covariance",
  "factor",
  "neff",
  "invCov",
])
  FNS[`gaussianKde.${m}`] = (data: unknown, bw: unknown, w: unknown, ...rest: unknown[]) => {
    const kde = S.gaussianKde(data as Array, bw as S.BwMethod | null, w as Array | null) as unknown as Record<
      string,
      unknown
    >;
    const v = kde[m];
    if (typeof v !== "function") return v;
    const args = m === "integrateKde" ? [S.gaussianKde(rest[0] as Array, rest[1] as S.BwMethod | null)] : rest;
    return (v as Fn).apply(kde, args);
  };

/** f under jit, tracing its Array arguments and closing over the rest (numbers, strings, options); tuples come back as lists. */
function jitted(f: Fn): Fn {
  return (...args: unknown[]) => {
    const pos = args.flatMap((a, i) => (a instanceof Array ? [i] : []));
    const g = (...xs: Array[]): unknown => {
      const full = [...args];
      pos.forEach((p, j) => (full[p] = xs[j]));
      const r = f(...full);
      return r instanceof Array ? r : [...(r as Iterable<Array>)];
    };
    return (jit(g) as (...xs: Array[]) => unknown)(...pos.map((p) => args[p] as Array));
  };
}
const JIT_FNS: Record<string, Fn> = Object.fromEntries(Object.entries(FNS).map(([k, f]) => [k, jitted(f)]));
const ALL = fixtureCases("scipy-stats.json");

/** Registers an eager and a jit test per fixture case whose family (the name before the dot) is in `families`. */
export function runStatsCases(families: readonly string[]): Case[] {
  const cs = ALL.filter((c) => families.includes(c.fn.split(".")[0]));
  for (const c of cs) {
    test(`scipy-stats fixture: ${c.name}`, () => runCase(FNS, c));
    test(`scipy-stats fixture under jit: ${c.name}`, () => runCase(JIT_FNS, c));
  }
  return cs;
}

/** Registers a test that every function of the families has fixture cases (but `except`, which need lax.igamma & co). */
export function testStatsCoverage(
  families: readonly string[],
  cases: readonly Case[],
  except: readonly string[] = [],
): void {
  test(`the scipy-stats fixture covers every function of ${families.join(", ")}`, () => {
    const covered = new Set(cases.map((c) => c.fn));
    const names = Object.keys(FNS).filter((k) => families.includes(k.split(".")[0]));
    assert.ok(names.length > 0, "no functions found");
    assert.deepEqual(
      names.filter((k) => !covered.has(k) && !except.includes(k)),
      [],
    );
  });
}
