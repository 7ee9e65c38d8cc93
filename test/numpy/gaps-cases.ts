/** @file Shared runner for test/fixtures/numpy-gaps.json (scripts/fixtures/gen-numpy-gaps.py): each case eagerly and under jit. */
import { test } from "node:test";
import { Array } from "../../src/core/array.js";
import { jit } from "../../src/transforms/api.js";
import { type Case, fixtureCases, runCase } from "./struct-fixtures.js";

type Fn = (...a: unknown[]) => unknown;
const ALL = fixtureCases("numpy-gaps.json") as (Case & { jit?: boolean })[];

/** fns with every function wrapped in jit over its Array arguments (the others, options included, are static). */
function jitted(fns: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fns).map(([k, f]) => [
      k,
      (...args: unknown[]) => {
        const pos = args.flatMap((a, i) => (a instanceof Array ? [i] : []));
        const g = jit((...xs: Array[]) => {
          const full = [...args];
          pos.forEach((p, j) => (full[p] = xs[j]));
          return (f as Fn)(...full);
        });
        return (g as Fn)(...pos.map((p) => args[p]));
      },
    ]),
  );
}

/** Registers an eager and a jit test per fixture case whose fn is in `names`; returns those cases. */
export function runGapCases(fns: Record<string, unknown>, names: readonly string[]): Case[] {
  const cs = ALL.filter((c) => names.includes(c.fn));
  const jf = jitted(fns);
  for (const c of cs) {
    test(`gaps fixture: ${c.name}`, () => runCase(fns, c));
    if (c.jit !== false) test(`gaps fixture under jit: ${c.name}`, () => runCase(jf, c));
  }
  return cs;
}
