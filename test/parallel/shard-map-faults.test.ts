/**
 * @file Faults of shardMap / pmap on the device runtime, from the user's side: a device-side error, a collective only
 * some devices reach (divergent control flow), peers that disagree on a collective's shape. Each raises an error
 * naming the program, the collective, the axis and the devices that arrived, and the next call on the same mesh works.
 */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, grad, jit, lax, makeMesh, numpy as jnp, pmap, shardMap, sharding } from "../../src/index.js";
import { deviceRuntimeUnavailable, failNextLaunch, openRendezvous } from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** f on the devices with a short collective timeout; dispatch is asynchronous, so its result is waited for (errors surface there). */
function onDevices<T extends Array>(f: () => T, timeoutMs = 300): T {
  const saved = config.collectiveTimeoutMs;
  config.update("spmdRuntime", "devices");
  config.update("collectiveTimeoutMs", timeoutMs);
  try {
    return f().blockUntilReady();
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    config.update("collectiveTimeoutMs", saved);
  }
}

test(
  "a device-side error on one rank fails the shardMap call naming the device, releases its peers, and the next call works",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = values([8, 3], "float32");
    const f = shardMap((b: Array) => lax.psum(jnp.sin(b), "x"), { mesh, inSpecs: P("x"), outSpecs: P() });
    // the peers are blocked in the psum for the failing rank: they are released at once, not after the timeout
    assert.throws(
      () =>
        onDevices(() => {
          failNextLaunch(1);
          return f(x);
        }, 60000),
      (e: Error) =>
        /program shard_map failed on devices \[0, 1, 2, 3\]: device 1 \(rank 1\): test hook/.test(e.message) &&
        /released because the launch failed/.test(e.message),
    );
    assert.equal(openRendezvous(), 0, "no rendezvous left open");
    sameOnDevices("the next call", mesh.deviceIds, () => f(x));
    // a failure in the backward pass of grad (the transposed shard_map) likewise
    const loss = (v: Array) => jnp.sum(jnp.square(f(v)));
    assert.throws(
      () =>
        onDevices(
          () =>
            grad((v: Array) => {
              const l = loss(v);
              failNextLaunch(3);
              return l;
            })(x),
          60000,
        ),
      /device 3 \(rank 3\): test hook/,
    );
    sameOnDevices("grad after the failure", mesh.deviceIds, () => grad(loss)(x), true, 1e-4);
    // and in a jitted program on 8 devices
    const m8 = makeMesh([8], ["x"]);
    const j = jit((v: Array) =>
      jnp.multiply(shardMap((b: Array) => lax.pmax(b, "x"), { mesh: m8, inSpecs: P("x"), outSpecs: P() })(v), 2),
    );
    assert.throws(
      () =>
        onDevices(() => {
          failNextLaunch(7);
          return j(values([16, 2], "int32"));
        }, 60000),
      /devices \[0, 1, 2, 3, 4, 5, 6, 7\]: device 7 \(rank 7\): test hook/,
    );
    sameOnDevices("jit after the failure", m8.deviceIds, () => j(values([16, 2], "int32")));
  },
);

test(
  "a collective only some devices reach (divergent cond) times out naming it, its axis and the devices that arrived; the next call works",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = values([8, 2], "float32");
    const divergent = shardMap(
      (b: Array) =>
        lax.cond(
          jnp.equal(lax.axisIndex("x"), 2),
          (v: Array) => jnp.multiply(v, 2),
          (v: Array) => lax.psum(v, "x"),
          b,
        ) as Array,
      { mesh, inSpecs: P("x"), outSpecs: P("x") },
    );
    assert.throws(
      () => onDevices(() => divergent(x)),
      /program shard_map failed.*psum over mesh axis 'x' \(group of ranks \[0, 1, 2, 3\]\) timed out after 300 ms: ranks that arrived \[0, 1, 3\], missing \[2\]/,
    );
    assert.equal(openRendezvous(), 0);
    const f = shardMap((b: Array) => lax.psum(b, "x"), { mesh, inSpecs: P("x"), outSpecs: P() });
    sameOnDevices("the next call", mesh.deviceIds, () => f(x));
    // pmap over 2 devices: all_gather reached by device 0 only
    const pm = pmap(
      (b: Array) =>
        lax.cond(
          jnp.equal(lax.axisIndex("i"), 0),
          (v: Array) => jnp.sum(lax.allGather(v, "i"), 0),
          (v: Array) => v,
          b,
        ) as Array,
      "i",
    );
    assert.throws(
      () => onDevices(() => pm(values([2, 3], "float32"))),
      /all_gather over mesh axis 'i' .*timed out after 300 ms: ranks that arrived \[0\], missing \[1\]/,
    );
    sameOnDevices("pmap after the failure", [0, 1], () =>
      pmap((b: Array) => lax.allGather(b, "i"), "i")(values([2, 3], "float32")),
    );
    // a 2-D mesh: the psum over "b" of the row a = 1 misses one member; the group is named
    const m2 = makeMesh([2, 2], ["a", "b"]);
    const rows = shardMap(
      (blk: Array) =>
        lax.cond(
          jnp.logicalAnd(jnp.equal(lax.axisIndex("a"), 1), jnp.equal(lax.axisIndex("b"), 1)),
          (v: Array) => v,
          (v: Array) => lax.psum(v, "b"),
          blk,
        ) as Array,
      { mesh: m2, inSpecs: P("a", "b"), outSpecs: P("a", "b") },
    );
    assert.throws(
      () => onDevices(() => rows(values([4, 4], "int32"))),
      /psum over mesh axis 'b' \(group of ranks \[2, 3\]\) timed out after 300 ms: ranks that arrived \[2\], missing \[3\]/,
    );
    sameOnDevices("2-D mesh after the failure", m2.deviceIds, () =>
      shardMap((blk: Array) => lax.psum(blk, "b"), { mesh: m2, inSpecs: P("a", "b"), outSpecs: P("a", null) })(
        values([4, 4], "int32"),
      ),
    );
    assert.equal(openRendezvous(), 0);
  },
);

test("peers that disagree on a collective's shape fail together naming it; the next call works", { skip }, () => {
  const mesh = makeMesh([4], ["x"]);
  const x = values([8, 2], "float32");
  // rank 2 psums a scalar where the others psum their [2, 2] block
  const mismatch = shardMap(
    (b: Array) =>
      lax.cond(
        jnp.equal(lax.axisIndex("x"), 2),
        (v: Array) => jnp.add(jnp.multiply(v, 0), lax.psum(jnp.sum(v), "x")),
        (v: Array) => lax.psum(v, "x"),
        b,
      ) as Array,
    { mesh, inSpecs: P("x"), outSpecs: P("x") },
  );
  assert.throws(
    () => onDevices(() => mismatch(x), 5000),
    /psum over mesh axis 'x' \(group of ranks \[0, 1, 2, 3\]\) on rank \d: peers disagree: rank 2 called AllReduce of 1 elements/,
  );
  assert.equal(openRendezvous(), 0);
  sameOnDevices("the next call", mesh.deviceIds, () =>
    shardMap((b: Array) => lax.psum(b, "x"), { mesh, inSpecs: P("x"), outSpecs: P() })(x),
  );
});
