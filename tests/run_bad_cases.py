#!/usr/bin/python3
"""Runs every bad-input case made by tests/gen/gen_bad_cases.py through the idem CLI and checks the
exit code, the single `error:` line on stderr and the expected substrings (see expect.json)."""
import json, os, subprocess, sys

root, exe = sys.argv[1], sys.argv[2]
bad = 0
for name in sorted(os.listdir(root)):
    d = os.path.join(root, name)
    e = json.load(open(os.path.join(d, 'expect.json')))
    args = [a.replace('{dir}', d) for a in e.get('args', [])]
    if not args: args = [os.path.join(d, 'model.onnx')] if e['command'] != 'test' else [d]
    p = subprocess.run([exe, e['command']] + args, capture_output=True, text=True, timeout=20)
    ok = p.returncode == e['exit_code'] and all(s in p.stderr for s in e.get('stderr_contains', [])) and all(s in p.stdout for s in e.get('stdout_contains', []))
    if e['command'] != 'test': ok = ok and p.stderr.startswith('error:') and p.stderr.count('\n') == 1
    if not ok:
        bad += 1
        print('MISMATCH', name, p.returncode, e, '\n  stderr:', p.stderr.strip()[:300], '\n  stdout:', p.stdout.strip()[:200])
print(f'{bad} mismatches')
sys.exit(1 if bad else 0)
