#include <gtest/gtest.h>

#include <functional>

#include "core/emulate/emulate.h"
#include "core/loop/mutator.h"
#include "core/schedule/ownership.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using te::Expr;
using te::Tensor;

constexpr int64_t kGrid = 4, kBlock = 32, kN = kGrid * kBlock;

/// A one-stage kernel: dst[b * block + t] = src[read_index(b, t)] * scale + shift.
loop::Kernel stage_kernel(const std::string& name, const Tensor& dst, const Tensor& src,
                          const std::function<Expr(Expr, Expr)>& read_index, double scale,
                          double shift) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Expr value = te::read(src, {read_index(bx, tx)}) * scale + shift;
  loop::Stmt st = loop::stage(0, loop::store(dst, {bx * te::int_imm(kBlock) + tx}, value));
  loop::Kernel k;
  k.name = name;
  k.inputs = {src};
  k.outputs = {dst};
  k.body = loop::make_for(bx, kGrid, loop::ForKind::BlockIdxX,
                          loop::make_for(tx, kBlock, loop::ForKind::ThreadIdxX, st));
  k.launch.grid_x = kGrid;
  k.launch.block_x = kBlock;
  loop::StageInfo si;
  si.name = name;
  si.schedule = "hand";
  si.grid_x = kGrid;
  si.block_x = kBlock;
  k.stages = {si};
  return k;
}

struct Pair {
  Tensor x = te::make_input("x", {kN}, DType::Float32);
  Tensor y = loop::make_buffer("y", {kN}, DType::Float32);
  Tensor z = loop::make_buffer("z", {kN}, DType::Float32);
  /// y = 2x + 1 in place; z = y[reader(b, t)] - 3.
  std::vector<loop::Kernel> stages(const std::function<Expr(Expr, Expr)>& reader) const {
    auto same = [](Expr b, Expr t) { return b * te::int_imm(kBlock) + t; };
    return {stage_kernel("produce", y, x, same, 2.0, 1.0),
            stage_kernel("consume", z, y, reader, 1.0, -3.0)};
  }
};

Expr same_thread(Expr b, Expr t) {
  return b * te::int_imm(kBlock) + t;
}
Expr reversed_in_block(Expr b, Expr t) {
  return b * te::int_imm(kBlock) + (te::int_imm(kBlock - 1) - t);
}
Expr next_block(Expr b, Expr t) {
  return te::floormod(b + te::int_imm(1), te::int_imm(kGrid)) * te::int_imm(kBlock) + t;
}

int count(const loop::Kernel& k, loop::StmtKind kind) {
  int n = 0;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) { n += s.kind() == kind; });
  return n;
}

/// Emulates k on x[i] = i / 10 and checks z against the reader's index map.
void expect_values(const loop::Kernel& k, const Pair& p,
                   const std::function<int64_t(int64_t, int64_t)>& reader) {
  auto xd = std::make_shared<TensorData>(DType::Float32, Shape{kN});
  for (int64_t i = 0; i < kN; ++i) xd->set_f64(i, static_cast<double>(i) / 10.0);
  emulate::Buffers buffers{{"x", xd}};
  emulate::run_kernel(k, buffers);
  const TensorData& z = *buffers.at("z");
  for (int64_t b = 0; b < kGrid; ++b)
    for (int64_t t = 0; t < kBlock; ++t) {
      double y = 2.0 * static_cast<double>(reader(b, t)) / 10.0 + 1.0;
      ASSERT_NEAR(z.get_f64(b * kBlock + t), y - 3.0, 1e-5) << "block " << b << " thread " << t;
    }
}

TEST(Ownership, SameThreadNeedsNoBarrier) {
  Pair p;
  loop::Kernel k = schedule::merge_stages(p.stages(same_thread), "k");
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 0);
  EXPECT_EQ(count(k, loop::StmtKind::BlockBarrier), 0);
  EXPECT_FALSE(k.launch.cooperative);
  EXPECT_NE(k.stages[1].schedule.find("each thread reads only what it wrote of y"),
            std::string::npos)
      << k.stages[1].schedule;
  expect_values(k, p, [](int64_t b, int64_t t) { return b * kBlock + t; });
}

TEST(Ownership, OwnedByBlockGetsBlockBarrier) {
  Pair p;
  loop::Kernel k = schedule::merge_stages(p.stages(reversed_in_block), "k");
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 0);
  EXPECT_EQ(count(k, loop::StmtKind::BlockBarrier), 1);
  EXPECT_FALSE(k.launch.cooperative);
  expect_values(k, p, [](int64_t b, int64_t t) { return b * kBlock + kBlock - 1 - t; });
}

TEST(Ownership, OtherBlocksDataKeepsGridBarrier) {
  Pair p;
  loop::Kernel k = schedule::merge_stages(p.stages(next_block), "k");
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 1);
  EXPECT_EQ(count(k, loop::StmtKind::BlockBarrier), 0);
  EXPECT_TRUE(k.launch.cooperative);
  EXPECT_NE(k.stages[1].schedule.find("which block 1 writes"), std::string::npos)
      << k.stages[1].schedule;
  expect_values(k, p, [](int64_t b, int64_t t) { return ((b + 1) % kGrid) * kBlock + t; });
}

TEST(Ownership, EachOrderIsRecordedAsATypedBoundary) {
  Pair p;
  // Thread-owned: no barrier, the tensor named.
  loop::Kernel k = schedule::merge_stages(p.stages(same_thread), "k");
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::None);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::ThreadOwned);
  EXPECT_EQ(k.boundaries[0].tensor, "y");
  EXPECT_EQ(k.boundaries[0].before, 0);
  EXPECT_EQ(k.boundaries[0].after, 1);
  EXPECT_EQ(k.boundaries[0].producer, 0);
  // Block-owned: a block barrier.
  k = schedule::merge_stages(p.stages(reversed_in_block), "k");
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Block);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::BlockOwned);
  // Another block's data: a grid barrier, the crossing blocks and the awaited tiles named
  // (block b reads block b + 1's tile only).
  k = schedule::merge_stages(p.stages(next_block), "k");
  ASSERT_EQ(k.boundaries.size(), 1u);
  const StageBoundary& b = k.boundaries[0];
  EXPECT_EQ(b.kind, BoundaryKind::Grid);
  EXPECT_EQ(b.reason, BoundaryReason::CrossBlock);
  EXPECT_EQ(b.tensor, "y");
  EXPECT_EQ(b.producer, 0);
  EXPECT_EQ(b.consumer_block, 0);
  EXPECT_EQ(b.producer_block, 1);
  EXPECT_EQ(b.awaited_tiles, 1);
  EXPECT_EQ(b.grid, kGrid);
  EXPECT_EQ(describe(b).rfind("grid: y of stage 0 read across blocks (block 0 reads what block 1 "
                              "wrote; per-tile flags would wait for 1 tile of ",
                              0),
            0u)
      << describe(b);
  // Proofs off: a grid barrier for want of a proof.
  schedule::MergeOptions off;
  off.prove_ownership = false;
  k = schedule::merge_stages(p.stages(same_thread), "k", off);
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Grid);
  EXPECT_EQ(k.boundaries[0].reason, BoundaryReason::NoProofs);
}

TEST(Ownership, RepeatedStagePairsReuseOneProof) {
  // a1 = 2 a0 + 1, a2 = 2 a1 + 1, ... each stage reading its own thread's element, then one
  // two stages reading the next block's: the first four pairs are the same code on other
  // tensors, and so are the last two.
  std::vector<Tensor> a = {te::make_input("a0", {kN}, DType::Float32)};
  std::vector<loop::Kernel> stages;
  for (int i = 1; i <= 7; ++i) {
    a.push_back(loop::make_buffer("a" + std::to_string(i), {kN}, DType::Float32));
    stages.push_back(stage_kernel("s" + std::to_string(i), a.back(), a[a.size() - 2],
                                  i >= 6 ? next_block : same_thread, 2.0, 1.0));
  }
  auto note = [](const loop::Kernel& k, int i) {
    return k.stages[static_cast<size_t>(i)].schedule;
  };
  // A kernel budget of about one proof (a symbolic proof evaluates one index region per block
  // and access: 8 here) proves all four: the answer is reused at no cost. The last pair's own
  // proof no longer fits.
  schedule::MergeOptions o;
  o.max_kernel_proof_steps = 12;
  loop::Kernel k = schedule::merge_stages(stages, "k", o);
  for (int i = 1; i < 5; ++i)
    EXPECT_NE(note(k, i).find("each thread reads only what it wrote of a" + std::to_string(i)),
              std::string::npos)
        << note(k, i);
  EXPECT_NE(note(k, 5).find("index regions to evaluate"), std::string::npos) << note(k, 5);
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 2);
  // With room for two proofs the cross-block pairs are proven too; the reused reason names the
  // tensor of its own pair.
  o.max_kernel_proof_steps = 24;
  k = schedule::merge_stages(stages, "k", o);
  EXPECT_NE(note(k, 5).find("a5: block 0 reads a5 element 32, which block 1 writes"),
            std::string::npos)
      << note(k, 5);
  EXPECT_NE(note(k, 6).find("a6: block 0 reads a6 element 32, which block 1 writes"),
            std::string::npos)
      << note(k, 6);
}

TEST(Ownership, PlantedWrongOwnershipIsCaughtByTheEmulator) {
  Pair p;
  schedule::MergeOptions o;
  o.force_ownership = true;
  loop::Kernel k = schedule::merge_stages(p.stages(next_block), "k", o);
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 0);
  try {
    expect_values(k, p, [](int64_t b, int64_t t) { return ((b + 1) % kGrid) * kBlock + t; });
    ADD_FAILURE() << "a wrong ownership claim went unnoticed";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("data race"), std::string::npos) << e.what();
  }
}

TEST(Ownership, DataDependentIndexIsNotOwned) {
  // The reader's index comes from another tensor: nothing can be proven.
  Pair p;
  Tensor perm = te::make_input("perm", {kN}, DType::Int64);
  std::vector<loop::Kernel> st =
      p.stages([&](Expr b, Expr t) { return te::read(perm, {b * te::int_imm(kBlock) + t}); });
  schedule::OwnershipQuery q;
  q.tensor = p.y;
  Expr bx = st[1].body.as<loop::For>()->var;
  Expr tx = st[1].body.as<loop::For>()->body.as<loop::For>()->var;
  // Bring both stages onto one pair of vars, as merge_stages does.
  Expr pbx = st[0].body.as<loop::For>()->var;
  Expr ptx = st[0].body.as<loop::For>()->body.as<loop::For>()->var;
  q.writers = {loop::substitute(st[0].body.as<loop::For>()->body.as<loop::For>()->body,
                                {{pbx.get(), bx}, {ptx.get(), tx}})};
  q.reader = st[1].body.as<loop::For>()->body.as<loop::For>()->body;
  q.bx = bx;
  q.tx = tx;
  q.grid = kGrid;
  q.block = kBlock;
  schedule::OwnershipProof proof = schedule::prove_ownership(q);
  EXPECT_EQ(proof.level, schedule::Ownership::None);
  EXPECT_NE(proof.reason.find("depends on data"), std::string::npos) << proof.reason;
}

TEST(Ownership, ResidentIntermediateLivesInSharedMemory) {
  Pair p;
  schedule::MergeOptions o;
  o.local = {p.y};
  loop::Kernel k = schedule::merge_stages(p.stages(reversed_in_block), "k", o);
  EXPECT_EQ(std::find(k.outputs.begin(), k.outputs.end(), p.y), k.outputs.end());
  EXPECT_NE(k.stages[0].schedule.find("y kept in shared memory (32 elements per block"),
            std::string::npos)
      << k.stages[0].schedule;
  ASSERT_EQ(k.shared.size(), 1u);
  EXPECT_EQ(k.shared[0].bytes, kBlock * 4);
  expect_values(k, p, [](int64_t b, int64_t t) { return b * kBlock + kBlock - 1 - t; });
}

TEST(Ownership, NotOwnedIntermediateStaysGlobal) {
  Pair p;
  schedule::MergeOptions o;
  o.local = {p.y};
  loop::Kernel k = schedule::merge_stages(p.stages(next_block), "k", o);
  EXPECT_NE(std::find(k.outputs.begin(), k.outputs.end(), p.y), k.outputs.end());
  EXPECT_TRUE(k.shared.empty());
}

TEST(Ownership, ResidencyRespectsTheBudget) {
  Pair p;
  schedule::MergeOptions o;
  o.local = {p.y};
  o.shared_budget = 64;  // less than one block's 128 bytes of y
  loop::Kernel k = schedule::merge_stages(p.stages(same_thread), "k", o);
  EXPECT_NE(std::find(k.outputs.begin(), k.outputs.end(), p.y), k.outputs.end());
}

TEST(Ownership, ScheduledInjectiveChainNeedsNoBarrier) {
  // Two element-wise TEs of one shape get the same grid-stride mapping: thread-owned.
  Tensor x = te::make_input("x", {6, 40}, DType::Float32);
  te::Op y = te::compute("y", {6, 40}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(x, i) * 2.0; });
  te::Op z = te::compute("z", {6, 40}, DType::Float32,
                         [&](const std::vector<Expr>& i) { return te::read(y->output, i) + 1.0; });
  schedule::ScheduleConfig c;
  c.max_grid = 3;
  c.block = 64;
  loop::Kernel k =
      schedule::merge_stages({schedule::schedule_op(*y, c), schedule::schedule_op(*z, c)}, "k");
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 0);
  EXPECT_EQ(count(k, loop::StmtKind::BlockBarrier), 0);
  auto xd = std::make_shared<TensorData>(DType::Float32, Shape{6, 40});
  for (int64_t i = 0; i < 240; ++i) xd->set_f64(i, static_cast<double>(i));
  emulate::Buffers buffers{{"x", xd}};
  emulate::run_kernel(k, buffers);
  for (int64_t i = 0; i < 240; ++i)
    ASSERT_NEAR(buffers.at("z")->get_f64(i), 2.0 * static_cast<double>(i) + 1.0, 1e-4);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

TEST(Ownership, BoundedCrossBlockReadsBecomePerTileFlags) {
  Pair p;
  schedule::MergeOptions o;
  o.flag_max_tiles = 2;
  // Block b reads block b + 1's tile only: it waits on that tile's counter, no grid barrier.
  loop::Kernel k = schedule::merge_stages(p.stages(next_block), "k", o);
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 0);
  EXPECT_EQ(count(k, loop::StmtKind::FlagRelease), 1);
  EXPECT_EQ(count(k, loop::StmtKind::FlagWait), 1);
  EXPECT_TRUE(k.launch.cooperative);  // a wait needs every block co-resident
  ASSERT_EQ(k.flags.size(), 1u);
  ASSERT_EQ(k.boundaries.size(), 1u);
  EXPECT_EQ(k.boundaries[0].kind, BoundaryKind::Flags);
  EXPECT_EQ(k.boundaries[0].awaited_tiles, 1);
  EXPECT_NE(describe(k.boundaries[0]).find("per-tile flags wait for 1 tile of 4"),
            std::string::npos)
      << describe(k.boundaries[0]);
  EXPECT_NE(k.stages[1].schedule.find("after per-tile flags"), std::string::npos)
      << k.stages[1].schedule;
  // The emulator runs the blocks as tasks: same values, no race, no deadlock.
  expect_values(k, p, [](int64_t b, int64_t t) { return ((b + 1) % kGrid) * kBlock + t; });
  // Each block reading every block's tile keeps the grid barrier, as does a bound too low.
  auto strided = [](Expr b, Expr t) { return t * te::int_imm(kGrid) + b; };
  k = schedule::merge_stages(p.stages(strided), "k", o);
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 1);
  EXPECT_EQ(count(k, loop::StmtKind::FlagWait), 0);
  EXPECT_TRUE(k.flags.empty());
  o.flag_max_tiles = 0;
  k = schedule::merge_stages(p.stages(next_block), "k", o);
  EXPECT_EQ(count(k, loop::StmtKind::GridBarrier), 1);
  EXPECT_EQ(count(k, loop::StmtKind::FlagWait), 0);
}

}  // namespace
}  // namespace souffle
