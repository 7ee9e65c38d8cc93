/** @file FEATURES.md is true: every API name a done/partial row claims is exported, and the committed file is what the notes generate. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { repoPath } from "./helpers/repo-root.js";

interface Row {
  name: string;
  status: string;
  note: string;
  line: number;
}
interface Parsed {
  sections: { title: string; api: string | null; rows: Row[] }[];
  stray: number[];
}
interface GenFeatures {
  parseNotes(text: string): Parsed;
  symbolsOf(name: string): string[] | null;
  isExported(pkg: object, api: string, path: string): boolean;
  checkNames(file: string, parsed: Parsed, pkg: object): string[];
}
const gen = (await import(pathToFileURL(repoPath("scripts", "gen-features.mjs")).href)) as GenFeatures;

// a stand-in package: root functions, namespaces, and an Array class with an accessor
class FakeArray {
  get sharding(): never {
    throw new Error("accessors are not invoked by the check");
  }
}
const fn = () => 0;
const pkg = {
  grad: fn,
  Array: FakeArray,
  lax: { scan: fn, psum: fn },
  numpy: { sum: fn, linalg: { norm: fn } },
  nn: { relu: fn, initializers: { zeros: fn } },
};

test("symbolsOf: dotted identifiers and ' / ' lists are symbols; anything else is a concept", () => {
  assert.deepEqual(gen.symbolsOf("sum"), ["sum"]);
  assert.deepEqual(gen.symbolsOf("jax.config.update"), ["jax.config.update"]);
  assert.deepEqual(gen.symbolsOf("lax.psum / pmean / pmax"), ["lax.psum", "lax.pmean", "lax.pmax"]);
  assert.deepEqual(gen.symbolsOf("Mesh / makeMesh"), ["Mesh", "makeMesh"]);
  for (const concept of [
    "type promotion",
    "x.at[...]",
    "(all linalg primitives)",
    "jit(f).lower(...).asText() / compile()",
    "save / load (safetensors)",
  ]) {
    assert.equal(gen.symbolsOf(concept), null, concept);
  }
});

test("isExported looks in the section's namespace, then the root; jax./jnp./x. prefixes; accessors are not invoked", () => {
  assert.ok(gen.isExported(pkg, "numpy", "sum"));
  assert.ok(gen.isExported(pkg, "numpy", "linalg.norm"));
  assert.ok(gen.isExported(pkg, "numpy", "grad"), "root fallback");
  assert.ok(gen.isExported(pkg, "", "jnp.sum"));
  assert.ok(gen.isExported(pkg, "nn", "initializers.zeros"));
  assert.ok(gen.isExported(pkg, "", "jax.lax.scan"));
  assert.ok(gen.isExported(pkg, "", "x.sharding"));
  assert.ok(!gen.isExported(pkg, "", "x.nosuch"));
  assert.ok(!gen.isExported(pkg, "", "sum"), "numpy names are not at the root");
  assert.ok(!gen.isExported(pkg, "nn", "initializers.glorotNormal"));
  assert.ok(!gen.isExported(pkg, "", "toString"), "Object.prototype members do not count");
  assert.ok(!gen.isExported(pkg, "numpy", "linalg.norm.x"));
});

test("checkNames flags done/partial rows naming unexported symbols and rows outside sections, but not missing rows or concepts", () => {
  const notes = [
    "# planted notes",
    "Format: `name | done|partial|missing | note`.",
    "stray | done | before any section",
    "## numpy things",
    "api: numpy",
    "sum | done |",
    "nosuch | done | planted: not exported",
    "linalg.norm / det | partial | planted: det is not exported",
    "glorotLater | missing | in progress",
    "type promotion | done | a concept",
    "## primitives",
    "api: none",
    "cholesky | done | a primitive, not an export",
    "## root",
    "jax.grad | done |",
    "lax.scan / psum / pmean | partial | planted: pmean is not exported",
  ].join("\n");
  const parsed = gen.parseNotes(notes);
  assert.deepEqual(
    parsed.sections.map((s) => [s.title, s.api, s.rows.length]),
    [
      ["numpy things", "numpy", 5],
      ["primitives", null, 1],
      ["root", "", 2],
    ],
  );
  const problems = gen.checkNames("notes/planted.md", parsed, pkg);
  assert.equal(problems.length, 4, problems.join("\n"));
  assert.match(problems[0], /^notes\/planted\.md:3: row outside any "## " section/);
  assert.match(problems[1], /^notes\/planted\.md:7: row "nosuch" is done but the package does not export nosuch/);
  assert.match(problems[2], /:8: row "linalg\.norm \/ det" is partial but the package does not export linalg\.det \(/);
  assert.match(problems[3], /:16: .* does not export lax\.pmean \(/);
});

test("the committed FEATURES.md is what notes/features-*.md generate, and every name it claims is exported (gen-features --check)", () => {
  // run from another directory: the script finds the repository itself; --check writes nothing
  const r = spawnSync(process.execPath, [repoPath("scripts", "gen-features.mjs"), "--check"], {
    cwd: tmpdir(),
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `gen-features --check failed:\n${r.stderr}${r.stdout}`);
  assert.match(r.stdout, /FEATURES\.md is up to date: \d+ done, \d+ partial, \d+ missing/);
});
