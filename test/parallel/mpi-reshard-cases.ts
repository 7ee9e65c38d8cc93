/**
 * @file Resharding cases run by test/parallel/mpi-worker.ts in its 2 x 2 and 3 x 1 jobs: devicePut of global arrays
 * to other PartitionSpecs and meshes over the same devices, and shardMap / jit whose in_specs differ from their global
 * arguments. Each case records this process's shards (and the host value's slices at their indices), the gathered
 * value, the bytes this process sent and the minimum the whole job must send (counted element by element).
 */
import { config } from "../../src/core/config.js";
import {
  type Array,
  devicePut,
  devices,
  jit,
  lax,
  localDevices,
  makeArrayFromCallback,
  makeMesh,
  multihostUtils,
  numpy as jnp,
  processCount,
  processIndex,
  shardMap,
  sharding,
} from "../../src/index.js";
import { Mesh } from "../../src/parallel/mesh.js";
import { processTransferStats } from "../../src/parallel/reshard-processes.js";
const { P, NamedSharding } = sharding;
type Sh = InstanceType<typeof NamedSharding>;
type Index = [number, number][];

/** One resharding as this process saw it. */
export interface ReshardCase {
  name: string;
  dtype: string;
  /** Process p's devices' shards: [device id, index, values] and the host value's slice at the same index. */
  shards: [number, Index, number[]][];
  wantShards: number[][];
  gathered: number[];
  want: number[];
  /** Bytes this process sent to other processes; the minimum for the whole job (summed over processes). */
  sent: number;
  minBytes: number;
  /** Whether devicePut returned its argument (same layout). */
  same: boolean;
  error?: string;
}

// complex elements ({re, im}) flatten to their two parts
const flat = (x: Array): number[] =>
  ([x.tolist()].flat(Infinity) as unknown[]).flatMap((e) =>
    typeof e === "object" && e !== null ? [(e as { re: number }).re, (e as { im: number }).im] : [e as number],
  );
const cvalues = (shape: number[]): Array =>
  lax.complex(values(shape, "float32"), jnp.astype(values(shape, "int32"), "float32"));
const values = (shape: number[], dtype: "float32" | "int32"): Array => {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = globalThis.Array.from({ length: n }, (_, i) =>
    dtype === "int32" ? ((i * 7919) % 201) - 100 : Math.sin(i * 1.37) * 10 + i * 0.01,
  );
  return jnp.reshape(jnp.array(v, { dtype }), shape);
};
const slice = (x: Array, ix: Index): Array =>
  lax.slice(
    x,
    ix.map((r) => r[0]),
    ix.map((r) => r[1]),
  );

/**
 * Bytes that must cross processes to go from `a` to `b`: for each process, each element held by one of its devices
 * under b and by none under a.
 */
function minBytes(a: Sh, b: Sh, shape: number[], bytes: number): number {
  const holds = (s: Sh, p: number): Index[] =>
    [...s.devicesIndicesMap(shape).entries()].filter(([d]) => d.processIndex === p).map(([, ix]) => ix);
  const inside = (ix: Index, e: number[]) => ix.every(([s, t], d) => e[d] >= s && e[d] < t);
  const n = shape.reduce((x, y) => x * y, 1);
  let total = 0;
  for (let p = 0; p < processCount(); p++) {
    const ha = holds(a, p),
      hb = holds(b, p);
    for (let i = 0; i < n; i++) {
      const e: number[] = [];
      let r = i;
      for (let d = shape.length - 1; d >= 0; d--) {
        e[d] = r % shape[d];
        r = Math.floor(r / shape[d]);
      }
      if (hb.some((ix) => inside(ix, e)) && !ha.some((ix) => inside(ix, e))) total += bytes;
    }
  }
  return total;
}

/** x's shards on this process, the host value's slices at their indices, and the gathered value. */
function record(name: string, y: Array, host: Array, sent: number, min: number, same: boolean): ReshardCase {
  const shards = (y.addressableShards as { device: { id: number }; index: Index; data: Array }[]).map(
    (s) => [s.device.id, s.index, flat(s.data)] as [number, Index, number[]],
  );
  return {
    name,
    dtype: y.dtype,
    shards,
    wantShards: shards.map(([, ix]) => flat(slice(host, ix))),
    gathered: flat(multihostUtils.processAllgather(y) as Array),
    want: flat(host),
    sent,
    minBytes: min,
    same,
  };
}

/** devicePut of a global array built with sharding `a` to sharding `b`. */
function put(name: string, host: Array, a: Sh, b: Sh, bytes = 4): ReshardCase {
  const x = makeArrayFromCallback(host.shape, a, (ix) => slice(host, ix as Index));
  const t0 = processTransferStats().bytesSent;
  let y: Array;
  try {
    y = devicePut(x, b);
  } catch (e) {
    return { ...record(name, x, host, 0, 0, false), error: (e as Error).message };
  }
  const sent = processTransferStats().bytesSent - t0;
  return record(name, y, host, sent, minBytes(a, b, [...host.shape], bytes), y === x);
}

/** Every resharding case of this job (every process calls them in the same order). */
export function reshardCases(): { cases: ReshardCase[]; errors: Record<string, string> } {
  config.update("spmdRuntime", "devices");
  const all = devices(),
    n = all.length,
    k = localDevices().length,
    np = processCount();
  const mesh = makeMesh([n], ["x"]);
  const S = (m: Mesh, ...spec: (string | string[] | null)[]) => new NamedSharding(m, P(...spec));
  const cases: ReshardCase[] = [];
  for (const dt of ["int32", "float32"] as const) {
    const v = values([2 * n, 3], dt),
      sq = values([2 * n, 2 * n], dt);
    cases.push(put(`x->none ${dt}`, v, S(mesh, "x"), S(mesh, null)));
    cases.push(put(`none->x ${dt}`, v, S(mesh, null), S(mesh, "x")));
    cases.push(put(`(x,none)->(none,x) ${dt}`, sq, S(mesh, "x", null), S(mesh, null, "x")));
    const m2 = makeMesh([np, k], ["a", "b"]);
    cases.push(put(`2-d (a,b)->(b,a) ${dt}`, sq, S(m2, ["a", "b"]), S(m2, "b", "a")));
    // another mesh over the same devices: the device order reversed, and (with 4 devices) a 2 x 2 of another order
    cases.push(put(`reversed mesh ${dt}`, v, S(mesh, "x"), S(new Mesh([...all].reverse(), ["y"]), "y")));
    if (n === 4) {
      const m22 = new Mesh(
        [
          [all[0], all[2]],
          [all[1], all[3]],
        ],
        ["u", "v"],
      );
      cases.push(put(`2x2 mesh (u,v) ${dt}`, sq, S(mesh, "x"), S(m22, "u", "v")));
    }
    cases.push(put(`same sharding ${dt}`, v, S(mesh, "x"), S(mesh, "x")));
  }
  // complex64: blocks and the packed messages carry (re, im) pairs (8 bytes an element)
  const csq = cvalues([2 * n, 2 * n]);
  cases.push(put("(x,none)->(none,x) complex64", csq, S(mesh, "x", null), S(mesh, null, "x"), 8));
  const mc = makeMesh([np, k], ["a", "b"]);
  cases.push(put("2-d (a,b)->(b,a) complex64", csq, S(mc, ["a", "b"]), S(mc, "b", "a"), 8));
  const errors: Record<string, string> = {};
  const x = makeArrayFromCallback([2 * n, 3], S(mesh, "x"), (ix) => slice(values([2 * n, 3], "float32"), ix as Index));
  const catchMsg = (f: () => unknown): string => {
    try {
      f();
      return "no error";
    } catch (e) {
      return (e as Error).message;
    }
  };
  errors.otherDevices = catchMsg(() => devicePut(x, S(new Mesh(all.slice(0, 2), ["z"]), "z")));
  const x5 = makeArrayFromCallback([2 * n, 5], S(mesh, "x"), (ix) => slice(values([2 * n, 5], "int32"), ix as Index));
  errors.indivisible = catchMsg(() => devicePut(x5, S(mesh, null, "x")));
  config.update("spmdRuntime", "emulation");
  return { cases, errors };
}

/**
 * A shardMap and a jit whose in_specs / inShardings differ from their global arguments' shardings: the device runtime
 * (arguments resharded across processes), gathered, and the same calls of the host values on the emulation.
 */
export function reshardPrograms(): { name: string; got: number[]; want: number[] }[] {
  const n = devices().length;
  const mesh = makeMesh([n], ["x"]);
  const host = values([2 * n, 2 * n], "float32"),
    w = jnp.multiply(values([2 * n, 3], "float32"), 0.01);
  const rows = new NamedSharding(mesh, P("x")),
    cols = new NamedSharding(mesh, P(null, "x"));
  const sm = shardMap((b: Array, c: Array) => [jnp.add(jnp.multiply(jnp.sin(b), 2), lax.psum(b, "x")), jnp.cos(c)], {
    mesh,
    inSpecs: [P(null, "x"), P()],
    outSpecs: [P(null, "x"), P()],
  });
  const f = (a: Array, c: Array): Array[] => [jnp.tanh(jnp.matmul(a, c)), jnp.multiply(a, 3)];
  const jf = jit(f, { inShardings: [cols, new NamedSharding(mesh, P())], outShardings: [rows, cols] });
  config.update("spmdRuntime", "emulation");
  const want = [...(sm(host, w) as Array[]), ...f(host, w)];
  config.update("spmdRuntime", "devices");
  const gx = makeArrayFromCallback(host.shape, rows, (ix) => slice(host, ix as Index));
  const gw = makeArrayFromCallback(w.shape, rows, (ix) => slice(w, ix as Index));
  const got = [...(sm(gx, gw) as Array[]), ...(jf(gx, gw) as Array[])];
  const gathered = got.map((y) => flat(multihostUtils.processAllgather(y) as Array));
  config.update("spmdRuntime", "emulation");
  const names = ["shardMap out 0", "shardMap out 1", "jit out 0", "jit out 1"];
  return names.map((name, i) => ({
    name: `${name} (process ${processIndex()})`,
    got: gathered[i],
    want: flat(want[i]),
  }));
}
