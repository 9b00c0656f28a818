// Fuzz harness bodies shared by the libFuzzer targets (fuzz/fuzz_*.cc, built with
// -DIDEM_BUILD_FUZZ=ON) and the regression replay (tests/regressions, built in every test build),
// so a crash input found by fuzzing is replayed through exactly the same code everywhere.
//
// Each function returns normally on any idem error (bad input is expected); it aborts with a
// message when an invariant breaks (a round trip changes a value, an output has the wrong kind).
// Memory errors and undefined behaviour are caught by the sanitizers. There is no try/catch:
// idem never throws, and an exception escaping is a bug the fuzzer must see.
#ifndef IDEM_FUZZ_HARNESS_H_
#define IDEM_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>

namespace idem::fuzz {

// Bytes -> Session::CreateFromBytes (no base dir: external data refused); on success runs the
// session with generated feeds (several variants) and checks the outputs. Also runs
// OptimizeModelBytes on the bytes: byte identity when nothing is removed, idempotence, and the
// same outputs as the original wherever idem runs it.
// Inputs that start with kRecipeMagic are recipes (see FuzzGraph) instead: the rest goes to
// FuzzGraph, so one target and one corpus cover both (a ModelProto never starts with a 0 byte).
void FuzzModel(const uint8_t* data, size_t size);

// The first bytes of a recipe input to FuzzModel.
inline constexpr uint8_t kRecipeMagic[4] = {0x00, 'I', 'G', 'R'};

// Bytes -> a recipe (fuzz/graph_recipe.h): a model over the operators of the real models with
// fuzz-chosen attributes, shapes and constant inputs, then everything FuzzModel checks on it.
void FuzzGraph(const uint8_t* data, size_t size);

// First byte selects a declared type; the rest is a TensorProto / SequenceProto / OptionalProto.
// A converted value must survive ValueToProtoBytes -> ValueFromProtoBytes unchanged.
void FuzzValue(const uint8_t* data, size_t size);

// Bytes -> a backend-test folder (model.onnx, test_data_set_0/input_0.pb, output_0.pb) in a
// private temporary folder -> tools::RunBackendCase. Layout: u32 LE model length, u32 LE input
// length, model bytes, input bytes, output bytes (the rest). Lengths are clipped to what is
// there; a part of length 0 is not written (its file is absent).
void FuzzBackendCase(const uint8_t* data, size_t size);

}  // namespace idem::fuzz

#endif  // IDEM_FUZZ_HARNESS_H_
