#include <gtest/gtest.h>

#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/loop/stmt.h"
#include "core/loop/verify.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

Expr ic(int64_t v) {
  return te::int_imm(v);
}

Kernel wrap(Stmt inner, int64_t grid, int64_t block, const Expr& bx, const Expr& tx,
            std::vector<Tensor> ins, std::vector<Tensor> outs) {
  Kernel k;
  k.name = "k";
  k.launch.grid_x = grid;
  k.launch.block_x = block;
  k.inputs = std::move(ins);
  k.outputs = std::move(outs);
  k.stages.push_back({"s0", "hand", {}, {}, grid, block});
  k.body = loop::make_for(bx, grid, ForKind::BlockIdxX,
                          loop::make_for(tx, block, ForKind::ThreadIdxX, loop::stage(0, inner)));
  return k;
}

TEST(Loop, PrintKernel) {
  Expr bx = te::var("bx"), tx = te::var("tx"), i = te::var("i");
  Tensor x = te::make_input("x", {4, 8}, DType::Float32);
  Tensor y = te::make_compute_tensor("y", {4, 8}, DType::Float32);
  Tensor sh = loop::make_buffer("sh", {8}, DType::Float32);
  Stmt body = loop::allocate(
      sh, MemScope::Shared,
      loop::seq({loop::store(sh, {tx}, te::read(x, {bx, tx})), loop::block_barrier(),
                 loop::make_for(
                     i, 2, ForKind::Serial,
                     loop::if_then_else(te::lt(tx, ic(4)),
                                        loop::store(y, {bx, tx}, te::read(sh, {tx}) * 2.0)))}));
  Kernel k = wrap(body, 4, 8, bx, tx, {x}, {y});
  loop::verify(k);
  EXPECT_EQ(loop::print(k),
            "kernel k grid 4 block 8 shared 0\n"
            "  in  x: f32[4, 8]\n"
            "  out y: f32[4, 8]\n"
            "  stage 0 s0 (hand, grid 4 block 8):\n"
            "for bx in 0 .. +4 blockIdx.x {\n"
            "  for tx in 0 .. +8 threadIdx.x {\n"
            "    stage 0 {\n"
            "      allocate shared sh: f32[8]\n"
            "      sh[tx] = x[bx, tx]\n"
            "      block_barrier()\n"
            "      for i in 0 .. +2 serial {\n"
            "        if (tx < 4) {\n"
            "          y[bx, tx] = (sh[tx] * 2f)\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(Loop, SimplifyBeforeAfter) {
  Expr j = te::var("j"), v = te::var("v"), t = te::var("t");
  Tensor y = te::make_compute_tensor("y", {16}, DType::Int64);
  Stmt s = loop::make_for(
      j, 1, ForKind::Serial,
      loop::let_stmt(v, ic(3),
                     loop::if_then_else(te::lt(ic(2), ic(5)),
                                        loop::store(y, {te::floordiv(t * ic(1) + j * ic(4), ic(1))},
                                                    te::floormod(v + ic(0), ic(1)) + t))));
  EXPECT_EQ(loop::print(s),
            "for j in 0 .. +1 serial {\n"
            "  let v = 3\n"
            "  if (2 < 5) {\n"
            "    y[floordiv(((t * 1) + (j * 4)), 1)] = (floormod((v + 0), 1) + t)\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(loop::print(loop::simplify(s)), "y[t] = t\n");
}

TEST(Loop, VerifierRejectsUnboundVarsAndUnallocatedBuffers) {
  Expr bx = te::var("bx"), tx = te::var("tx"), free_var = te::var("n");
  Tensor y = te::make_compute_tensor("y", {8}, DType::Int64);
  Tensor scratch = loop::make_buffer("scratch", {8}, DType::Int64);
  EXPECT_THROW(loop::verify(wrap(loop::store(y, {tx}, free_var), 1, 8, bx, tx, {}, {y})),
               InternalError);
  EXPECT_THROW(loop::verify(wrap(loop::store(scratch, {tx}, tx), 1, 8, bx, tx, {}, {y})),
               InternalError);
  // A block-uniform branch may hold a block barrier; a grid barrier needs a cooperative launch.
  Stmt ok = loop::if_then_else(te::lt(bx, ic(1)), loop::block_barrier());
  EXPECT_NO_THROW(loop::verify(wrap(ok, 2, 8, bx, tx, {}, {y})));
  EXPECT_THROW(loop::verify(wrap(loop::grid_barrier(), 2, 8, bx, tx, {}, {y})), InternalError);
  // Thread-binding loops must match the launch.
  Kernel k = wrap(loop::store(y, {tx}, tx), 1, 8, bx, tx, {}, {y});
  k.launch.block_x = 16;
  EXPECT_THROW(loop::verify(k), InternalError);
}

TEST(Loop, MutatorKeepsSharing) {
  Expr tx = te::var("tx");
  Tensor y = te::make_compute_tensor("y", {8}, DType::Int64);
  Stmt s = loop::seq({loop::store(y, {tx}, tx), loop::block_barrier()});
  EXPECT_TRUE(loop::simplify(s).same_as(s));
  Stmt sub = loop::substitute(s, {{tx.get(), ic(2)}});
  EXPECT_EQ(loop::print(sub), "y[2] = 2\nblock_barrier()\n");
}

}  // namespace
}  // namespace souffle
