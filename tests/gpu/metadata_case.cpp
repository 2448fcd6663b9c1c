#include "gpu/metadata_case.h"

#include <algorithm>

namespace baton::test {

ref::DecodeMetadataCase make_metadata_case(MetadataShape const& s) {
  std::mt19937_64 rng(s.seed);
  ref::DecodeMetadataCase c;
  c.page_size = s.page_size;
  c.seq_len_delta = s.delta;
  c.fill_columns = s.fill_columns;
  int64_t const num_rows = s.batch + 3;
  int64_t const ps = s.page_size;
  std::vector<int64_t> edges = s.lens;
  for (int64_t e : {int64_t(0), int64_t(1), ps - 1, ps, ps + 1, s.max_context}) edges.push_back(e);
  for (int b = 0; b < s.batch; ++b) {
    int64_t len = b < static_cast<int>(edges.size()) ? edges[b]
                                                     : std::uniform_int_distribution<int64_t>(0, s.max_context)(rng);
    len = std::clamp<int64_t>(len, 0, s.max_context);
    c.seq_lens.push_back(std::max<int64_t>(len - s.delta, -s.delta));
  }
  std::vector<int64_t> rows(num_rows);
  for (int64_t r = 0; r < num_rows; ++r) rows[r] = r;
  std::shuffle(rows.begin(), rows.end(), rng);
  c.req_pool_indices.assign(rows.begin(), rows.begin() + s.batch);

  int64_t const col_stride = s.strided ? 2 : 1;
  int64_t row_stride = s.max_context;
  if (s.strided) {
    row_stride = s.max_context * 2 + 3;
  } else if (s.aligned) {
    row_stride = (s.max_context + 3) / 4 * 4;  // 16-byte rows
  }
  c.req_to_token = ref::IntMatrix::make(num_rows, s.max_context, row_stride, col_stride, 0);
  int64_t const pool_pages = 1 << 14;
  std::uniform_int_distribution<int64_t> page_dist(0, pool_pages - 1);
  for (int64_t r = 0; r < num_rows; ++r) {
    int64_t page = 0;
    for (int64_t t = 0; t < s.max_context; ++t) {
      if (t % ps == 0) page = page_dist(rng);
      // Only the first slot of a page names it (column j * page_size, decode-metadata.md); the
      // others hold slots of other pages, so a kernel that read another column of the page
      // would get another page id (with every slot of the page, any column gave the same id).
      int32_t slot = static_cast<int32_t>((t % ps == 0 ? page : page_dist(rng)) * ps + t % ps);
      if (rng() % 997 == 0) slot = -1;  // an unmapped token (reads full_to_swa's last entry)
      c.req_to_token.at(r, t) = slot;
    }
  }
  if (s.swa) {
    c.full_to_swa.resize(pool_pages * ps + 1);
    for (auto& v : c.full_to_swa) v = (rng() % 4 == 0) ? 0 : static_cast<int64_t>(rng() % (int64_t(1) << 22));
    c.full_to_swa.back() = -1;
  }
  if (s.plan) {
    c.plan_splits = true;
    c.plan = {32, 8, s.ctas_per_wave > 0 ? 33 : 16, 132, 0, s.ctas_per_wave};
    c.plan.q_len = s.plan_q_len;
    c.plan.head_dim = s.plan_head_dim;
  }
  return c;
}

DeviceMetadata::DeviceMetadata(ref::DecodeMetadataCase const& c, MetadataShape const& s) {
  int64_t const batch = static_cast<int64_t>(c.seq_lens.size());
  max_pages = (s.max_context + s.page_size - 1) / s.page_size + 3;
  if (s.aligned) max_pages = (max_pages + 3) / 4 * 4;
  upload_inputs(c);
  cache_seqlens.resize(batch);
  cu_seqlens_k.resize(batch + 1);
  page_table.resize(batch * max_pages);
  if (s.swa) swa_page_table.resize(batch * max_pages);
  if (s.plan) num_kv_splits.resize(batch);
  error_flags.resize(1);

  DType const it = s.int64_inputs ? DType::kInt64 : DType::kInt32;
  args.seq_lens = TensorView::contiguous(s.int64_inputs ? (void*)seq_lens64.get() : (void*)seq_lens32.get(), it, {batch});
  args.req_pool_indices = TensorView::contiguous(s.int64_inputs ? (void*)pool64.get() : (void*)pool32.get(), it, {batch});
  args.seq_len_delta = c.seq_len_delta;
  args.req_to_token = TensorView::strided(req_to_token.get(), DType::kInt32, {c.req_to_token.rows, c.req_to_token.cols},
                                          {c.req_to_token.row_stride, c.req_to_token.col_stride});
  args.page_size = c.page_size;
  args.cache_seqlens = TensorView::contiguous(cache_seqlens.get(), DType::kInt32, {batch});
  args.cu_seqlens_k = TensorView::contiguous(cu_seqlens_k.get(), DType::kInt32, {batch + 1});
  args.page_table = TensorView::contiguous(page_table.get(), DType::kInt32, {batch, max_pages});
  if (s.swa) {
    args.full_to_swa = TensorView::contiguous(full_to_swa.get(), DType::kInt64, {(int64_t)c.full_to_swa.size()});
    args.swa_page_table = TensorView::contiguous(swa_page_table.get(), DType::kInt32, {batch, max_pages});
  }
  if (s.plan) {
    args.num_kv_splits = TensorView::contiguous(num_kv_splits.get(), DType::kInt32, {batch});
    args.split_plan = {c.plan.num_q_heads, c.plan.num_kv_heads, c.plan.max_splits, c.plan.num_sms,
                       c.plan.min_keys_per_split, c.plan.ctas_per_wave, c.plan.q_len, c.plan.head_dim};
  }
  args.fill_columns = c.fill_columns;
  args.inputs_written_before_chain = s.early_reads;
  args.error_flags = TensorView::contiguous(error_flags.get(), DType::kInt32, {1});
}

void DeviceMetadata::upload_inputs(ref::DecodeMetadataCase const& c) {
  std::vector<int32_t> l32(c.seq_lens.begin(), c.seq_lens.end()), p32(c.req_pool_indices.begin(), c.req_pool_indices.end());
  // Re-uploads keep the buffer addresses (same sizes), so a captured graph sees new values.
  seq_lens64.upload(c.seq_lens);
  pool64.upload(c.req_pool_indices);
  seq_lens32.upload(l32);
  pool32.upload(p32);
  req_to_token.upload(c.req_to_token.data);
  if (!c.full_to_swa.empty()) full_to_swa.upload(c.full_to_swa);
}

void DeviceMetadata::poison_outputs() {
  for (auto* b : {&cache_seqlens, &cu_seqlens_k, &page_table, &swa_page_table, &num_kv_splits}) b->poison(0xAB);
  error_flags.poison(0);
}

ref::DecodeMetadataResult DeviceMetadata::expected(ref::DecodeMetadataCase const& c) const {
  int64_t const batch = static_cast<int64_t>(c.seq_lens.size());
  ref::DecodeMetadataResult r;
  r.page_table = ref::IntMatrix::make(batch, max_pages, max_pages, 1, kPoison);
  r.swa_page_table = ref::IntMatrix::make(batch, max_pages, max_pages, 1, kPoison);
  ref::build_decode_metadata(c, r);
  return r;
}

::testing::AssertionResult DeviceMetadata::matches(ref::DecodeMetadataResult const& want) const {
  auto r = equal_exact(cache_seqlens.download(), want.cache_seqlens, "cache_seqlens");
  if (r) r = equal_exact(cu_seqlens_k.download(), want.cu_seqlens_k, "cu_seqlens_k");
  if (r) {
    std::vector<int32_t> pt = page_table.download();
    std::vector<int32_t> want_pt(want.page_table.data.begin(), want.page_table.data.begin() + pt.size());
    r = equal_exact(pt, want_pt, "page_table");
  }
  if (r && swa_page_table.size()) {
    std::vector<int32_t> pt = swa_page_table.download();
    std::vector<int32_t> want_pt(want.swa_page_table.data.begin(), want.swa_page_table.data.begin() + pt.size());
    r = equal_exact(pt, want_pt, "swa_page_table");
  }
  if (r && num_kv_splits.size()) r = equal_exact(num_kv_splits.download(), want.num_kv_splits, "num_kv_splits");
  if (r) r = equal_exact(error_flags.download(), std::vector<int32_t>{want.error_flags}, "error_flags");
  return r;
}

}  // namespace baton::test
