// Helpers shared by the tensor and shape operator files (tensor_ops.cc, shape_ops.cc): shape
// rules over Dim and int64_t, and reading the int lists (shapes, axes, sizes) operators take as
// inputs. Internal to idem_kernels.
#ifndef IDEM_SRC_KERNELS_TENSOR_RULES_H_
#define IDEM_SRC_KERNELS_TENSOR_RULES_H_

#include <fmt/format.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/core/text.h"
#include "src/kernels/op.h"

namespace idem::tensor_rules {

// Whether a dim says anything (a value or a symbol); every run-time dim does.
inline bool HasInfo(int64_t) { return true; }
inline bool HasInfo(const Dim& d) { return d.value.has_value() || !d.param.empty(); }

// Dims for messages: values, symbols, or ? when unknown.
inline std::string DimText(int64_t d) { return std::to_string(d); }
inline std::string DimText(const Dim& d) {
  if (d.value) return std::to_string(*d.value);
  return d.param.empty() ? "?" : d.param;
}
template <class D>
std::vector<std::string> DimStrings(std::span<const D> dims) {
  std::vector<std::string> out;
  for (const D& d : dims) out.push_back(DimText(d));
  return out;
}

// The product of dims as one dim: a single dim other than known 1s passes through (keeping its
// symbol); known dims multiply; otherwise unknown. An int64 overflow (possible only for dims of
// an empty tensor) is an error.
template <class D>
Result<D> ProductDim(std::span<const D> dims) {
  ScratchVector<const D*> rest;
  for (const D& d : dims) {
    auto v = KnownDim(d);
    if (!v || *v != 1) rest.push_back(&d);
  }
  if (rest.empty()) return MakeDim<D>(1);
  if (rest.size() == 1) return *rest[0];
  for (const D* d : rest) {
    if (KnownDim(*d) == std::optional<int64_t>(0)) return MakeDim<D>(0);
  }
  for (const D* d : rest) {
    if (!KnownDim(*d)) return MakeDim<D>(std::nullopt);
  }
  auto product = DimProduct(dims);
  if (!product) {
    return InvalidArgument("the product of the dims overflows int64");
  }
  return MakeDim<D>(*product);
}

// The int64/int32 elements of a 1-D input (a shape, axes or sizes input); other ranks are refused
// (a scalar too unless `allow_scalar`).
inline Result<Ints> ReadIntVector(const Tensor& t, std::string_view name,
                                  bool allow_scalar = false) {
  if (t.rank() != 1 && !(allow_scalar && t.rank() == 0)) {
    return InvalidArgument(fmt::format("input {} must be a 1-D tensor; it has shape [{}]",
                                       QuoteName(name), fmt::join(t.shape(), ",")));
  }
  return ReadInt64s(t);
}

// The constant elements of input i while planning, checked as at run time; nullopt when the
// input is not a constant.
inline Result<std::optional<std::vector<int64_t>>> ConstantIntVector(const Facts& facts, size_t i,
                                                                     std::string_view name,
                                                                     bool allow_scalar = false) {
  const Value* v = facts.constant(i);
  if (v == nullptr || !v->is_tensor()) return std::optional<std::vector<int64_t>>();
  IDEM_ASSIGN_OR_RETURN(Ints ints, ReadIntVector(v->tensor(), name, allow_scalar));
  return std::optional<std::vector<int64_t>>(std::in_place, ints.begin(), ints.end());
}

// The length of a 1-D input when its shape is known while planning (a scalar counts as 1 when
// `allow_scalar`).
inline std::optional<int64_t> KnownLength(const Facts& facts, size_t i, bool allow_scalar = false) {
  if (!facts.has(i) || !facts.shape(i)) return std::nullopt;
  if (allow_scalar && facts.shape(i)->empty()) return 1;
  if (facts.shape(i)->size() != 1) return std::nullopt;
  return (*facts.shape(i))[0].value;
}

// Negative axes arrived in the version `since`; before it, an axis must be >= 0.
inline Status CheckNonNegative(std::span<const int64_t> axes, int version, int since,
                               std::string_view what) {
  if (version >= since) return {};
  for (int64_t a : axes) {
    if (a < 0) {
      return InvalidModel(
          fmt::format("{} holds {}; before version {} axes must be non-negative", what, a, since));
    }
  }
  return {};
}

}  // namespace idem::tensor_rules

#endif  // IDEM_SRC_KERNELS_TENSOR_RULES_H_
