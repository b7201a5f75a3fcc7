#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include "core/loop/mutator.h"
#include "core/schedule/dependence.h"
#include "core/schedule/ownership.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using schedule::DependenceProof;
using schedule::Ownership;
using schedule::OwnershipQuery;
using schedule::ProducerBlock;
using te::Expr;
using te::Tensor;

constexpr int64_t kGrid = 4, kBlock = 32, kN = kGrid * kBlock;

/// A one-stage kernel: dst[b * block + t] = src[read_index(b, t)] + 1.
loop::Kernel stage_kernel(const std::string& name, const Tensor& dst, const Tensor& src,
                          const std::function<Expr(Expr, Expr)>& read_index) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Expr value = te::read(src, {read_index(bx, tx)}) + 1.0;
  loop::Stmt st = loop::stage(0, loop::store(dst, {bx * te::int_imm(kBlock) + tx}, value));
  loop::Kernel k;
  k.name = name;
  k.inputs = {src};
  k.outputs = {dst};
  k.body = loop::make_for(bx, kGrid, loop::ForKind::BlockIdxX,
                          loop::make_for(tx, kBlock, loop::ForKind::ThreadIdxX, st));
  k.launch.grid_x = kGrid;
  k.launch.block_x = kBlock;
  k.stages = {{name, "hand", {}, {}, kGrid, kBlock}};
  return k;
}

/// Every dependence query merge_stages asks for these stages, with the symbolic proof.
std::vector<std::pair<OwnershipQuery, DependenceProof>> queries(std::vector<loop::Kernel> stages) {
  std::vector<std::pair<OwnershipQuery, DependenceProof>> out;
  schedule::MergeOptions o;
  o.on_proof = [&](const OwnershipQuery& q, const DependenceProof& p) { out.push_back({q, p}); };
  schedule::merge_stages(std::move(stages), "k", o);
  return out;
}

std::string show(const DependenceProof& p) {
  std::string s = std::string(schedule::ownership_name(p.level)) + (p.mapped ? " mapped" : "") +
                  ": " + p.reason + "\n";
  for (size_t b = 0; b + 1 < p.offsets.size(); ++b) {
    s += "  block " + std::to_string(b) + ":";
    for (const ProducerBlock& x : p.producers_of(static_cast<int64_t>(b)))
      s += " " + std::to_string(x.writer) + "/" + std::to_string(x.block);
    s += "\n";
  }
  return s;
}

/// The symbolic proof agrees with the enumeration: the same level and the same producer blocks
/// for every consumer block.
void expect_agree(const OwnershipQuery& q, const DependenceProof& sym) {
  DependenceProof en = schedule::enumerate_dependence(q);
  ASSERT_TRUE(en.mapped) << en.reason;
  ASSERT_TRUE(sym.mapped) << sym.reason;
  EXPECT_EQ(sym.level, en.level) << q.tensor->name << "\nsymbolic " << show(sym) << "enumerated "
                                 << show(en);
  EXPECT_EQ(sym.offsets, en.offsets)
      << q.tensor->name << "\nsymbolic " << show(sym) << "enumerated " << show(en);
  EXPECT_TRUE(sym.producers == en.producers)
      << q.tensor->name << "\nsymbolic " << show(sym) << "enumerated " << show(en);
}

struct Pair {
  Tensor x = te::make_input("x", {kN}, DType::Float32);
  Tensor y = loop::make_buffer("y", {kN}, DType::Float32);
  Tensor z = loop::make_buffer("z", {kN}, DType::Float32);
  std::vector<loop::Kernel> stages(const std::function<Expr(Expr, Expr)>& reader) const {
    auto same = [](Expr b, Expr t) { return b * te::int_imm(kBlock) + t; };
    return {stage_kernel("produce", y, x, same), stage_kernel("consume", z, y, reader)};
  }
};

TEST(Dependence, SameThreadIsThreadOwned) {
  Pair p;
  auto qs = queries(p.stages([](Expr b, Expr t) { return b * te::int_imm(kBlock) + t; }));
  ASSERT_EQ(qs.size(), 1u);
  EXPECT_EQ(qs[0].second.level, Ownership::Thread) << show(qs[0].second);
  expect_agree(qs[0].first, qs[0].second);
}

TEST(Dependence, ReversedInBlockIsBlockOwned) {
  Pair p;
  auto qs = queries(p.stages(
      [](Expr b, Expr t) { return b * te::int_imm(kBlock) + (te::int_imm(kBlock - 1) - t); }));
  ASSERT_EQ(qs.size(), 1u);
  EXPECT_EQ(qs[0].second.level, Ownership::Block) << show(qs[0].second);
  expect_agree(qs[0].first, qs[0].second);
}

TEST(Dependence, NextBlockNamesItsOneProducer) {
  Pair p;
  auto qs = queries(p.stages([](Expr b, Expr t) {
    return te::floormod(b + te::int_imm(1), te::int_imm(kGrid)) * te::int_imm(kBlock) + t;
  }));
  ASSERT_EQ(qs.size(), 1u);
  const DependenceProof& d = qs[0].second;
  EXPECT_EQ(d.level, Ownership::None);
  ASSERT_TRUE(d.mapped) << d.reason;
  EXPECT_EQ(d.reason, "block 0 reads y element 32, which block 1 writes");
  for (int64_t b = 0; b < kGrid; ++b) {
    std::vector<ProducerBlock> want = {{0, static_cast<int32_t>((b + 1) % kGrid)}};
    EXPECT_TRUE(d.producers_of(b) == want) << show(d);
  }
  expect_agree(qs[0].first, d);
}

TEST(Dependence, BlocksReadingTheSameRegionsShareProducersNotTheirReason) {
  // Blocks 2 and 3 read what blocks 0 and 1 read (the same regions): the same producers, taken
  // from the earlier block's answer, but block 0 read its own block's writes and block 2 reads
  // another's, so the first cross-block read is block 2's own.
  Pair p;
  auto qs = queries(p.stages(
      [](Expr b, Expr t) { return te::floormod(b, te::int_imm(2)) * te::int_imm(kBlock) + t; }));
  ASSERT_EQ(qs.size(), 1u);
  const DependenceProof& d = qs[0].second;
  EXPECT_EQ(d.level, Ownership::None);
  ASSERT_TRUE(d.mapped) << d.reason;
  EXPECT_EQ(d.reason, "block 2 reads y element 0, which block 0 writes");
  for (int64_t b = 0; b < kGrid; ++b) {
    std::vector<ProducerBlock> want = {{0, static_cast<int32_t>(b % 2)}};
    EXPECT_TRUE(d.producers_of(b) == want) << show(d);
  }
  expect_agree(qs[0].first, d);
  // Every block reads block 0's part: block 1 is the first to read across blocks, blocks 2 and
  // 3 take block 1's answer.
  auto all = queries(p.stages([](Expr, Expr t) { return t; }));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].second.reason, "block 1 reads y element 0, which block 0 writes");
  const std::vector<ProducerBlock> block0 = {{0, 0}};
  for (int64_t b = 0; b < kGrid; ++b)
    EXPECT_TRUE(all[0].second.producers_of(b) == block0) << show(all[0].second);
  expect_agree(all[0].first, all[0].second);
}

TEST(Dependence, DataDependentIndexWaitsForEveryProducer) {
  // The enumeration cannot evaluate the index; the symbolic proof keeps it as an interval over
  // the whole tensor, so every block depends on every producer block: flags still suffice.
  Pair p;
  Tensor perm = te::make_input("perm", {kN}, DType::Int64);
  std::vector<loop::Kernel> st =
      p.stages([&](Expr b, Expr t) { return te::read(perm, {b * te::int_imm(kBlock) + t}); });
  st[1].inputs.push_back(perm);
  auto qs = queries(std::move(st));
  ASSERT_EQ(qs.size(), 1u);
  const DependenceProof& d = qs[0].second;
  ASSERT_TRUE(d.mapped) << d.reason;
  EXPECT_EQ(d.level, Ownership::None);
  EXPECT_EQ(d.max_producers(), kGrid) << show(d);
  EXPECT_FALSE(schedule::enumerate_dependence(qs[0].first).mapped);
}

/// The stages of TEs scheduled under config c, merged: every dependence query symbolic and
/// enumerated must agree.
void expect_scheduled_agree(const std::vector<te::Op>& ops, const schedule::ScheduleConfig& c,
                            size_t want_queries) {
  std::vector<loop::Kernel> stages;
  for (const te::Op& op : ops) stages.push_back(schedule::schedule_op(*op, c));
  auto qs = queries(std::move(stages));
  EXPECT_GE(qs.size(), want_queries);
  for (const auto& [q, d] : qs) expect_agree(q, d);
}

TEST(Dependence, GemmThenTransposeAgreesWithEnumeration) {
  // y = x * w (a tiled GEMM), then z = transpose(y) + 1 and a row sum of y: the readers' blocks
  // need a few GEMM tiles each.
  Tensor x = te::make_input("x", {48, 40}, DType::Float32);
  Tensor w = te::make_input("w", {40, 72}, DType::Float32);
  te::Op k = nullptr;
  te::Op y = te::reduce("y", {48, 72}, DType::Float32, te::ReduceKind::Sum, {40},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                          return te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]});
                        });
  te::Op z = te::compute("z", {72, 48}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(y->output, {i[1], i[0]}) + 1.0;
  });
  te::Op s = te::reduce("s", {48}, DType::Float32, te::ReduceKind::Sum, {72},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                          return te::read(y->output, {i[0], r[0]});
                        });
  schedule::ScheduleConfig c;
  c.gemm_tile.bm = 16;
  c.gemm_tile.bn = 16;
  c.gemm_tile.tm = 2;
  c.gemm_tile.tn = 2;
  c.block = 64;
  c.max_grid = 8;
  expect_scheduled_agree({y, z, s}, c, 1);
  // Capped grids: the GEMM's blocks loop over rounds of tiles, the transpose grid-strides.
  c.grid_cap = 5;
  expect_scheduled_agree({y, z, s}, c, 1);
}

TEST(Dependence, ElementwiseChainsAgreeWithEnumeration) {
  // Scalar and 4-wide vector grid-stride stages of one shape (thread-owned), a broadcast that
  // reads a row per block (producers elsewhere), and a reduction's row result read back.
  Tensor x = te::make_input("x", {10, 36}, DType::Float32);
  te::Op a = te::compute("a", {10, 36}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(x, i) * 2.0; });
  te::Op b = te::compute("b", {10, 36}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(a->output, i) + 1.0; });
  te::Op m = te::reduce("m", {10}, DType::Float32, te::ReduceKind::Max, {36},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                          return te::read(b->output, {i[0], r[0]});
                        });
  te::Op n = te::compute("n", {10, 36}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(b->output, i) - te::read(m->output, {i[0]}) +
           te::read(a->output, {te::int_imm(9) - i[0], i[1]});
  });
  schedule::ScheduleConfig c;
  c.block = 64;
  c.max_grid = 3;
  expect_scheduled_agree({a, b, m, n}, c, 3);
}

TEST(Dependence, FullSizeGemmIsProvenWithoutEnumerating) {
  // A 1024 x 1024 GEMM read transposed: far past what enumeration takes, proven in well under a
  // second, each reading block depending on the few tiles it reads.
  Tensor x = te::make_input("x", {1024, 256}, DType::Float32);
  Tensor w = te::make_input("w", {256, 1024}, DType::Float32);
  te::Op y = te::reduce("y", {1024, 1024}, DType::Float32, te::ReduceKind::Sum, {256},
                        [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                          return te::read(x, {i[0], r[0]}) * te::read(w, {r[0], i[1]});
                        });
  te::Op z = te::compute("z", {1024, 1024}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(y->output, {i[1], i[0]}) * 0.5;
  });
  schedule::ScheduleConfig c;
  c.grid_cap = 216;
  c.max_grid = 216;
  std::vector<loop::Kernel> stages = {schedule::schedule_op(*y, c), schedule::schedule_op(*z, c)};
  auto t0 = std::chrono::steady_clock::now();
  auto qs = queries(std::move(stages));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(qs.size(), 1u);
  const DependenceProof& d = qs[0].second;
  ASSERT_TRUE(d.mapped) << d.reason;
  EXPECT_EQ(d.level, Ownership::None);
  EXPECT_GT(d.max_producers(), 0);
  EXPECT_LT(d.max_producers(), 216) << show(d);
  EXPECT_EQ(schedule::enumerate_dependence(qs[0].first).reason, "too many accesses to enumerate");
  std::cout << "full-size proof: " << s << " s, " << d.steps << " regions, at most "
            << d.max_producers() << " producer blocks per block\n";
}

}  // namespace
}  // namespace souffle
