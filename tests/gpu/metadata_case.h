// Builds random decode-metadata cases on the host and mirrors them on the device, so each
// GPU test compares the op with tests/reference on the same data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "baton/metadata.h"
#include "common/gpu.h"
#include "reference/metadata_ref.h"

namespace baton::test {

constexpr int32_t kPoison = static_cast<int32_t>(0xABABABAB);  // memset byte 0xAB

struct MetadataShape {
  int page_size = 1;
  int batch = 1;
  int64_t max_context = 1024;
  bool int64_inputs = false;
  bool strided = false;  // req_to_token with padded rows and column stride 2
  bool aligned = false;  // page-table rows, and req_to_token's unless strided, padded to 16 bytes,
                         // so that page 1 takes the vector path (decode_metadata.cu)
  bool swa = false;
  int64_t delta = 0;
  int64_t fill_columns = 0;
  bool plan = false;
  int ctas_per_wave = 0;  // with plan: > 0 selects the balanced plan (max_splits 33)
  uint64_t seed = 1;
  bool early_reads = false;  // DecodeMetadataArgs::inputs_written_before_chain
  int plan_q_len = 1;        // with plan: SplitPlanParams::q_len (draft tokens per request)
  int plan_head_dim = 0;     // with plan: SplitPlanParams::head_dim (0: 128)
  std::vector<int64_t> lens; // KV lengths (after delta) of the first requests; the edge set follows
  // Views that are not packed (the kernels take any strides for these; vector outputs must be
  // packed): 0 packed; 1 seq_lens stride 2, req_pool_indices stride 3, page_table rows padded
  // by 4 columns (16-byte rows when `aligned`, so page 1 keeps the vector path), swa_page_table
  // column-major (row stride 1, column stride batch); 2 seq_lens stride 3, req_pool_indices
  // stride 2, page_table with column stride 2, swa_page_table rows padded by 5 columns. The
  // gaps of the inputs hold other valid lengths and rows; the gaps of the outputs keep their
  // poison (DeviceMetadata::matches checks every element of the buffers).
  int io_layout = 0;
};

// Lengths: s.lens, then the edge set (0, 1, ps-1, ps, ps+1, max_context), then random; a random
// req_to_token of page-aligned slots, a random full_to_swa with -1 -> -1.
ref::DecodeMetadataCase make_metadata_case(MetadataShape const& s);

// Device copies of a case plus its outputs; args() wires them into DecodeMetadataArgs.
struct DeviceMetadata {
  DeviceBuffer<int64_t> seq_lens64, pool64, full_to_swa;
  DeviceBuffer<int32_t> seq_lens32, pool32, req_to_token;
  DeviceBuffer<int32_t> cache_seqlens, cu_seqlens_k, page_table, swa_page_table, num_kv_splits, error_flags;
  int64_t max_pages = 0;
  int64_t len_stride = 1, pool_stride = 1;  // element strides of seq_lens and req_pool_indices
  int64_t pt_strides[2] = {0, 1}, swa_strides[2] = {0, 1};
  uint64_t gap_seed = 0;  // the inputs' gap values (MetadataShape::io_layout)
  DecodeMetadataArgs args;

  DeviceMetadata(ref::DecodeMetadataCase const& c, MetadataShape const& s);
  void upload_inputs(ref::DecodeMetadataCase const& c);  // same shapes, new contents
  void poison_outputs();
  // Reference result over outputs pre-filled with the poison.
  ref::DecodeMetadataResult expected(ref::DecodeMetadataCase const& c) const;
  // Compares every output element (poisoned regions included) with `want`.
  ::testing::AssertionResult matches(ref::DecodeMetadataResult const& want) const;
};

}  // namespace baton::test
