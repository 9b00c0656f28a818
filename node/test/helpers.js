'use strict';
// Shared by the tests: the package under test, ONNX Runtime 1.30 (onnxruntime-node) to compare
// with, and the models of test/models (written by test/gen_models.py).
const fs = require('fs');
const path = require('path');

const idem = require('..');
const MODELS = path.join(__dirname, 'models');
const model = (name) => path.join(MODELS, `${name}.onnx`);

// onnxruntime-node: IDEM_ORT_NODE_MODULES (the ctest passes the build tree's ort/node_modules),
// else the repository's build/ort or build-dev/ort. Absent: comparisons are skipped, except under
// CI=true, where they fail (scripts/setup.sh installs it there).
let ortPath = null;
function findOrt() {
  const root = path.resolve(__dirname, '..', '..');
  const candidates = [process.env.IDEM_ORT_NODE_MODULES, path.join(root, 'build', 'ort', 'node_modules'),
                      path.join(root, 'build-dev', 'ort', 'node_modules')].filter(Boolean);
  for (const dir of candidates) {
    const main = path.join(dir, 'onnxruntime-node');
    if (fs.existsSync(path.join(main, 'package.json'))) {
      const ort = require(main);
      ort.env.logLevel = 'error';
      ortPath = main;
      return ort;
    }
  }
  return null;
}
const ort = findOrt();
const requireOrt = ort !== null || process.env.CI === 'true';
// For test(name, ortOptions, fn): skips when ONNX Runtime is absent outside CI.
const ortOptions = {skip: requireOrt ? false : 'onnxruntime-node 1.30 not installed (IDEM_ORT=1 bash scripts/setup.sh)'};
function needOrt() {
  if (!ort) throw new Error('onnxruntime-node 1.30 is required under CI (IDEM_ORT_NODE_MODULES)');
  return ort;
}

// Tensors of the same contents for a library (`lib` = idem or ort): fresh copies, so a run on one
// cannot see the other's buffers.
function tensor(lib, type, data, dims) {
  const copy = Array.isArray(data) ? data.slice() : data.slice(0);
  return new lib.Tensor(type, copy, dims);
}

// A plain, comparable form of a run's results.
function plain(results) {
  const out = {};
  for (const [name, t] of Object.entries(results)) {
    out[name] = {type: t.type, dims: Array.from(t.dims), data: Array.from(t.data)};
  }
  return out;
}

// Runs `feedsOf(lib)` through both and returns [idemResults, ortResults, idemSession, ortSession].
async function both(name, feedsOf, options = {}) {
  const o = needOrt();
  const si = await idem.InferenceSession.create(model(name), options);
  const so = await o.InferenceSession.create(model(name), {logSeverityLevel: 3, ...options});
  const ri = await si.run(feedsOf(idem));
  const ro = await so.run(feedsOf(o));
  return [ri, ro, si, so];
}

// The rejection of `promise` (fails when it resolves).
async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

module.exports = {idem, ort, ortPath, ortOptions, needOrt, model, MODELS, tensor, plain, both, rejection};
