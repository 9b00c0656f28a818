// ONNX Runtime (onnxruntime-node) as a reference for tests/models/run_models.py: one request per
// stdin line, one answer per stdout line, in order, so the Python driver keeps every step of a
// model's pipeline (Silero's state carried from chunk to chunk, openWakeWord's mel -> embedding ->
// head) in one place and asks ONNX Runtime for each run.
//
//   NODE_PATH=build/ort/node_modules node tests/models/ort_server.js
//
// Requests (JSON):  {"load": PATH}  ->  {"inputs": [names], "outputs": [names],
//                                         "inputMetadata": [...], "outputMetadata": [...]}
//                   {"run": PATH, "feeds": [{"name", "type", "dims", "b64"}]}
//                       ->  {"outputs": [{"name", "type", "dims", "b64"}]} (every output, in the
//                           model's order)
// Either may carry "options" (onnxruntime-node session options): the session is then made with
// those instead of the reference options below (tests/examples/ort_shim passes a Python client's
// SessionOptions through this way), one session per (path, options).
// Any failure answers {"error": message}. Tensors are raw little-endian bytes in base64; the
// types are ORT's names (float32, int64, ...).
'use strict';
const readline = require('readline');
const ort = require('onnxruntime-node');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array, float16: Uint16Array,
};

const sessions = new Map();

async function session(path, options) {
  const key = options === undefined ? path : `${path}\n${JSON.stringify(options)}`;
  if (!sessions.has(key)) {
    // Optimizations off, one thread: the reference is ONNX Runtime's kernels, as in the
    // differential stage (tests/ort/run_cases.js).
    sessions.set(key, await ort.InferenceSession.create(path, options || {
      graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
      logSeverityLevel: 4,
    }));
  }
  return sessions.get(key);
}

function tensor(spec) {
  const bytes = Buffer.from(spec.b64, 'base64');
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return new ort.Tensor(spec.type, new ARRAYS[spec.type](copy.buffer), spec.dims);
}

function record(name, t) {
  const d = t.data;
  return {name, type: t.type, dims: Array.from(t.dims),
          b64: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('base64')};
}

async function answer(request) {
  if (request.load !== undefined) {
    const s = await session(request.load, request.options);
    return {inputs: s.inputNames, outputs: s.outputNames, inputMetadata: s.inputMetadata,
            outputMetadata: s.outputMetadata};
  }
  const s = await session(request.run, request.options);
  const feeds = {};
  for (const f of request.feeds) feeds[f.name] = tensor(f);
  const res = await s.run(feeds);
  return {outputs: s.outputNames.map((n) => record(n, res[n]))};
}

async function main() {
  const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  for await (const line of rl) {
    if (!line.trim()) continue;
    let reply;
    try {
      reply = await answer(JSON.parse(line));
    } catch (e) {
      reply = {error: String(e && e.message ? e.message : e)};
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
}

main().catch((e) => {
  process.stderr.write(`ort_server: ${e.message}\n`);
  process.exit(2);
});
