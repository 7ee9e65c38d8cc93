/** @file jax.debug: print and callback (staged host callbacks) and the per-device block layout of sharded arrays as text. */
import type { Array } from "../core/array.js";
import type { Shard } from "./device-put.js";

/**
 * A plain-text table of which devices hold which block of a 1-D or 2-D array (JAX draws the same layout with
 * rich's box characters; this is the uncoloured grid with one row per block row and "CPU i,j" labels).
 */
export function visualizeArraySharding(x: Array, opts: { print?: boolean } = {}): string {
  if (x.ndim < 1 || x.ndim > 2)
    throw new Error(
      `visualizeArraySharding: only 1-D and 2-D arrays can be visualized, got shape (${x.shape.join(", ")})`,
    );
  const shards = x.addressableShards as Shard[];
  const rows = [...new Set(shards.map((s) => s.index[0][0]))].sort((a, b) => a - b);
  const cols = x.ndim === 2 ? [...new Set(shards.map((s) => s.index[1][0]))].sort((a, b) => a - b) : [0];
  const label = (r: number, c: number) => {
    const ids = shards
      .filter((s) => s.index[0][0] === r && (x.ndim === 1 || s.index[1][0] === c))
      .map((s) => s.device.id)
      .sort((a, b) => a - b);
    return `${(shards[0]?.device.platform ?? "cpu").toUpperCase()} ${ids.join(",")}`;
  };
  const cells = rows.map((r) => cols.map((c) => label(r, c)));
  const w = Math.max(...cells.flat().map((c) => c.length)) + 2;
  const line = (l: string, m: string, r: string) => l + cols.map(() => "─".repeat(w)).join(m) + r;
  const out = [line("┌", "┬", "┐")];
  cells.forEach((row, i) => {
    out.push(
      "│" +
        row
          .map((c) => {
            const pad = w - c.length;
            const lft = Math.floor(pad / 2);
            return " ".repeat(lft) + c + " ".repeat(pad - lft);
          })
          .join("│") +
        "│",
    );
    out.push(i === cells.length - 1 ? line("└", "┴", "┘") : line("├", "┼", "┤"));
  });
  const text = out.join("\n");
  if (opts.print !== false) console.log(text);
  return text;
}
export { callback, callbackContext, print, setPrintSink, type CallbackContext } from "./debug-print.js";
