/** @file Hostile and interrupted checkpoints: shared references with an allocation cap, non-regular files, deep nesting, stale temporaries of killed saves. */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import { MAX_TREE_DEPTH, load, save } from "../../src/io/index.js";
import { TREE_KEY, FORMAT_KEY } from "../../src/io/checkpoint.js";
import { type RawTensor, MAX_HEADER_DEPTH, encode, jsonDepthExceeded } from "../../src/io/safetensors.js";

const dir = mkdtempSync(join(tmpdir(), "jaxts-ckpt-hard-"));
after(() => rmSync(dir, { recursive: true, force: true })); // crafted files and the killed save's temporary are tens of MB
let fileNo = 0;
const fresh = (name = "ckpt"): string => join(dir, `${name}-${fileNo++}.safetensors`);

function throwsWith(f: () => unknown, ...parts: string[]): void {
  assert.throws(f, (e: Error) => {
    for (const p of parts) assert.ok(e.message.includes(p), `expected ${JSON.stringify(p)} in: ${e.message}`);
    return true;
  });
}

/** A safetensors file holding `tensors` with jaxts metadata whose tree structure is the given JSON text. */
function craft(tensors: Map<string, RawTensor>, treeJson: string): string {
  const p = fresh("crafted");
  writeFileSync(p, encode(tensors, { [FORMAT_KEY]: "jaxts", [TREE_KEY]: treeJson }));
  return p;
}

const f32 = (values: number[]): RawTensor => ({
  dtype: "float32",
  shape: [values.length],
  bytes: new Uint8Array(new Float32Array(values).buffer),
});

test("two million references to one 4 KB tensor load as one shared Array, not 8 GB", () => {
  const values = globalThis.Array.from({ length: 1024 }, (_, i) => i * 0.5 - 7);
  const refs = 2_000_000;
  const p = craft(new Map([["t", f32(values)]]), `[${'"t",'.repeat(refs - 1)}"t"]`);
  const out = load(p) as Array[];
  assert.equal(out.length, refs);
  assert.ok(out[0] instanceof Array);
  assert.ok(
    out.every((a) => a === out[0]),
    "every reference is the same Array object",
  );
  assert.deepEqual(out[refs - 1].shape, [1024]);
  assert.deepEqual(out[refs - 1].tolist(), values);
});

test("a load's allocation is capped (by default twice the file size; maxBytes lowers it), with the numbers in the error", () => {
  const p = fresh();
  save(p, { a: jnp.zeros([1024], "float32"), b: jnp.ones([16], "float32") });
  const { a, b } = load(p) as { a: Array; b: Array };
  assert.equal(a.size + b.size, 1040);
  throwsWith(
    () => load(p, undefined, { maxBytes: 1000 }),
    "load: loading",
    JSON.stringify(p),
    "more than 1000 bytes",
    '4096 bytes by tensor "a"',
  );
  // the second tensor is what crosses the limit: the count is cumulative
  throwsWith(() => load(p, undefined, { maxBytes: 4100 }), "more than 4100 bytes", '4160 bytes by tensor "b"');
  assert.equal(load<{ b: Array }>(p, undefined, { maxBytes: 4160 }).b.size, 16);
  throwsWith(() => load(p, undefined, { maxBytes: -1 }), "maxBytes must be a non-negative number");
});

test("load refuses devices, directories and FIFOs instead of reading forever", () => {
  throwsWith(() => load("/dev/zero"), '"/dev/zero"', "a character device", "not a regular file");
  throwsWith(() => load(dir), "a directory", "not a regular file");
  const fifo = join(dir, "pipe");
  if (spawnSync("mkfifo", [fifo]).status === 0) throwsWith(() => load(fifo), "a FIFO", "not a regular file");
});

test("the header length is checked against the file size before anything else is read", () => {
  const p = fresh("bad");
  const b = Buffer.alloc(10);
  b.writeBigUInt64LE(1_000_000n);
  writeFileSync(p, b);
  throwsWith(() => load(p), "not a valid safetensors file", "header length is 1000000 bytes but only 2 bytes follow");
  b.writeBigUInt64LE(2n ** 63n);
  writeFileSync(p, b);
  throwsWith(() => load(p), "header length 9223372036854775808 exceeds");
});

test("deeply nested tree metadata or header is refused with a clear error, not a stack overflow", () => {
  const depth = 200_000;
  const p = craft(new Map([["t", f32([1])]]), "[".repeat(depth) + '"t"' + "]".repeat(depth));
  throwsWith(() => load(p), "tree structure nested deeper than", `${MAX_TREE_DEPTH} levels`);
  const deepHeader = `{"x":{"dtype":"F32","shape":${"[".repeat(depth)}${"]".repeat(depth)},"data_offsets":[0,0]}}`;
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(deepHeader.length));
  const q = fresh("bad");
  writeFileSync(q, Buffer.concat([len, Buffer.from(deepHeader)]));
  throwsWith(() => load(q), "nests objects/lists deeper than", `${MAX_HEADER_DEPTH} levels`);
  // brackets inside strings do not count; depth is counted per level
  assert.equal(jsonDepthExceeded('{"a":"[[[[[[[[[[","b":[[1]]}', 3), -1);
  assert.equal(jsonDepthExceeded('{"a":[[[1]]]}', 3), 7);
  assert.equal(jsonDepthExceeded('{"a\\"[[[[":[[1]]}', 3), -1);
});

test("pytrees nested a few hundred levels deep still round trip", () => {
  let x: unknown = jnp.array([3, 4], { dtype: "float32" });
  for (let i = 0; i < 400; i++) x = i % 2 ? [x] : { k: x };
  const p = fresh();
  save(p, x);
  let y = load(p);
  for (let i = 399; i >= 0; i--) y = i % 2 ? (y as unknown[])[0] : (y as { k: unknown }).k;
  assert.deepEqual((y as Array).tolist(), [3, 4]);
});

test("a save killed mid-write leaves a recognisable temporary, which the next save to that target removes", async (t) => {
  const sub = join(dir, "killed");
  mkdirSync(sub);
  const target = join(sub, "model.safetensors");
  const index = new URL("../../src/index.js", import.meta.url).href;
  // a save large enough that its write and fsync take a while; the child is killed as soon as its temporary appears
  let killedPid = 0,
    temps: string[] = [];
  for (let attempt = 0; attempt < 3 && temps.length === 0; attempt++) {
    const mib = 64 << attempt;
    const script = `const { numpy: jnp, save } = await import(${JSON.stringify(index)});
      const x = jnp.ones([${mib} * 262144], "float32"); x.dataSync(); process.stdout.write("ready\\n"); save(${JSON.stringify(target)}, { x });`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((res) => {
      child.stdout.once("data", () => res());
      child.once("exit", () => res());
    });
    // inotify (fs.watch) reports the temporary's creation at once; a slow poll covers missed events and the child's exit
    const found = await new Promise<string[]>((res) => {
      const check = () => {
        const t = readdirSync(sub).filter((n) => n.startsWith("model.safetensors.jaxts-tmp-"));
        if (t.length === 0 && child.exitCode === null) return;
        child.kill("SIGKILL");
        watcher.close();
        clearInterval(timer);
        res(t);
      };
      const watcher = watch(sub, check);
      const timer = setInterval(check, 5);
      check();
    });
    await new Promise<void>((res) =>
      child.exitCode !== null || child.signalCode !== null ? res() : child.once("exit", () => res()),
    );
    if (found.length && child.signalCode === "SIGKILL") {
      killedPid = child.pid!;
      temps = readdirSync(sub).filter((n) => n.includes(".jaxts-tmp-"));
      t.diagnostic(`save of ${mib} MiB killed mid-write on attempt ${attempt + 1}`);
    }
    // otherwise the child finished (or failed) before it could be killed: try a larger save
  }
  assert.equal(temps.length, 1, "the killed save left its temporary behind");
  assert.match(temps[0], new RegExp(`^model\\.safetensors\\.jaxts-tmp-${killedPid}-[0-9a-f]+$`));
  // a temporary of another target and one of a live process (this one) are not touched
  const other = `other.safetensors.jaxts-tmp-${killedPid}-abcdef`,
    mine = `model.safetensors.jaxts-tmp-${process.pid}-abcdef`;
  writeFileSync(join(sub, other), "x");
  writeFileSync(join(sub, mine), "x");
  save(target, { w: jnp.array([1, 2, 3], { dtype: "float32" }) });
  assert.deepEqual(readdirSync(sub).sort(), [mine, "model.safetensors", other].sort());
  assert.deepEqual((load(target) as { w: Array }).w.tolist(), [1, 2, 3]);
});
