#include "model/tiled_attention.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "model/torch_compat.h"

namespace dice {
namespace {

// mask's key columns [bounds[0], bounds[1]), [bounds[2], bounds[3]), ... side by side.
at::Tensor cut_columns(const at::Tensor& mask, const std::vector<int64_t>& bounds) {
  std::vector<at::Tensor> pieces;
  for (std::size_t i = 0; i + 1 < bounds.size(); i += 2) {
    pieces.push_back(mask.narrow(3, bounds[i], bounds[i + 1] - bounds[i]));
  }
  return pieces.size() == 1 ? pieces.front() : at::cat(pieces, 3);
}

}  // namespace

TiledAttention TiledAttention::plan(const at::Tensor& mask, int64_t tile) {
  TORCH_CHECK(mask.dim() == 4 && mask.size(1) == 1 && mask.scalar_type() == at::kBool,
              "TiledAttention: the mask must be bool [B|1, 1, queries, keys], got ",
              mask.scalar_type(), " ", mask.sizes());
  TORCH_CHECK(tile > 0, "TiledAttention: queries per tile must be positive, got ", tile);
  TiledAttention p;
  p.queries_ = mask.size(2);
  p.keys_ = mask.size(3);
  // Which key columns each tile's queries see (over the batch too), [tiles, K], and whether every
  // query row sees a key (dense SDPA and the CPU fallback disagree on an empty row): one host
  // copy a forward.
  at::Tensor seen = mask.any(0).select(0, 0);  // [Q, K]
  std::vector<at::Tensor> per_tile;
  for (int64_t s = 0; s < p.queries_; s += tile) {
    per_tile.push_back(seen.narrow(0, s, std::min(tile, p.queries_ - s)).any(0));
  }
  const at::Tensor every_row_sees = mask.any(3).all().view({1});
  at::Tensor host = at::cat({at::stack(per_tile).flatten(), every_row_sees}).to(at::kCPU);
  const bool* visible = host.data_ptr<bool>();
  TORCH_CHECK(visible[host.numel() - 1], "TiledAttention: a query may attend to no key");
  for (std::size_t t = 0; t < per_tile.size(); ++t) {
    Tile out;
    out.begin = static_cast<int64_t>(t) * tile;
    out.end = std::min(out.begin + tile, p.queries_);
    const bool* row = visible + static_cast<int64_t>(t) * p.keys_;
    std::vector<int64_t> bounds;  // begin, end, begin, end, ...
    for (int64_t k = 0; k < p.keys_; ++k) {
      if (row[k] && (k == 0 || !row[k - 1])) bounds.push_back(k);
      if (row[k] && (k + 1 == p.keys_ || !row[k + 1])) bounds.push_back(k + 1);
    }
    TORCH_CHECK(!bounds.empty(), "TiledAttention: queries ", out.begin, "..", out.end - 1,
                " may attend to no key");
    for (std::size_t i = 0; i < bounds.size(); i += 2)
      out.keys.push_back({bounds[i], bounds[i + 1]});
    out.mask = cut_columns(mask.narrow(2, out.begin, out.end - out.begin), bounds).contiguous();
    p.tiles_.push_back(std::move(out));
  }
  return p;
}

at::Tensor TiledAttention::gather(const std::vector<KeyPart>& parts,
                                  const std::vector<KeyRange>& ranges) {
  std::vector<at::Tensor> pieces;
  for (const KeyRange& range : ranges) {
    int64_t offset = 0;
    for (const KeyPart& part : parts) {
      const int64_t length = part.tensor.size(2);
      const int64_t begin = std::max(range.begin, offset);
      const int64_t end = std::min(range.end, offset + length);
      if (begin < end) {
        at::Tensor piece = part.tensor.narrow(2, begin - offset, end - begin);
        pieces.push_back(part.rows.defined() ? piece.index_select(0, part.rows) : piece);
      }
      offset += length;
    }
  }
  return pieces.size() == 1 ? pieces.front() : at::cat(pieces, 2);
}

at::Tensor TiledAttention::attend(const at::Tensor& q, const std::vector<KeyPart>& keys,
                                  const std::vector<KeyPart>& values, double scale) const {
  TORCH_CHECK(q.dim() == 4 && q.size(2) == queries_, "TiledAttention: planned for ", queries_,
              " queries, got q ", q.sizes());
  for (const std::vector<KeyPart>* parts : {&keys, &values}) {
    int64_t length = 0;
    for (const KeyPart& part : *parts) length += part.tensor.size(2);
    TORCH_CHECK(length == keys_, "TiledAttention: planned for ", keys_, " keys, got ", length);
  }
  std::vector<at::Tensor> out;
  for (const Tile& tile : tiles_) {
    at::Tensor q_tile = tiles_.size() == 1 ? q : q.narrow(2, tile.begin, tile.end - tile.begin);
    out.push_back(compat::scaled_dot_product_attention(
        q_tile, gather(keys, tile.keys), gather(values, tile.keys), tile.mask, scale));
  }
  return out.size() == 1 ? out.front() : at::cat(out, 2);
}

double TiledAttention::computed_fraction() const {
  double computed = 0;
  for (const Tile& tile : tiles_) {
    int64_t read = 0;
    for (const KeyRange& r : tile.keys) read += r.end - r.begin;
    computed += static_cast<double>(tile.end - tile.begin) * static_cast<double>(read);
  }
  return computed / (static_cast<double>(queries_) * static_cast<double>(keys_));
}

}  // namespace dice
