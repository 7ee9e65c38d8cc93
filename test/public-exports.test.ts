/** @file The generated public wrappers (src/**\/*-public.ts) are what scripts/gen-strict-exports.mjs makes of today's exports. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { repoPath, repoRoot } from "./helpers/repo-root.js";

test("the committed *-public.ts wrappers match the exports they wrap (gen-strict-exports --check)", () => {
  const r = spawnSync(process.execPath, [repoPath("scripts", "gen-strict-exports.mjs"), "--check"], {
    cwd: repoRoot(),
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});
