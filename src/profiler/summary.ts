/**
 * @file The summary of a trace file (`jaxts trace summary`): per device its compute, communication and idle time, the
 * top programs and collectives, host time by kind, and each StepTraceAnnotation step broken down by what ran in it.
 */
import { DEVICES_PID, DEVICE_TID0, HOST_PID, type TraceEvent, type TraceFile } from "./trace-file.js";
import { extent } from "../core/extent.js";

export interface NamedTotal {
  name: string;
  count: number;
  totalUs: number;
}
export interface CollectiveTotal extends NamedTotal {
  bytes: number;
  waitUs: number;
  transferUs: number;
}

export interface DeviceSummary {
  device: number;
  /** Time inside program runs (union of the device's run spans). */
  busyUs: number;
  /** Time inside collectives (union of collective spans). */
  communicationUs: number;
  /** busy - communication. */
  computeUs: number;
  /** The trace's extent minus busy. */
  idleUs: number;
  launches: number;
  programs: NamedTotal[];
  collectives: CollectiveTotal[];
}

export interface StepSummary {
  name: string;
  step: number;
  durationUs: number;
  /** Host time inside the step by category (op, jit, tracing, compile, transfer), each as the union of its spans. */
  host: Record<string, number>;
  /** Mean over the devices of their compute / communication / idle time inside the step. */
  deviceComputeUs: number;
  deviceCommunicationUs: number;
  deviceIdleUs: number;
}

export interface TraceSummary {
  /** From the first event's start to the last event's end. */
  extentUs: number;
  devices: DeviceSummary[];
  /** Host spans by category: union of the spans of each category (op, jit, tracing, compile, transfer, annotation). */
  host: Record<string, number>;
  topHost: NamedTotal[];
  steps: StepSummary[];
}

type Span = { ts: number; end: number };

/** Length of the union of intervals, clipped to [lo, hi]. */
function unionUs(spans: readonly Span[], lo = -Infinity, hi = Infinity): number {
  const iv = spans
    .map((s) => [Math.max(s.ts, lo), Math.min(s.end, hi)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0,
    curA = -Infinity,
    curB = -Infinity;
  for (const [a, b] of iv) {
    if (a > curB) {
      if (curB > curA) total += curB - curA;
      curA = a;
      curB = b;
    } else curB = Math.max(curB, b);
  }
  if (curB > curA) total += curB - curA;
  return total;
}

function totals(evs: readonly TraceEvent[], key: (e: TraceEvent) => string): NamedTotal[] {
  const m = new Map<string, NamedTotal>();
  for (const e of evs) {
    const k = key(e);
    let t = m.get(k);
    if (!t) m.set(k, (t = { name: k, count: 0, totalUs: 0 }));
    t.count++;
    t.totalUs += e.dur ?? 0;
  }
  return [...m.values()].sort((a, b) => b.totalUs - a.totalUs);
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Summarises a trace written by profiler.stopTrace (see TraceSummary). */
export function summarizeTrace(t: TraceFile, top = 10): TraceSummary {
  const xs = t.traceEvents.filter((e) => e.ph === "X");
  const span = (e: TraceEvent): Span => ({ ts: e.ts, end: e.ts + (e.dur ?? 0) });
  const lo = xs.length ? extent(xs.map((e) => e.ts))[0] : 0;
  const hi = xs.length ? extent(xs.map((e) => e.ts + (e.dur ?? 0)))[1] : 0;
  const dev = xs.filter((e) => e.pid === DEVICES_PID);
  const ids = [...new Set(dev.map((e) => e.tid - DEVICE_TID0))].sort((a, b) => a - b);
  const perDevice = (id: number, a = lo, b = hi) => {
    const mine = dev.filter((e) => e.tid === DEVICE_TID0 + id);
    const runs = mine.filter((e) => e.cat === "device"),
      colls = mine.filter((e) => e.cat === "collective");
    const busy = unionUs(runs.map(span), a, b),
      comm = unionUs(colls.map(span), a, b);
    return { runs, colls, busy, comm, compute: busy - comm, idle: b - a - busy };
  };
  const devices: DeviceSummary[] = ids.map((id) => {
    const d = perDevice(id);
    const cm = new Map<string, CollectiveTotal>();
    for (const e of d.colls) {
      const k = `${e.name} over ${String(e.args?.axes ?? "?")}`;
      let c = cm.get(k);
      if (!c) cm.set(k, (c = { name: k, count: 0, totalUs: 0, bytes: 0, waitUs: 0, transferUs: 0 }));
      c.count++;
      c.totalUs += e.dur ?? 0;
      c.bytes += Number(e.args?.bytes ?? 0);
      c.waitUs += Number(e.args?.wait_us ?? 0);
      c.transferUs += Number(e.args?.transfer_us ?? 0);
    }
    return {
      device: id,
      busyUs: r3(d.busy),
      communicationUs: r3(d.comm),
      computeUs: r3(d.compute),
      idleUs: r3(d.idle),
      launches: d.runs.length,
      programs: totals(d.runs, (e) => e.name).slice(0, top),
      collectives: [...cm.values()].sort((a, b) => b.totalUs - a.totalUs).slice(0, top),
    };
  });
  const hostEvs = xs.filter((e) => e.pid === HOST_PID && e.cat !== "step");
  const cats = [...new Set(hostEvs.map((e) => e.cat ?? ""))].sort();
  const hostBy = (a: number, b: number): Record<string, number> =>
    Object.fromEntries(cats.map((c) => [c, r3(unionUs(hostEvs.filter((e) => e.cat === c).map(span), a, b))]));
  const steps: StepSummary[] = xs
    .filter((e) => e.cat === "step")
    .sort((a, b) => a.ts - b.ts)
    .map((s) => {
      const a = s.ts,
        b = s.ts + (s.dur ?? 0);
      const per = ids.map((id) => perDevice(id, a, b));
      const mean = (f: (p: (typeof per)[number]) => number) =>
        per.length ? r3(per.reduce((acc, p) => acc + f(p), 0) / per.length) : 0;
      return {
        name: s.name,
        step: Number(s.args?.step_num ?? NaN),
        durationUs: r3(b - a),
        host: hostBy(a, b),
        deviceComputeUs: mean((p) => p.compute),
        deviceCommunicationUs: mean((p) => p.comm),
        deviceIdleUs: mean((p) => p.idle),
      };
    });
  return {
    extentUs: r3(hi - lo),
    devices,
    host: hostBy(lo, hi),
    topHost: totals(
      hostEvs.filter((e) => e.cat === "op" || e.cat === "jit"),
      (e) => e.name,
    ).slice(0, top),
    steps,
  };
}

const ms = (us: number): string => `${(us / 1000).toFixed(3)} ms`;
const pct = (a: number, b: number): string => (b > 0 ? `${((100 * a) / b).toFixed(1)}%` : "-");

/** The summary as the text `jaxts trace summary` prints. */
export function formatSummary(s: TraceSummary): string {
  const out: string[] = [`trace extent ${ms(s.extentUs)}`];
  for (const d of s.devices) {
    out.push(
      "",
      `Device ${d.device}: ${d.launches} launch(es); compute ${ms(d.computeUs)} (${pct(d.computeUs, s.extentUs)}), communication ${ms(d.communicationUs)} (${pct(d.communicationUs, s.extentUs)}), idle ${ms(d.idleUs)} (${pct(d.idleUs, s.extentUs)})`,
    );
    if (d.programs.length)
      out.push("  top programs:", ...d.programs.map((p) => `    ${p.name}  x${p.count}  ${ms(p.totalUs)}`));
    if (d.collectives.length) {
      out.push(
        "  top collectives:",
        ...d.collectives.map(
          (c) =>
            `    ${c.name}  x${c.count}  ${ms(c.totalUs)} (wait ${ms(c.waitUs)}, transfer ${ms(c.transferUs)})  ${c.bytes} B`,
        ),
      );
    }
  }
  out.push(
    "",
    `Host: ${
      Object.entries(s.host)
        .map(([k, v]) => `${k} ${ms(v)}`)
        .join(", ") || "no spans"
    }`,
  );
  if (s.topHost.length)
    out.push("  top ops / jit calls:", ...s.topHost.map((p) => `    ${p.name}  x${p.count}  ${ms(p.totalUs)}`));
  if (s.steps.length) {
    out.push("", "Steps:");
    for (const st of s.steps) {
      out.push(
        `  ${st.name} ${st.step}: ${ms(st.durationUs)}; devices (mean) compute ${ms(st.deviceComputeUs)}, communication ${ms(st.deviceCommunicationUs)}, idle ${ms(st.deviceIdleUs)}; host ${Object.entries(
          st.host,
        )
          .filter(([, v]) => v > 0)
          .map(([k, v]) => `${k} ${ms(v)}`)
          .join(", ")}`,
      );
    }
  }
  return out.join("\n");
}
