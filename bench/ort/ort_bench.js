// Side-by-side column: the idem_bench models run through ONNX Runtime's Node.js package
// (onnxruntime-node, CPU, one intra-op thread). Figures include the N-API binding's own cost per
// call, so they are an upper bound on ORT's native numbers. Sequences cannot be fed from JS, so
// seq_1000x1024 is not measured.
//
//   mkdir -p /tmp/ort && (cd /tmp/ort && npm install --ignore-scripts onnxruntime-node)
//   build-bench/bench/idem_bench --write_models /tmp/idem_models
//   NODE_PATH=/tmp/ort/node_modules node bench/ort/ort_bench.js /tmp/idem_models > ort.json
//
// Prints {case: median ns per run} as JSON (what bench/summarize.py --ort reads); progress on
// stderr.
'use strict';
const ort = require('onnxruntime-node');
const path = require('path');

const dir = process.argv[2];
const REPS = Number(process.env.REPS || 5);
const MIN_MS = Number(process.env.MIN_MS || 300);

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Median over REPS repetitions of the mean ns per call, each repetition running >= MIN_MS.
async function time(fn) {
  await fn();  // warm-up
  const results = [];
  for (let r = 0; r < REPS; ++r) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    do {
      await fn();
      ++n;
      elapsed = process.hrtime.bigint() - start;
    } while (elapsed < BigInt(MIN_MS) * 1000000n);
    results.push(Number(elapsed) / n);
  }
  return median(results);
}

function options(level) {
  return {graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1,
          executionMode: 'sequential'};
}

function floats(n) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; ++i) a[i] = i & 0xffff;
  return a;
}

async function main() {
  const out = {};
  const run = async (name, model, feeds, level = 'all') => {
    const session = await ort.InferenceSession.create(path.join(dir, model), options(level));
    out[name] = await time(() => session.run(feeds));
    process.stderr.write(`${name}: ${out[name].toFixed(0)} ns\n`);
  };
  const tensor = (n) => new ort.Tensor('float32', floats(n), [n]);
  await run('tiny', 'tiny.onnx', {x: tensor(5)});
  await run('f32_16MiB', 'f32_16MiB.onnx', {x: tensor(4 << 20)});
  await run('f32_256MiB', 'f32_256MiB.onnx', {x: tensor(64 << 20)});
  const strings = Array.from({length: 10000}, (_, i) => `string number ${i}`);
  await run('string_10000', 'string_10000.onnx', {x: new ort.Tensor('string', strings, [10000])});
  await run('chain100', 'chain100.onnx', {x: tensor(5)});
  await run('chain100_noelim', 'chain100.onnx', {x: tensor(5)}, 'disabled');
  await run('seed_example', 'seed_example.onnx', {x: tensor(5)});
  const external = path.join(dir, 'external_256MiB', 'model.onnx');
  out['external_256MiB_load'] = await time(async () => {
    const s = await ort.InferenceSession.create(external, options('disabled'));
    await s.run({});
    await s.release();
  });
  process.stderr.write(`external_256MiB_load: ${out['external_256MiB_load'].toFixed(0)} ns\n`);
  const ext = await ort.InferenceSession.create(external, options('disabled'));
  out['external_256MiB_run'] = await time(() => ext.run({}));
  process.stderr.write(`external_256MiB_run: ${out['external_256MiB_run'].toFixed(0)} ns\n`);
  // The same 256 MiB of weights inline (raw_data in the .onnx): Create + first Run.
  const inline = path.join(dir, 'inline_256MiB.onnx');
  out['inline_256MiB_load'] = await time(async () => {
    const s = await ort.InferenceSession.create(inline, options('disabled'));
    await s.run({});
    await s.release();
  });
  process.stderr.write(`inline_256MiB_load: ${out['inline_256MiB_load'].toFixed(0)} ns\n`);
  // Pre-bound output (ORT's closest equivalent of RunInto).
  const big = await ort.InferenceSession.create(path.join(dir, 'f32_256MiB.onnx'), options('all'));
  const dst = new ort.Tensor('float32', new Float32Array(64 << 20), [64 << 20]);
  const bigFeeds = {x: tensor(64 << 20)};
  out['copy_out_256MiB'] = await time(() => big.run(bigFeeds, {y: dst}));
  process.stderr.write(`copy_out_256MiB: ${out['copy_out_256MiB'].toFixed(0)} ns\n`);
  out['_version'] = require('onnxruntime-node/package.json').version;
  console.log(JSON.stringify(out, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
