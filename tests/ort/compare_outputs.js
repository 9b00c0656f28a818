// Runs two models in ONNX Runtime (onnxruntime-node) on the same inputs and requires bit-identical
// outputs. Used by tests/optimize_ort_test.py to compare a model with its `idem optimize` result.
//
//   NODE_PATH=build/ort/node_modules node tests/ort/compare_outputs.js A.onnx B.onnx INPUTS.json
//
// INPUTS.json: [{"name", "type" (ORT tensor type, e.g. "float32"), "dims", "file" (raw bytes)}].
// Prints "same N outputs" and exits 0, or prints what differs and exits 1.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};

function feeds(spec) {
  const out = {};
  for (const s of spec) {
    const bytes = fs.readFileSync(s.file);
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    const Array = ARRAYS[s.type];
    out[s.name] = new ort.Tensor(s.type, new Array(copy.buffer), s.dims);
  }
  return out;
}

function bytesOf(t) {
  const d = t.data;
  if (Array.isArray(d)) return Buffer.from(JSON.stringify(d));  // strings
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

async function main() {
  const [a, b, inputsJson] = process.argv.slice(2);
  const spec = JSON.parse(fs.readFileSync(inputsJson, 'utf8'));
  const sa = await ort.InferenceSession.create(a);
  const sb = await ort.InferenceSession.create(b);
  const ra = await sa.run(feeds(spec));
  const rb = await sb.run(feeds(spec));
  if (JSON.stringify(sa.outputNames) !== JSON.stringify(sb.outputNames)) {
    console.log(`output names differ: ${sa.outputNames} vs ${sb.outputNames}`);
    process.exit(1);
  }
  for (const name of sa.outputNames) {
    const x = ra[name], y = rb[name];
    if (x.type !== y.type || JSON.stringify(x.dims) !== JSON.stringify(y.dims) ||
        Buffer.compare(bytesOf(x), bytesOf(y)) !== 0) {
      console.log(`output '${name}' differs: ${x.type}[${x.dims}] vs ${y.type}[${y.dims}]`);
      process.exit(1);
    }
  }
  console.log(`same ${sa.outputNames.length} outputs`);
}

main().catch((e) => {
  console.log(`error: ${e.message}`);
  process.exit(2);
});
