/** @file The data-parallel MLP benchmark problem (784-512-10, global batch 256): parameters, batch and loss, shared by the device and multi-process benches. */
type Jaxts = typeof import("../src/index.js");
type Arr = import("../src/core/array.js").Array;

/** Fixed-key parameters, a batch of 256 and the softmax cross-entropy loss; pass the loaded package (benches load it after their config). */
export function mlpProblem({ numpy: jnp, nn, random }: Jaxts): {
  params: Arr[];
  xb: Arr;
  yb: Arr;
  loss: (p: Arr[], x: Arr, y: Arr) => Arr;
} {
  const [k1, k2, k3] = [1, 2, 3].map((s) => random.key(s));
  const params = [
    jnp.multiply(random.normal(k1, [784, 512]), 0.03),
    jnp.zeros([512]),
    jnp.multiply(random.normal(k2, [512, 10]), 0.03),
    jnp.zeros([10]),
  ];
  const xb = random.normal(k3, [256, 784]);
  const yb = jnp.astype(jnp.mod(jnp.arange(256), 10), "int32");
  const loss = (p: Arr[], x: Arr, y: Arr): Arr => {
    const h = nn.relu(jnp.add(jnp.matmul(x, p[0]), p[1]));
    const lp = nn.logSoftmax(jnp.add(jnp.matmul(h, p[2]), p[3]));
    return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(lp, nn.oneHot(y, 10)), -1)));
  };
  return { params, xb, yb, loss };
}
