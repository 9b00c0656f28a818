#include "tools/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <memory>
#include <regex>

#include "src/onnx/model_loader.h"

namespace idem::tools {
namespace {

struct Descr {
  const char* code;
  ElementType type;
};

constexpr Descr kDescrs[] = {
    {"b1", ElementType::kBool},      {"i1", ElementType::kInt8},
    {"i2", ElementType::kInt16},     {"i4", ElementType::kInt32},
    {"i8", ElementType::kInt64},     {"u1", ElementType::kUint8},
    {"u2", ElementType::kUint16},    {"u4", ElementType::kUint32},
    {"u8", ElementType::kUint64},    {"f2", ElementType::kFloat16},
    {"f4", ElementType::kFloat},     {"f8", ElementType::kDouble},
    {"c8", ElementType::kComplex64}, {"c16", ElementType::kComplex128},
};

}  // namespace

Result<Value> ReadNpy(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: {}", path, why));
  };
  IDEM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, uint64_t{1} << 40));
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return bad("not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    header_start = 12;
  } else {
    return bad(fmt::format("unsupported .npy version {}", major));
  }
  if (header_len > bytes.size() - header_start) return bad("truncated header");
  const std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([<>|=])([a-zA-Z])(\d+)')"))) {
    return bad("header has no descr");
  }
  const char order = m[1].str()[0];
  const std::string kind = m[2].str();
  const std::string width = m[3].str();
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    return bad("Fortran-order arrays are not supported");
  }
  std::smatch sm;
  if (!std::regex_search(header, sm, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    return bad("header has no shape");
  }
  std::vector<int64_t> shape;
  uint64_t count = 1;
  const std::string dims = sm[1].str();
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    if (it->str().size() > 18) return bad("dimension too large");
    const int64_t d = std::stoll(it->str());
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return bad("shape overflows");
    }
    count *= static_cast<uint64_t>(d);
    shape.push_back(d);
  }
  const size_t data_start = header_start + header_len;
  const size_t available = bytes.size() - data_start;
  if (kind == "S") {
    const size_t n = std::stoul(width);
    if (n == 0 || count > available / n || count * n != available) {
      return bad("string payload size does not match the shape");
    }
    std::vector<std::string> strings;
    strings.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string s = bytes.substr(data_start + i * n, n);
      s.erase(s.find_last_not_of('\0') + 1);
      strings.push_back(std::move(s));
    }
    return Value::MakeStringTensor(std::move(shape), std::move(strings));
  }
  if (order == '>') return bad("big-endian arrays are not supported");
  const std::string code = kind + width;
  for (const Descr& d : kDescrs) {
    if (code != d.code) continue;
    auto needed = PackedByteSize(d.type, count);
    if (!needed || *needed != available) {
      return bad(
          fmt::format("payload holds {} bytes, shape needs {}", available, needed ? *needed : 0));
    }
    auto owner = std::make_shared<std::string>(std::move(bytes));
    return Value::MakeTensor(d.type, std::move(shape),
                             Buffer::Shared(owner, owner->data() + data_start, available));
  }
  return bad(fmt::format("dtype '{}' is not supported", code));
}

}  // namespace idem::tools
