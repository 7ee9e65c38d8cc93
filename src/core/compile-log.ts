/** @file Where config logCompiles writes its lines (jax_log_compiles): console.warn unless a sink is set. */

/** Receives one line per jit trace or program compilation while config logCompiles is on. */
export type CompileLogSink = (line: string) => void;
let sink: CompileLogSink | null = null;
/** Routes logCompiles lines to `s` (null: back to console.warn). Returns the previous sink. */
export function setCompileLogSink(s: CompileLogSink | null): CompileLogSink | null {
  const prev = sink;
  sink = s;
  return prev;
}
/** Writes one logCompiles line (callers check config.logCompiles first). */
export function logCompile(line: string): void {
  if (sink) sink(line);
  else console.warn(line);
}
