// Dependence proofs shared between merges (proof_memo.h): a merge of stages merged before takes
// their proofs, worded for its own tensors, with the steps a new proof would spend; a stage that
// differs in one index, or a budget the proof would run past, is proven anew.
#include <gtest/gtest.h>

#include <functional>

#include "core/schedule/dependence.h"
#include "core/schedule/ownership.h"
#include "core/schedule/proof_memo.h"
#include "core/schedule/schedule.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using schedule::DependenceProof;
using schedule::OwnershipQuery;
using schedule::ProofMemo;
using te::Expr;
using te::Tensor;

constexpr int64_t kGrid = 4, kBlock = 32, kN = kGrid * kBlock;

/// A one-stage kernel of its own block and thread variables: dst[b * block + t] =
/// src[read_index(b, t)] + 1.
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

Expr next_block(Expr b, Expr t) {
  return te::floormod(b + te::int_imm(1), te::int_imm(kGrid)) * te::int_imm(kBlock) + t;
}

/// x -> y -> z on tensors of their own (named after `y`), the consumer reading `reader`'s index
/// of y; every proof the merge asks for, as merge_stages gives it.
std::vector<DependenceProof> merge(const std::string& y_name,
                                   const std::function<Expr(Expr, Expr)>& reader,
                                   int64_t max_steps = int64_t{1} << 24) {
  Tensor x = te::make_input("x", {kN}, DType::Float32);
  Tensor y = loop::make_buffer(y_name, {kN}, DType::Float32);
  Tensor z = loop::make_buffer("z", {kN}, DType::Float32);
  auto same = [](Expr b, Expr t) { return b * te::int_imm(kBlock) + t; };
  std::vector<DependenceProof> out;
  schedule::MergeOptions o;
  o.max_proof_steps = max_steps;
  o.on_proof = [&](const OwnershipQuery&, const DependenceProof& p) { out.push_back(p); };
  schedule::merge_stages(
      {stage_kernel("produce", y, x, same), stage_kernel("consume", z, y, reader)}, "k", o);
  return out;
}

TEST(ProofMemo, AnotherMergeOfTheSameStagesTakesTheProofWordedForItsTensor) {
  ProofMemo::shared().clear();
  const std::vector<DependenceProof> first = merge("y", next_block);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].reason, "block 0 reads y element 32, which block 1 writes");
  EXPECT_GT(first[0].steps, 0);
  const size_t hits = ProofMemo::shared().hits();
  // Other tensors, other block and thread variables, the same code: from the memo.
  const std::vector<DependenceProof> second = merge("layer1_y", next_block);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(ProofMemo::shared().hits(), hits + 1);
  EXPECT_EQ(second[0].reason, "block 0 reads layer1_y element 32, which block 1 writes");
  EXPECT_EQ(second[0].steps, first[0].steps);  // what proving it would have spent
  EXPECT_EQ(second[0].offsets, first[0].offsets);
  EXPECT_TRUE(second[0].producers == first[0].producers);
  EXPECT_EQ(second[0].lo, first[0].lo);
  EXPECT_EQ(second[0].hi, first[0].hi);
  // The same as a proof made without the memo.
  ProofMemo::shared().clear();
  const std::vector<DependenceProof> fresh = merge("layer1_y", next_block);
  EXPECT_EQ(ProofMemo::shared().hits(), 0u);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].reason, second[0].reason);
  EXPECT_EQ(fresh[0].steps, second[0].steps);
  EXPECT_TRUE(fresh[0].producers == second[0].producers);
}

TEST(ProofMemo, OnePlantedDifferenceIsProvenAnew) {
  ProofMemo::shared().clear();
  merge("y", next_block);
  // Two blocks on instead of one: a constant of the index differs.
  const std::vector<DependenceProof> other = merge("y", [](Expr b, Expr t) {
    return te::floormod(b + te::int_imm(2), te::int_imm(kGrid)) * te::int_imm(kBlock) + t;
  });
  EXPECT_EQ(ProofMemo::shared().hits(), 0u);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].reason, "block 0 reads y element 64, which block 2 writes");
  // A stride: every thread reads the element two on.
  const std::vector<DependenceProof> strided = merge("y", [](Expr b, Expr t) {
    return te::floormod(b * te::int_imm(kBlock) + t * te::int_imm(2), te::int_imm(kN));
  });
  EXPECT_EQ(ProofMemo::shared().hits(), 0u);
  ASSERT_EQ(strided.size(), 1u);
  EXPECT_NE(strided[0].reason, other[0].reason);
}

TEST(ProofMemo, ABudgetTheProofWouldRunPastIsNotAnsweredFromTheMemo) {
  ProofMemo::shared().clear();
  const std::vector<DependenceProof> full = merge("y", next_block);
  ASSERT_EQ(full.size(), 1u);
  ASSERT_GT(full[0].steps, 1);
  const std::vector<DependenceProof> short_of =
      merge("y", next_block, schedule::proof_budget(full[0].steps - 1));
  EXPECT_EQ(ProofMemo::shared().hits(), 0u);
  ASSERT_EQ(short_of.size(), 1u);
  EXPECT_FALSE(short_of[0].mapped);
  EXPECT_NE(short_of[0].reason.find("index regions to evaluate"), std::string::npos)
      << short_of[0].reason;
  // Exactly enough: from the memo.
  merge("y", next_block, full[0].steps);
  EXPECT_EQ(ProofMemo::shared().hits(), 1u);
}

}  // namespace
}  // namespace souffle

// A reason is reworded where its wording names the tensor and nowhere else: a one-letter name
// is also inside "block", which a text search would have changed too.
TEST(ProofMemo, AReasonIsRewordedOnlyWhereItNamesTheTensor) {
  EXPECT_EQ(souffle::schedule::rename_proof_reason(
                "block 3 reads b element 7, which block 2 writes", "b", "c"),
            std::optional<std::string>("block 3 reads c element 7, which block 2 writes"));
  EXPECT_EQ(souffle::schedule::rename_proof_reason("the reading stage also writes b", "b", "c"),
            std::optional<std::string>("the reading stage also writes c"));
  EXPECT_EQ(souffle::schedule::rename_proof_reason("", "b", "c"), std::optional<std::string>(""));
  EXPECT_EQ(souffle::schedule::rename_proof_reason("an index of b is out of bounds", "b", "c"),
            std::optional<std::string>("an index of c is out of bounds"));
  // A wording without the name stays as it is, even where the name is a letter of it.
  EXPECT_EQ(souffle::schedule::rename_proof_reason("too many accesses to enumerate", "x", "y"),
            std::optional<std::string>("too many accesses to enumerate"));
  // A wording it does not know that has the name: nothing, so the caller proves again.
  EXPECT_EQ(
      souffle::schedule::rename_proof_reason("b is read by blocks it was not written by", "b", "c"),
      std::nullopt);
}
