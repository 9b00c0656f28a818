// ONNX Runtime's column of the real-model rows (bench/model_bench.cc, docs/performance.md): the
// same models and the same feeds (written by `idem_model_bench --write_inputs DIR`) through
// onnxruntime-node, ORT_ENABLE_ALL, sequential, spinning off, with 1 (and 2) intra-op threads;
// Silero's state carried from each run's output to the next run's input as in idem's rows.
// Timed inside this one Node process over many runs: the median of REPS means of runs lasting
// MIN_MS each. Node's own cost per call is measured on a 5-float Identity model (`node_tiny`)
// and shown beside the rows (every ORT figure includes it once per Run).
//
//   build/bench/idem_model_bench --write_inputs /tmp/inputs
//   NODE_PATH=.../node_modules node bench/ort/ort_models.js MODELS_DIR /tmp/inputs > ort.json
//
// Prints {row: median ns per run} as JSON (bench/compare_models.py reads it); progress on stderr.
//
//   PEAK_RSS=ROW node bench/ort/ort_models.js MODELS_DIR /tmp/inputs
// instead loads ROW's model (one thread) and runs it 100 times, as `idem_model_bench --peak_rss`,
// then prints the process's peak RSS and, beside it, the peak before the session was created
// (Node with onnxruntime-node loaded): ORT's own share is the difference. Run once per process.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const [modelsDir, inputsDir] = process.argv.slice(2);
const REPS = Number(process.env.REPS || 5);
const MIN_MS = Number(process.env.MIN_MS || 500);
const ONLY = process.env.ONLY ? new RegExp(process.env.ONLY) : null;
// float[5] -> Identity -> float[5], opset 13 (onnx.helper, serialized).
const TINY = 'CAg6OgoQCgF4EgF5IghJZGVudGl0eRIEdGlueVoPCgF4EgoKCAgBEgQKAggFYg8KAXkSCgoICAESBAoCCAVCBAoAEA0=';

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function time(fn) {
  for (let i = 0; i < 3; ++i) await fn();  // warm-up
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

function options(threads) {
  return {
    graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 4,
    extra: {session: {intra_op: {allow_spinning: '0'}, inter_op: {allow_spinning: '0'}}},
  };
}

function floats(name, dims) {
  const bytes = fs.readFileSync(path.join(inputsDir, name + '.f32'));
  const a = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return new ort.Tensor('float32', Float32Array.from(a), dims);
}

const zeros = (dims) => new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b)),
                                       dims);
const sr = () => new ort.Tensor('int64', BigInt64Array.from([16000n]), []);

// Row -> [model, feeds(), carried {output: input}, two-thread row?]
const ROWS = [
  ['silero_v5_chunk', 'silero_vad_v5',
   () => ({input: floats('silero_512', [1, 512]), state: zeros([2, 1, 128]), sr: sr()}),
   {stateN: 'state'}],
  ['silero_v6_chunk', 'silero_vad',
   () => ({input: floats('silero_576', [1, 576]), state: zeros([2, 1, 128]), sr: sr()}),
   {stateN: 'state'}],
  ['silero_legacy_chunk', 'silero_vad_legacy',
   () => ({input: floats('silero_1536', [1, 1536]), sr: sr(), h: zeros([2, 1, 64]),
           c: zeros([2, 1, 64])}),
   {hn: 'h', cn: 'c'}],
  ['silero_op18_ifless_chunk', 'silero_vad_op18_ifless',
   () => ({input: floats('silero_576', [1, 576]), sr: sr(), state: zeros([2, 1, 128])}),
   {stateN: 'state'}],
  ['silero_half_chunk', 'silero_vad_half',
   () => ({input: floats('silero_576', [1, 576]), state: zeros([2, 1, 128])}), {stateN: 'state'}],
  ['silero_16k_op15_chunk', 'silero_vad_16k_op15',
   () => ({input: floats('silero_576', [1, 576]), state: zeros([2, 1, 128]), sr: sr()}),
   {stateN: 'state'}],
  ['oww_mel', 'melspectrogram', () => ({input: floats('oww_audio', [1, 1280])}), {}],
  ['oww_embedding', 'embedding_model', () => ({input_1: floats('oww_mel', [1, 76, 32, 1])}), {},
   true],
  ['oww_head', 'alexa_v0.1', () => ({'onnx::Flatten_0': floats('oww_embeddings', [1, 16, 96])}),
   {}],
  ['ppocr_det_640', 'ch_PP-OCRv4_det_infer', () => ({x: floats('ppocr_det_640', [1, 3, 640, 640])}),
   {}, true],
  ['ppocr_rec_48x320', 'ch_PP-OCRv4_rec_infer',
   () => ({x: floats('ppocr_rec_48x320', [1, 3, 48, 320])}), {}, true],
  ['ppocr_cls', 'ch_ppocr_mobile_v2.0_cls_infer', () => ({x: floats('ppocr_cls', [1, 3, 48, 192])}),
   {}, true],
];

async function runner(model, feeds, carried, threads) {
  const session = await ort.InferenceSession.create(path.join(modelsDir, model + '.onnx'),
                                                    options(threads));
  const f = feeds();
  return async () => {
    const out = await session.run(f);
    for (const [o, i] of Object.entries(carried)) f[i] = out[o];
  };
}

async function peakRss(rowName) {
  const row = ROWS.find((r) => r[0] === rowName);
  if (!row) throw new Error(`PEAK_RSS: no row ${rowName}`);
  const [, model, feeds, carried] = row;
  const before = process.resourceUsage().maxRSS;  // KiB
  const run = await runner(model, feeds, carried, 1);
  for (let i = 0; i < 100; ++i) await run();
  const peak = process.resourceUsage().maxRSS;
  const mib = (kib) => (kib / 1024).toFixed(1);
  console.log(`ort_peak_rss/${model}: ${mib(peak)} MiB (load + 100 runs, maxRSS); ` +
              `node + onnxruntime-node before the session: ${mib(before)} MiB; ` +
              `difference ${mib(peak - before)} MiB`);
}

async function main() {
  if (process.env.PEAK_RSS) return peakRss(process.env.PEAK_RSS);
  const out = {};
  const record = (name, ns) => {
    out[name] = ns;
    process.stderr.write(`${name}: ${(ns / 1000).toFixed(1)} us\n`);
  };
  const tiny = await ort.InferenceSession.create(Buffer.from(TINY, 'base64'), options(1));
  const x = {x: new ort.Tensor('float32', new Float32Array(5), [5])};
  record('node_tiny', await time(() => tiny.run(x)));
  for (const [name, model, feeds, carried, two] of ROWS) {
    for (const threads of two ? [1, 2] : [1]) {
      const row = `${name}/threads:${threads}`;
      if (ONLY && !ONLY.test(row)) continue;
      record(row, await time(await runner(model, feeds, carried, threads)));
    }
  }
  if (!ONLY || ONLY.test('oww_frame/threads:1')) {
    const mel = await runner('melspectrogram', ROWS[6][2], {}, 1);
    const emb = await runner('embedding_model', ROWS[7][2], {}, 1);
    const head = await runner('alexa_v0.1', ROWS[8][2], {}, 1);
    record('oww_frame/threads:1', await time(async () => {
      await mel();
      await emb();
      await head();
    }));
  }
  for (const [name, model] of ROWS) {
    const row = `create/${model}`;
    if (ONLY && !ONLY.test(row)) continue;
    record(row, await time(async () => {
      const s = await ort.InferenceSession.create(path.join(modelsDir, model + '.onnx'),
                                                  options(1));
      await s.release();
    }));
  }
  out['_version'] = require('onnxruntime-node/package.json').version;
  console.log(JSON.stringify(out, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
