#include "model/tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace dice::tokenizer {
namespace {

// Byte b has id b; merges over 'a', 'b', 'c' build ids from 256 on.
struct SmallModel {
  std::array<std::int32_t, 256> byte_ids{};
  MergeTable merges;
  SmallModel() {
    for (int b = 0; b < 256; ++b) byte_ids[b] = b;
    merges.insert('a', 'b', 0, 256);  // ab
    merges.insert('b', 'c', 1, 257);  // bc
    merges.insert(256, 'c', 2, 258);  // abc
    merges.insert('a', 'a', 3, 259);  // aa
    merges.insert(259, 259, 4, 260);  // aaaa
    merges.insert('c', 256, 5, 261);  // cab
  }
};

std::vector<std::int32_t> encode(const BpeModel& model, std::string_view word) {
  BpeScratch scratch;
  std::vector<std::int32_t> ids;
  model.encode_word(word, &scratch, &ids);
  return ids;
}

TEST(BpeTest, LowestRankFirstThenLeftmost) {
  SmallModel m;
  BpeModel model(m.byte_ids, m.merges, 16);
  EXPECT_EQ(encode(model, "abc"), (std::vector<std::int32_t>{258}));       // ab, then ab+c
  EXPECT_EQ(encode(model, "bca"), (std::vector<std::int32_t>{257, 'a'}));  // bc
  EXPECT_EQ(encode(model, "aaa"), (std::vector<std::int32_t>{259, 'a'}));  // leftmost aa
  EXPECT_EQ(encode(model, "aaaaa"), (std::vector<std::int32_t>{260, 'a'}));
  EXPECT_EQ(encode(model, "x"), (std::vector<std::int32_t>{'x'}));
  // Cached and uncached answers agree.
  EXPECT_EQ(encode(model, "abc"), (std::vector<std::int32_t>{258}));
}

TEST(BpeTest, MergeTableLaterDuplicateWins) {
  MergeTable t;
  t.insert(1, 2, 7, 100);
  t.insert(1, 2, 9, 101);
  ASSERT_NE(t.find(1, 2), nullptr);
  EXPECT_EQ(t.find(1, 2)->rank, 9u);
  EXPECT_EQ(t.find(1, 2)->merged, 101);
  EXPECT_EQ(t.find(2, 1), nullptr);
  EXPECT_EQ(t.size(), 1u);
  for (int i = 0; i < 1000; ++i) t.insert(i, i + 1, i, i);  // forces growth
  EXPECT_EQ(t.find(500, 501)->merged, 500);
}

// Long words take the heap path; it must give what the scan gives on the same word. The
// scan is the reference here because it is the definition (lowest rank, leftmost) written
// out directly; words are cut below and above the threshold to exercise both.
TEST(BpeTest, HeapPathAgreesWithScanPath) {
  SmallModel m;
  BpeModel model(m.byte_ids, m.merges, 0);
  std::mt19937 rng(1234);
  const char alphabet[] = "abcx";
  for (int trial = 0; trial < 300; ++trial) {
    std::string word(BpeModel::kHeapThreshold + 1 + rng() % 200, 'a');
    for (char& c : word) c = alphabet[rng() % 4];
    std::vector<std::int32_t> whole = encode(model, word);
    // A word split at an 'x' encodes as its halves (no merge involves 'x'), and halves
    // of at most kHeapThreshold bytes go through the scan.
    std::vector<std::int32_t> by_parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= word.size(); ++i) {
      if (i == word.size() || word[i] == 'x') {
        std::string part = word.substr(start, i - start);
        if (part.size() > BpeModel::kHeapThreshold) {
          by_parts.clear();
          break;
        }
        if (!part.empty()) {
          std::vector<std::int32_t> ids = encode(model, part);
          by_parts.insert(by_parts.end(), ids.begin(), ids.end());
        }
        if (i < word.size()) by_parts.push_back('x');
        start = i + 1;
      }
    }
    if (by_parts.empty()) continue;  // a run without 'x' too long to check this way
    ASSERT_EQ(whole, by_parts) << "word " << word;
  }
}

TEST(BpeTest, WordCacheIsBounded) {
  WordCache cache(4);
  std::int32_t ids[2] = {7, 8};
  for (int i = 0; i < 10; ++i) cache.insert("w" + std::to_string(i), ids, 2);
  int hits = 0;
  std::vector<std::int32_t> out;
  for (int i = 0; i < 10; ++i) hits += cache.lookup("w" + std::to_string(i), &out) ? 1 : 0;
  EXPECT_GE(hits, 1);
  EXPECT_LE(hits, 4);
  EXPECT_EQ(out.size(), static_cast<std::size_t>(hits) * 2);
  EXPECT_FALSE(cache.lookup(std::string(WordCache::kMaxWordBytes + 1, 'z'), &out));
}

}  // namespace
}  // namespace dice::tokenizer
