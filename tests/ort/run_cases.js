// Runs backend-test-like case folders in ONNX Runtime (onnxruntime-node) and records its outputs,
// for the differential stage (tests/gen/gen_ort_differential.py).
//
//   NODE_PATH=build/ort/node_modules node tests/ort/run_cases.js CASE_DIR...
//
// Each CASE_DIR holds model.onnx and feeds.json: [{"name", "type" (ORT tensor type), "dims",
// "hex" (raw little-endian bytes) or "strings" (ASCII)}]. Writes CASE_DIR/ort.json:
// {"outputs": [{"name", "type", "dims", "hex" | "strings"}]} or {"error", "stage": "load"|"run"}.
// Node's binding can feed and return tensors only (no sequences or optionals), and it cuts strings
// at a NUL: the generator keeps graph inputs and outputs to what it can carry.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array, float16: Uint16Array,
};

function feeds(spec) {
  const out = {};
  for (const s of spec) {
    if (s.type === 'string') {
      out[s.name] = new ort.Tensor('string', s.strings, s.dims);
      continue;
    }
    const bytes = Buffer.from(s.hex, 'hex');
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    const Arr = ARRAYS[s.type];
    // Typed arrays keep every bit pattern (NaN payloads included) as long as no element is read
    // through a JS number.
    out[s.name] = new ort.Tensor(s.type, new Arr(copy.buffer), s.dims);
  }
  return out;
}

function record(t) {
  const r = {type: t.type, dims: Array.from(t.dims)};
  const d = t.data;
  if (t.type === 'string') {
    r.strings = Array.from(d);
  } else {
    r.hex = Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('hex');
  }
  return r;
}

async function runOne(dir) {
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'feeds.json'), 'utf8'));
  let session;
  try {
    // Optimizations off: the reference is ONNX Runtime's kernels, not its graph rewrites (the
    // frozen cases give the same outputs with them on).
    session = await ort.InferenceSession.create(
        path.join(dir, 'model.onnx'), {graphOptimizationLevel: 'disabled', logSeverityLevel: 4});
  } catch (e) {
    return {error: e.message, stage: 'load'};
  }
  try {
    const res = await session.run(feeds(spec));
    return {outputs: session.outputNames.map((n) => Object.assign({name: n}, record(res[n])))};
  } catch (e) {
    return {error: e.message, stage: 'run'};
  }
}

async function main() {
  for (const dir of process.argv.slice(2)) {
    const r = await runOne(dir);
    fs.writeFileSync(path.join(dir, 'ort.json'), JSON.stringify(r));
  }
}

main().catch((e) => {
  console.log(`error: ${e.message}`);
  process.exit(2);
});
