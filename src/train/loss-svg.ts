/** @file A small hand-written SVG line chart of the training loss (and held-out accuracy marks) for the job's output. */
import { extent } from "../core/extent.js";

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (x: number): string =>
  Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toPrecision(2);

/**
 * An SVG document plotting losses[i] at step i + 1 (a log-scale y axis when the losses span more than a decade),
 * with optional evaluation points (step, accuracy in [0, 1]) on a second axis at the right.
 */
export function lossCurveSvg(
  losses: readonly number[],
  opts: { title?: string; evals?: readonly { step: number; accuracy: number }[]; width?: number; height?: number } = {},
): string {
  const W = opts.width ?? 720,
    H = opts.height ?? 360;
  const m = { l: 60, r: 60, t: 30, b: 40 };
  const pw = W - m.l - m.r,
    ph = H - m.t - m.b;
  const finite = losses.filter((x) => Number.isFinite(x) && x > 0);
  const [lo, hi] = finite.length ? extent(finite) : [1, 1];
  const log = hi / lo > 10;
  const f = (v: number) => (log ? Math.log10(v) : v);
  const y0 = f(lo),
    y1 = f(hi) === y0 ? y0 + 1 : f(hi);
  const n = Math.max(1, losses.length);
  const X = (step: number) => m.l + (n === 1 ? 0 : ((step - 1) / (n - 1)) * pw);
  const Y = (v: number) => m.t + ph - ((f(v) - y0) / (y1 - y0)) * ph;
  // thin long curves to ~1 point per pixel column (min and max of each column keep the spikes)
  const pts: string[] = [];
  const per = Math.max(1, Math.floor(losses.length / pw));
  for (let i = 0; i < losses.length; i += per) {
    const chunk = losses.slice(i, i + per).filter((x) => Number.isFinite(x) && x > 0);
    if (!chunk.length) continue;
    const [b, a] = extent(chunk);
    pts.push(`${X(i + 1).toFixed(1)},${Y(a).toFixed(1)}`);
    if (b !== a) pts.push(`${X(i + 1).toFixed(1)},${Y(b).toFixed(1)}`);
  }
  const ticks: string[] = [];
  for (let k = 0; k <= 4; k++) {
    const fv = y0 + ((y1 - y0) * k) / 4,
      v = log ? 10 ** fv : fv,
      y = m.t + ph - (ph * k) / 4;
    ticks.push(
      `<line x1="${m.l}" y1="${y.toFixed(1)}" x2="${m.l + pw}" y2="${y.toFixed(1)}" stroke="#eee"/>`,
      `<text x="${m.l - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`,
    );
  }
  for (let k = 0; k <= 4; k++) {
    const step = Math.round(1 + ((n - 1) * k) / 4);
    ticks.push(`<text x="${X(step).toFixed(1)}" y="${m.t + ph + 18}" text-anchor="middle">${step}</text>`);
  }
  const evals = (opts.evals ?? []).map((e) => {
    const x = X(Math.min(Math.max(e.step, 1), n)).toFixed(1),
      y = (m.t + ph - e.accuracy * ph).toFixed(1);
    return `<circle cx="${x}" cy="${y}" r="3.5" fill="#d62728"><title>step ${e.step}: ${(e.accuracy * 100).toFixed(1)}%</title></circle>`;
  });
  const right = opts.evals?.length
    ? `<text x="${m.l + pw + 6}" y="${m.t + 4}">100%</text><text x="${m.l + pw + 6}" y="${m.t + ph + 4}">0%</text>` +
      `<text x="${W - 8}" y="${m.t + ph / 2}" fill="#d62728" text-anchor="middle" transform="rotate(90 ${W - 8} ${m.t + ph / 2})">held-out exact match</text>`
    : "";
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="13">${esc(opts.title ?? "training loss")}</text>`,
    ...ticks,
    `<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`,
    `<polyline fill="none" stroke="#1f77b4" stroke-width="1.2" points="${pts.join(" ")}"/>`,
    ...evals,
    right,
    `<text x="${m.l + pw / 2}" y="${H - 6}" text-anchor="middle">step</text>`,
    `<text x="14" y="${m.t + ph / 2}" text-anchor="middle" transform="rotate(-90 14 ${m.t + ph / 2})">loss${log ? " (log)" : ""}</text>`,
    `</svg>`,
    "",
  ].join("\n");
}
