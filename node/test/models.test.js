'use strict';
// The committed test models are what test/gen_models.py writes (skipped without Debian's python
// with onnx, except under CI=true).
const assert = require('assert/strict');
const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const test = require('node:test');
const {MODELS} = require('./helpers');

const PYTHON = '/usr/bin/python3';
const haveOnnx = fs.existsSync(PYTHON) &&
    childProcess.spawnSync(PYTHON, ['-c', 'import onnx'], {stdio: 'ignore'}).status === 0;

test('test/models matches test/gen_models.py',
     {skip: haveOnnx || process.env.CI === 'true' ? false : 'no /usr/bin/python3 with onnx'}, () => {
       const out = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-node-models-'));
       try {
         const r = childProcess.spawnSync(PYTHON, [path.join(__dirname, 'gen_models.py'), out],
                                          {encoding: 'utf8'});
         assert.equal(r.status, 0, r.stderr);
         const made = fs.readdirSync(out).sort();
         assert.deepEqual(made, fs.readdirSync(MODELS).sort());
         for (const name of made) {
           assert.ok(fs.readFileSync(path.join(out, name)).equals(fs.readFileSync(path.join(MODELS, name))),
                     `${name} is stale: rerun /usr/bin/python3 node/test/gen_models.py`);
         }
       } finally {
         fs.rmSync(out, {recursive: true, force: true});
       }
     });
