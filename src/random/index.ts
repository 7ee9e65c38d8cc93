/** @file The jax.random namespace: typed/raw threefry2x32 keys and every sampler, bit-exact with JAX (both jax_threefry_partitionable modes, x32 and x64). */
export {
  PRNGKeyArray, type KeyLike, type KeyOptions, type BitsOptions, key, PRNGKey, split, foldIn, keyData, wrapKeyData, keyImpl, clone, bits,
  threefry2x32,
} from "./keys.js";
export {
  type ShapeDtypeOptions, type UniformOptions, type TruncatedNormalOptions, type RandintOptions, type BernoulliOptions, type RademacherOptions,
  type GumbelOptions, type ParamShapeDtypeOptions, type GeometricOptions, type TriangularOptions, type WeibullOptions,
  type DoubleSidedMaxwellOptions, uniform, normal, truncatedNormal, randint, bernoulli, rademacher, exponential, gumbel, laplace, logistic,
  cauchy, pareto, rayleigh, lognormal, wald, geometric, triangular, weibullMin, maxwell, doubleSidedMaxwell,
} from "./samplers.js";
export {
  type PermutationOptions, type ChoiceOptions, type CategoricalOptions, type PoissonOptions, type BinomialOptions, type MultinomialOptions,
  permutation, shuffle, choice, categorical, poisson, binomial, multinomial,
} from "./discrete.js";
export {
  type GammaOptions, type BetaOptions, type DirichletOptions, type ChisquareOptions, type TOptions, type FOptions,
  type GeneralizedNormalOptions, type BallOptions, gamma, loggamma, beta, dirichlet, chisquare, t, f, generalizedNormal, ball, randomGammaP,
} from "./gamma.js";
export { type MultivariateNormalOptions, type OrthogonalOptions, multivariateNormal, orthogonal } from "./linalg-samplers.js";
