'use strict';
// The package's exports and metadata against onnxruntime-node 1.30's.
const assert = require('assert/strict');
const test = require('node:test');
const {idem, ort, ortOptions, needOrt, model} = require('./helpers');

const MODEL_NAMES = ['add', 'window', 'identity_types', 'int_ops', 'alias', 'overridable', 'scalar',
                     'sequence', 'count'];

test('exports every name onnxruntime-node exports, of the same kinds', ortOptions, () => {
  const o = needOrt();
  assert.deepEqual(Object.keys(idem).sort(), Object.keys(o).sort());
  for (const key of Object.keys(o)) assert.equal(typeof idem[key], typeof o[key], key);
  assert.deepEqual(idem.listSupportedBackends(), [{name: 'cpu', bundled: true}]);
  assert.equal(idem.env.versions.node, o.env.versions.node);
});

test('named ESM imports resolve through cjs-module-lexer', async () => {
  const esm = await import(require.resolve('..'));
  for (const name of ['InferenceSession', 'Tensor', 'env', 'listSupportedBackends',
                      'registerBackend']) {
    assert.ok(esm[name] !== undefined, `${name} is not a named export`);
    assert.equal(esm[name], idem[name], name);
  }
  assert.equal(esm.default.InferenceSession, idem.InferenceSession);
});

test('Tensor(type, data, dims) and new Tensor(data, dims) for every type', ortOptions, () => {
  const o = needOrt();
  const cases = [
    ['float32', new Float32Array([1.5, -2, 3, 4])], ['float64', new Float64Array([1, 2, 3, 4])],
    ['int8', new Int8Array([-1, 2, 3, 4])], ['int16', new Int16Array([1, -2, 3, 4])],
    ['int32', new Int32Array([1, 2, -3, 4])], ['int64', new BigInt64Array([1n, -2n, 3n, 4n])],
    ['uint8', new Uint8Array([1, 2, 3, 255])], ['uint16', new Uint16Array([1, 2, 3, 65535])],
    ['uint32', new Uint32Array([1, 2, 3, 4])], ['uint64', new BigUint64Array([1n, 2n, 3n, 4n])],
    ['bool', new Uint8Array([1, 0, 1, 0])], ['float16', new Uint16Array([0x3c00, 0, 1, 2])],
    ['string', ['a', 'bc', '', 'd']],
  ];
  for (const [type, data] of cases) {
    const ti = new idem.Tensor(type, data, [2, 2]);
    const to = new o.Tensor(type, data, [2, 2]);
    for (const key of ['type', 'size', 'location']) assert.deepEqual(ti[key], to[key], `${type}.${key}`);
    assert.deepEqual(ti.dims, to.dims);
    assert.equal(ti.data, data, `${type}: the data is used as given`);
    ti.dispose();
    assert.throws(() => ti.data, /disposed/);
  }
  // The inferred forms: typed arrays -> their type, dims default to [length]; number[] with a type.
  const f = new idem.Tensor(new Float32Array([1, 2, 3]));
  assert.equal(f.type, 'float32');
  assert.deepEqual(f.dims, [3]);
  assert.deepEqual(Array.from(new idem.Tensor('float32', [1, 2, 3]).data), [1, 2, 3]);
  assert.equal(new idem.Tensor(new Int32Array(6), [2, 3]).type, 'int32');
  assert.equal(new idem.Tensor('int64', [16000n]).data[0], 16000n);
  assert.equal(new idem.Tensor('bool', [true, false]).data[0], 1);
});

for (const name of MODEL_NAMES) {
  test(`${name}: inputNames, outputNames, inputMetadata, outputMetadata as onnxruntime-node`,
       ortOptions, async () => {
         const o = needOrt();
         const si = await idem.InferenceSession.create(model(name));
         const so = await o.InferenceSession.create(model(name), {logSeverityLevel: 3});
         for (const key of ['inputNames', 'outputNames', 'inputMetadata', 'outputMetadata']) {
           assert.deepEqual(si[key], so[key], key);
         }
         await si.release();
       });
}

test('metadata reports symbolic dims by name and unknown dims as ""', async () => {
  const s = await idem.InferenceSession.create(model('identity_types'));
  assert.deepEqual(s.inputMetadata[0], {name: 'in_f32', isTensor: true, type: 'float32',
                                        shape: ['N', '']});
  const seq = await idem.InferenceSession.create(model('sequence'));
  assert.deepEqual(seq.outputMetadata, [{name: 'seq', isTensor: false}]);
});

test('release() twice is an error, as in onnxruntime-node', async () => {
  const s = await idem.InferenceSession.create(model('add'));
  await s.release();
  await assert.rejects(s.release(), {message: 'Session already disposed.'});
});

test('ort is optional outside CI', () => {
  assert.ok(ort !== null || process.env.CI !== 'true');
});
