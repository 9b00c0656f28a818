// Speech timestamps from a WAV file with Silero VAD on idem's C++ API, streaming.
//
// The audio is fed window by window as silero-vad's OnnxWrapper feeds it: 512 samples at 16 kHz
// (256 at 8 kHz) with the previous window's last 64 (32) samples before each, `sr` a 0-d int64,
// and the state the previous run returned. The state is carried as the output Value itself:
// idem's values are immutable, shared handles, so `stateN` becomes the next run's `state` without
// a copy. The probabilities then become segments as silero-vad's get_speech_timestamps makes them
// with its defaults (threshold, 250 ms shortest speech, 100 ms shortest silence, 30 ms padding).
// The v4 model (h/c state, no context) and the model without `sr` are driven the same way.
//
//   idem_example_silero_vad MODEL.onnx AUDIO.wav [--threshold 0.5] [--json] [--probs]
//
// AUDIO.wav: mono PCM16 or float32 at 8 or 16 kHz (or a multiple of 16 kHz, taken every n-th
// sample). Prints "start-end" in seconds per segment, or with --json
// {"sampling_rate": R, "speeches": [{"start": S, "end": E}, ...]} in samples (and "probs").
// The same program as examples/python/silero_vad.py; the tests compare the two.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "idem/idem.h"

namespace {

struct Audio {
  int rate = 0;
  std::vector<float> samples;
};

uint32_t U32(const std::vector<unsigned char>& b, size_t at) {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}
uint16_t U16(const std::vector<unsigned char>& b, size_t at) {
  return static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
}

// A mono PCM16 or float32 RIFF/WAVE file, or an error message.
std::optional<Audio> ReadWav(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  if (b.size() < 12 || std::memcmp(b.data(), "RIFF", 4) != 0 ||
      std::memcmp(b.data() + 8, "WAVE", 4) != 0) {
    *error = path + ": not a RIFF/WAVE file";
    return std::nullopt;
  }
  bool have_fmt = false;
  uint16_t tag = 0, channels = 0, bits = 0;
  uint32_t rate = 0;
  for (size_t at = 12; at + 8 <= b.size();) {
    const uint32_t size = U32(b, at + 4);
    const size_t body = at + 8;
    const size_t end = std::min(b.size(), body + static_cast<size_t>(size));
    if (std::memcmp(b.data() + at, "fmt ", 4) == 0 && end - body >= 16) {
      tag = U16(b, body);
      channels = U16(b, body + 2);
      rate = U32(b, body + 4);
      bits = U16(b, body + 14);
      if (tag == 0xFFFE && end - body >= 26) tag = U16(b, body + 24);  // WAVE_FORMAT_EXTENSIBLE
      have_fmt = true;
    } else if (std::memcmp(b.data() + at, "data", 4) == 0) {
      if (!have_fmt) {
        *error = path + ": data before fmt";
        return std::nullopt;
      }
      if (channels != 1) {
        *error = path + ": " + std::to_string(channels) + " channels; mono expected";
        return std::nullopt;
      }
      Audio audio;
      audio.rate = static_cast<int>(rate);
      if (tag == 1 && bits == 16) {
        for (size_t i = body; i + 2 <= end; i += 2) {
          audio.samples.push_back(static_cast<float>(static_cast<int16_t>(U16(b, i))) / 32768.0f);
        }
      } else if (tag == 3 && bits == 32) {
        for (size_t i = body; i + 4 <= end; i += 4) {
          const uint32_t u = U32(b, i);
          float f;
          std::memcpy(&f, &u, sizeof f);
          audio.samples.push_back(f);
        }
      } else {
        *error = path + ": format " + std::to_string(tag) + "/" + std::to_string(bits) +
                 " bits; PCM16 or float32 expected";
        return std::nullopt;
      }
      return audio;
    }
    at = body + size + (size & 1);
  }
  *error = path + ": no data chunk";
  return std::nullopt;
}

// A float tensor holding a copy of `data` (the window changes every run; the copy is 2 KiB).
idem::Result<idem::Value> FloatTensor(std::vector<int64_t> shape, const std::vector<float>& data) {
  auto buffer = idem::Buffer::CopyOf(std::as_bytes(std::span<const float>(data)));
  if (!buffer.ok()) return std::move(buffer).take_status();
  return idem::Value::MakeTensor(idem::ElementType::kFloat, std::move(shape), *buffer);
}

// The model as silero-vad's OnnxWrapper drives it: feeds found by name, state carried.
class SileroVad {
 public:
  static idem::Result<SileroVad> Create(const std::string& path) {
    auto session = idem::Session::Create(path);
    if (!session.ok()) return std::move(session).take_status();
    SileroVad vad(std::move(*session));
    const auto inputs = vad.session_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& n = inputs[i].name;
      if (n == "input") vad.input_ = i;
      if (n == "state") vad.state_ = i;
      if (n == "h") vad.h_ = i;
      if (n == "c") vad.c_ = i;
      if (n == "sr") vad.sr_ = i;
    }
    const auto outputs = vad.session_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string& n = outputs[i].name;
      if (n == "output") vad.output_ = i;
      if (n == "stateN") vad.state_out_ = i;
      if (n == "hn") vad.h_out_ = i;
      if (n == "cn") vad.c_out_ = i;
    }
    const bool v5 = vad.state_ && vad.state_out_;
    const bool v4 = vad.h_ && vad.c_ && vad.h_out_ && vad.c_out_;
    if (!vad.input_ || !vad.output_ || !(v5 || v4)) {
      return idem::MakeError(idem::StatusCode::kInvalidArgument,
                             path + ": not a Silero VAD model (inputs input, state or h/c, sr)");
    }
    return vad;
  }

  idem::Status Reset(int rate) {
    rate_ = rate;
    context_.assign(legacy() ? 0 : (rate == 16000 ? 64 : 32), 0.0f);
    const std::vector<float> zeros(2 * 1 * (legacy() ? 64 : 128), 0.0f);
    const std::vector<int64_t> shape = {2, 1, legacy() ? 64 : 128};
    for (std::optional<idem::Value>* s : {&state_value_, &h_value_, &c_value_}) {
      auto z = FloatTensor(shape, zeros);
      if (!z.ok()) return z.status();
      *s = std::move(*z);
    }
    int64_t sr = rate;
    auto sr_buffer = idem::Buffer::CopyOf(std::as_bytes(std::span<const int64_t>(&sr, 1)));
    if (!sr_buffer.ok()) return sr_buffer.status();
    auto sr_value = idem::Value::MakeTensor(idem::ElementType::kInt64, {}, *sr_buffer);
    if (!sr_value.ok()) return sr_value.status();
    sr_value_ = std::move(*sr_value);
    return {};
  }

  // The speech probability of one window of 512 (16 kHz) or 256 (8 kHz) samples.
  idem::Result<float> operator()(std::span<const float> chunk) {
    std::vector<float> x(context_);
    x.insert(x.end(), chunk.begin(), chunk.end());
    auto input = FloatTensor({1, static_cast<int64_t>(x.size())}, x);
    if (!input.ok()) return std::move(input).take_status();
    std::vector<idem::Value> feeds(session_.inputs().size());
    feeds[*input_] = *input;
    if (legacy()) {
      feeds[*h_] = *h_value_;
      feeds[*c_] = *c_value_;
    } else {
      feeds[*state_] = *state_value_;
    }
    if (sr_) feeds[*sr_] = *sr_value_;
    auto outputs = session_.Run(feeds);
    if (!outputs.ok()) return std::move(outputs).take_status();
    // The new state is the output Value itself: no copy, fed as is to the next run.
    if (legacy()) {
      h_value_ = (*outputs)[*h_out_];
      c_value_ = (*outputs)[*c_out_];
    } else {
      state_value_ = (*outputs)[*state_out_];
      std::copy(x.end() - static_cast<std::ptrdiff_t>(context_.size()), x.end(), context_.begin());
    }
    const idem::Value& out = (*outputs)[*output_];
    if (!out.is_tensor() || out.tensor().element_type() != idem::ElementType::kFloat ||
        out.tensor().element_count() < 1) {
      return idem::MakeError(idem::StatusCode::kInternal, "output is not a float tensor");
    }
    return out.tensor().data_as<float>()[0];
  }

 private:
  explicit SileroVad(idem::Session session) : session_(std::move(session)) {}
  bool legacy() const { return h_.has_value(); }

  idem::Session session_;
  int rate_ = 16000;
  std::optional<size_t> input_, state_, h_, c_, sr_, output_, state_out_, h_out_, c_out_;
  std::optional<idem::Value> state_value_, h_value_, c_value_, sr_value_;
  std::vector<float> context_;
};

struct Segment {
  int64_t start = 0;
  int64_t end = 0;
};

// silero-vad's get_speech_timestamps with its defaults (no longest-segment limit).
std::vector<Segment> SpeechTimestamps(const std::vector<float>& probs, int64_t audio_length,
                                      int rate, double threshold) {
  const int64_t window = rate == 16000 ? 512 : 256;
  const double min_speech = rate * 250 / 1000.0;
  const double min_silence = rate * 100 / 1000.0;
  const double pad = rate * 30 / 1000.0;
  const double neg_threshold = std::max(threshold - 0.15, 0.01);
  std::vector<Segment> speeches;
  Segment current;
  bool triggered = false;
  int64_t temp_end = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = probs[i];
    const int64_t at = window * static_cast<int64_t>(i);
    if (p >= threshold && temp_end) temp_end = 0;
    if (p >= threshold && !triggered) {
      triggered = true;
      current.start = at;
      continue;
    }
    if (p < neg_threshold && triggered) {
      if (!temp_end) temp_end = at;
      if (static_cast<double>(at - temp_end) < min_silence) continue;
      current.end = temp_end;
      if (static_cast<double>(current.end - current.start) > min_speech) {
        speeches.push_back(current);
      }
      current = {};
      triggered = false;
      temp_end = 0;
    }
  }
  if (triggered && static_cast<double>(audio_length - current.start) > min_speech) {
    current.end = audio_length;
    speeches.push_back(current);
  }
  for (size_t i = 0; i < speeches.size(); ++i) {
    Segment& s = speeches[i];
    if (i == 0) {
      s.start = static_cast<int64_t>(std::max(0.0, static_cast<double>(s.start) - pad));
    }
    if (i + 1 != speeches.size()) {
      Segment& next = speeches[i + 1];
      const int64_t gap = next.start - s.end;
      if (static_cast<double>(gap) < 2 * pad) {
        s.end += gap / 2;
        next.start = std::max<int64_t>(0, next.start - gap / 2);
      } else {
        s.end = static_cast<int64_t>(
            std::min(static_cast<double>(audio_length), static_cast<double>(s.end) + pad));
        next.start = static_cast<int64_t>(std::max(0.0, static_cast<double>(next.start) - pad));
      }
    } else {
      s.end = static_cast<int64_t>(
          std::min(static_cast<double>(audio_length), static_cast<double>(s.end) + pad));
    }
  }
  return speeches;
}

int Usage() {
  std::fprintf(stderr,
               "usage: idem_example_silero_vad MODEL.onnx AUDIO.wav [--threshold 0.5] [--json] "
               "[--probs]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  double threshold = 0.5;
  bool json = false, with_probs = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--probs") {
      with_probs = true;
    } else if (arg == "--threshold" && i + 1 < argc) {
      char* end = nullptr;
      threshold = std::strtod(argv[++i], &end);
      if (*end != '\0' || !std::isfinite(threshold)) return Usage();
    } else if (arg.starts_with("--")) {
      return Usage();
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) return Usage();

  std::string error;
  std::optional<Audio> audio = ReadWav(positional[1], &error);
  if (!audio) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  int step = 1;
  int rate = audio->rate;
  if (rate > 16000 && rate % 16000 == 0) {
    step = rate / 16000;
    rate = 16000;
    std::vector<float> kept;
    for (size_t i = 0; i < audio->samples.size(); i += static_cast<size_t>(step)) {
      kept.push_back(audio->samples[i]);
    }
    audio->samples = std::move(kept);
  }
  if (rate != 8000 && rate != 16000) {
    std::fprintf(stderr, "%s: %d Hz; Silero VAD takes 8000 or 16000 (or a multiple)\n",
                 positional[1].c_str(), audio->rate);
    return 1;
  }

  auto vad = SileroVad::Create(positional[0]);
  if (!vad.ok()) {
    std::fprintf(stderr, "%s\n", vad.status().message().c_str());
    return 1;
  }
  if (idem::Status s = vad->Reset(rate); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  const size_t window = rate == 16000 ? 512 : 256;
  const std::vector<float>& samples = audio->samples;
  std::vector<float> probs;
  std::vector<float> chunk(window);
  for (size_t start = 0; start < samples.size(); start += window) {
    const size_t n = std::min(window, samples.size() - start);
    std::fill(chunk.begin(), chunk.end(), 0.0f);  // the last window padded with zeros
    std::copy_n(samples.begin() + static_cast<std::ptrdiff_t>(start), n, chunk.begin());
    auto p = (*vad)(chunk);
    if (!p.ok()) {
      std::fprintf(stderr, "window at sample %zu: %s\n", start, p.status().message().c_str());
      return 1;
    }
    probs.push_back(*p);
  }
  const std::vector<Segment> speeches =
      SpeechTimestamps(probs, static_cast<int64_t>(samples.size()), rate, threshold);
  if (json) {
    std::printf("{\"sampling_rate\": %d, \"speeches\": [", rate * step);
    for (size_t i = 0; i < speeches.size(); ++i) {
      std::printf("%s{\"start\": %lld, \"end\": %lld}", i ? ", " : "",
                  static_cast<long long>(speeches[i].start * step),
                  static_cast<long long>(speeches[i].end * step));
    }
    std::printf("]");
    if (with_probs) {
      std::printf(", \"probs\": [");
      for (size_t i = 0; i < probs.size(); ++i) std::printf("%s%.9g", i ? ", " : "", probs[i]);
      std::printf("]");
    }
    std::printf("}\n");
  } else {
    for (const Segment& s : speeches) {
      std::printf("%.3f-%.3f\n", static_cast<double>(s.start) / rate,
                  static_cast<double>(s.end) / rate);
    }
  }
  return 0;
}
