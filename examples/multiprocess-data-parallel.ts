/**
 * @file Data-parallel MLP training over every device of every process: `mpirun -np 2 node dist/examples/multiprocess-data-parallel.js`
 * (2 processes x 2 CPU devices; as root add --allow-run-as-root). Each process holds the global batch; each device
 * computes the gradient of its slice and the pmean crosses processes over MPI. Run without mpirun it uses one process.
 */
import { config } from "../src/core/config.js";
config.update("numCpuDevices", 2);
import {
  type Array,
  devices,
  distributed,
  grad,
  jit,
  lax,
  makeMesh,
  numpy as jnp,
  processCount,
  processIndex,
  random,
  shardMap,
  sharding,
} from "../src/index.js";
const { P } = sharding;

distributed.initialize();
const mesh = makeMesh([devices().length], ["data"]);
const [k1, k2, k3] = random.split(random.key(0), 3) as unknown as Array[];
const x = random.normal(k1, [64 * devices().length, 16]);
const wTrue = random.normal(k2, [16, 4]);
const y = jnp.tanh(jnp.matmul(x, wTrue));
let params: Array[] = [jnp.multiply(random.normal(k3, [16, 32]), 0.2), jnp.zeros([32, 4])];
const loss = (p: Array[], xb: Array, yb: Array): Array =>
  jnp.mean(jnp.square(jnp.subtract(jnp.matmul(jnp.tanh(jnp.matmul(xb, p[0])), p[1]), yb)));
// per device: the gradient of its slice of the batch, averaged over every device of every process
const grads = shardMap((p: Array[], xb: Array, yb: Array) => grad(loss)(p, xb, yb).map((g) => lax.pmean(g, "data")), {
  mesh,
  inSpecs: [P(), P("data"), P("data")],
  outSpecs: P(),
});
const lossJ = jit(loss);
for (let step = 0; step <= 60; step++) {
  const g = grads(params, x, y) as Array[];
  params = params.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.5)));
  if (step % 20 === 0 && processIndex() === 0)
    console.log(`step ${String(step).padStart(2)}  loss ${(lossJ(params, x, y).item() as number).toFixed(5)}`);
}
if (processIndex() === 0)
  console.log(`${processCount()} process(es), mesh ${mesh} over devices [${mesh.deviceIds.join(", ")}]`);
