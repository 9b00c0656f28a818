'use strict';
// idem as an onnxruntime-common backend: what onnxruntime-node's dist/backend.js is to ONNX
// Runtime. onnxruntime-common's InferenceSession validates the arguments of create() and run()
// and calls the handler below; the handler maps session and run options to idem's (docs/node.md
// has the table), and runs through the native addon on a worker thread.
const {Tensor} = require('onnxruntime-common');
const binding = require('./binding');

const version = require('../package.json').version;
// The onnxruntime-node version whose API this package mirrors.
const apiVersion = '1.30.0';

// ONNX element type codes -> onnxruntime-node's tensor type names (its dist/backend.js table).
const dataTypeStrings = [
  undefined, 'float32', 'uint8', 'int8', 'uint16', 'int16', 'int32', 'int64', 'string', 'bool',
  'float16', 'float64', 'uint32', 'uint64', undefined, undefined, undefined, undefined, undefined,
  undefined, undefined, 'uint4', 'int4',
];

function invalid(Kind, message) {
  const e = new Kind(message);
  e.code = 'INVALID_ARGUMENT';
  return e;
}

function unsupported(message) {
  const e = new Error(message);
  e.code = 'UNSUPPORTED';
  return e;
}

// Session config entries (SessionOptions.extra, flattened to 'a.b.c') that cannot change what a
// run computes on idem, which runs each run on one worker thread, never spins, and has no arena,
// pre-packing or ORT-format models. Any other entry is refused.
const NO_EFFECT_CONFIG = new Map([
  ['session.intra_op.allow_spinning', ['0', '1']],
  ['session.inter_op.allow_spinning', ['0', '1']],
  ['session.force_spinning_stop', ['0', '1']],
  ['session.disable_prepacking', ['0', '1']],
  ['session.use_env_allocators', ['0', '1']],
  ['session.use_ort_model_bytes_directly', ['0', '1']],
  ['session.use_ort_model_bytes_for_initializers', ['0', '1']],
  ['session.use_device_allocator_for_initializers', ['0', '1']],
  ['session.dynamic_block_base', null],
  ['session.intra_op_thread_affinities', null],
  ['session.set_denormal_as_zero', ['0']],
  ['session.load_model_format', ['ONNX']],
  ['session.save_model_format', ['ONNX']],
]);

function flatten(prefix, value, out) {
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) flatten(prefix ? `${prefix}.${key}` : key, value[key], out);
  } else {
    out.push([prefix, String(value)]);
  }
}

const GRAPH_OPTIMIZATION_LEVELS = ['disabled', 'basic', 'extended', 'layout', 'all'];

// onnxruntime-node's session options -> idem's. Errors use onnxruntime-node's words where it has
// them (clients match on them); what idem cannot honour is refused with its reason.
function parseSessionOptions(options) {
  const idem = {eliminateIdentity: true, foldConstants: true};
  for (const ep of options.executionProviders || []) {
    const name = typeof ep === 'string' ? ep : ep && ep.name;
    if (name !== 'cpu') {
      throw unsupported(`execution provider '${name}' is not available: idem runs on the CPU ` +
                        "only (executionProviders: ['cpu'])");
    }
  }
  for (const key of ['intraOpNumThreads', 'interOpNumThreads']) {
    const n = options[key];
    if (n !== undefined && (!Number.isInteger(n) || n < 0 || n > 2147483647)) {
      throw invalid(RangeError, `'${key}' is invalid: ${n}`);
    }
  }
  if (options.graphOptimizationLevel !== undefined) {
    const level = options.graphOptimizationLevel;
    if (typeof level !== 'string') {
      throw invalid(TypeError,
                    'Invalid argument: sessionOptions.graphOptimizationLevel must be a string.');
    }
    if (!GRAPH_OPTIMIZATION_LEVELS.includes(level)) {
      throw invalid(TypeError, `'graphOptimizationLevel' is not supported: ${level}`);
    }
    if (level === 'disabled') {
      idem.eliminateIdentity = false;
      idem.foldConstants = false;
    }
  }
  if (options.executionMode !== undefined) {
    const mode = options.executionMode;
    if (typeof mode !== 'string') {
      throw invalid(TypeError, 'Invalid argument: sessionOptions.executionMode must be a string.');
    }
    if (mode !== 'sequential' && mode !== 'parallel') {
      throw invalid(TypeError, `'executionMode' is not supported: ${mode}`);
    }
  }
  for (const key of ['enableCpuMemArena', 'enableMemPattern', 'enableProfiling',
                     'enableGraphCapture']) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') {
      throw invalid(TypeError, `Invalid argument: sessionOptions.${key} must be a boolean value.`);
    }
  }
  if (options.logSeverityLevel !== undefined &&
      ![0, 1, 2, 3, 4].includes(options.logSeverityLevel)) {
    throw invalid(RangeError, 'Invalid argument: sessionOptions.logSeverityLevel must be one of ' +
                              'the following: 0, 1, 2, 3, 4.');
  }
  if (options.logVerbosityLevel !== undefined && !Number.isInteger(options.logVerbosityLevel)) {
    throw invalid(TypeError,
                  'Invalid argument: sessionOptions.logVerbosityLevel must be an integer.');
  }
  if (options.logId !== undefined && typeof options.logId !== 'string') {
    throw invalid(TypeError, 'Invalid argument: sessionOptions.logId must be a string.');
  }
  if (options.enableProfiling) {
    throw unsupported('sessionOptions.enableProfiling is not supported by idem');
  }
  if (options.enableGraphCapture) {
    throw unsupported('sessionOptions.enableGraphCapture is not supported by idem (CPU only)');
  }
  if (options.optimizedModelFilePath) {
    throw unsupported('sessionOptions.optimizedModelFilePath is not supported by idem (it ' +
                      'does not rewrite models; `idem optimize` does that offline)');
  }
  const overrides = options.freeDimensionOverrides;
  if (overrides && typeof overrides === 'object' && Object.keys(overrides).length > 0) {
    throw unsupported('sessionOptions.freeDimensionOverrides is not supported by idem ' +
                      `(symbolic dims are taken from the feeds): ${Object.keys(overrides)}`);
  }
  const externalData = options.externalData;
  if (Array.isArray(externalData) && externalData.length > 0) {
    throw unsupported('sessionOptions.externalData is not supported by idem: load the model ' +
                      'from its path, and its external data is read from beside it');
  }
  const preferred = options.preferredOutputLocation;
  if (preferred !== undefined) {
    const where = typeof preferred === 'string' ? [preferred] : Object.values(preferred || {});
    for (const w of where) {
      if (w !== 'cpu' && w !== 'cpu-pinned') {
        throw unsupported(`preferredOutputLocation '${w}' is not supported (idem runs on the CPU)`);
      }
    }
  }
  if (options.extra !== undefined) {
    const entries = [];
    flatten('', options.extra, entries);
    for (const [key, value] of entries) {
      if (!NO_EFFECT_CONFIG.has(key)) {
        throw unsupported(`session config entry '${key}' (sessionOptions.extra) is not ` +
                          `supported by idem; accepted: ${[...NO_EFFECT_CONFIG.keys()].join(', ')}`);
      }
      const allowed = NO_EFFECT_CONFIG.get(key);
      if (allowed && !allowed.includes(value)) {
        throw unsupported(`session config entry '${key}' = '${value}' is not supported by idem ` +
                          `(accepted: ${allowed.map((v) => `'${v}'`).join(', ')})`);
      }
    }
  }
  return idem;
}

function parseRunOptions(options) {
  if (options.logSeverityLevel !== undefined &&
      ![0, 1, 2, 3, 4].includes(options.logSeverityLevel)) {
    throw invalid(RangeError, 'Invalid argument: runOptions.logSeverityLevel must be one of the ' +
                              'following: 0, 1, 2, 3, 4.');
  }
  if (options.logVerbosityLevel !== undefined && !Number.isInteger(options.logVerbosityLevel)) {
    throw invalid(TypeError, 'Invalid argument: runOptions.logVerbosityLevel must be an integer.');
  }
  if (options.tag !== undefined && typeof options.tag !== 'string') {
    throw invalid(TypeError, 'Invalid argument: runOptions.tag must be a string.');
  }
  if (options.terminate !== undefined && typeof options.terminate !== 'boolean') {
    throw invalid(TypeError, 'Invalid argument: runOptions.terminate must be a boolean.');
  }
}

// onnxruntime-node's metadata: names, and per value {name, isTensor, type, shape}.
function fillNamesAndMetadata(raw) {
  const names = [];
  const metadata = [];
  for (const m of raw) {
    names.push(m.name);
    if (!m.isTensor) {
      metadata.push({name: m.name, isTensor: false});
      continue;
    }
    const type = dataTypeStrings[m.type];
    if (type === undefined) throw new Error(`Unsupported data type: ${m.type}`);
    metadata.push({name: m.name, isTensor: true, type, shape: m.shape});
  }
  return [names, metadata];
}

// A preallocated fetch must have the output's type and fit its declared dims (onnxruntime's
// check and words).
function checkPreallocated(name, tensor, meta) {
  if (!meta.isTensor || tensor.type !== meta.type) {
    throw new Error(`Unexpected output data type. Actual: (${tensor.type}) , expected: ` +
                    `(${meta.type})`);
  }
  if (meta.shape.length === 0) return;
  if (tensor.dims.length !== meta.shape.length) {
    throw new Error(`Invalid rank for output: ${name} Got: ${tensor.dims.length} Expected: ` +
                    `${meta.shape.length} Please fix either the inputs/outputs or the model.`);
  }
  let bad = '';
  meta.shape.forEach((want, i) => {
    if (typeof want === 'number' && want !== tensor.dims[i]) {
      bad += ` index: ${i} Got: ${tensor.dims[i]} Expected: ${want}\n`;
    }
  });
  if (bad) {
    throw new Error(`Got invalid dimensions for output: ${name} for the following indices\n${bad}` +
                    ' Please fix either the inputs/outputs or the model.');
  }
}

class IdemSessionHandler {
  #native;

  constructor(native) {
    this.#native = native;
    [this.inputNames, this.inputMetadata] = fillNamesAndMetadata(native.inputs);
    [this.outputNames, this.outputMetadata] = fillNamesAndMetadata(native.outputs);
  }

  async dispose() {
    this.#native.release();
  }

  startProfiling() {}

  endProfiling() {}

  // feeds: {name: Tensor} (names the model lacks are ignored, as onnxruntime-node does);
  // fetches: {name: null | preallocated Tensor}; results in the model's output order.
  async run(feeds, fetches, options) {
    parseRunOptions(options || {});
    // Inputs of the model, in its order. Graph inputs that have an initializer are not among
    // them (onnxruntime-node reports and feeds only these, so feeding an initializer is ignored).
    const feedList = this.inputNames.map((name) => feeds[name]);
    const wanted = [];
    const indices = [];
    this.outputNames.forEach((name, i) => {
      if (Object.prototype.hasOwnProperty.call(fetches, name)) {
        wanted.push(name);
        indices.push(i);
        const pre = fetches[name];
        if (pre !== null && pre !== undefined) checkPreallocated(name, pre, this.outputMetadata[i]);
      }
    });
    if (options && options.terminate) {
      const e = new Error('the run was cancelled: runOptions.terminate is set');
      e.code = 'CANCELLED';
      throw e;
    }
    const outputs = await this.#native.run(feedList, indices);
    const results = {};
    outputs.forEach((out, i) => {
      const name = wanted[i];
      const pre = fetches[name];
      if (pre !== null && pre !== undefined) {
        if (pre.dims.length !== out.dims.length || pre.dims.some((d, j) => d !== out.dims[j])) {
          throw new Error(`output '${name}' has dims [${out.dims}], the preallocated tensor ` +
                          `[${pre.dims}]`);
        }
        if (out.type === 'string') {
          for (let j = 0; j < out.data.length; j++) pre.data[j] = out.data[j];
        } else {
          pre.data.set(out.data);
        }
        results[name] = new Tensor(pre.type, pre.data, pre.dims);
      } else {
        results[name] = new Tensor(out.type, out.data, out.dims);
      }
    });
    return results;
  }
}

class IdemBackend {
  async init() {}

  async createInferenceSessionHandler(pathOrBuffer, options) {
    const native = await binding.createSession(pathOrBuffer, parseSessionOptions(options || {}));
    return new IdemSessionHandler(native);
  }
}

const idemBackend = new IdemBackend();
const listSupportedBackends = () => [{name: 'cpu', bundled: true}];

module.exports = {idemBackend, listSupportedBackends, version, apiVersion, parseSessionOptions};
