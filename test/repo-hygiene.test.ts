/** @file The repository reads nothing outside itself: the path checker catches planted escapes, and the tree has none. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { repoRoot } from "./helpers/repo-root.js";
import { classifyLiteral, scanRepo, scanText, scannedFiles } from "./helpers/path-hygiene.js";

// planted paths are assembled at run time so that this file's own literals stay clean
const up = "..";
const q = (s: string) => JSON.stringify(s);

test("checker flags reads of sibling folders, machine paths and `..` escapes", () => {
  const planted = [
    `const g = JSON.parse(readFileSync(${q(`${up}/shared/golden/random.json`)}, "utf8"));`,
    `const h = readFileSync(resolve(process.cwd(), ${q(`${up}/shared/x.json`)}));`,
    `const w = readFileSync(${q("/" + "work/shared/golden/parallel.json")});`,
    `const u = new URL(${q("file:///" + "home/me/data.bin")});`,
    `const e = readFileSync(${q(`${up}/outside.txt`)});`,
    `const f = join(root, ${q(`${up}/${up}/x`)});`,
    `import x from ${q(`${up}/${up}/${up}/elsewhere/mod.js`)};`,
    `const v = new URL(${q(`${up}/${up}/${up}/x.js`)}, import.meta.url);`,
  ].join("\n");
  const found = scanText("test/io/planted.test.ts", planted);
  assert.deepEqual(
    found.map((f) => f.line),
    [1, 2, 3, 4, 5, 6, 7, 8],
    JSON.stringify(found, null, 1),
  );
  assert.match(found[0].reason, /sibling folder/);
  assert.match(found[2].reason, /absolute path/);
  assert.match(found[6].reason, /relative to this file/);
  assert.match(found[4].reason, /repository root/);
});

test("checker accepts in-repo paths: module specifiers and URLs relative to the file, fixtures, system paths", () => {
  const fine = [
    `import { x } from ${q(`${up}/${up}/src/index.js`)};`,
    `import ${q(`${up}/${up}/src/backends/interpreter/interpreter.js`)};`,
    `const j = await import(${q(`${up}/helpers/repo-root.js`)});`,
    `const r = new URL(${q(`${up}/${up}`)}, import.meta.url);`,
    `const d = readFileSync(${q("test/fixtures/golden/random.json")});`,
    `const z = openSync(${q("/dev/zero")}, "r");`,
    `const t = \`${"${dir}"}/${up}/x\`;`,
    `const b = join(dirname(fileURLToPath(import.meta.url)), ${q(up)});`,
    `const spec = ${q(`${up}/transforms/control-flow.js`)};`,
    `// a comment about ${up}/shared without quotes`,
  ].join("\n");
  assert.deepEqual(scanText("test/io/fine.test.ts", fine), []);
  assert.equal(classifyLiteral("scripts/run-tests.mjs", `${up}/dist/x.js`, "new URL("), null);
  assert.notEqual(classifyLiteral("scripts/run-tests.mjs", `${up}/${up}/dist/x.js`, "new URL("), null);
});

test("checker reads shell scripts word by word, ignoring comments", () => {
  const sh = [
    `cd "$(dirname "$0")/${up}"`,
    `# see ${up}/shared for history`,
    `cp ${up}/shared/golden/x.json test/`,
    `export D=/${"work"}/cache`,
  ].join("\n");
  assert.deepEqual(
    scanText(".ci/run", sh).map((f) => [f.line, f.reason]),
    [
      [3, "sibling folder of the checkout"],
      [4, "absolute path of a particular machine"],
    ],
  );
});

test("no file under test/, src/, bench/, scripts/, examples/, .ci/ reads outside the repository", () => {
  const root = repoRoot();
  const files = scannedFiles(root);
  assert.ok(
    files.includes("test/repo-hygiene.test.ts") && files.includes(".ci/run") && files.includes("src/index.ts"),
    `scanned: ${files.length} files`,
  );
  const found = scanRepo(root);
  assert.deepEqual(
    found,
    [],
    found.map((f) => `${f.file}:${f.line}: ${JSON.stringify(f.literal)} (${f.reason})`).join("\n"),
  );
});
