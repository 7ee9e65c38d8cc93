/**
 * @file No silently misread calls: every function exported by the built package (dist/src/index.js and its namespaces) has a
 * row here. A row either calls the function with a misspelled option (or an options object it does not take) and expects an
 * error naming the function and the key, or says why the function takes no options. A new export without a row fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jaxts from "../src/index.js";

type Fn = (...a: never[]) => unknown;
type Call = (f: (...a: unknown[]) => unknown) => unknown;
/** kind "options": takes an options object; "fixed": takes none, an extra one raises; "none": no call, only the reason. */
interface Row {
  kind: "options" | "fixed" | "none";
  call?: Call;
  reason?: string;
  alias?: string;
}

const B = { zzBogus: 1 };
const { numpy: np } = jaxts;
const x = () =>
  np.array([
    [1.5, 2, 3],
    [4, 5, 6.5],
  ]);
const y = () =>
  np.array([
    [1, 2, 3],
    [4, 5, 6],
  ]);
const z = () => np.array([1, 2, 3]);
const sq = () =>
  np.array([
    [4, 1],
    [1, 3],
  ]);
const key = () => jaxts.random.key(0);
const img = () => np.ones([1, 1, 4, 4]);
const ker = () => np.ones([1, 1, 2, 2]);

function group(kind: "options" | "fixed", call: Call, names: string[]): [string, Row][] {
  return names.map((n) => [n, { kind, call }]);
}
const none = (reason: string, names: string[]): [string, Row][] => names.map((n) => [n, { kind: "none", reason }]);
const one = (name: string, kind: "options" | "fixed", call: Call, alias?: string): [string, Row] => [
  name,
  { kind, call, alias },
];

// a data table, kept packed (one row group per line) rather than one name per line
// prettier-ignore
const TABLE: Map<string, Row> = new Map([
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(B), [
    "nn.initializers.deltaOrthogonal", "nn.initializers.glorotNormal", "nn.initializers.glorotUniform",
    "nn.initializers.heNormal", "nn.initializers.heUniform", "nn.initializers.kaimingNormal", "nn.initializers.kaimingUniform",
    "nn.initializers.lecunNormal", "nn.initializers.lecunUniform", "nn.initializers.normal", "nn.initializers.orthogonal",
    "nn.initializers.truncatedNormal", "nn.initializers.uniform", "nn.initializers.xavierNormal", "nn.initializers.xavierUniform",
    "numpy.meshgrid", "optim.addDecayedWeights", "optim.scaleByAdam", "optim.scaleByRms", "optim.scaleByRss",
    "optim.scaleByStddev", "optim.scaleByTrustRatio", "optim.scaleByLion", "optim.scaleByBelief", "optim.scaleByYogi", "optim.scaleByRadam",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), B), [
    "lax.abs", "lax.acos", "lax.acosh", "lax.asin", "lax.asinh", "lax.atan", "lax.atanh", "lax.cbrt", "lax.ceil", "lax.clz",
    "lax.cos", "lax.cosh", "lax.digamma", "lax.erf", "lax.erfInv", "lax.erfc", "lax.exp", "lax.exp2", "lax.expm1", "lax.floor",
    "lax.isFinite", "lax.lgamma", "lax.linalg.lu", "lax.log", "lax.log1p", "lax.logistic", "lax.neg", "lax.not",
    "lax.populationCount", "lax.rsqrt", "lax.sign", "lax.sin", "lax.sinh", "lax.sqrt", "lax.square", "lax.stopGradient",
    "lax.tan", "lax.tanh", "makeJaxpr", "nn.hardSigmoid", "nn.hardSilu", "nn.hardSwish", "nn.hardTanh", "nn.identity",
    "nn.log1mexp", "nn.logSigmoid", "nn.mish", "nn.relu", "nn.relu6", "nn.selu", "nn.sigmoid", "nn.silu", "nn.softSign",
    "nn.softplus", "nn.sparsePlus", "nn.sparseSigmoid", "nn.swish", "nn.tanh", "numpy.abs", "numpy.absolute", "numpy.acos",
    "numpy.acosh", "numpy.arccos", "numpy.arccosh", "numpy.arcsin", "numpy.arcsinh", "numpy.arctan", "numpy.arctanh",
    "numpy.asin", "numpy.asinh", "numpy.atan", "numpy.atanh", "numpy.bartlett", "numpy.bitwiseCount", "numpy.bitwiseInvert",
    "numpy.bitwiseNot", "numpy.blackman", "numpy.cbrt", "numpy.ceil", "numpy.columnStack", "numpy.conj", "numpy.conjugate",
    "numpy.cos", "numpy.cosh", "numpy.deg2rad", "numpy.degrees", "numpy.diagIndicesFrom", "numpy.exp", "numpy.exp2",
    "numpy.expm1", "numpy.fabs", "numpy.fix", "numpy.fliplr", "numpy.flipud", "numpy.floor", "numpy.frexp", "numpy.hamming",
    "numpy.hanning", "numpy.imag", "numpy.invert", "numpy.iscomplex", "numpy.iscomplexobj", "numpy.isfinite", "numpy.isinf",
    "numpy.isnan", "numpy.isneginf", "numpy.isposinf", "numpy.isreal", "numpy.isrealobj", "numpy.isscalar", "numpy.linalg.det",
    "numpy.linalg.inv", "numpy.linalg.matrixTranspose", "numpy.linalg.multiDot", "numpy.linalg.svdvals", "numpy.log",
    "numpy.log10", "numpy.log1p", "numpy.log2", "numpy.logicalNot", "numpy.matrixTranspose", "numpy.modf", "numpy.msort",
    "numpy.ndim", "numpy.negative", "numpy.positive", "numpy.rad2deg", "numpy.radians", "numpy.real", "numpy.reciprocal",
    "numpy.rint", "numpy.shape", "numpy.sign", "numpy.signbit", "numpy.sin", "numpy.sinc", "numpy.sinh", "numpy.sqrt",
    "numpy.square", "numpy.tan", "numpy.tanh", "numpy.trunc", "optim.clip", "optim.clipByGlobalNorm", "optim.constantSchedule",
    "optim.globalNorm", "optim.safeIncrement", "optim.scale", "optim.scaleBySchedule", "random.clone", "random.keyData",
    "random.keyImpl", "scipy.special.digamma", "scipy.special.entr", "scipy.special.erf", "scipy.special.erfc",
    "scipy.special.erfinv", "scipy.special.expit", "scipy.special.gamma", "scipy.special.gammaln", "scipy.special.logExpit",
    "scipy.special.logNdtr", "scipy.special.logit", "scipy.special.ndtr", "scipy.special.ndtri",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(x(), B), [
    "checkpoint", "customJvp", "customVjp", "lax.cumlogsumexp", "lax.cummax", "lax.cummin", "lax.cumprod", "lax.cumsum",
    "lax.linalg.cholesky", "lax.linalg.eigh", "lax.linalg.qr", "lax.linalg.svd", "lax.sort", "nn.celu", "nn.elu", "nn.gelu",
    "nn.glu", "nn.leakyRelu", "nn.logSoftmax", "nn.logmeanexp", "nn.logsumexp", "nn.normalize", "nn.softmax", "nn.squareplus",
    "nn.standardize", "numpy.all", "numpy.amax", "numpy.amin", "numpy.any", "numpy.argmax", "numpy.argmin", "numpy.argsort",
    "numpy.argwhere", "numpy.around", "numpy.array", "numpy.arraySplit", "numpy.asarray", "numpy.average", "numpy.bincount",
    "numpy.broadcastTo", "numpy.clip", "numpy.concat", "numpy.concatenate", "numpy.copy", "numpy.corrcoef", "numpy.countNonzero",
    "numpy.cov", "numpy.cumprod", "numpy.cumsum", "numpy.cumulativeProd", "numpy.cumulativeSum", "numpy.diag", "numpy.diagflat",
    "numpy.diagonal", "numpy.diff", "numpy.dstack", "numpy.ediff1d", "numpy.einsum", "numpy.emptyLike", "numpy.expandDims",
    "numpy.flatnonzero", "numpy.flip", "numpy.gradient", "numpy.histogram", "numpy.histogramBinEdges", "numpy.hstack",
    "numpy.lexsort", "numpy.linalg.cholesky", "numpy.linalg.cond", "numpy.linalg.diagonal", "numpy.linalg.eigh",
    "numpy.linalg.eigvalsh", "numpy.linalg.matrixNorm", "numpy.linalg.matrixRank", "numpy.linalg.norm", "numpy.linalg.pinv",
    "numpy.linalg.qr", "numpy.linalg.slogdet", "numpy.linalg.svd", "numpy.linalg.tensorinv", "numpy.linalg.trace", "numpy.linalg.vectorNorm",
    "numpy.logsumexp", "numpy.max", "numpy.mean", "numpy.median", "numpy.min", "numpy.moveaxis", "numpy.nanToNum",
    "numpy.nanargmax", "numpy.nanargmin", "numpy.nancumprod", "numpy.nancumsum", "numpy.nanmax", "numpy.nanmean",
    "numpy.nanmedian", "numpy.nanmin", "numpy.nanprod", "numpy.nanstd", "numpy.nansum", "numpy.nanvar", "numpy.nonzero",
    "numpy.onesLike", "numpy.pad", "numpy.permuteDims", "numpy.polyder", "numpy.polyint", "numpy.prod", "numpy.ptp",
    "numpy.ravel", "numpy.repeat", "numpy.reshape", "numpy.roll", "numpy.roots", "numpy.rot90", "numpy.round", "numpy.size",
    "numpy.sort", "numpy.split", "numpy.squeeze", "numpy.stack", "numpy.std", "numpy.sum", "numpy.swapaxes", "numpy.trace",
    "numpy.transpose", "numpy.trapezoid", "numpy.tril", "numpy.triu", "numpy.unique", "numpy.uniqueAll", "numpy.uniqueCounts",
    "numpy.uniqueInverse", "numpy.uniqueValues", "numpy.unstack", "numpy.unwrap", "numpy.vander", "numpy.var", "numpy.vstack",
    "numpy.zerosLike", "optim.adabelief", "optim.lion", "optim.yogi", "optim.radam", "optim.adagrad", "optim.adam", "optim.adamw", "optim.lamb", "optim.nadam", "optim.nadamw", "optim.rmsprop",
    "optim.scaleByLearningRate", "optim.sgd", "optim.trace", "pmap", "random.PRNGKey", "random.key", "remat",
    "scipy.special.logSoftmax", "scipy.special.logsumexp", "scipy.special.softmax", "shardMap", "xmap",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), B), [
    "lax.add", "lax.and", "lax.atan2", "lax.bitcastConvertType", "lax.concatenate", "lax.div", "lax.eq", "lax.expandDims",
    "lax.ge", "lax.gt", "lax.integerPow", "lax.le", "lax.lt", "lax.map", "lax.max", "lax.min", "lax.mul", "lax.ne",
    "lax.nextafter", "lax.or", "lax.polygamma", "lax.pow", "lax.reduceAnd", "lax.reduceMax", "lax.reduceMin", "lax.reduceOr",
    "lax.reduceProd", "lax.reduceSum", "lax.reduceXor", "lax.rem", "lax.reshape", "lax.rev", "lax.round", "lax.selectN",
    "lax.shiftLeft", "lax.shiftRightArithmetic", "lax.shiftRightLogical", "lax.squeeze", "lax.sub", "lax.transpose",
    "lax.withShardingConstraint", "lax.xor", "nn.initializers.constant", "numpy.add", "numpy.arctan2", "numpy.arrayEquiv",
    "numpy.at", "numpy.atan2", "numpy.bitwiseAnd", "numpy.bitwiseLeftShift", "numpy.bitwiseOr", "numpy.bitwiseRightShift",
    "numpy.bitwiseXor", "numpy.copysign", "numpy.diagIndices", "numpy.divide", "numpy.divmod", "numpy.dsplit", "numpy.equal",
    "numpy.floatPower", "numpy.floorDivide", "numpy.fmax", "numpy.fmin", "numpy.fmod", "numpy.gcd", "numpy.greater",
    "numpy.greaterEqual", "numpy.heaviside", "numpy.hsplit", "numpy.hypot", "numpy.kaiser", "numpy.kron", "numpy.lcm",
    "numpy.ldexp", "numpy.leftShift", "numpy.less", "numpy.lessEqual", "numpy.linalg.matrixPower", "numpy.linalg.outer",
    "numpy.linalg.solve", "numpy.logaddexp", "numpy.logaddexp2", "numpy.logicalAnd", "numpy.logicalOr", "numpy.logicalXor",
    "numpy.maximum", "numpy.minimum", "numpy.mod", "numpy.multiply", "numpy.nextafter", "numpy.notEqual", "numpy.outer",
    "numpy.polyadd", "numpy.polysub", "numpy.pow", "numpy.power", "numpy.remainder", "numpy.resize", "numpy.rightShift",
    "numpy.subtract", "numpy.tile", "numpy.trilIndicesFrom", "numpy.triuIndicesFrom", "numpy.trueDivide",
    "numpy.unravelIndex", "numpy.vsplit", "optim.joinSchedules", "optim.masked", "optim.piecewiseConstantSchedule",
    "random.foldIn", "random.split", "random.threefry2x32", "scipy.special.betaln", "scipy.special.klDiv",
    "scipy.special.multigammaln", "scipy.special.polygamma", "scipy.special.relEntr", "scipy.special.xlog1py",
    "scipy.special.xlogy", "tree.flatten", "tree.leafPaths", "tree.leaves", "tree.registerNode", "tree.structure",
    "tree.unflatten",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(x(), y(), B), [
    "numpy.linalg.tensorsolve",
    "lax.linalg.triangularSolve", "lax.topK", "numpy.allclose", "numpy.append", "numpy.argpartition", "numpy.arrayEqual",
    "numpy.choose", "numpy.compress", "numpy.convolve", "numpy.correlate", "numpy.cross", "numpy.delete", "numpy.digitize",
    "numpy.dot", "numpy.extract", "numpy.fullLike", "numpy.geomspace", "numpy.getitem", "numpy.inner", "numpy.isclose",
    "numpy.isin", "numpy.linalg.cross", "numpy.linalg.lstsq", "numpy.linalg.matmul", "numpy.linalg.tensordot",
    "numpy.linalg.triangularSolve", "numpy.linalg.vecdot", "numpy.linspace", "numpy.logspace", "numpy.matmul", "numpy.matvec",
    "numpy.nanpercentile", "numpy.nanquantile", "numpy.partition", "numpy.percentile", "numpy.polymul", "numpy.polyval",
    "numpy.quantile", "numpy.ravelMultiIndex", "numpy.searchsorted", "numpy.select", "numpy.take", "numpy.takeAlongAxis",
    "numpy.tensordot", "numpy.topK", "numpy.vdot", "numpy.vecdot", "numpy.vecmat", "optim.cosineDecaySchedule",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), z(), B), [
    "jvp", "lax.argmax", "lax.argmin", "lax.broadcastInDim", "lax.clamp", "lax.convDimensionNumbers", "lax.dynamicSlice",
    "lax.dynamicUpdateSlice", "lax.iota", "lax.pad", "lax.select", "lax.whileLoop", "numpy.applyOverAxes",
    "numpy.trilIndices", "numpy.triuIndices", "optim.warmupConstantSchedule", "random.shuffle", "scipy.stats.norm.cdf",
    "scipy.stats.norm.isf", "scipy.stats.norm.logcdf", "scipy.stats.norm.logpdf", "scipy.stats.norm.logsf",
    "scipy.stats.norm.pdf", "scipy.stats.norm.ppf", "scipy.stats.norm.sf",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(x(), y(), z(), B), [
    "lax.scan", "nn.dotProductAttention", "numpy.insert", "numpy.interp", "numpy.polyfit", "numpy.put", "numpy.putAlongAxis",
    "numpy.trimZeros", "numpy.where", "optim.exponentialDecay", "optim.linearSchedule",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f((v: unknown) => v, B), [
    "grad", "hessian", "jacfwd", "jacrev", "jit", "valueAndGrad", "vmap",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(key(), B), [
    "random.ball", "random.bernoulli", "random.beta", "random.binomial", "random.bits", "random.categorical", "random.cauchy",
    "random.chisquare", "random.choice", "random.dirichlet", "random.doubleSidedMaxwell", "random.exponential", "random.f",
    "random.gamma", "random.generalizedNormal", "random.geometric", "random.gumbel", "random.laplace", "random.loggamma",
    "random.logistic", "random.lognormal", "random.maxwell", "random.multinomial", "random.multivariateNormal", "random.normal",
    "random.orthogonal", "random.pareto", "random.permutation", "random.poisson", "random.rademacher", "random.randint",
    "random.rayleigh", "random.t", "random.triangular", "random.truncatedNormal", "random.uniform", "random.wald",
    "random.weibullMin",
  ]),
  // ---- calls the generic forms above do not reach
  one("vjp", "options", (f) => f(np.sin, x(), { hasAux: false, zzBogus: 1 })),
  one("linearize", "fixed", (f) => f(np.sin, x(), B), "jnp.sin"),
  one("evalShape", "fixed", (f) => f(np.sin, x(), B), "jnp.sin"),
  one("config.update", "options", () => jaxts.config.update("zzBogus" as never, 1 as never), "config.update"),
  one("lax.conv", "options", (f) => f(img(), ker(), [1, 1], "VALID", B)),
  one("lax.convGeneralDilated", "options", (f) => f(img(), ker(), [1, 1], "VALID", B)),
  one("lax.convTranspose", "options", (f) => f(img(), ker(), [1, 1], "VALID", B)),
  one("lax.convWithGeneralPadding", "options", (f) => f(img(), ker(), [1, 1], "VALID", null, null, B)),
  one("lax.convertElementType", "fixed", (f) => f(x(), "int32", B)),
  one("lax.padtypeToPads", "fixed", (f) => f([4], [2], [1], "SAME", B)),
  one("lax.dynamicSliceInDim", "fixed", (f) => f(x(), 0, 1, 0, B)),
  one("lax.dynamicUpdateSliceInDim", "fixed", (f) => f(x(), x(), 0, 0, B)),
  one("lax.foriLoop", "fixed", (f) => f(0, 2, (_i: unknown, c: unknown) => c, 0, B)),
  one("lax.slice", "fixed", (f) => f(x(), [0, 0], [1, 1], null, B)),
  one("lax.sliceInDim", "fixed", (f) => f(x(), 0, 1, 1, 0, B)),
  one("lax.dotGeneral", "fixed", (f) => f(x(), x(), [[[1], [1]], [[], []]], null, B)),
  one("lax.gather", "fixed", (f) => f(x(), np.array([[0]]), [0], "clip", null, B)),
  one("lax.scatter", "fixed", (f) => f(x(), np.array([[0]]), np.ones([1, 3]), [0], "add", "clip", B)),
  one("lax.reduceWindow", "fixed", (f) => f(x(), 0, jaxts.lax.add, [1, 2], [1, 1], "VALID", null, null, B)),
  one("lax.reduceWindowMax", "fixed", (f) => f(x(), [1, 2], [1, 1], "VALID", null, null, B)),
  one("lax.reduceWindowMin", "fixed", (f) => f(x(), [1, 2], [1, 1], "VALID", null, null, B)),
  one("lax.reduceWindowSum", "fixed", (f) => f(x(), [1, 2], [1, 1], "VALID", null, null, B)),
  one("nn.initializers.ones", "fixed", (f) => f(key(), [2], "float32", B)),
  one("nn.initializers.zeros", "fixed", (f) => f(key(), [2], "float32", B)),
  one("nn.initializers.varianceScaling", "options", (f) => f(1, "fanIn", "normal", B)),
  one("nn.oneHot", "options", (f) => f(z(), 4, B), "one_hot"),
  one("numpy.arange", "options", (f) => f(0, 5, 1, B)),
  one("numpy.astype", "options", (f) => f(x(), "int32", B)),
  one("numpy.empty", "options", (f) => f([2], B)),
  one("numpy.eye", "options", (f) => f(2, B)),
  one("numpy.fromfunction", "options", (f) => f((i: unknown) => i, [2], B)),
  one("numpy.full", "options", (f) => f([2], 1, B)),
  one("numpy.identity", "options", (f) => f(2, B)),
  one("numpy.indices", "options", (f) => f([2], B)),
  one("numpy.ones", "options", (f) => f([2], B)),
  one("numpy.tri", "options", (f) => f(2, B)),
  one("numpy.zeros", "options", (f) => f([2], B)),
  one("optim.applyUpdates", "fixed", (f) => f({ a: x() }, { a: x() }, B)),
  one("optim.polynomialSchedule", "options", (f) => f(1, 0, 1, 10, B)),
  one("optim.warmupCosineDecaySchedule", "options", (f) => f(0, 1, 2, 10, B)),
  one("optim.warmupExponentialDecaySchedule", "options", (f) => f(0, 1, 2, 10, 0.5, B)),
  one("optim.linearOnecycleSchedule", "options", (f) => f(10, 1, B)),
  one("optim.cosineOnecycleSchedule", "options", (f) => f(10, 1, B)),
  one("optim.piecewiseInterpolateSchedule", "fixed", (f) => f("linear", 1, { 5: 2 }, B)),
  one("optim.sgdrSchedule", "fixed", (f) => f([{ initValue: 0, peakValue: 1, warmupSteps: 1, decaySteps: 4 }], B)),
  one("optim.applyIfFinite", "fixed", (f) => f(jaxts.optim.sgd(0.1), 2, B)),
  // optax parity (branch optx3): transformations and aliases with options objects, wrappers and helpers of fixed arity
  ...group("options", (f) => f(B), [
    "optim.scaleByAdamax", "optim.scaleByAmsgrad", "optim.scaleByAdadelta", "optim.scaleByNovograd", "optim.scaleBySm3",
    "optim.scaleByOptimisticGradient", "optim.scaleByAdan", "optim.scaleByFactoredRms", "optim.scaleByLbfgs", "optim.scaleByPolyak",
    "optim.adafactor", "optim.adadelta", "optim.polyakSgd", "optim.lbfgs",
  ]),
  ...group("options", (f) => f(0.1, B), [
    "optim.lars", "optim.sm3", "optim.adamax", "optim.adamaxw", "optim.amsgrad", "optim.novograd", "optim.optimisticGradientDescent",
    "optim.signum", "optim.adan", "optim.fromage", "optim.rprop", "optim.noisySgd", "optim.optimisticAdam", "optim.optimisticAdamV2",
    "optim.ema", "optim.scaleByRprop",
  ]),
  one("optim.scaleByBacktrackingLinesearch", "options", (f) => f(5, B)),
  one("optim.scaleByZoomLinesearch", "options", (f) => f({ maxLinesearchSteps: 5, ...B })),
  one("optim.injectHyperparams", "options", (f) => f(jaxts.optim.adam, B)),
  ...group("fixed", (f) => f(B), ["optim.scaleBySign"]),
  ...group("fixed", (f) => f(0.5, B), ["optim.clipByBlockRms", "optim.scaleByParamBlockRms", "optim.scaleByParamBlockNorm", "optim.signSgd"]),
  one("optim.decayRatePow", "fixed", (f) => f(z(), 0.8, B)),
  one("optim.factoredDims", "fixed", (f) => f([2, 3], true, 2, B)),
  one("optim.addNoise", "fixed", (f) => f(0.1, 0.5, 0, B)),
  one("optim.flatten", "fixed", (f) => f(jaxts.optim.sgd(0.1), B)),
  ...group("fixed", (f) => f({ a: jaxts.optim.sgd(0.1) }, { w: "a" }, B), ["optim.partition", "optim.multiTransform"]),
  one("optim.valueAndGradFromState", "fixed", (f) => f(np.sum, B)),
  one("optim.lookahead", "fixed", (f) => f(jaxts.optim.sgd(0.1), 2, 0.5, false, B)),
  one("optim.LookaheadParams.initSynced", "fixed", (f) => f({ a: x() }, B)),
  ...group("options", (f) => f(B), ["optim.contrib.scheduleFreeSgd", "optim.contrib.scheduleFreeAdamw"]),
  one("optim.contrib.scheduleFree", "options", (f) => f(jaxts.optim.sgd(0.1), 0.1, B)),
  one("optim.contrib.scaleByAdemamix", "options", (f) => f(B)),
  one("optim.contrib.ademamix", "options", (f) => f(0.1, B)),
  one("optim.contrib.scaleByAdopt", "options", (f) => f(B)),
  one("optim.contrib.adopt", "options", (f) => f(0.1, B)),
  one("optim.contrib.scheduleFreeEvalParams", "fixed", (f) => f({}, { a: x() }, B)),
  one("serialize", "fixed", (f) => f({ a: x() }, B)),
  one("deserialize", "options", (f) => f(jaxts.serialize({ a: x() }), undefined, B)),
  one("save", "fixed", (f) => f("unused.safetensors", { a: x() }, B)),
  one("load", "options", (f) => f("unused.safetensors", undefined, B)),
  one("makeMesh", "options", (f) => f([1], ["i"], B)),
  one("devicePut", "fixed", (f) => f(x(), jaxts.devices()[0], B)),
  one("autoShard", "options", (f) => f((v: unknown) => v, B, x())),
  one("calibrateAutoShard", "options", (f) => f(B)),
  one("profiler.trace", "options", (f) => f("unused-trace-dir", () => 0, B)),
  // complex numbers and FFT
  ...group("options", (f) => f(x(), B), [
    "numpy.fft.fft", "numpy.fft.ifft", "numpy.fft.rfft", "numpy.fft.irfft", "numpy.fft.hfft", "numpy.fft.ihfft", "numpy.fft.fft2",
    "numpy.fft.ifft2", "numpy.fft.rfft2", "numpy.fft.irfft2", "numpy.fft.fftn", "numpy.fft.ifftn", "numpy.fft.rfftn", "numpy.fft.irfftn",
  ]),
  ...group("fixed", (f) => f(x(), 0, B), ["numpy.fft.fftshift", "numpy.fft.ifftshift"]),
  ...group("fixed", (f) => f(4, 1, "float32", B), ["numpy.fft.fftfreq", "numpy.fft.rfftfreq"]),
  ...group("fixed", (f) => f(np.complex(x(), x()), B), ["lax.real", "lax.imag", "lax.conj", "numpy.linalg.eig", "numpy.linalg.eigvals"]),
  one("lax.complex", "fixed", (f) => f(x(), x(), B)),
  one("numpy.complex", "fixed", (f) => f(x(), x(), B)),
  one("numpy.angle", "fixed", (f) => f(x(), false, B)),
  one("lax.fft", "fixed", (f) => f(x(), "FFT", [3], B)),
  one("lax.linalg.eig", "options", (f) => f(np.eye(2), B)),
  one("lax.linalg.schur", "options", (f) => f(np.eye(2), B)),
  // multi-process and profiling
  one("distributed.initialize", "options", (f) => f(B)),
  one("multihostUtils.processAllgather", "fixed", (f) => f(x(), false, B)),
  one("multihostUtils.syncGlobalDevices", "fixed", (f) => f("barrier", B)),
  one("profiler.deviceMemoryProfile", "fixed", (f) => f(B)),
  // ---- take no options object, with the reason
  ...none("a class or an error type: constructed, not called with options", [
    "Array", "ClosedJaxpr", "ConcretizationTypeError", "FloatingPointError", "Jaxpr", "OutOfMemoryError", "ShapeDtypeStruct", "ShapedArray",
    "UnexpectedTracerError", "numpy.IndexError", "numpy.NonConcreteBooleanIndexError", "numpy.linalg.EighResult", "numpy.linalg.QRResult",
    "numpy.linalg.SVDResult", "numpy.linalg.SlogdetResult", "numpy.linalg.EigResult", "profiler.TraceAnnotation", "profiler.StepTraceAnnotation",
    "runtime.DeviceOutOfMemoryError", "runtime.PendingLaunch", "runtime.PendingCopy", "random.PRNGKeyArray", "runtime.DeviceBuffer",
    "runtime.DeviceProgram", "runtime.RuntimeDevice", "sharding.Mesh", "sharding.NamedSharding", "sharding.SingleDeviceSharding", "tree.TreeDef",
  ]),
  ...none("a class constructed with new; its options object rejects unknown keys (tested in test/optim/yogi-radam-multisteps.test.ts)", [
    "optim.MultiSteps",
  ]),
  ...none("optax's ShouldSkipUpdateFunction signature (updates, gradientStep, params[, maxSquaredNorm]): positional, called by MultiSteps", [
    "optim.skipNotFinite", "optim.skipLargeUpdates",
  ]),
  ...none("no arguments (a query or a reset); nothing to misread", [
    "HOST_DEVICE.toString", "HOST_DEVICE.memoryStats", "clearCaches", "deviceCount", "devices", "localDeviceCount", "localDevices", "processCount", "processIndex",
    "runtime.deviceRuntimeUnavailable", "runtime.lastLaunchTimeline", "optim.identity", "config.read", "distributed.isInitialized",
    "distributed.shutdown", "profiler.isTracing", "runtime.allRuntimeDevices", "runtime.lastLaunchStamps", "runtime.launchCount",
    "runtime.launchesInFlight", "runtime.nowUs", "runtime.synchronize", "runtime.transferStats", "runtime.mpiAddon",
    "runtime.resolvedSpmdRuntime", "runtime.spmdRuntimeInfo", "runtime.copiesInFlight", "runtime.nativeBlockCopy", "runtime.synchronizeCopies",
    "runtime.liveCompletionCallbacks",
  ]),
  ...none("checkpoint policies are predicates or factories of name lists (JAX's jax.checkpoint_policies), not option takers", [
    "checkpointPolicies.checkpointDots", "checkpointPolicies.dotsSaveable", "checkpointPolicies.dotsWithNoBatchDimsSaveable",
    "checkpointPolicies.everythingSaveable", "checkpointPolicies.nothingSaveable", "checkpointPolicies.saveAnyNamesButTheseNames",
    "checkpointPolicies.saveOnlyTheseNames", "checkpointName", "checkpointPolicies.checkpointDotsWithNoBatchDims",
    "checkpointPolicies.saveFromBothPolicies", "checkpointPolicies.offloadDotWithNoBatchDims",
  ]),
  one("checkpointPolicies.saveAndOffloadOnlyTheseNames", "options", (f) => f(B)),
  ...none("variadic over arrays, arguments or pytrees (JAX's *args): an options object is an operand and is rejected as one", [
    "lax.cond", "lax.switch", "numpy.atleast1d", "numpy.atleast2d", "numpy.atleast3d", "numpy.broadcastArrays", "numpy.broadcastShapes",
    "numpy.ix_", "numpy.resultType", "numpy.applyAlongAxis", "optim.chain", "tree.map", "sharding.P", "sharding.PartitionSpec",
    "debug.print", "debug.callback",
  ]),
  ...none("collectives take (x, axisName, ...) positionally plus their own checked options; they need a bound axis name (tested in test/parallel)", [
    "lax.allGather", "lax.allToAll", "lax.axisIndex", "lax.axisSize", "lax.pmax", "lax.pmean", "lax.pmin", "lax.ppermute", "lax.pshuffle",
    "lax.psum", "lax.psumScatter", "lax.pswapaxes",
  ]),
  ...none("device placement, meshes, I/O, profiling and the device runtime: positional APIs with their own argument checks (tested in their suites)", [
    "addressableData", "debug.visualizeArraySharding", "devicePutReplicated", "devicePutSharded", "exportOnnx", "sharding.reshard",
    "makeArrayFromCallback", "makeArrayFromProcessLocalData", "makeArrayFromSingleDeviceArrays", "saveSharded", "loadSharded", "setCompileLogSink", "setMesh", "profiler.annotateFunction", "profiler.startTrace",
    "profiler.stopTrace", "runtime.deviceIntraOpThreads", "runtime.deviceProgram", "runtime.launch", "runtime.launchSync",
    "runtime.openRendezvous", "runtime.runtimeDevice", "finfo", "runtime.countTransfer", "runtime.dispatch", "runtime.failNextLaunch", "runtime.delayNextLaunch",
    "runtime.setLaunchObserver", "runtime.setExecutorSpinUs", "profiler.buildTraceFile", "profiler.mergeTraceFiles", "profiler.readTraceFile",
    "profiler.renderTimelineHtml", "profiler.summarizeTrace", "profiler.formatSummary", "profiler.timelineData", "debug.setPrintSink",
    "debug.callbackContext", "runtime.copyBlocks", "runtime.setNativeBlockCopy",
  ]),
  ...none("piecewise(x, condlist, funclist, ...args): JAX's *args / **kw go to the funclist functions as they are, an object included", [
    "numpy.piecewise",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), B), [
    "scipy.stats.gennorm.cdf", "scipy.stats.gennorm.logpdf", "scipy.stats.gennorm.pdf", "scipy.stats.poisson.entropy", "scipy.stats.bernoulli.cdf", "scipy.stats.bernoulli.ppf", "scipy.stats.dirichlet.logpdf",
    "scipy.stats.dirichlet.pdf", "scipy.stats.vonmises.logpdf", "scipy.stats.vonmises.pdf",
    "scipy.stats.wrapcauchy.logpdf", "scipy.stats.wrapcauchy.pdf",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), z(), B), [
    "scipy.stats.bernoulli.logpmf", "scipy.stats.bernoulli.pmf", "scipy.stats.cauchy.cdf", "scipy.stats.cauchy.isf",
    "scipy.stats.cauchy.logcdf", "scipy.stats.cauchy.logpdf", "scipy.stats.cauchy.logsf", "scipy.stats.cauchy.pdf",
    "scipy.stats.cauchy.ppf", "scipy.stats.cauchy.sf", "scipy.stats.expon.cdf", "scipy.stats.expon.logcdf",
    "scipy.stats.expon.logpdf", "scipy.stats.expon.logsf", "scipy.stats.expon.pdf", "scipy.stats.expon.ppf",
    "scipy.stats.expon.sf", "scipy.stats.geom.logpmf", "scipy.stats.geom.pmf", "scipy.stats.gumbelL.cdf",
    "scipy.stats.gumbelL.logcdf", "scipy.stats.gumbelL.logpdf", "scipy.stats.gumbelL.logsf", "scipy.stats.gumbelL.pdf",
    "scipy.stats.gumbelL.ppf", "scipy.stats.gumbelL.sf", "scipy.stats.gumbelR.cdf", "scipy.stats.gumbelR.logcdf",
    "scipy.stats.gumbelR.logpdf", "scipy.stats.gumbelR.logsf", "scipy.stats.gumbelR.pdf", "scipy.stats.gumbelR.ppf",
    "scipy.stats.gumbelR.sf", "scipy.stats.laplace.cdf", "scipy.stats.laplace.logpdf", "scipy.stats.laplace.pdf",
    "scipy.stats.logistic.cdf", "scipy.stats.logistic.isf", "scipy.stats.logistic.logpdf", "scipy.stats.logistic.pdf",
    "scipy.stats.logistic.ppf", "scipy.stats.logistic.sf", "scipy.stats.multinomial.logpmf",
    "scipy.stats.multinomial.pmf", "scipy.stats.multivariateNormal.pdf", "scipy.stats.poisson.cdf", "scipy.stats.poisson.logpmf",
    "scipy.stats.poisson.pmf", "scipy.stats.uniform.cdf", "scipy.stats.uniform.logpdf", "scipy.stats.uniform.pdf",
    "scipy.stats.uniform.ppf",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), z(), z(), B), [
    "scipy.stats.binom.logpmf", "scipy.stats.binom.pmf", "scipy.stats.chi2.logpdf", "scipy.stats.chi2.pdf",
    "scipy.stats.gamma.logpdf", "scipy.stats.gamma.pdf", "scipy.stats.multivariateNormal.logpdf",
    "scipy.stats.chi2.cdf", "scipy.stats.chi2.logcdf", "scipy.stats.chi2.sf", "scipy.stats.chi2.logsf",
    "scipy.stats.gamma.cdf", "scipy.stats.gamma.logcdf", "scipy.stats.gamma.sf", "scipy.stats.gamma.logsf",
    "scipy.stats.nbinom.logpmf", "scipy.stats.nbinom.pmf", "scipy.stats.pareto.cdf", "scipy.stats.pareto.logcdf",
    "scipy.stats.pareto.logpdf", "scipy.stats.pareto.logsf", "scipy.stats.pareto.pdf", "scipy.stats.pareto.ppf",
    "scipy.stats.pareto.sf", "scipy.stats.t.logpdf", "scipy.stats.t.pdf",
  ]),
  // takes no options object (fixed arity): one passed as an extra argument raises
  ...group("fixed", (f) => f(x(), y(), z(), z(), z(), B), [
    "scipy.stats.truncnorm.cdf", "scipy.stats.truncnorm.logcdf", "scipy.stats.truncnorm.logpdf", "scipy.stats.truncnorm.logsf",
    "scipy.stats.truncnorm.pdf", "scipy.stats.truncnorm.sf", "scipy.stats.beta.logpdf", "scipy.stats.beta.pdf", "scipy.stats.beta.cdf", "scipy.stats.beta.logcdf", "scipy.stats.beta.sf", "scipy.stats.beta.logsf", "scipy.stats.betabinom.logpmf", "scipy.stats.betabinom.pmf",
  ]),
  // takes an options object: a misspelled key raises
  ...group("options", (f) => f(z(), B), ["scipy.stats.gaussianKde", "scipy.stats.mode", "scipy.stats.rankdata", "scipy.stats.sem"]),
  ...none("a class: constructed with new (or through scipy.stats.gaussianKde, whose options row checks the same arguments)", [
    "scipy.stats.GaussianKde",
  ]),
  // takes an options object: a misspelled key raises (scipy.linalg / signal / integrate / optimize)
  ...group("options", (f) => f(sq(), B), [
    "scipy.integrate.trapezoid", "scipy.linalg.choFactor", "scipy.linalg.cholesky", "scipy.linalg.det", "scipy.linalg.eigh",
    "scipy.linalg.expm", "scipy.linalg.hessenberg", "scipy.linalg.inv", "scipy.linalg.schur", "scipy.linalg.sqrtm", "scipy.linalg.lu", "scipy.linalg.luFactor", "scipy.linalg.polar", "scipy.linalg.qr",
    "scipy.linalg.svd", "scipy.linalg.toeplitz", "scipy.signal.detrend", "scipy.signal.istft", "scipy.signal.stft", "scipy.signal.welch",
  ]),
  ...group("options", (f) => f(sq(), sq(), B), [
    "scipy.linalg.choSolve", "scipy.linalg.eighTridiagonal", "scipy.linalg.expmFrechet", "scipy.linalg.luSolve",
    "scipy.linalg.rsf2csf", "scipy.linalg.solve", "scipy.linalg.solveTriangular", "scipy.signal.convolve", "scipy.signal.convolve2d",
    "scipy.signal.correlate", "scipy.signal.correlate2d", "scipy.signal.csd", "scipy.signal.fftconvolve",
  ]),
  one("scipy.optimize.minimize", "options", (f) => f((v: jaxts.Array) => np.sum(np.square(v)), np.array([1, 2]), [], { method: "BFGS", ...B })),
  one("scipy.linalg.hilbert", "fixed", (f) => f(2, B)),
  one("scipy.linalg.funm", "options", (f) => f(sq(), np.exp, B)),
  ...none("variadic arrays (scipy's block_diag(*arrs)); an options object is not an array and raises", ["scipy.linalg.blockDiag"]),
  ...none("a result class (OptimizeResults), constructed by minimize", ["scipy.optimize.OptimizeResults"]),
  ...none("positional only (JAX's signature has no keywords here); the arguments are checked by their own validation", [
    "nn.initializers.computeFans", "numpy.place", "numpy.sortComplex", "random.wrapKeyData",
  ]),
  // jax.scipy.special / lax special functions (branch scispec)
  ...group("fixed", (f) => f(x(), B), [
    "lax.besselI0e", "lax.besselI1e", "scipy.special.i0", "scipy.special.i0e", "scipy.special.i1", "scipy.special.i1e",
    "scipy.special.gammasgn", "scipy.special.rgamma", "scipy.special.exp1", "scipy.special.expi",
    "scipy.special.spence",
  ]),
  ...group("fixed", (f) => f(3, B), ["scipy.special.bernoulli"]),
  ...group("fixed", (f) => f(x(), y(), B), [
    "lax.igamma", "lax.igammaGradA", "lax.igammac", "lax.randomGammaGrad", "lax.zeta", "scipy.special.gammainc",
    "scipy.special.gammaincc", "scipy.special.poch", "scipy.special.zeta", "scipy.special.beta",
    "scipy.special.expn",
  ]),
  ...group("fixed", (f) => f(x(), y(), z(), B), ["lax.betainc", "scipy.special.betainc"]),
  ...group("options", (f) => f(x(), B), ["scipy.special.factorial"]),
]);

const ALIAS: Record<string, string> = {
  "nn.initializers.kaimingNormal": "heNormal",
  "nn.initializers.kaimingUniform": "heUniform",
  "nn.initializers.xavierNormal": "glorotNormal",
  "nn.initializers.xavierUniform": "glorotUniform",
  "nn.normalize": "standardize",
  "numpy.allclose": "isclose",
  "numpy.amax": "max",
  "numpy.amin": "min",
  "numpy.around": "round",
  "numpy.asarray": "array",
  "numpy.diagflat": "diag",
  "numpy.extract": "compress",
  remat: "checkpoint",
};

/** Every exported function (and class) of the package, by dotted path. */
function exportsOf(obj: object, prefix: string, out: Map<string, Fn>): Map<string, Fn> {
  for (const k of Object.keys(obj).sort()) {
    const v = (obj as Record<string, unknown>)[k];
    const name = prefix ? `${prefix}.${k}` : k;
    if (typeof v === "function") out.set(name, v as Fn);
    else if (
      v &&
      typeof v === "object" &&
      ((v as Record<symbol, unknown>)[Symbol.toStringTag] === "Module" || Object.getPrototypeOf(v) === Object.prototype)
    )
      exportsOf(v, name, out);
  }
  return out;
}
const norm = (s: string): string => s.toLowerCase().replace(/[_.]/g, "");
const EXPORTS = exportsOf(jaxts, "", new Map());

test("every exported function has a row in the options table (a new export needs one)", () => {
  const missing = [...EXPORTS.keys()].filter((n) => !TABLE.has(n));
  assert.deepEqual(missing, [], `exports without a row: ${missing.join(", ")}`);
  const stale = [...TABLE.keys()].filter((n) => !EXPORTS.has(n));
  assert.deepEqual(stale, [], `rows for names that are not exported: ${stale.join(", ")}`);
  assert.ok(EXPORTS.size > 600, `expected the whole API, found ${EXPORTS.size} exports`);
});

test("a misspelled option, or an options object a function does not take, raises an error naming the function and the key", () => {
  const failures: string[] = [];
  let checked = 0;
  for (const [name, row] of TABLE) {
    if (row.kind === "none") {
      assert.ok(row.reason && row.reason.length > 10, `${name}: a row without options needs a reason`);
      continue;
    }
    const f = EXPORTS.get(name) as ((...a: unknown[]) => unknown) | undefined;
    if (!f) continue;
    checked++;
    let msg: string | null = null;
    try {
      row.call!(f);
    } catch (e) {
      msg = String((e as Error).message);
    }
    const named = row.alias ?? ALIAS[name] ?? name.split(".").pop()!;
    const key =
      row.kind === "options"
        ? /unknown option "zzBogus"|unexpected option "zzBogus"/
        : /options object \{ zzBogus \} it does not take/;
    if (msg === null) failures.push(`${name}: no error`);
    else if (!key.test(msg) || !norm(msg).includes(norm(named))) failures.push(`${name}: ${msg.slice(0, 160)}`);
  }
  assert.deepEqual(failures, []);
  assert.ok(checked > 550, `only ${checked} rows were called`);
});

test("the issue's misread calls: positional vmap axes, vjp's options, topK's axis, eigh's options, x ** 2", () => {
  const { vmap, vjp, lax } = jaxts;
  const a = np.array(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  const v = np.array([10, 20], { dtype: "float32" });
  // vmap(f, [0, null]) is in_axes given positionally, as JAX allows
  assert.deepEqual(vmap((p: typeof a, q: typeof v) => np.add(p, q), [0, null])(a, v).tolist(), [
    [11, 22],
    [13, 24],
  ]);
  assert.deepEqual(vmap((p: typeof a) => np.sum(p), 1)(a).tolist(), [4, 6]);
  assert.deepEqual(vmap((p: typeof a) => np.multiply(p, 2), 0, 1)(a).tolist(), [
    [2, 6],
    [4, 8],
  ]);
  assert.throws(() => vmap(np.sin, { inAxis: 0 }), /vmap: unknown option "inAxis" \(did you mean "inAxes"\?\)/);
  // vjp: a trailing options object is checked, misspellings included
  const [out, pull, aux] = vjp((p: typeof a) => [np.sum(np.square(p)), np.max(p)] as const, a, { hasAux: true });
  assert.equal(Number(out), 30);
  assert.equal(Number(aux), 4);
  assert.deepEqual((pull(np.array(1, { dtype: "float32" })) as unknown as (typeof a)[])[0].tolist(), [
    [2, 4],
    [6, 8],
  ]);
  assert.throws(() => vjp(np.sin, a, { has_aux: true } as never), /vjp: unknown option "has_aux"/);
  assert.throws(() => vjp(np.sin, a, { hasAux: "yes" } as never), /vjp: hasAux must be a boolean/);
  // topK along an axis (lax.top_k's and jnp.top_k's keyword), and jnp's smallest mode
  const t = np.array(
    [
      [3, 1, 2],
      [0, 5, 4],
    ],
    { dtype: "float32" },
  );
  const [tv, ti] = lax.topK(t, 1, { axis: 0 });
  assert.deepEqual(tv.tolist(), [[3, 5, 4]]);
  assert.deepEqual(ti.tolist(), [[0, 1, 1]]);
  const [sv, si] = np.topK(t, 2, { mode: "smallest" });
  assert.deepEqual(sv.tolist(), [
    [1, 2],
    [0, 4],
  ]);
  assert.deepEqual(si.tolist(), [
    [1, 2],
    [0, 2],
  ]);
  assert.throws(() => lax.topK(t, 1, { axes: 0 } as never), /lax.topK: unknown option "axes"/);
  // lax.linalg.eigh: keyword-only options, validated; symmetrizeInput as in JAX
  const s = np.array(
    [
      [2, 1],
      [1, 2],
    ],
    { dtype: "float32" },
  );
  const [, w] = lax.linalg.eigh(s, { lower: false, sortEigenvalues: true });
  assert.deepEqual(w.tolist(), [1, 3]);
  assert.throws(
    () => lax.linalg.eigh(s, { sortEigenvalue: true } as never),
    /lax.linalg.eigh: unknown option "sortEigenvalue"/,
  );
  assert.throws(
    () => (lax.linalg.eigh as (...a: unknown[]) => unknown)(s, false),
    /lax.linalg.eigh: expected an options object/,
  );
  // JS operators: a 0-d array converts, a larger one raises instead of giving NaN
  assert.equal((np.array(3, { dtype: "float32" }) as unknown as number) ** 2, 9);
  assert.throws(() => (a as unknown as number) ** 2, /only a 0-d array converts to a JS number/);
});
