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

namespace {

// Elements a [rows, cols] view with these strides spans (0 when empty).
size_t span(int64_t rows, int64_t cols, int64_t const* strides) {
  if (rows == 0 || cols == 0) return 0;
  return static_cast<size_t>((rows - 1) * strides[0] + (cols - 1) * strides[1] + 1);
}

// `v` at element stride `stride`, the gaps holding values drawn by `gap`.
template <typename T, typename Gap>
std::vector<T> spread(std::vector<int64_t> const& v, int64_t stride, Gap gap) {
  std::vector<T> out(v.empty() ? 0 : (v.size() - 1) * stride + 1);
  for (auto& x : out) x = static_cast<T>(gap());
  for (size_t i = 0; i < v.size(); ++i) out[i * stride] = static_cast<T>(v[i]);
  return out;
}

}  // namespace

DeviceMetadata::DeviceMetadata(ref::DecodeMetadataCase const& c, MetadataShape const& s) {
  int64_t const batch = static_cast<int64_t>(c.seq_lens.size());
  max_pages = (s.max_context + s.page_size - 1) / s.page_size + 3;
  if (s.aligned) max_pages = (max_pages + 3) / 4 * 4;
  pt_strides[0] = swa_strides[0] = max_pages;
  if (s.io_layout == 1) {
    len_stride = 2;
    pool_stride = 3;
    pt_strides[0] = max_pages + 4;
    swa_strides[0] = 1;
    swa_strides[1] = std::max<int64_t>(batch, 1);
  } else if (s.io_layout == 2) {
    len_stride = 3;
    pool_stride = 2;
    pt_strides[0] = 2 * max_pages + 1;
    pt_strides[1] = 2;
    swa_strides[0] = max_pages + 5;
  }
  gap_seed = s.seed * 131 + 17;
  upload_inputs(c);
  cache_seqlens.resize(batch);
  cu_seqlens_k.resize(batch + 1);
  page_table.resize(span(batch, max_pages, pt_strides));
  if (s.swa) swa_page_table.resize(span(batch, max_pages, swa_strides));
  if (s.plan) num_kv_splits.resize(batch);
  error_flags.resize(1);

  DType const it = s.int64_inputs ? DType::kInt64 : DType::kInt32;
  args.seq_lens = TensorView::strided(s.int64_inputs ? (void*)seq_lens64.get() : (void*)seq_lens32.get(), it, {batch},
                                      {len_stride});
  args.req_pool_indices = TensorView::strided(s.int64_inputs ? (void*)pool64.get() : (void*)pool32.get(), it, {batch},
                                              {pool_stride});
  args.seq_len_delta = c.seq_len_delta;
  args.req_to_token = TensorView::strided(req_to_token.get(), DType::kInt32, {c.req_to_token.rows, c.req_to_token.cols},
                                          {c.req_to_token.row_stride, c.req_to_token.col_stride});
  args.page_size = c.page_size;
  args.cache_seqlens = TensorView::contiguous(cache_seqlens.get(), DType::kInt32, {batch});
  args.cu_seqlens_k = TensorView::contiguous(cu_seqlens_k.get(), DType::kInt32, {batch + 1});
  args.page_table = TensorView::strided(page_table.get(), DType::kInt32, {batch, max_pages}, {pt_strides[0], pt_strides[1]});
  if (s.swa) {
    args.full_to_swa = TensorView::contiguous(full_to_swa.get(), DType::kInt64, {(int64_t)c.full_to_swa.size()});
    args.swa_page_table =
        TensorView::strided(swa_page_table.get(), DType::kInt32, {batch, max_pages}, {swa_strides[0], swa_strides[1]});
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
  // Gaps between strided elements hold other valid lengths and rows: a kernel that ignored
  // the stride would read those and build another valid table, which the comparison sees.
  std::mt19937_64 rng(gap_seed);
  int64_t const max_len = c.req_to_token.cols, rows = c.req_to_token.rows;
  auto gap_len = [&] { return int64_t(rng() % uint64_t(max_len + 1)) - c.seq_len_delta; };
  auto gap_row = [&] { return int64_t(rng() % uint64_t(rows)); };
  // Re-uploads keep the buffer addresses (same sizes), so a captured graph sees new values.
  seq_lens64.upload(spread<int64_t>(c.seq_lens, len_stride, gap_len));
  pool64.upload(spread<int64_t>(c.req_pool_indices, pool_stride, gap_row));
  seq_lens32.upload(spread<int32_t>(c.seq_lens, len_stride, gap_len));
  pool32.upload(spread<int32_t>(c.req_pool_indices, pool_stride, gap_row));
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
  // At the device tables' strides, so that the whole buffers compare, gaps included.
  r.page_table = ref::IntMatrix::make(batch, max_pages, pt_strides[0], pt_strides[1], kPoison);
  r.swa_page_table = ref::IntMatrix::make(batch, max_pages, swa_strides[0], swa_strides[1], kPoison);
  ref::build_decode_metadata(c, r);
  return r;
}

::testing::AssertionResult DeviceMetadata::matches(ref::DecodeMetadataResult const& want) const {
  auto r = equal_exact(cache_seqlens.download(), want.cache_seqlens, "cache_seqlens");
  if (r) r = equal_exact(cu_seqlens_k.download(), want.cu_seqlens_k, "cu_seqlens_k");
  // Every element of the table buffers: the view's at its strides, the gaps still poisoned
  // (expected() lays the reference out at the same strides; IntMatrix keeps one element even
  // when empty).
  auto table = [](DeviceBuffer<int32_t> const& got, ref::IntMatrix const& m, char const* what) {
    return equal_exact(got.download(), std::vector<int32_t>(m.data.begin(), m.data.begin() + got.size()), what);
  };
  if (r) r = table(page_table, want.page_table, "page_table");
  if (r && swa_page_table.size()) r = table(swa_page_table, want.swa_page_table, "swa_page_table");
  if (r && num_kv_splits.size()) r = equal_exact(num_kv_splits.download(), want.num_kv_splits, "num_kv_splits");
  if (r) r = equal_exact(error_flags.download(), std::vector<int32_t>{want.error_flags}, "error_flags");
  return r;
}

}  // namespace baton::test
