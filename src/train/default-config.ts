/** @file The default training config (what `npm start` runs), the text of configs/default.yaml. */

/** configs/default.yaml, embedded so that the installed package needs no config file. */
export const DEFAULT_CONFIG_YAML = `# The job \`npm start\` runs (embedded in src/train/default-config.ts; a test keeps the two equal).
# A small GPT learns 3-digit addition on a 2x2 (data x model) mesh of CPU devices.
parallel_strategy:
  data_parallel: 2
  tensor_parallel: 2
  pipeline_stages: 1
  zero_stage: 0
sharding_spec:
  embeddings: [None, None]
  attention: [None, 'model', None]
  mlp: [None, 'model']
model:
  d_model: 64
  heads: 4
  layers: 2
  ff: 256
  tied_embeddings: true
optimizer:
  name: adamw
  lr: 3.0e-3
  warmup: 100
  decay: cosine
  end_lr: 3.0e-4
  weight_decay: 0.01
  clip: 1.0
data:
  task: addition
  digits: 3
  batch_size: 64
  held_out: 1000
  seed: 0
run:
  steps: 1000
  eval_every: 250
  checkpoint_every: 500
  out: ~
  seed: 0
  remat: none
  trace_steps: 3
  predictions: 5
`;
