'use strict';
// Session and run options: what onnxruntime-node users set is accepted (docs/node.md maps each
// to idem), invalid values are refused in onnxruntime-node's words, and what idem cannot honour
// is refused with the reason instead of being ignored.
const assert = require('assert/strict');
const test = require('node:test');
const {idem, ortOptions, needOrt, model, rejection} = require('./helpers');

const feeds = (lib) => ({x: new lib.Tensor('float32', Float32Array.from({length: 16}, (_, i) => i), [1, 16]),
                         state: new lib.Tensor('float32', new Float32Array(8), [2, 1, 4])});

const ACCEPTED = [
  {executionProviders: ['cpu']}, {executionProviders: [{name: 'cpu'}]},
  {intraOpNumThreads: 0}, {intraOpNumThreads: 1}, {intraOpNumThreads: 4},
  {interOpNumThreads: 0}, {interOpNumThreads: 2},
  {graphOptimizationLevel: 'disabled'}, {graphOptimizationLevel: 'basic'},
  {graphOptimizationLevel: 'extended'}, {graphOptimizationLevel: 'layout'},
  {graphOptimizationLevel: 'all'},
  {executionMode: 'sequential'}, {executionMode: 'parallel'},
  {enableCpuMemArena: false}, {enableCpuMemArena: true}, {enableMemPattern: false},
  {logSeverityLevel: 0}, {logSeverityLevel: 4}, {logVerbosityLevel: 0}, {logId: 'vad'},
  {extra: {session: {intra_op: {allow_spinning: '0'}, inter_op: {allow_spinning: '0'}}}},
  {extra: {session: {intra_op: {allow_spinning: '1'}}}},
  // What silero-vad style clients pass all at once.
  {executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
   graphOptimizationLevel: 'all', executionMode: 'sequential', enableCpuMemArena: false,
   logSeverityLevel: 3, extra: {session: {intra_op: {allow_spinning: '0'}}}},
];

test('accepted session options: the same results as with none', async () => {
  const base = await idem.InferenceSession.create(model('window'));
  const expected = Array.from((await base.run(feeds(idem))).y.data);
  for (const options of ACCEPTED) {
    const s = await idem.InferenceSession.create(model('window'), options);
    assert.deepEqual(Array.from((await s.run(feeds(idem))).y.data), expected,
                     JSON.stringify(options));
    await s.release();
  }
});

test('accepted options are accepted by onnxruntime-node too', ortOptions, async () => {
  const o = needOrt();
  for (const options of ACCEPTED) {
    const s = await o.InferenceSession.create(model('window'), {logSeverityLevel: 3, ...options});
    await s.release();
  }
});

// Invalid values: refused by both, with the same message.
const INVALID = [
  {graphOptimizationLevel: 'bogus'}, {intraOpNumThreads: -1}, {intraOpNumThreads: 1.5},
  {interOpNumThreads: -2}, {executionMode: 'bogus'}, {enableCpuMemArena: 'yes'},
  {logSeverityLevel: 9}, {executionProviders: ['CPUExecutionProvider']},
];

test('invalid session options: onnxruntime-node\'s errors', ortOptions, async () => {
  const o = needOrt();
  for (const options of INVALID) {
    const ei = await rejection(idem.InferenceSession.create(model('window'), options));
    const eo = await rejection(o.InferenceSession.create(model('window'), options));
    assert.equal(ei.message, eo.message, JSON.stringify(options));
    assert.equal(ei.constructor.name, eo.constructor.name, JSON.stringify(options));
  }
});

test('what idem cannot honour is refused, naming it', async () => {
  const cases = [
    [{executionProviders: ['cuda']}, /no available backend found. ERR: \[cuda\] backend not found/],
    [{enableProfiling: true, profileFilePrefix: 'p'}, /enableProfiling is not supported/],
    [{optimizedModelFilePath: '/tmp/x.onnx'}, /optimizedModelFilePath is not supported/],
    [{freeDimensionOverrides: {N: 2}}, /freeDimensionOverrides is not supported by idem .*: N/],
    [{extra: {session: {set_denormal_as_zero: '1'}}},
     /'session.set_denormal_as_zero' = '1' is not supported/],
    [{extra: {session: {intra_op: {allow_spinning: 'maybe'}}}},
     /'session.intra_op.allow_spinning' = 'maybe' is not supported/],
    [{extra: {optimization: {enable_gelu_approximation: '1'}}},
     /session config entry 'optimization.enable_gelu_approximation'/],
    [{externalData: [{path: 'w.bin', data: new Uint8Array(4)}]}, /externalData is not supported/],
    [{preferredOutputLocation: 'gpu-buffer'}, /preferredOutputLocation 'gpu-buffer'/],
  ];
  for (const [options, pattern] of cases) {
    const e = await rejection(idem.InferenceSession.create(model('window'), options));
    assert.match(e.message, pattern);
  }
});

test('run options: validated as onnxruntime-node does; terminate cancels', ortOptions, async () => {
  const o = needOrt();
  const si = await idem.InferenceSession.create(model('window'));
  const so = await o.InferenceSession.create(model('window'));
  for (const options of [{logSeverityLevel: 7}, {logSeverityLevel: -1}]) {
    const ei = await rejection(si.run(feeds(idem), options));
    const eo = await rejection(so.run(feeds(o), options));
    assert.equal(ei.message, eo.message);
  }
  const accepted = {logSeverityLevel: 3, logVerbosityLevel: 0, tag: 'frame-1'};
  assert.deepEqual(Array.from((await si.run(feeds(idem), accepted)).y.data),
                   Array.from((await so.run(feeds(o), accepted)).y.data));
  const e = await rejection(si.run(feeds(idem), {terminate: true}));
  assert.equal(e.code, 'CANCELLED');
});
