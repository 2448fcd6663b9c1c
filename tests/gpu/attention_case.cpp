#include "gpu/attention_case.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>

namespace baton::test {
namespace {

uint16_t to_bits(float f, DType t) {
  uint16_t bits;
  if (t == DType::kBFloat16) {
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    std::memcpy(&bits, &h, 2);
  } else {
    __half h = __float2half_rn(f);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}

float from_bits(uint16_t bits, DType t) {
  if (t == DType::kBFloat16) {
    __nv_bfloat16 h;
    std::memcpy(&h, &bits, 2);
    return __bfloat162float(h);
  }
  __half h;
  std::memcpy(&h, &bits, 2);
  return __half2float(h);
}

// Random values rounded to the dtype; `bits` gets the raw encoding.
void random_fill(std::vector<float>& vals, std::vector<uint16_t>& bits, DType t, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  bits.resize(vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    bits[i] = to_bits(dist(rng), t);
    vals[i] = from_bits(bits[i], t);
  }
}

}  // namespace

AttnShape two_row_chunks_case(int head_dim, int num_kv_heads) {
  AttnShape s;
  s.lens = {3000, 150, 9};
  s.q_len = 8;
  s.num_kv_heads = num_kv_heads;
  s.num_q_heads = num_kv_heads * (head_dim == 256 ? 4 : 8);
  s.head_dim = head_dim;
  s.page_size = 64;
  s.max_splits = 8;
  s.splits = {8, 1, 1};
  return s;
}

AttnShape paired_ring_case(int num_kv_heads, int group) {
  AttnShape s;
  s.lens = {250, 200, 3000};
  s.q_len = 8;
  s.num_kv_heads = num_kv_heads;
  s.num_q_heads = num_kv_heads * group;
  s.head_dim = 128;
  s.page_size = 64;
  s.max_splits = 8;
  s.splits = {1, 1, 8};
  return s;
}

DeviceAttention::DeviceAttention(AttnShape const& s) : shape_(s) {
  EXPECT_TRUE(s.splits.empty() || s.splits.size() == s.lens.size())
      << s.splits.size() << " split counts for " << s.lens.size() << " requests: the view would read past them";
  std::mt19937_64 rng(s.seed);
  int const batch = static_cast<int>(s.lens.size());
  int const D = s.head_dim, ps = s.page_size, hkv = s.num_kv_heads;
  c.batch = batch;
  c.q_len = s.q_len;
  c.num_q_heads = s.num_q_heads;
  c.num_kv_heads = hkv;
  c.head_dim = D;
  c.page_size = ps;
  c.scale = s.softmax_scale > 0 ? s.softmax_scale : 1.0f / std::sqrt(static_cast<float>(D));
  c.window_left = s.window_left;
  c.softcap = s.softcap;
  int max_len = 1;
  for (int l : s.lens) max_len = std::max(max_len, l);
  c.pt_stride = (max_len + ps - 1) / ps + 2;  // padded rows
  pool_pages_ = int64_t(batch) * c.pt_stride + 3;

  // Pool strides (elements). Padded: 8 extra elements per head row and 16 per page.
  int64_t const row = s.padded ? D + 8 : D;
  if (s.layout == KvLayout::kNHD) {
    c.stride_head = row;
    c.stride_token = hkv * row;
    c.stride_page = ps * c.stride_token + (s.padded ? 16 : 0);
  } else {
    c.stride_token = row;
    c.stride_head = ps * row;
    c.stride_page = hkv * c.stride_head + (s.padded ? 16 : 0);
  }
  // V's: by default K's; v_padded: rows 24 elements and pages 40 longer than K's unpadded ones.
  int64_t const v_row = s.v_padded ? D + 24 : row, v_page_pad = s.v_padded ? 40 : s.padded ? 16 : 0;
  if (s.layout == KvLayout::kNHD) {
    c.v_stride_head = v_row;
    c.v_stride_token = hkv * v_row;
    c.v_stride_page = ps * c.v_stride_token + v_page_pad;
  } else {
    c.v_stride_token = v_row;
    c.v_stride_head = ps * v_row;
    c.v_stride_page = hkv * c.v_stride_head + v_page_pad;
  }
  std::vector<uint16_t> bits;
  c.q.resize(size_t(batch) * s.q_len * s.num_q_heads * D);
  random_fill(c.q, bits, s.dtype, rng, 2.0f);
  if (s.zero_q) std::fill(c.q.begin(), c.q.end(), 0.f);
  c.k.resize(size_t(pool_pages_) * c.stride_page);
  random_fill(c.k, bits, s.dtype, rng, 1.0f);
  c.v.resize(size_t(pool_pages_) * c.v_stride_page);
  random_fill(c.v, bits, s.dtype, rng, 1.0f);
  upload_qkv();

  c.cache_seqlens.assign(s.lens.begin(), s.lens.end());
  seqlens.upload(c.cache_seqlens);
  fill_pages(s.seed * 7 + 1);
  if (!s.splits.empty()) splits.upload(std::vector<int32_t>(s.splits.begin(), s.splits.end()));
  if (s.sinks) {
    c.sinks.resize(s.num_q_heads);
    for (auto& x : c.sinks) x = std::uniform_real_distribution<float>(-2, 4)(rng) + s.sink_bias;
    sinks.upload(c.sinks);
  }
  if (s.alibi) {
    c.alibi.resize(s.num_q_heads);
    for (int h = 0; h < s.num_q_heads; ++h) c.alibi[h] = std::pow(2.0f, -8.0f * (h + 1) / s.num_q_heads);
    alibi.upload(c.alibi);
  }
  int64_t const tokens = int64_t(batch) * s.q_len;
  int64_t const out_row = D + s.out_pad;
  if (s.out_heads_major) {
    out_stride_token_ = out_row;
    out_stride_head_ = tokens * out_row + s.out_token_pad;
  } else {
    out_stride_head_ = out_row;
    out_stride_token_ = s.num_q_heads * out_row + s.out_token_pad;
  }
  out.resize((tokens - 1) * out_stride_token_ + (s.num_q_heads - 1) * out_stride_head_ + out_row + s.out_token_pad);
  lse_stride_token_ = s.num_q_heads + s.lse_pad;
  lse.resize(tokens * lse_stride_token_);
  workspace.resize(std::max<size_t>(1, decode_attention_workspace_bytes(batch, s.q_len, s.num_q_heads, D, s.max_splits)));
  merge_counters.resize(size_t(int64_t(batch) * s.q_len) * s.num_q_heads);
  merge_counters.poison(0x00);  // zeroed once after allocation

  DecodeAttentionArgs& a = args;
  int64_t const q_row = D + s.q_pad;
  a.q = TensorView::strided(q.get(), s.dtype, {tokens, s.num_q_heads, D}, {s.num_q_heads * q_row, q_row, 1});
  auto pool_view = [&](void* p, int64_t page, int64_t token, int64_t head) {
    return s.layout == KvLayout::kNHD ? TensorView::strided(p, s.dtype, {pool_pages_, ps, hkv, D}, {page, token, head, 1})
                                      : TensorView::strided(p, s.dtype, {pool_pages_, hkv, ps, D}, {page, head, token, 1});
  };
  a.k_cache = pool_view(k.get(), c.stride_page, c.stride_token, c.stride_head);
  a.v_cache = pool_view(v.get(), c.v_stride_page, c.v_stride_token, c.v_stride_head);
  a.layout = s.layout;
  a.cache_seqlens = TensorView::contiguous(seqlens.get(), DType::kInt32, {batch});
  a.page_table = TensorView::strided(page_table.get(), DType::kInt32, {batch, c.pt_stride - 1}, {c.pt_stride, 1});
  if (!s.splits.empty()) a.num_kv_splits = TensorView::contiguous(splits.get(), DType::kInt32, {batch});
  a.max_splits = s.max_splits;
  a.inputs_written_before_chain = s.early;
  a.single_launch = s.single_launch;
  if (s.single_launch) a.merge_counters = TensorView::contiguous(merge_counters.get(), DType::kInt32, {int64_t(merge_counters.size())});
  a.q_len = s.q_len;
  a.window_left = s.window_left;
  a.softcap = s.softcap;
  a.softmax_scale = s.softmax_scale;
  if (s.sinks) a.sinks = TensorView::contiguous(sinks.get(), DType::kFloat32, {s.num_q_heads});
  if (s.alibi) a.alibi_slopes = TensorView::contiguous(alibi.get(), DType::kFloat32, {s.num_q_heads});
  a.out = TensorView::strided(out.get(), s.dtype, {tokens, s.num_q_heads, D}, {out_stride_token_, out_stride_head_, 1});
  a.lse = TensorView::strided(lse.get(), DType::kFloat32, {tokens, s.num_q_heads}, {lse_stride_token_, 1});
}

void DeviceAttention::fill_pages(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> perm(pool_pages_);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  c.page_table.assign(size_t(c.batch) * c.pt_stride, -7);  // padding never read
  size_t next = 0;
  for (int b = 0; b < c.batch; ++b) {
    int64_t const pages = (c.cache_seqlens[b] + c.page_size - 1) / c.page_size;
    for (int64_t j = 0; j < pages; ++j) c.page_table[b * c.pt_stride + j] = perm[next++];
  }
  page_table.upload(c.page_table);
}

void DeviceAttention::reshuffle(std::vector<int> const& lens, std::vector<int> const& new_splits, uint64_t seed) {
  c.cache_seqlens.assign(lens.begin(), lens.end());
  seqlens.upload(c.cache_seqlens);
  fill_pages(seed);
  if (!new_splits.empty()) splits.upload(std::vector<int32_t>(new_splits.begin(), new_splits.end()));
}

void DeviceAttention::upload_device_inputs(std::vector<int32_t> const& seqlens_in, std::vector<int32_t> const& rows,
                                           std::vector<int32_t> const& split_counts) {
  seqlens.upload(seqlens_in);
  page_table.upload(rows);
  if (!split_counts.empty()) splits.upload(split_counts);
}

void DeviceAttention::upload_qkv() {
  int const D = shape_.head_dim;
  auto encode = [&](std::vector<float> const& vals) {
    std::vector<uint16_t> bits(vals.size());
    for (size_t i = 0; i < vals.size(); ++i) bits[i] = to_bits(vals[i], shape_.dtype);
    return bits;
  };
  std::vector<uint16_t> bits = encode(c.q);
  if (shape_.q_pad > 0) {  // each row followed by q_pad NaN elements
    std::vector<uint16_t> wide(bits.size() / D * (D + shape_.q_pad), 0xFFFF);
    for (size_t r = 0; r < bits.size() / D; ++r) std::copy_n(bits.begin() + r * D, D, wide.begin() + r * (D + shape_.q_pad));
    bits.swap(wide);
  }
  q.upload(bits);
  k.upload(encode(c.k));
  v.upload(encode(c.v));
}

int32_t DeviceAttention::zero_spare_page() {
  std::vector<bool> used(pool_pages_, false);
  for (int b = 0; b < c.batch; ++b) {
    int64_t const pages = (c.cache_seqlens[b] + c.page_size - 1) / c.page_size;
    for (int64_t j = 0; j < pages; ++j) used[c.page_table[b * c.pt_stride + j]] = true;
  }
  int32_t page = 0;
  while (used[page]) ++page;  // the pool holds 3 pages more than the table's rows
  for (auto [buf, vals, stride] : {std::tuple{&k, &c.k, c.stride_page}, {&v, &c.v, c.v_stride_page}}) {
    size_t const first = size_t(page) * stride, last = std::min(first + stride, vals->size());
    std::vector<uint16_t> bits = buf->download();
    std::fill(bits.begin() + first, bits.begin() + last, uint16_t(0));
    buf->upload(bits);
    std::fill(vals->begin() + first, vals->begin() + last, 0.f);
  }
  return page;
}

void DeviceAttention::poison() {
  out.poison(0xFF);  // NaN in bf16 and fp16
  lse.poison(0xFF);
  workspace.poison((poison_calls_++ + shape_.seed) % 2 == 0 ? 0xFF : 0x7F);  // odd seeds start finite
}

std::vector<uint16_t> DeviceAttention::out_bits() const {
  std::vector<uint16_t> const all = out.download();
  int64_t const D = shape_.head_dim, tokens = int64_t(c.batch) * c.q_len;
  std::vector<uint16_t> bits(size_t(tokens) * c.num_q_heads * D);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < c.num_q_heads; ++h) {
      std::memcpy(bits.data() + (t * c.num_q_heads + h) * D, all.data() + t * out_stride_token_ + h * out_stride_head_, D * 2);
    }
  }
  return bits;
}

std::vector<float> DeviceAttention::lse_values() const {
  std::vector<float> const all = lse.download();
  int64_t const tokens = int64_t(c.batch) * c.q_len;
  std::vector<float> vals(size_t(tokens) * c.num_q_heads);
  for (int64_t t = 0; t < tokens; ++t) {
    std::memcpy(vals.data() + t * c.num_q_heads, all.data() + t * lse_stride_token_, c.num_q_heads * sizeof(float));
  }
  return vals;
}

bool DeviceAttention::padding_untouched() const {
  std::vector<uint16_t> const o = out.download();
  std::vector<float> const l = lse.download();
  std::vector<bool> in_out(o.size(), false), in_lse(l.size(), false);
  int64_t const D = shape_.head_dim, tokens = int64_t(c.batch) * c.q_len;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < c.num_q_heads; ++h) {
      std::fill_n(in_out.begin() + t * out_stride_token_ + h * out_stride_head_, D, true);
      in_lse[t * lse_stride_token_ + h] = true;
    }
  }
  for (size_t i = 0; i < o.size(); ++i) {
    if (!in_out[i] && o[i] != 0xFFFF) return false;
  }
  for (size_t i = 0; i < l.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &l[i], 4);
    if (!in_lse[i] && bits != 0xFFFFFFFFu) return false;
  }
  return true;
}

std::vector<unsigned char> DeviceAttention::output_bytes() const {
  std::vector<uint16_t> const bits = out_bits();
  std::vector<float> const l = lse_values();
  std::vector<unsigned char> all(bits.size() * 2 + l.size() * 4);
  std::memcpy(all.data(), bits.data(), bits.size() * 2);
  std::memcpy(all.data() + bits.size() * 2, l.data(), l.size() * 4);
  return all;
}

std::vector<unsigned char> DeviceAttention::call_bytes(bool single, PdlMode pdl, cudaStream_t stream) {
  args.single_launch = single;
  args.merge_counters =
      single ? TensorView::contiguous(merge_counters.get(), DType::kInt32, {int64_t(merge_counters.size())}) : TensorView{};
  poison();
  Status const s = decode_attention(args, ws(), {stream, pdl});
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return output_bytes();
}

DeviceAttention::Captured DeviceAttention::captured(cudaStream_t stream, PdlMode pdl, int calls) {
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  for (int i = 0; i < calls; ++i) {
    Status const st = decode_attention(args, ws(), {stream, pdl});
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  Captured c;
  if (graph == nullptr) return c;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &c.nodes), cudaSuccess);
#if CUDART_VERSION >= 13000
  auto const get_edges = [](auto... a) { return cudaGraphGetEdges(a...); };
#else  // CUDA 12.3-12.9: the form with edge data is the _v2 one
  auto const get_edges = [](auto... a) { return cudaGraphGetEdges_v2(a...); };
#endif
  EXPECT_EQ(get_edges(graph, (cudaGraphNode_t*)nullptr, (cudaGraphNode_t*)nullptr, (cudaGraphEdgeData*)nullptr, &c.edges),
            cudaSuccess);
  std::vector<cudaGraphNode_t> from(c.edges), to(c.edges);
  std::vector<cudaGraphEdgeData> data(c.edges);
  EXPECT_EQ(get_edges(graph, from.data(), to.data(), data.data(), &c.edges), cudaSuccess);
  for (size_t e = 0; e < c.edges; ++e) c.programmatic += data[e].type == cudaGraphDependencyTypeProgrammatic;
  cudaGraphDestroy(graph);
  return c;
}

::testing::AssertionResult DeviceAttention::matches_reference(bool check_lse, double lse_atol, double lse_rtol) const {
  std::vector<double> ref_out, ref_lse;
  std::vector<float> naive_out, naive_lse;
  ref::decode_attention(c, ref_out, ref_lse);
  ref::decode_attention_naive(c, naive_out, naive_lse);
  std::vector<uint16_t> got_bits = out_bits();
  std::vector<float> got_lse = lse_values();
  int const D = shape_.head_dim;
  // Per row (token, head), docs/numerics.md: |out - ref| <= 2 x the row's largest same-precision
  // error (float math, output rounded to the dtype) + kUlps units in the last place of the
  // dtype at the row's largest |ref|. The bound follows each row's own scale: a long request's
  // outputs average many V rows and are small, and a batch-wide bound set by its short
  // requests' outputs could not see a key of a long request read twice or skipped.
  double const unit = shape_.dtype == DType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  constexpr double kUlps = 4;  // 1.6% of the row's largest |ref| in bf16, 0.2% in fp16
  size_t bad = 0;
  std::string msg;
  double worst_out = 0, worst_lse = 0;  // the largest err / tol over the rows
  for (size_t r = 0; r < ref_lse.size(); ++r) {
    double naive_err = 0, scale = 0;
    for (int d = 0; d < D; ++d) {
      size_t const i = r * D + d;
      naive_err = std::max(naive_err, std::fabs(double(from_bits(to_bits(naive_out[i], shape_.dtype), shape_.dtype)) - ref_out[i]));
      scale = std::max(scale, std::fabs(ref_out[i]));
    }
    double const tol = 2 * naive_err + kUlps * unit * scale;
    // A row with no visible key is zeros (decode-attention.md), exactly: the reference's
    // all-zero rows (a row that sees keys averages random V, never exactly 0 in fp64), also
    // with a sink, where lse is finite.
    bool const empty = scale == 0.0;
    for (int d = 0; d < D; ++d) {
      size_t const i = r * D + d;
      float const g = from_bits(got_bits[i], shape_.dtype);
      double const err = std::fabs(double(g) - ref_out[i]);
      bool const ok = empty ? g == 0.f : err <= tol;  // NaN fails
      if (!empty && tol > 0) worst_out = std::max(worst_out, std::isnan(err) ? INFINITY : err / tol);
      if (!ok) {
        if (bad < 6) {
          msg += "\n  out[" + std::to_string(i) + "] (row " + std::to_string(r) + ") got " + std::to_string(g) + " want " +
                 std::to_string(ref_out[i]) + ", row tolerance " + std::to_string(tol) + " (2 x naive error " +
                 std::to_string(naive_err) + " + " + std::to_string(kUlps) + " ulp of " + std::to_string(scale) + ")";
        }
        ++bad;
      }
    }
  }
  // lse per row: 2 x the float computation's error + lse_atol + lse_rtol |lse|; -inf exactly
  // where the reference has it. The defaults (2e-5 + 1e-6 |lse|) are under what one key more or
  // fewer makes at 20548 keys (AttentionInputs.EveryKeyCountedOnce); the kernels stayed within
  // 0.051 of that bound over the whole suite (fiftieth session).
  for (size_t i = 0; check_lse && i < ref_lse.size(); ++i) {
    double const w = ref_lse[i], g = got_lse[i];
    bool ok = false;
    if (std::isinf(w)) {
      ok = std::isinf(g) && g < 0;
    } else {
      double const tol = 2 * std::fabs(double(naive_lse[i]) - w) + lse_atol + lse_rtol * std::fabs(w);
      double const err = std::fabs(g - w);
      ok = err <= tol;
      worst_lse = std::max(worst_lse, std::isnan(err) ? INFINITY : err / tol);
      if (!ok && bad < 6) {
        msg += "\n  lse[" + std::to_string(i) + "] got " + std::to_string(g) + " want " + std::to_string(w) +
               ", tolerance " + std::to_string(tol);
      }
    }
    if (!ok) {
      if (bad < 6 && std::isinf(w)) msg += "\n  lse[" + std::to_string(i) + "] got " + std::to_string(g) + " want -inf";
      ++bad;
    }
  }
  // BATON_TEST_TOLERANCE_REPORT=1: each check's largest err / tol on stderr, to see the margin.
  if (char const* report = std::getenv("BATON_TEST_TOLERANCE_REPORT"); report != nullptr && report[0] == '1') {
    std::fprintf(stderr, "tolerance-report out %.4f lse %.4f\n", worst_out, worst_lse);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " elements outside tolerance" << msg;
}

}  // namespace baton::test
