/** @file Finds string literals in source files that name paths outside the repository (sibling folders, absolute machine paths, `..` escapes). */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, posix, relative, sep } from "node:path";

/** One offending literal: file (repo-relative, "/"-separated), 1-based line, the literal and why it escapes. */
export interface PathFinding {
  file: string;
  line: number;
  literal: string;
  reason: string;
}

/** Folders of the repository whose files are scanned. */
export const SCANNED_DIRS = ["test", "src", "bench", "scripts", "examples", ".ci"];
const CODE_EXT = new Set([".ts", ".mts", ".js", ".mjs", ".cjs", ".py"]);
const SHELL_EXT = new Set([".sh", ".bash", ""]);

// absolute paths of a particular machine or user (system paths such as /dev, /proc, /usr/bin are fine)
const MACHINE_PATH = /^(?:file:\/\/)?\/(?:work|home|Users|root|mnt|srv|data|opt\/[^/]*work)(?:\/|$)/;
// a sibling folder of the checkout, however it is reached
const SIBLING = /(?:^|\/)\.\.\/(?:shared|main|wt)(?:\/|$)/;
// the literal is a module specifier or `new URL(x, import.meta.url)`, i.e. resolved against the file's own folder
const FILE_RELATIVE_CONTEXT = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\bnew\s+URL\s*\(\s*)$/;
// a relative path that begins by going up one or more folders (dot-dot, slash, then a name)
const RELATIVE_UP = /^(?:\.\.\/)+[\w.@-][\w./@-]*$/;
// a module file, which import() resolves against the importing file wherever the specifier is written
const MODULE_FILE = /\.(?:m?[jt]s|cjs)$/;
const LITERAL = /(["'`])((?:\\.|(?!\1)[^\\\n])*)\1/g;

/** Whether `p` ("/"-separated, relative to `baseDir` inside the repo) leaves the repository root. */
function escapesRoot(baseDir: string, p: string): boolean {
  const joined = posix.normalize(posix.join(baseDir === "" ? "." : baseDir, p));
  return joined === ".." || joined.startsWith("../");
}

/** The reason a literal (found in `file`, after `before` on its line) reads outside the repo, or null. */
export function classifyLiteral(file: string, literal: string, before: string): string | null {
  if (MACHINE_PATH.test(literal)) return "absolute path of a particular machine";
  if (SIBLING.test(literal)) return "sibling folder of the checkout";
  // only literals that are relative paths starting with `..`: a bare ".." is too ambiguous (comparisons, joins onto a known base)
  if (!RELATIVE_UP.test(literal)) return null;
  if (FILE_RELATIVE_CONTEXT.test(before) || MODULE_FILE.test(literal)) {
    return escapesRoot(posix.dirname(file), literal) ? "`..` escapes the repository (relative to this file)" : null;
  }
  // any other relative path is resolved against the working directory, which is the repository root
  return escapesRoot("", literal) ? "`..` escapes the repository (relative to the repository root)" : null;
}

/** Findings in one file's text; `file` is its repo-relative path ("/"-separated), which decides the language and the base folder. */
export function scanText(file: string, text: string): PathFinding[] {
  const ext = extname(file);
  const shell = !CODE_EXT.has(ext);
  const out: PathFinding[] = [];
  text.split("\n").forEach((rawLine, i) => {
    const line = shell ? rawLine.replace(/(^|\s)#.*$/, "$1") : rawLine;
    if (shell) {
      // shell words are not reliably quoted: check every whitespace-separated word for the two unambiguous rules
      for (const word of line.split(/[\s"'=;()]+/)) {
        if (MACHINE_PATH.test(word))
          out.push({ file, line: i + 1, literal: word, reason: "absolute path of a particular machine" });
        else if (SIBLING.test(word))
          out.push({ file, line: i + 1, literal: word, reason: "sibling folder of the checkout" });
      }
      return;
    }
    for (const m of line.matchAll(LITERAL)) {
      const reason = classifyLiteral(file, m[2], line.slice(0, m.index));
      if (reason) out.push({ file, line: i + 1, literal: m[2], reason });
    }
  });
  return out;
}

/** Repo-relative paths of the scanned source files under `root` (fixture data and Markdown are not code). */
export function scannedFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== "node_modules") walk(p);
        continue;
      }
      const ext = extname(name);
      if (CODE_EXT.has(ext) || SHELL_EXT.has(ext)) out.push(relative(root, p).split(sep).join("/"));
    }
  };
  for (const d of SCANNED_DIRS) {
    try {
      if (statSync(join(root, d)).isDirectory()) walk(join(root, d));
    } catch {
      /* folder absent in this checkout */
    }
  }
  return out;
}

/** Every finding in the scanned folders of the repository at `root`. */
export function scanRepo(root: string): PathFinding[] {
  return scannedFiles(root).flatMap((f) => scanText(f, readFileSync(join(root, f), "utf8")));
}
