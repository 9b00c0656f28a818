// Helpers shared by the sequence and optional operator families (sequence_ops.cc,
// concat_from_sequence.cc, split_to_sequence.cc, optional_ops.cc). Internal to idem_kernels.
#ifndef IDEM_SRC_KERNELS_SEQUENCE_INTERNAL_H_
#define IDEM_SRC_KERNELS_SEQUENCE_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/kernels/kernel.h"

namespace idem::sequence_internal {

// The 15 base element types with bfloat16 added, in the spec's order (bfloat16 before float16),
// as SplitToSequence-24 lists them.
std::vector<ElementType> BaseWithBfloat16();

// The position type constraint of SequenceAt/Insert/Erase: tensor(int32), tensor(int64).
TypeConstraint IndexConstraint(const std::string& param);

// "[2,3]" for error messages.
std::string ShapeToString(std::span<const int64_t> shape);

// Maps `axis` from [-rank, rank-1] to [0, rank-1]; kOutOfRange naming the accepted range when
// outside. `what` names the attribute in the message ("axis").
Result<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view what);

// The number of elements of `shape[begin, end)`, or nullopt on int64 overflow.
std::optional<int64_t> DimProduct(std::span<const int64_t> shape, size_t begin, size_t end);

// Wraps a kernel object for KernelSchema::create.
template <typename K, typename... Args>
Result<std::unique_ptr<Kernel>> MakeKernel(Args&&... args) {
  return std::unique_ptr<Kernel>(std::make_unique<K>(std::forward<Args>(args)...));
}

// Registration of the sequence operators that live in their own files.
void RegisterConcatFromSequence(KernelRegistry& registry);
void RegisterSplitToSequence(KernelRegistry& registry);

}  // namespace idem::sequence_internal

#endif  // IDEM_SRC_KERNELS_SEQUENCE_INTERNAL_H_
