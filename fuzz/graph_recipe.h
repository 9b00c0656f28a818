// Structure-aware fuzzing input (issue 17): a "recipe" of bytes that the builder turns into an
// ONNX model over the operators of the real models (Conv, ConvTranspose, LSTM, pools, Resize,
// Pad, Slice, Gemm, MatMul, Cast, ... at opsets 6 to 22), with attributes, shapes and constant
// inputs chosen by the bytes: mostly valid values, sometimes hostile ones. Every recipe gives a
// model; libFuzzer's mutations of a recipe stay meaningful (a byte is one choice), so the fuzzer
// reaches the shape rules and kernels instead of stopping at protobuf parsing.
#ifndef IDEM_FUZZ_GRAPH_RECIPE_H_
#define IDEM_FUZZ_GRAPH_RECIPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace idem::fuzz {

// The serialized ModelProto a recipe describes (deterministic: the same bytes, the same model).
std::string BuildRecipeModel(const uint8_t* data, size_t size);

}  // namespace idem::fuzz

#endif  // IDEM_FUZZ_GRAPH_RECIPE_H_
