// The planner's table of named values (name -> V), built for graphs of a million names.
//
// Why not std::unordered_map: it allocates one 80-byte node per name plus a bucket array, and
// every lookup chases a bucket pointer to a node scattered in the heap (on a 1,000,000-node
// Identity chain a quarter of Session::Create went to those misses). Here the entries sit in
// fixed-size chunks in insertion order (a graph's names are mostly inserted and then looked up
// in node order, so neighbouring lookups share cache lines), and an open-addressing index
// (linear probing, at most half full) finds them. An index slot holds the entry's number and 32
// bits of its key's hash, so a probe past another key touches no entry.
//
// Contracts:
// - Keys are views: the caller keeps the named strings alive as long as the table (the planner's
//   names live in the GraphDef it plans).
// - Entries never move: a pointer returned by Find/Emplace stays valid until the table dies,
//   whatever is inserted later (the planner hands out pointers while subgraphs insert captures).
// - Nothing is ever erased; at most 2^32 - 1 entries (a graph's names are bounded far below by
//   the load limits).
#ifndef IDEM_SRC_RUNTIME_NAME_TABLE_H_
#define IDEM_SRC_RUNTIME_NAME_TABLE_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/huge_pages.h"

namespace idem {

template <typename V>
class NameTable {
 public:
  NameTable() = default;
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // Sizes the index for `names` entries, so inserting that many never rebuilds it.
  void Reserve(size_t names) {
    if (names * 2 > capacity_) Rebuild(names);
  }

  size_t size() const { return size_; }

  V* Find(std::string_view key) { return const_cast<V*>(std::as_const(*this).Find(key)); }
  const V* Find(std::string_view key) const {
    if (capacity_ == 0) return nullptr;
    const size_t hash = HashOf(key);
    const uint32_t tag = Tag(hash);
    for (size_t at = hash & mask_;; at = (at + 1) & mask_) {
      const uint64_t slot = index_[at];
      if (slot == 0) return nullptr;
      if (static_cast<uint32_t>(slot >> 32) != tag) continue;
      const Item& e = ItemAt(static_cast<uint32_t>(slot) - 1);
      if (e.key == key) return &e.value;
    }
  }
  bool Contains(std::string_view key) const { return Find(key) != nullptr; }

  // Starts loading the index slot where `key`'s lookup or insertion begins. The index is
  // probed at random: a caller about to insert or find many keys prefetches a few keys ahead,
  // so the cache misses overlap instead of stalling one after the other.
  // `hash` is HashOf(key), computed once for the prefetch and the insertion that follows it.
  void Prefetch(size_t hash) const {
    if (capacity_ != 0) __builtin_prefetch(&index_[hash & mask_], 1);
  }
  void Prefetch(std::string_view key) const { Prefetch(HashOf(key)); }
  static size_t HashOf(std::string_view key) { return std::hash<std::string_view>{}(key); }

  // Inserts `value` under `key` unless the key is present; returns the entry and whether it was
  // inserted (as std::unordered_map::emplace).
  std::pair<V*, bool> Emplace(std::string_view key, V value) {
    return Emplace(key, HashOf(key), std::move(value));
  }
  // As above, with `hash` == HashOf(key) already computed.
  std::pair<V*, bool> Emplace(std::string_view key, size_t hash, V value) {
    if ((size_ + 1) * 2 > capacity_) Rebuild(size_ + 1);
    const uint32_t tag = Tag(hash);
    size_t at = hash & mask_;
    for (;; at = (at + 1) & mask_) {
      const uint64_t slot = index_[at];
      if (slot == 0) break;
      if (static_cast<uint32_t>(slot >> 32) != tag) continue;
      Item& e = ItemAt(static_cast<uint32_t>(slot) - 1);
      if (e.key == key) return {&e.value, false};
    }
    const auto [chunk, offset] = Locate(size_);
    if (chunk == chunks_.size()) chunks_.push_back(std::make_unique<Item[]>(ChunkSize(chunk)));
    Item& e = chunks_[chunk][offset];
    e.key = key;
    e.value = std::move(value);
    index_[at] = uint64_t{tag} << 32 | ++size_;
    return {&e.value, true};
  }

  // The value of the i-th entry inserted when its key equals `key`, else nullptr. Keys are
  // unique, so a match is the entry Find(key) would return, whatever i the caller guessed: a
  // caller that knows in which order it inserted keys reaches one without hashing or probing.
  V* Entry(size_t i, std::string_view key) {
    if (i >= size_) return nullptr;
    Item& e = ItemAt(i);
    return e.key == key ? &e.value : nullptr;
  }

  // The entry of `key`, value-initialised first when absent.
  V& operator[](std::string_view key) { return *Emplace(key, V{}).first; }

 private:
  struct Item {
    std::string_view key;
    V value;
  };
  // Chunks of 16, 32, ... kMaxChunk entries, then kMaxChunk each: a small graph's table (every
  // subgraph has one) is a few hundred bytes, a large one wastes at most one chunk.
  static constexpr size_t kFirstChunk = 16;
  static constexpr size_t kMaxChunk = 4096;
  static constexpr size_t kGrowingChunks = 9;  // 16 << 8 == kMaxChunk
  static constexpr size_t kInGrowingChunks = 2 * kMaxChunk - kFirstChunk;
  static size_t ChunkSize(size_t chunk) {
    return chunk < kGrowingChunks ? kFirstChunk << chunk : kMaxChunk;
  }
  // Entry i's chunk and offset in it.
  static std::pair<size_t, size_t> Locate(size_t i) {
    if (i < kInGrowingChunks) {
      const size_t chunk = static_cast<size_t>(std::bit_width(i / kFirstChunk + 1)) - 1;
      return {chunk, i - kFirstChunk * ((size_t{1} << chunk) - 1)};
    }
    const size_t rest = i - kInGrowingChunks;
    return {kGrowingChunks + rest / kMaxChunk, rest % kMaxChunk};
  }

  static uint32_t Tag(size_t hash) { return static_cast<uint32_t>(hash >> 32); }
  Item& ItemAt(size_t i) {
    const auto [chunk, offset] = Locate(i);
    return chunks_[chunk][offset];
  }
  const Item& ItemAt(size_t i) const {
    const auto [chunk, offset] = Locate(i);
    return chunks_[chunk][offset];
  }

  // An index for at least `names` entries at most half full (a power of two, at least 16),
  // filled from the entries.
  void Rebuild(size_t names) {
    size_t capacity = 16;
    while (capacity < names * 2) capacity *= 2;
    if (capacity <= capacity_) capacity = capacity_ * 2;
    // Advised before it is first touched (zeroed), so a large index gets huge pages.
    index_ = std::make_unique_for_overwrite<uint64_t[]>(capacity);
    AdviseHugePages(index_.get(), capacity * sizeof(uint64_t));
    std::fill_n(index_.get(), capacity, uint64_t{0});
    capacity_ = capacity;
    mask_ = capacity - 1;
    for (size_t i = 0; i < size_; ++i) {
      const size_t hash = HashOf(ItemAt(i).key);
      size_t at = hash & mask_;
      while (index_[at] != 0) at = (at + 1) & mask_;
      index_[at] = uint64_t{Tag(hash)} << 32 | (i + 1);
    }
  }

  std::vector<std::unique_ptr<Item[]>> chunks_;
  size_t size_ = 0;
  // 0: empty; otherwise hash tag << 32 | (entry number + 1).
  std::unique_ptr<uint64_t[]> index_;
  size_t capacity_ = 0;
  size_t mask_ = 0;
};

}  // namespace idem

#endif  // IDEM_SRC_RUNTIME_NAME_TABLE_H_
