// The emulator's access recording (emulate/access_record.h): on a GEMM stage each block's tile
// of A, B and C is the one its schedule's block tile gives; on a fused kernel of the sample BERT
// the reads after a grid barrier are other blocks' writes; recording leaves the outputs as
// they were; some blocks alone record exactly what the whole grid recorded of them; memory
// pictures and their SVG are drawn from a record.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>

#include "core/emulate/emulate.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/report/memory_picture.h"
#include "core/schedule/schedule.h"
#include "core/session/compile.h"
#include "core/session/memory_record.h"
#include "core/session/pipeline.h"
#include "core/te/builder.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

using emulate::ElementRanges;
using emulate::KernelAccess;
using te::Expr;
using te::Tensor;

te::Op matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

std::shared_ptr<TensorData> random_tensor(const Tensor& t, uint32_t seed) {
  auto d = std::make_shared<TensorData>(t->dtype, t->shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, u(rng));
  return d;
}

/// The rectangle rows [r0, r0 + nr) x cols [c0, c0 + nc) of a rows x cols row-major tensor.
ElementRanges rect(int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
  ElementRanges s;
  for (int64_t r = r0; r < r0 + nr; ++r) {
    const int64_t a = r * cols + c0, b = a + nc;
    if (!s.ranges.empty() && s.ranges.back().second == a)
      s.ranges.back().second = b;
    else
      s.ranges.emplace_back(a, b);
  }
  return s;
}

bool same_bits(const TensorData& a, const TensorData& b) {
  if (a.shape() != b.shape() || a.numel() != b.numel()) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get_f64(i), y = b.get_f64(i);
    if (std::memcmp(&x, &y, sizeof x) != 0) return false;
  }
  return true;
}

struct Gemm {
  static constexpr int64_t M = 37, K = 19, N = 29, BM = 16, BN = 8, BK = 4;
  Tensor a = te::make_input("A", {M, K}, DType::Float32);
  Tensor b = te::make_input("B", {K, N}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  loop::Kernel kernel;
  emulate::Buffers inputs;
  Gemm() {
    schedule::ScheduleConfig c;
    c.gemm_tile = {BM, BN, BK, 2, 2, false};
    kernel = schedule::schedule_op(*mm, c);
    inputs["A"] = random_tensor(a, 1);
    inputs["B"] = random_tensor(b, 2);
  }
};

TEST(AccessRecord, GemmBlockTilesAreTheScheduleTiles) {
  Gemm g;
  ASSERT_EQ(g.kernel.stages.size(), 1u);
  ASSERT_NE(g.kernel.stages[0].schedule.find("gemm"), std::string::npos);
  emulate::AccessRecord rec;
  rec.options.per_warp = true;
  emulate::EmulateOptions eo;
  eo.access_record = &rec;
  emulate::Buffers bufs = g.inputs;
  emulate::run_kernel(g.kernel, bufs, eo);
  ASSERT_EQ(rec.kernels.size(), 1u);
  const KernelAccess& k = rec.kernels[0];
  const int64_t tiles_m = (Gemm::M + Gemm::BM - 1) / Gemm::BM;
  const int64_t tiles_n = (Gemm::N + Gemm::BN - 1) / Gemm::BN;
  ASSERT_EQ(k.grid, tiles_m * tiles_n);
  ASSERT_NE(k.find("A"), nullptr);
  ASSERT_NE(k.find("B"), nullptr);
  ASSERT_NE(k.find("C"), nullptr);
  EXPECT_EQ(k.find("A")->role, emulate::TensorRole::Input);
  EXPECT_EQ(k.find("C")->role, emulate::TensorRole::Output);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int32_t blk = 0; blk < k.grid; ++blk) {
    // The block's C tile: where its first written element lies, on the BM x BN grid.
    const ElementRanges c = k.block_writes("C", blk);
    ASSERT_FALSE(c.empty()) << "block " << blk;
    const int64_t r0 = c.ranges.front().first / Gemm::N, c0 = c.ranges.front().first % Gemm::N;
    ASSERT_EQ(r0 % Gemm::BM, 0) << "block " << blk;
    ASSERT_EQ(c0 % Gemm::BN, 0) << "block " << blk;
    EXPECT_TRUE(seen.insert({r0, c0}).second) << "two blocks write tile " << r0 << "," << c0;
    const int64_t nr = std::min(Gemm::BM, Gemm::M - r0), nc = std::min(Gemm::BN, Gemm::N - c0);
    EXPECT_EQ(c.ranges, rect(Gemm::N, r0, nr, c0, nc).ranges) << "C tile of block " << blk;
    // A: the tile's rows, every k; B: every k, the tile's columns.
    EXPECT_EQ(k.block_reads("A", blk).ranges, rect(Gemm::K, r0, nr, 0, Gemm::K).ranges)
        << "A tile of block " << blk;
    EXPECT_EQ(k.block_reads("B", blk).ranges, rect(Gemm::N, 0, Gemm::K, c0, nc).ranges)
        << "B tile of block " << blk;
    EXPECT_TRUE(k.block_reads("C", blk).empty());
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), tiles_m * tiles_n);
  // Reuse: each element of A is read once per column tile, of B once per row tile (by as many
  // threads of a block as share its row / column).
  const emulate::TensorAccess& A = *k.find("A");
  ASSERT_EQ(A.read_count.size(), static_cast<size_t>(Gemm::M * Gemm::K));
  EXPECT_GT(A.read_count[0], 0);
  EXPECT_EQ(A.block_elements_read, tiles_n * Gemm::M * Gemm::K);
  EXPECT_EQ(k.find("B")->block_elements_read, tiles_m * Gemm::K * Gemm::N);
  // Shared buffers are recorded with their footprint; nothing crosses blocks.
  bool shared = false;
  for (const emulate::TensorAccess& t : k.tensors)
    if (t.role == emulate::TensorRole::Shared) {
      shared = true;
      EXPECT_GT(t.shared_bytes, 0) << t.name;
    }
  EXPECT_TRUE(shared);
  EXPECT_TRUE(k.edges.empty());
  EXPECT_EQ(k.grid_barriers, 0);
  EXPECT_EQ(static_cast<int64_t>(k.frames.size()), k.grid);
  // Warps: their C sets cover the block's, none outside it.
  const emulate::TensorAccess& C = *k.find("C");
  for (int32_t blk = 0; blk < k.grid; ++blk) {
    std::vector<int64_t> warps;
    for (const emulate::UnitAccess& u : C.units)
      if (u.block == blk && u.warp >= 0)
        for (int64_t e : u.writes.elements()) warps.push_back(e);
    std::sort(warps.begin(), warps.end());
    warps.erase(std::unique(warps.begin(), warps.end()), warps.end());
    EXPECT_EQ(warps, k.block_writes("C", blk).elements()) << "block " << blk;
  }
  // The picture: C's tiles outlined as the schedule's, every cell written.
  report::MemoryPicture p = report::memory_picture(k);
  const report::TensorPicture* cp = nullptr;
  for (const auto& t : p.tensors)
    if (t.name == "C") cp = &t;
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(static_cast<int64_t>(cp->tiles.size()), k.grid);
  for (const report::TileOutline& t : cp->tiles) {
    EXPECT_EQ(t.row % Gemm::BM, 0);
    EXPECT_EQ(t.col % Gemm::BN, 0);
    EXPECT_EQ(t.rows, std::min(Gemm::BM, Gemm::M - t.row));
    EXPECT_EQ(t.cols, std::min(Gemm::BN, Gemm::N - t.col));
  }
  EXPECT_EQ(cp->elements_written, Gemm::M * Gemm::N);
  for (uint8_t w : cp->written) EXPECT_EQ(w, 1);
  EXPECT_EQ(p.frames.size(), k.frames.size());
  // First touch: one frame per block here, so a C cell's first frame is its writer block's.
  report::PictureOptions fo;
  fo.colouring = report::PictureColouring::FirstTouch;
  fo.only = {"C"};
  const report::MemoryPicture ft = report::memory_picture(k, fo);
  ASSERT_EQ(ft.tensors.size(), 1u);
  ASSERT_EQ(ft.tensors[0].value.size(), cp->value.size());
  for (size_t c = 0; c < cp->value.size(); ++c)
    EXPECT_EQ(ft.tensors[0].value[c], cp->value[c]) << "cell " << c;
  // Reuse: every element of A is read, by several threads of several blocks.
  report::PictureOptions ro;
  ro.colouring = report::PictureColouring::Reuse;
  ro.only = {"A"};
  const report::MemoryPicture reuse = report::memory_picture(k, ro);
  ASSERT_EQ(reuse.tensors.size(), 1u);
  for (size_t c = 0; c < reuse.tensors[0].value.size(); ++c) {
    EXPECT_GE(reuse.tensors[0].value[c], static_cast<double>(tiles_n)) << "cell " << c;
    EXPECT_NE(reuse.tensors[0].rgb[c], report::kUntouched);
  }
  const std::string svg = report::memory_picture_svg(p);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("coloured by block"), std::string::npos);
  EXPECT_NE(svg.find("f32 [37, 19]"), std::string::npos) << svg.substr(0, 600);
  const std::string one = report::memory_picture_svg(p, {.frame = 3});
  EXPECT_NE(one.find("read in this frame"), std::string::npos);
}

TEST(AccessRecord, OffLeavesOutputsAsTheyWere) {
  Gemm g;
  emulate::Buffers plain = g.inputs, recorded = g.inputs;
  emulate::run_kernel(g.kernel, plain);
  emulate::AccessRecord rec;
  rec.options.per_warp = true;
  emulate::EmulateOptions eo;
  eo.access_record = &rec;
  emulate::run_kernel(g.kernel, recorded, eo);
  ASSERT_EQ(rec.kernels.size(), 1u);
  ASSERT_TRUE(plain.count("C") && recorded.count("C"));
  EXPECT_TRUE(same_bits(*plain.at("C"), *recorded.at("C")));
  // A record naming another kernel records nothing and changes nothing.
  emulate::AccessRecord other;
  other.options.kernel = "not_this_one";
  eo.access_record = &other;
  emulate::Buffers third = g.inputs;
  emulate::run_kernel(g.kernel, third, eo);
  EXPECT_TRUE(other.kernels.empty());
  EXPECT_TRUE(same_bits(*plain.at("C"), *third.at("C")));
}

TEST(AccessRecord, LimitCutsWithANote) {
  Gemm g;
  emulate::AccessRecord rec;
  rec.options.max_bytes = 64;
  emulate::EmulateOptions eo;
  eo.access_record = &rec;
  emulate::Buffers bufs = g.inputs;
  emulate::run_kernel(g.kernel, bufs, eo);
  ASSERT_EQ(rec.kernels.size(), 1u);
  EXPECT_TRUE(rec.kernels[0].truncated);
  EXPECT_NE(rec.kernels[0].note.find("limit"), std::string::npos);
  EXPECT_GT(rec.kernels[0].find("A")->element_reads, 0);  // still counted
}

TEST(AccessRecord, OneKernelOverZeroInputs) {
  Gemm g;
  const KernelAccess k = record_kernel_access(g.kernel, {.stage = 0});
  EXPECT_EQ(k.stage, 0);
  EXPECT_EQ(k.block_writes("C", 0).count(), Gemm::BM * Gemm::BN);
  EXPECT_THROW(record_kernel_access(g.kernel, {.stage = 1}), UserError);
}

/// The sample BERT under souffle: its kernels, built once.
const CompileReport& bert_kernels() {
  static CompileReport r = [] {
    PipelineOptions o;
    o.gpu = gpu::gpu_spec("a100");
    const plan::FusionPlan p = plan::plan(test::sample_model("bert").program, plan_options(o));
    CompileOptions co;
    co.archs.clear();  // the loop-IR kernels only, no NVRTC
    return compile_plan(p, co);
  }();
  return r;
}

/// `part` recorded some blocks of what `whole` recorded for all: the same frames, units and
/// element sets for those blocks, nothing of the others.
void expect_same_blocks(const KernelAccess& whole, const KernelAccess& part) {
  ASSERT_FALSE(part.blocks.empty());
  ASSERT_LT(static_cast<int64_t>(part.blocks.size()), whole.grid);
  const std::set<int32_t> in(part.blocks.begin(), part.blocks.end());
  std::vector<std::pair<emulate::AccessPhase, int32_t>> want, got;
  for (const emulate::AccessFrame& f : whole.frames)
    if (in.count(f.block)) want.emplace_back(f.phase, f.block);
  for (const emulate::AccessFrame& f : part.frames) got.emplace_back(f.phase, f.block);
  EXPECT_EQ(got, want);
  EXPECT_FALSE(got.empty());
  for (const emulate::TensorAccess& w : whole.tensors) {
    std::vector<const emulate::UnitAccess*> units;
    for (const emulate::UnitAccess& u : w.units)
      if (in.count(u.block)) units.push_back(&u);
    const emulate::TensorAccess* t = part.find(w.name);
    if (units.empty()) {
      EXPECT_TRUE(!t || t->units.empty()) << w.name;
      continue;
    }
    ASSERT_NE(t, nullptr) << w.name;
    ASSERT_EQ(t->units.size(), units.size()) << w.name;
    for (size_t i = 0; i < units.size(); ++i) {
      const emulate::UnitAccess &a = *units[i], &b = t->units[i];
      EXPECT_EQ(b.block, a.block) << w.name;
      EXPECT_EQ(b.warp, a.warp) << w.name;
      EXPECT_EQ(b.phase, a.phase) << w.name;
      EXPECT_EQ(b.reads.ranges, a.reads.ranges) << w.name << " block " << a.block;
      EXPECT_EQ(b.writes.ranges, a.writes.ranges) << w.name << " block " << a.block;
    }
  }
}

int grid_barriers(const loop::Kernel& k) {
  int n = 0;
  for (const StageBoundary& b : k.boundaries) n += b.kind == BoundaryKind::Grid;
  return n;
}

TEST(AccessRecord, ReadsAfterAGridBarrierAreOtherBlocksWrites) {
  const CompileReport& r = bert_kernels();
  // The smallest kernel with a grid barrier (fast to emulate).
  const loop::Kernel* pick = nullptr;
  for (const CompiledKernel& ck : r.kernels)
    if (grid_barriers(ck.kernel) > 0 && ck.kernel.launch.cooperative &&
        (!pick || ck.kernel.launch.grid_x * ck.kernel.launch.block_x <
                      pick->launch.grid_x * pick->launch.block_x))
      pick = &ck.kernel;
  ASSERT_NE(pick, nullptr) << "no kernel of the sample BERT has a grid barrier";
  // The kernel on random inputs, without and with recording (checks off: the emulator's
  // own checks are tested elsewhere), must give the same bits.
  emulate::Buffers in;
  uint32_t seed = 3;
  for (const Tensor& t : pick->inputs)
    if (!(t->source == te::TensorNode::Source::Constant && t->data))
      in[t->name] = is_float(t->dtype) ? random_tensor(t, seed++)
                                       : std::make_shared<TensorData>(t->dtype, t->shape);
  emulate::EmulateOptions eo;
  eo.check_races = eo.check_uninitialized = false;
  emulate::Buffers plain = in, recorded = in;
  emulate::run_kernel(*pick, plain, eo);
  emulate::AccessRecord rec;
  eo.access_record = &rec;
  const auto t0 = std::chrono::steady_clock::now();
  emulate::run_kernel(*pick, recorded, eo);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(rec.kernels.size(), 1u);
  for (const Tensor& t : pick->outputs)
    EXPECT_TRUE(same_bits(*plain.at(t->name), *recorded.at(t->name))) << t->name;
  const KernelAccess& k = rec.kernels[0];
  std::cout << pick->name << ": " << pick->stages.size() << " stages, grid " << k.grid << ", "
            << k.grid_barriers << " grid barriers, " << k.edges.size() << " edges, recorded in "
            << s << " s\n"
            << emulate::describe(k, 12);
  EXPECT_GT(k.grid_barriers, 0);
  ASSERT_FALSE(k.edges.empty());
  int crossing = 0;
  for (const emulate::ProducerEdge& e : k.edges) {
    EXPECT_NE(e.producer_block, e.consumer_block);
    EXPECT_LT(e.producer, e.consumer);
    EXPECT_GT(e.elements, 0);
    crossing += e.consumer.epoch > e.producer.epoch;
    // The elements are in the producer's writes and the consumer's reads of those phases.
    const emulate::TensorAccess* t = k.find(e.tensor);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->role, emulate::TensorRole::Scratch) << e.tensor;
    const emulate::UnitAccess *w = nullptr, *rd = nullptr;
    for (const emulate::UnitAccess& u : t->units) {
      if (u.warp >= 0) continue;
      if (u.block == e.producer_block && u.phase == e.producer) w = &u;
      if (u.block == e.consumer_block && u.phase == e.consumer) rd = &u;
    }
    ASSERT_TRUE(w && rd);
    int64_t both = 0;
    for (int64_t x : rd->reads.elements()) both += w->writes.contains(x);
    EXPECT_GE(both, e.elements);
  }
  EXPECT_GT(crossing, 0);
  // Every element a consumer reads after the barrier that this kernel wrote earlier was
  // written by some block: by another block (an edge) or by itself.
  for (const emulate::TensorAccess& t : k.tensors) {
    if (t.role != emulate::TensorRole::Scratch) continue;
    for (const emulate::UnitAccess& u : t.units) {
      if (u.warp >= 0 || u.phase.epoch == 0) continue;
      int64_t from_others = 0;
      for (const emulate::ProducerEdge& e : k.edges)
        if (e.tensor == t.name && e.consumer == u.phase && e.consumer_block == u.block)
          from_others += e.elements;
      int64_t own = 0, earlier = 0;
      for (int64_t x : u.reads.elements()) {
        bool by_me = false, by_any = false;
        for (const emulate::UnitAccess& v : t.units)
          if (v.warp < 0 && v.phase < u.phase && v.writes.contains(x)) {
            by_any = true;
            by_me |= v.block == u.block;
          }
        earlier += by_any;
        own += by_me;
      }
      EXPECT_LE(from_others, earlier);
      EXPECT_GE(from_others + own, earlier) << t.name << " block " << u.block;
    }
  }
  // One stage alone (the others skipped) records what the whole run recorded of that stage.
  const emulate::TensorAccess* crossing_tensor = nullptr;
  for (const emulate::TensorAccess& t : k.tensors)
    if (t.role == emulate::TensorRole::Scratch && !t.units.empty()) crossing_tensor = &t;
  ASSERT_NE(crossing_tensor, nullptr);
  const int stage = crossing_tensor->units.front().phase.stage;
  ASSERT_GE(stage, 0);
  const auto t1 = std::chrono::steady_clock::now();
  const KernelAccess one = record_kernel_access(*pick, {.stage = stage});
  const double s1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::cout << "stage " << stage << " alone recorded in " << s1 << " s\n";
  for (const emulate::TensorAccess& t : one.tensors) {
    const emulate::TensorAccess* whole = k.find(t.name);
    ASSERT_NE(whole, nullptr) << t.name;
    for (int32_t b = 0; b < k.grid; ++b) {
      int64_t r = 0, w = 0;
      for (const emulate::UnitAccess& u : whole->units)
        if (u.block == b && u.warp < 0 && u.phase.stage == stage) {
          r += u.reads.count();
          w += u.writes.count();
        }
      int64_t r1 = 0, w1 = 0;
      for (const emulate::UnitAccess& u : t.units)
        if (u.block == b && u.warp < 0) {
          EXPECT_EQ(u.phase.stage, stage);
          r1 += u.reads.count();
          w1 += u.writes.count();
        }
      EXPECT_EQ(r1, r) << t.name << " block " << b;
      EXPECT_EQ(w1, w) << t.name << " block " << b;
    }
  }
  // Some blocks only (the others do not run): the whole kernel, its grid barriers passed by
  // the blocks that run, records for those blocks exactly what the whole grid's run recorded
  // (addresses do not depend on the data), and the edges between them.
  {
    const std::vector<int32_t> some = {static_cast<int32_t>(k.grid - 1), 1};
    const KernelAccess part = record_kernel_access(*pick, {.blocks = some});
    EXPECT_EQ(part.blocks, (std::vector<int32_t>{1, static_cast<int32_t>(k.grid - 1)}));
    EXPECT_EQ(part.grid_barriers, k.grid_barriers);
    expect_same_blocks(k, part);
    for (const emulate::ProducerEdge& e : part.edges) {
      bool found = false;
      for (const emulate::ProducerEdge& f : k.edges)
        found |= f.tensor == e.tensor && f.producer_block == e.producer_block &&
                 f.consumer_block == e.consumer_block && f.producer == e.producer &&
                 f.consumer == e.consumer && f.elements == e.elements;
      EXPECT_TRUE(found) << e.tensor << " " << e.producer_block << " -> " << e.consumer_block;
    }
  }
  // The picture names the scratch and the waits.
  report::MemoryPicture p = report::memory_picture(k);
  bool waits = false, scratch = false;
  for (const std::string& n : p.notes) {
    waits |= n.find("must order them") != std::string::npos;
    scratch |= n.find("Global scratch") != std::string::npos;
  }
  EXPECT_TRUE(waits);
  EXPECT_TRUE(scratch);
  bool frame_waits = false;
  for (const report::PictureFrame& f : p.frames) frame_waits |= !f.waits_for.empty();
  EXPECT_TRUE(frame_waits);
}

TEST(AccessRecord, SomeBlocksOfAStageRecordWhatTheWholeGridRecordedOfThem) {
  // Stages of the sample BERT's kernels, recorded alone: a sample of its blocks (spread
  // over the grid, and an unordered pick) gives those blocks' element sets exactly as
  // recording every block does, and the picture says which blocks it holds.
  const CompileReport& r = bert_kernels();
  int stages = 0;
  for (const CompiledKernel& ck : r.kernels) {
    const int64_t grid = ck.kernel.launch.grid_x;
    if (grid < 4) continue;
    // Every third stage (and the last): GEMMs, softmaxes and norms, in a few seconds.
    const int n = static_cast<int>(ck.kernel.stages.size());
    for (int s = 0; s < n; s += (s + 3 < n || s == n - 1) ? 3 : n - 1 - s) {
      SCOPED_TRACE(ck.kernel.name + " stage " + std::to_string(s));
      const KernelAccess whole = record_kernel_access(ck.kernel, {.stage = s});
      EXPECT_TRUE(whole.blocks.empty());
      const std::vector<int32_t> spread = emulate::spread_blocks(grid, 3);
      ASSERT_EQ(spread.size(), 3u);
      EXPECT_EQ(spread.front(), 0);
      EXPECT_EQ(spread.back(), grid - 1);
      const KernelAccess some = record_kernel_access(ck.kernel, {.stage = s, .blocks = spread});
      EXPECT_EQ(some.blocks, spread);
      expect_same_blocks(whole, some);
      const KernelAccess odd = record_kernel_access(
          ck.kernel, {.stage = s, .blocks = {static_cast<int32_t>(grid / 2), 1, 1, 99999}});
      EXPECT_EQ(odd.blocks, (std::vector<int32_t>{1, static_cast<int32_t>(grid / 2)}));
      expect_same_blocks(whole, odd);
      // The picture's first note names the sample.
      const report::MemoryPicture p = report::memory_picture(some);
      ASSERT_FALSE(p.notes.empty());
      EXPECT_EQ(p.notes.front(),
                fmt::format("Sampled: 3 of {} blocks recorded (0, {}, {}): the other blocks' "
                            "accesses are not drawn.",
                            grid, spread[1], grid - 1));
      for (const std::string& n : report::memory_picture(whole).notes)
        EXPECT_EQ(n.find("Sampled"), std::string::npos) << n;
      ++stages;
    }
  }
  EXPECT_GE(stages, 2);
  std::cout << stages << " stages compared\n";
}

TEST(AccessRecord, ABudgetRecordsWhatFitsAndSaysSo) {
  Gemm g;
  const int64_t grid = g.kernel.launch.grid_x;
  ASSERT_GE(grid, 4);
  // No time at all: the three blocks recorded first (spread over the grid), named as such.
  const KernelAccess one = record_kernel_access(g.kernel, {.stage = 0, .budget_s = 1e-9});
  EXPECT_EQ(one.blocks, emulate::spread_blocks(grid, 3));
  EXPECT_EQ(one.block_writes("C", 0).count(), Gemm::BM * Gemm::BN);
  EXPECT_TRUE(one.block_writes("C", 1).empty());
  EXPECT_EQ(emulate::sample_note(one).rfind("3 of " + std::to_string(grid) + " blocks", 0), 0u);
  // Time enough: every block.
  const KernelAccess all = record_kernel_access(g.kernel, {.stage = 0, .budget_s = 600});
  EXPECT_TRUE(all.blocks.empty());
  EXPECT_EQ(emulate::sample_note(all), "");
  int64_t written = 0;
  for (int32_t b = 0; b < grid; ++b) written += all.block_writes("C", b).count();
  EXPECT_EQ(written, Gemm::M * Gemm::N);
  EXPECT_EQ(emulate::spread_blocks(grid, grid + 5).size(), static_cast<size_t>(grid));
  EXPECT_EQ(emulate::spread_blocks(grid, 1), std::vector<int32_t>{0});
}

}  // namespace
}  // namespace souffle
