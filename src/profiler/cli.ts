#!/usr/bin/env node
/**
 * @file The `jaxts` command: `jaxts trace summary <trace> [--json] [--top N]`, `jaxts trace view <trace> -o page.html`
 * and `jaxts trace merge <trace>... -o merged.trace.json`; <trace> is a trace file or a log directory (its newest trace).
 */
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { formatSummary, summarizeTrace } from "./summary.js";
import { renderTimelineHtml } from "./timeline-html.js";
import { mergeTraceFiles, readTraceFile } from "./trace-file.js";

const USAGE = `usage:
  jaxts trace summary <trace-file-or-dir> [--json] [--top N]
  jaxts trace view <trace-file-or-dir> -o <timeline.html>
  jaxts trace merge <trace-file>... -o <merged.trace.json>`;

/** A trace file path: the path itself, or the newest *.trace.json(.gz) under a directory (profiler.trace's logDir). */
export function resolveTrace(p: string): string {
  if (!statSync(p).isDirectory()) return p;
  let best: { path: string; mtime: number } | null = null;
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const q = join(d, n),
        st = statSync(q);
      if (st.isDirectory()) walk(q);
      else if (/\.trace\.json(\.gz)?$/.test(n) && (!best || st.mtimeMs > best.mtime))
        best = { path: q, mtime: st.mtimeMs };
    }
  };
  walk(p);
  if (!best) throw new Error(`jaxts: no *.trace.json or *.trace.json.gz file under ${p}`);
  return (best as { path: string }).path;
}

/** Runs the command line `args` (without node and the script); returns the exit code, writing to stdout/stderr. */
export function main(
  args: readonly string[],
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): number {
  const flag = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const positional = args.filter(
    (a, i) => !a.startsWith("-") && !(i > 0 && args[i - 1].startsWith("-") && args[i - 1] !== "--json"),
  );
  try {
    if (positional[0] !== "trace" || !["summary", "view", "merge"].includes(positional[1] ?? "")) {
      err(`${USAGE}\n`);
      return 2;
    }
    const files = positional.slice(2);
    if (files.length === 0) {
      err(`jaxts trace ${positional[1]}: missing the trace file\n${USAGE}\n`);
      return 2;
    }
    if (positional[1] === "summary") {
      const top = Number(flag("--top") ?? 10);
      if (!Number.isInteger(top) || top < 1)
        throw new Error(`jaxts trace summary: --top expects a positive integer, got ${flag("--top")}`);
      const s = summarizeTrace(readTraceFile(resolveTrace(files[0])), top);
      out(args.includes("--json") ? JSON.stringify(s, null, 2) + "\n" : formatSummary(s) + "\n");
      return 0;
    }
    const o = flag("-o") ?? flag("--output");
    if (!o) {
      err(`jaxts trace ${positional[1]}: missing -o <output file>\n${USAGE}\n`);
      return 2;
    }
    if (positional[1] === "view") {
      const path = resolveTrace(files[0]);
      writeFileSync(o, renderTimelineHtml(readTraceFile(path), `jaxts trace: ${path}`));
    } else {
      writeFileSync(o, JSON.stringify(mergeTraceFiles(files.map((f) => readTraceFile(resolveTrace(f))))));
    }
    out(`wrote ${o}\n`);
    return 0;
  } catch (e) {
    err(`${(e as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
