/** @file Shared runner for test/fixtures/numpy-parity.json (scripts/fixtures/gen-numpy-parity.py), split by function per test file. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Case, fixtureCases, runCase } from "./struct-fixtures.js";

const ALL = fixtureCases("numpy-parity.json");

/** Registers one test per fixture case whose fn is in `names`; returns those cases (for coverage checks). */
export function runParityCases(fns: Record<string, unknown>, names: readonly string[]): Case[] {
  const cs = ALL.filter((c) => names.includes(c.fn));
  for (const c of cs) test(`parity fixture: ${c.name}`, () => runCase(fns, c));
  return cs;
}

/** Registers a test that every function of `fns` (but `except`) has cases in the fixture. */
export function testFixtureCoverage(
  what: string,
  fns: Record<string, unknown>,
  cases: readonly Case[],
  except: readonly string[] = [],
): void {
  test(`the fixture covers every exported ${what} function`, () => {
    const covered = new Set(cases.map((c) => c.fn));
    assert.deepEqual(
      Object.keys(fns).filter((k) => !covered.has(k) && !except.includes(k)),
      [],
    );
  });
}
