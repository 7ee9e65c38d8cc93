// @file Builds FEATURES.md from notes/features-*.md and checks that every API name a row claims is exported by the built package.
//
// Usage (from anywhere; paths are relative to the repository root):
//   node scripts/gen-features.mjs           check names, then (re)write FEATURES.md
//   node scripts/gen-features.mjs --check   check names and that FEATURES.md equals what would be generated; writes nothing
// Both need the build (dist/src/index.js) and exit 1 listing every problem.
//
// Name convention (stated at the top of each notes/features-*.md):
// - a row is `name | done|partial|missing | note`, inside a `## section`;
// - a name made only of dotted identifiers (`sum`, `linalg.norm`, `jax.grad`), or a " / "-separated list of them
//   (`lax.psum / pmean`: later items without a dot take the first item's prefix), names API symbols: each must
//   be exported by the package unless the row's status is `missing`;
// - any other name (`type promotion`, `x.at[...]`, `(all linalg primitives)`) is a concept and is not checked;
// - a line `api: <namespace>` under a section heading says where its names are looked up (`numpy`, `numpy.linalg`,
//   `nn`, ...; the package root when absent or `jax`), falling back to the root; `api: none` marks a section whose
//   rows are not API symbols (primitives, engine internals). The prefixes `jax.` and `jnp.` mean the root and `numpy`.
import { readFileSync, readdirSync, renameSync, writeFileSync, existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const ORDER = [
  "features-core.md",
  "features-math.md",
  "features-struct.md",
  "features-random.md",
  "features-optim-io.md",
];
const ROW = /^([^|`#][^|]*)\|\s*(done|partial|missing)\s*\|(.*)$/;
const IDENT_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/;

/**
 * Parses one notes file: its sections (heading, api namespace or null for "none", rows) and the rows found
 * outside any section (a mistake: they would be dropped from FEATURES.md).
 * @param {string} text
 * @returns {{ sections: { title: string, api: string | null, rows: { name: string, status: string, note: string, line: number }[] }[], stray: number[] }}
 */
export function parseNotes(text) {
  const sections = [];
  const stray = [];
  let cur = null;
  text.split("\n").forEach((line, i) => {
    if (line.startsWith("## ")) {
      cur = { title: line.slice(3).trim(), api: "", rows: [] };
      sections.push(cur);
      return;
    }
    const api = line.match(/^api:\s*(\S+)\s*$/);
    if (api && cur && cur.rows.length === 0) {
      cur.api = api[1] === "none" ? null : api[1] === "jax" ? "" : api[1];
      return;
    }
    const m = line.match(ROW);
    if (!m) return;
    if (!cur) {
      if (!line.includes("`name |")) stray.push(i + 1);
      return;
    } // the format line describing rows is not a row
    cur.rows.push({ name: m[1].trim(), status: m[2], note: m[3].trim(), line: i + 1 });
  });
  return { sections, stray };
}

/**
 * The API symbols a row names (dotted paths), or null when the name is a concept.
 * @param {string} name
 * @returns {string[] | null}
 */
export function symbolsOf(name) {
  const parts = name.split(" / ").map((s) => s.trim());
  if (!parts.every((p) => IDENT_PATH.test(p))) return null;
  const prefix = parts[0].includes(".") ? parts[0].slice(0, parts[0].lastIndexOf(".") + 1) : "";
  return parts.map((p, i) => (i > 0 && !p.includes(".") ? prefix + p : p));
}

/**
 * Whether the dotted path resolves to a defined export of `pkg`, looked up in the section's namespace, then the root.
 * @param {Record<string, unknown>} pkg
 * @param {string} api the section's namespace ("" = root)
 * @param {string} path
 */
export function isExported(pkg, api, path) {
  let segs = path.split(".");
  const bases = [];
  if (segs[0] === "jax") {
    segs = segs.slice(1);
    bases.push("");
  } else if (segs[0] === "jnp") {
    segs = segs.slice(1);
    bases.push("numpy");
  } else if (segs[0] === "x" && segs.length > 1) {
    segs = ["Array", "prototype", ...segs.slice(1)];
    bases.push("");
  } else bases.push(api, "");
  return bases.some((b) => has(pkg, b === "" ? segs : [...b.split("."), ...segs]));
}

/** Whether obj.k1.k2... is defined; the last key may be an accessor (not invoked), keys of Object.prototype do not count. */
function has(obj, keys) {
  let o = obj;
  for (let i = 0; i < keys.length; i++) {
    if (o === null || o === undefined || (typeof o !== "object" && typeof o !== "function")) return false;
    const k = keys[i];
    if (!(k in o) || (k in Object.prototype && o[k] === Object.prototype[k])) return false;
    if (i === keys.length - 1) return true;
    o = o[k];
  }
  return o !== undefined;
}

/**
 * Problems of one parsed notes file against the package: rows outside sections, and done/partial rows naming unexported symbols.
 * @param {string} file
 * @param {ReturnType<typeof parseNotes>} parsed
 * @param {Record<string, unknown>} pkg
 * @returns {string[]}
 */
export function checkNames(file, parsed, pkg) {
  const problems = parsed.stray.map(
    (l) => `${file}:${l}: row outside any "## " section (it would not appear in FEATURES.md)`,
  );
  for (const s of parsed.sections) {
    if (s.api === null) continue;
    for (const r of s.rows) {
      const syms = symbolsOf(r.name);
      if (!syms || r.status === "missing") continue;
      const absent = syms.filter((p) => !isExported(pkg, s.api, p));
      if (absent.length) {
        problems.push(
          `${file}:${r.line}: row "${r.name}" is ${r.status} but the package does not export ${absent.join(", ")}` +
            ` (looked up in ${s.api ? `${s.api} and ` : ""}the package root; mark it missing, fix the name, or give the section an api: line)`,
        );
      }
    }
  }
  return problems;
}

/**
 * FEATURES.md's text from the parsed notes files (in ORDER, others after them by name).
 * @param {{ file: string, parsed: ReturnType<typeof parseNotes> }[]} notes
 */
export function render(notes) {
  const out = [
    "# FEATURES: parity with JAX's API",
    "",
    "Generated by `node scripts/gen-features.mjs` from `notes/features-*.md` (edit those, then regenerate).",
    "Status: **done** (implemented and tested), **partial** (works with the limits noted), **missing**.",
    "",
  ];
  const counts = { done: 0, partial: 0, missing: 0 };
  let jnpDone = 0;
  for (const { parsed } of notes) {
    for (const s of parsed.sections) {
      if (!s.rows.length) continue;
      out.push(`## ${s.title}`, "", "| name | status | note |", "|---|---|---|");
      for (const r of s.rows) {
        counts[r.status]++;
        if (r.status === "done" && /jnp|linalg|nn|numpy/i.test(s.title)) jnpDone++;
        out.push(`| \`${r.name}\` | ${r.status} | ${r.note.replace(/\|/g, "\\|")} |`);
      }
      out.push("");
    }
  }
  out.splice(
    5,
    0,
    `Totals: ${counts.done} done, ${counts.partial} partial, ${counts.missing} missing; ${jnpDone} jax.numpy / jax.numpy.linalg / jax.nn functions done.`,
    "",
  );
  return { text: out.join("\n"), counts, jnpDone };
}

/** Reads every notes/features-*.md under the repository root, in ORDER. */
export function readNotes() {
  const rank = (f) => (ORDER.includes(f) ? ORDER.indexOf(f) : ORDER.length);
  return readdirSync(`${root}/notes`)
    .filter((f) => f.startsWith("features-") && f.endsWith(".md"))
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
    .map((f) => ({ file: `notes/${f}`, parsed: parseNotes(readFileSync(`${root}/notes/${f}`, "utf8")) }));
}

async function main() {
  const check = process.argv.includes("--check");
  const entry = `${root}/dist/src/index.js`;
  if (!existsSync(entry)) {
    console.error("gen-features: dist/src/index.js is missing; run `npm run build` first");
    process.exit(1);
  }
  const pkg = await import(pathToFileURL(entry).href);
  const notes = readNotes();
  const problems = notes.flatMap(({ file, parsed }) => checkNames(file, parsed, pkg));
  const { text, counts, jnpDone } = render(notes);
  if (check) {
    const committed = existsSync(`${root}/FEATURES.md`) ? readFileSync(`${root}/FEATURES.md`, "utf8") : "";
    if (committed !== text)
      problems.push(
        "FEATURES.md differs from what notes/features-*.md generate: run `node scripts/gen-features.mjs` and commit it",
      );
  }
  if (problems.length) {
    console.error(`gen-features: ${problems.length} problem(s):\n${problems.map((p) => `  ${p}`).join("\n")}`);
    process.exit(1);
  }
  if (!check) {
    const tmp = `${root}/FEATURES.md.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, `${root}/FEATURES.md`);
  }
  console.log(
    `FEATURES.md${check ? " is up to date" : ""}: ${counts.done} done, ${counts.partial} partial, ${counts.missing} missing; jnp/linalg/nn done: ${jnpDone}`,
  );
  // the package's thread pools and sessions keep the event loop alive: this script is done
  process.exit(0);
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) await main();
