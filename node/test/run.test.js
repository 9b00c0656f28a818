'use strict';
// session.run: results against onnxruntime-node 1.30, zero copy, what real clients do with the
// API (issue 19), errors, and that a run never blocks the event loop.
const assert = require('assert/strict');
const fs = require('fs');
const test = require('node:test');
const {idem, ortOptions, needOrt, model, tensor, plain, both, rejection} = require('./helpers');

const iota = (n, scale = 1) => Float32Array.from({length: n}, (_, i) => i * scale);

test('add: the quick-start model gives onnxruntime-node\'s results', ortOptions, async () => {
  const [ri, ro] = await both('add', (lib) => ({
    a: tensor(lib, 'float32', iota(12), [3, 4]),
    b: tensor(lib, 'float32', iota(12, 10), [3, 4]),
  }));
  assert.deepEqual(plain(ri), plain(ro));
  assert.ok(ri.c instanceof idem.Tensor);
});

test('every tensor type onnxruntime-node carries goes through Identity unchanged', ortOptions,
     async () => {
       const data = {
         f32: ['float32', new Float32Array([1.5, -0, NaN, Infinity])],
         f64: ['float64', new Float64Array([1e300, -2, 3.25, -Infinity])],
         i8: ['int8', new Int8Array([-128, 127, 0, 5])], i16: ['int16', new Int16Array([-3, 4, 5, 6])],
         i32: ['int32', new Int32Array([-2147483648, 1, 2, 3])],
         i64: ['int64', new BigInt64Array([-(2n ** 63n), 2n ** 62n, 0n, 1n])],
         u8: ['uint8', new Uint8Array([0, 255, 1, 2])], u16: ['uint16', new Uint16Array([65535, 0, 1, 2])],
         u32: ['uint32', new Uint32Array([4294967295, 0, 1, 2])],
         u64: ['uint64', new BigUint64Array([2n ** 64n - 1n, 0n, 1n, 2n])],
         b: ['bool', new Uint8Array([1, 0, 0, 1])], s: ['string', ['é', '', 'long string', 'x']],
         f16: ['float16', new Uint16Array([0x3c00, 0x7e00, 0x8000, 0x0001])],
       };
       const [ri, ro] = await both('identity_types', (lib) => {
         const feeds = {};
         for (const [k, [type, d]] of Object.entries(data)) feeds[`in_${k}`] = tensor(lib, type, d, [2, 2]);
         return feeds;
       });
       assert.deepEqual(plain(ri), plain(ro));
       // NaN payloads and -0 survive bit for bit.
       assert.ok(Object.is(ri.out_f32.data[1], -0));
     });

test('integer Add wraps, broadcasts; Not; as onnxruntime-node', ortOptions, async () => {
  const [ri, ro] = await both('int_ops', (lib) => ({
    i64: tensor(lib, 'int64', new BigInt64Array([1n, 2n, 3n, 2n ** 63n - 1n, 5n, 6n]), [2, 3]),
    u8: tensor(lib, 'uint8', new Uint8Array([1, 128, 200, 255]), [4]),
    flags: tensor(lib, 'bool', new Uint8Array([1, 0, 1]), [3]),
  }));
  assert.deepEqual(plain(ri), plain(ro));
});

test('outputs that alias a feed share its ArrayBuffer; others are fresh and writable', async () => {
  const s = await idem.InferenceSession.create(model('alias'));
  // A subarray view: the feed starts 8 floats into its buffer.
  const backing = iota(20);
  const x = new idem.Tensor('float32', backing.subarray(8), [4, 3]);
  const r = await s.run({x});
  for (const name of ['same', 'unsq']) {
    assert.equal(r[name].data.buffer, backing.buffer, `${name} is a view of the feed's buffer`);
    assert.equal(r[name].data.byteOffset, 8 * 4);
    assert.equal(r[name].data.length, 12);
  }
  assert.deepEqual(r.unsq.dims, [1, 4, 3]);
  assert.deepEqual(Array.from(r.same.data), Array.from(iota(12)).map((v) => v + 8));
  // A write through the view is a write to the feed (they are the same memory).
  r.same.data[0] = 100;
  assert.equal(backing[8], 100);
  // Computed outputs own their memory: writable, and independent of the feed.
  assert.notEqual(r.doubled.data.buffer, backing.buffer);
  assert.deepEqual(Array.from(r.doubled.data.subarray(0, 3)), [16, 18, 20]);
  r.doubled.data[1] = -1;
  assert.equal(backing[9], 9);
  assert.deepEqual(Array.from(r.shape.data), [4n, 3n]);
  assert.deepEqual(Array.from(r.rows.data), [11, 12, 13, 14, 15, 16]);
});

test('alias: the same values as onnxruntime-node', ortOptions, async () => {
  const [ri, ro] = await both('alias', (lib) => ({x: tensor(lib, 'float32', iota(12), [4, 3])}));
  assert.deepEqual(plain(ri), plain(ro));
});

test('graphOptimizationLevel disabled: Identity runs as a step and still copies nothing',
     async () => {
       const s = await idem.InferenceSession.create(model('alias'),
                                                    {graphOptimizationLevel: 'disabled'});
       const x = new idem.Tensor('float32', iota(12), [4, 3]);
       const r = await s.run({x});
       assert.equal(r.same.data.buffer, x.data.buffer);
     });

test('streaming state: outputs fed back as inputs, rescaled in place first', ortOptions,
     async () => {
       const o = needOrt();
       const run = async (lib) => {
         const s = await lib.InferenceSession.create(model('window'), {logSeverityLevel: 3});
         // Clients read the window size from the metadata.
         const [, windowSize] = s.inputMetadata[0].shape;
         let state = new lib.Tensor('float32', new Float32Array(8), [2, 1, 4]);
         const trace = [];
         for (let step = 0; step < 5; step++) {
           const x = new lib.Tensor('float32', iota(windowSize, step), [1, windowSize]);
           const r = await s.run({x, state});
           r.y.data[0] *= 2;  // clients rescale outputs in place
           trace.push(Array.from(r.y.data));
           state = r.state_out;
         }
         trace.push(Array.from(state.data));
         return trace;
       };
       assert.deepEqual(await run(idem), await run(o));
     });

test('feeds naming inputs the model lacks are ignored, as onnxruntime-node does', async () => {
  const s = await idem.InferenceSession.create(model('window'));
  const r = await s.run({x: new idem.Tensor('float32', iota(16), [1, 16]),
                         state: new idem.Tensor('float32', new Float32Array(8), [2, 1, 4]),
                         h: new idem.Tensor('float32', new Float32Array(1), [1]), c: 5});
  assert.deepEqual(Object.keys(r), ['y', 'state_out']);
});

test('an initializer fed by name is ignored, as onnxruntime-node does', ortOptions, async () => {
  const feeds = (lib) => ({x: tensor(lib, 'float32', new Float32Array([1, 2]), [2]),
                           bias: tensor(lib, 'float32', new Float32Array([100, 200]), [2])});
  const [ri, ro] = await both('overridable', feeds);
  assert.deepEqual(plain(ri), plain(ro));
  assert.deepEqual(Array.from(ri.y.data), [11, 22]);
});

test('int64 scalars from [16000n], BigInt64Array and a [1] tensor for a declared scalar',
     async () => {
       const s = await idem.InferenceSession.create(model('scalar'));
       const v = new idem.Tensor('float32', [1, 2, 3], [3]);
       for (const sr of [new idem.Tensor('int64', [16000n]), new idem.Tensor('int64', [16000n], []),
                         new idem.Tensor(new BigInt64Array([16000n])),
                         new idem.Tensor('int64', [16000], [1, 1])]) {
         const r = await s.run({sr, v});
         assert.deepEqual(Array.from(r.sr2.data), [32000n]);
         assert.deepEqual(Array.from(r.v_out.data), [1, 2, 3]);
       }
       const e = await rejection(s.run({sr: new idem.Tensor('int64', [1n, 2n], [2]), v}));
       assert.match(e.message, /input 'sr' is a scalar in the model; got 2 elements/);
     });

test('Tensors made by another copy of onnxruntime-common are accepted', ortOptions, async () => {
  const o = needOrt();  // its own onnxruntime-common, not this package's
  assert.notEqual(o.Tensor, idem.Tensor);
  const s = await idem.InferenceSession.create(model('add'));
  const a = new o.Tensor('float32', iota(12), [3, 4]);
  const r = await s.run({a, b: a});
  assert.deepEqual(Array.from(r.c.data), Array.from(iota(12, 2)));
});

test('create from a path, a Uint8Array, an ArrayBuffer (fs.readFile(...).buffer), with options',
     async () => {
       const bytes = await fs.promises.readFile(model('add'));
       const sources = [[model('add')], [new Uint8Array(bytes)], [bytes],
                        [bytes.buffer, bytes.byteOffset, bytes.byteLength],
                        [new Uint8Array(bytes).buffer, {executionProviders: ['cpu']}]];
       for (const args of sources) {
         const s = await idem.InferenceSession.create(...args);
         assert.deepEqual(s.inputNames, ['a', 'b']);
         const a = new idem.Tensor('float32', iota(12), [3, 4]);
         assert.equal((await s.run({a, b: a})).c.data[11], 22);
       }
       // The bytes are copied once create() resolves: the caller may then reuse its buffer.
       const reused = new Uint8Array(bytes);
       const s = await idem.InferenceSession.create(reused);
       reused.fill(0);
       const a = new idem.Tensor('float32', iota(12), [3, 4]);
       assert.equal((await s.run({a, b: a})).c.data[11], 22);
     });

test('fetches: a list of names, an object, a preallocated tensor', ortOptions, async () => {
  const o = needOrt();
  for (const lib of [idem, o]) {
    const s = await lib.InferenceSession.create(model('window'), {logSeverityLevel: 3});
    const feeds = {x: new lib.Tensor('float32', iota(16), [1, 16]),
                   state: new lib.Tensor('float32', new Float32Array(8), [2, 1, 4])};
    assert.deepEqual(Object.keys(await s.run(feeds, ['state_out'])), ['state_out']);
    assert.deepEqual(Object.keys(await s.run(feeds, {y: null})), ['y']);
    const pre = new lib.Tensor('float32', new Float32Array(16), [1, 16]);
    const r = await s.run(feeds, {y: pre});
    assert.equal(pre.data[3], 4, 'written into the preallocated tensor');
    assert.deepEqual(Array.from(r.y.data), Array.from(pre.data));
    await assert.rejects(s.run(feeds, ['nope']), {name: 'RangeError'});
  }
  const si = await idem.InferenceSession.create(model('window'));
  const so = await o.InferenceSession.create(model('window'));
  const feeds = (lib) => ({x: new lib.Tensor('float32', iota(16), [1, 16]),
                           state: new lib.Tensor('float32', new Float32Array(8), [2, 1, 4])});
  const wrong = (lib) => ({y: new lib.Tensor('float32', new Float32Array(8), [1, 8])});
  assert.equal((await rejection(si.run(feeds(idem), wrong(idem)))).message,
               (await rejection(so.run(feeds(o), wrong(o)))).message);
});

test('feed errors carry onnxruntime\'s words (clients parse "Got: 24 Expected: 16")', ortOptions,
     async () => {
       const o = needOrt();
       const si = await idem.InferenceSession.create(model('window'));
       const so = await o.InferenceSession.create(model('window'));
       const state = (lib) => new lib.Tensor('float32', new Float32Array(8), [2, 1, 4]);
       const cases = [
         (lib) => ({x: new lib.Tensor('float32', new Float32Array(24), [1, 24]), state: state(lib)}),
         (lib) => ({x: new lib.Tensor('float32', new Float32Array(48), [2, 24]), state: state(lib)}),
         (lib) => ({x: new lib.Tensor('float32', new Float32Array(16), [16]), state: state(lib)}),
         (lib) => ({x: new lib.Tensor('float64', new Float64Array(16), [1, 16]), state: state(lib)}),
         (lib) => ({x: new lib.Tensor('float32', new Float32Array(16), [1, 16])}),
         (lib) => ({x: 5, state: state(lib)}),
       ];
       for (const feeds of cases) {
         const ei = await rejection(si.run(feeds(idem)));
         const eo = await rejection(so.run(feeds(o)));
         assert.equal(ei.message, eo.message);
         assert.equal(ei.constructor.name, eo.constructor.name, eo.message);
       }
       const e = await rejection(si.run(cases[0](idem)));
       assert.equal(/Got: (\d+) Expected: (\d+)/.exec(e.message)[2], '16');
     });

test('idem\'s errors reject with its message and code', async () => {
  let e = await rejection(idem.InferenceSession.create(model('no_such_model')));
  assert.match(e.message, /no_such_model\.onnx/);
  assert.equal(e.code, 'NOT_FOUND');
  e = await rejection(idem.InferenceSession.create(new Uint8Array([8, 1, 2, 3])));
  assert.ok(['INVALID_MODEL', 'INVALID_ARGUMENT'].includes(e.code), e.code);
  const seq = await idem.InferenceSession.create(model('sequence'));
  e = await rejection(seq.run({x: new idem.Tensor('float32', [1, 2], [2])}));
  assert.match(e.message, /output 'seq' is seq\(tensor\(float\)\): non tensor type/);
  const s = await idem.InferenceSession.create(model('add'));
  await s.release();
  const a = new idem.Tensor('float32', iota(12), [3, 4]);
  e = await rejection(s.run({a, b: a}));
  assert.equal(e.message, 'Session already disposed.');
  // A disposed tensor and data that does not fit its dims.
  const d = new idem.Tensor('float32', iota(12), [3, 4]);
  d.dispose();
  const s2 = await idem.InferenceSession.create(model('add'));
  e = await rejection(s2.run({a: d, b: a}));
  assert.match(e.message, /disposed/);
  e = await rejection(s2.run({a: {location: 'cpu', type: 'float32', dims: [3, 4], data: iota(11)}, b: a}));
  assert.match(e.message, /Tensor.data holds 44 bytes; float32 dims \[3,4\] call for 48/);
  e = await rejection(s2.run({a: {location: 'cpu', type: 'float32', dims: [3, 4], data: new Int32Array(12)}, b: a}));
  assert.match(e.message, /Tensor.data must be a Float32Array for float32 tensors/);
});

test('run works on a worker thread: the event loop keeps turning during a long run', async () => {
  const s = await idem.InferenceSession.create(model('count'));
  let done = false;
  const pending = s.run({n: new idem.Tensor('int64', [1000000n], []),
                         v0: new idem.Tensor('float32', [0], [1])}).then((r) => {
    done = true;
    return r;
  });
  let turns = 0;
  while (!done && turns < 3) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (!done) turns++;
  }
  const r = await pending;
  assert.equal(r.v.data[0], 1000000);
  assert.ok(turns > 0, 'no timer ran while the run was in flight');
});

test('concurrent runs on one session', async () => {
  const s = await idem.InferenceSession.create(model('add'));
  const runs = [];
  for (let k = 0; k < 16; k++) {
    const a = new idem.Tensor('float32', iota(12, k), [3, 4]);
    runs.push(s.run({a, b: a}).then((r) => [k, r]));
  }
  for (const [k, r] of await Promise.all(runs)) {
    assert.deepEqual(Array.from(r.c.data), Array.from(iota(12, 2 * k)));
  }
});

test('release() while a run is in flight: the run completes', async () => {
  const s = await idem.InferenceSession.create(model('count'));
  const pending = s.run({n: new idem.Tensor('int64', [1000n], []), v0: new idem.Tensor('float32', [1], [1])});
  await s.release();
  assert.equal((await pending).v.data[0], 1001);
});

test('empty tensors, and feeds in a SharedArrayBuffer (their aliases are copied)', async () => {
  const s = await idem.InferenceSession.create(model('identity_types'));
  const arrays = {f32: Float32Array, f64: Float64Array, i8: Int8Array, i16: Int16Array,
                  i32: Int32Array, i64: BigInt64Array, u8: Uint8Array, u16: Uint16Array,
                  u32: Uint32Array, u64: BigUint64Array, b: Uint8Array, f16: Uint16Array};
  const types = {f32: 'float32', f64: 'float64', i8: 'int8', i16: 'int16', i32: 'int32',
                 i64: 'int64', u8: 'uint8', u16: 'uint16', u32: 'uint32', u64: 'uint64',
                 b: 'bool', f16: 'float16'};
  const feeds = {in_s: new idem.Tensor('string', [], [0, 3])};
  for (const [k, A] of Object.entries(arrays)) feeds[`in_${k}`] = new idem.Tensor(types[k], new A(0), [0, 3]);
  let r = await s.run(feeds);
  for (const name of s.outputNames) {
    assert.deepEqual(r[name].dims, [0, 3], name);
    assert.equal(r[name].data.length, 0, name);
  }
  const shared = new Float32Array(new SharedArrayBuffer(16));
  shared.set([1, 2, 3, 4]);
  r = await s.run({...feeds, in_f32: new idem.Tensor('float32', shared, [2, 2])});
  assert.deepEqual(Array.from(r.out_f32.data), [1, 2, 3, 4]);
  assert.notEqual(r.out_f32.data.buffer, shared.buffer);
});

test('the package loads and runs inside a worker thread too', async () => {
  const {Worker} = require('worker_threads');
  const code = `
    const {parentPort, workerData} = require('worker_threads');
    const ort = require(workerData.pkg);
    (async () => {
      const s = await ort.InferenceSession.create(workerData.model);
      const a = new ort.Tensor('float32', new Float32Array(12).fill(2), [3, 4]);
      parentPort.postMessage(Array.from((await s.run({a, b: a})).c.data));
    })();`;
  const w = new Worker(code, {eval: true, workerData: {pkg: require.resolve('..'), model: model('add')}});
  const message = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  assert.deepEqual(message, Array(12).fill(4));
  await w.terminate();
});

test('malformed feeds are refused, naming what is wrong', async () => {
  const s = await idem.InferenceSession.create(model('add'));
  const b = new idem.Tensor('float32', iota(12), [3, 4]);
  const detached = new Float32Array(12);
  structuredClone(detached.buffer, {transfer: [detached.buffer]});
  const t = (over) => ({location: 'cpu', type: 'float32', dims: [3, 4], data: iota(12), ...over});
  const cases = [
    [t({dims: [NaN, 4]}), RangeError, /Tensor.dims\[0\] is invalid: NaN/],
    [t({dims: [-3, 4]}), RangeError, /Tensor.dims\[0\] is invalid: -3/],
    [t({dims: [2 ** 52, 2 ** 52]}), RangeError, /element count overflows/],
    [t({dims: 12}), TypeError, /Tensor.dims must be an array/],
    [t({dims: ['3', 4]}), TypeError, /Tensor.dims\[0\] is not a number/],
    [t({type: 'complex64'}), TypeError, /Tensor.type is not supported: complex64/],
    [t({type: 1}), TypeError, /Tensor.type must be a string/],
    [t({data: [1, 2]}), TypeError, /Tensor.data must be a typed array/],
    [t({data: new DataView(new ArrayBuffer(48))}), TypeError, /Tensor.data must be a typed array/],
    [t({data: detached}), RangeError, /Tensor.data holds 0 bytes/],
    [t({location: {}}), TypeError, /Tensor.location must be a string/],
    [t({location: 'gpu-buffer'}), Error, /location 'gpu-buffer' is not supported/],
    [null, TypeError, /Tensor must be an object/],
  ];
  for (const [a, Kind, pattern] of cases) {
    const e = await rejection(s.run({a, b}));
    assert.ok(e instanceof Kind, `${e.constructor.name}: ${e.message}`);
    assert.match(e.message, pattern);
  }
  // The session is unharmed.
  assert.equal((await s.run({a: b, b})).c.data[11], 22);
});
