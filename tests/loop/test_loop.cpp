#include <gtest/gtest.h>

#include <tuple>

#include "core/loop/arena.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/loop/stmt.h"
#include "core/loop/unroll.h"
#include "core/loop/vectorize.h"
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

TEST(Loop, SimplifyReplacesNestedBindingsInOneWalk) {
  // Lets and one-trip loops inside one another: each inner value is simplified with the outer
  // ones replaced, and the body sees all of them; a let whose value is neither a constant nor a
  // variable stays. The same variable bound again inside its own scope takes the inner value
  // there and the outer one after it.
  Expr a = te::var("a"), b = te::var("b"), i = te::var("i"), u = te::var("u"), t = te::var("t");
  Tensor y = te::make_compute_tensor("y", {64}, DType::Int64);
  Stmt inner = loop::let_stmt(a, ic(10), loop::store(y, {a}, a));
  Stmt s = loop::let_stmt(
      a, ic(3),
      loop::let_stmt(b, a + ic(1),
                     loop::make_for(i, b, ic(1), ForKind::Serial,
                                    loop::let_stmt(u, t * b,
                                                   loop::seq({loop::store(y, {i + a}, u + b), inner,
                                                              loop::store(y, {a * ic(2)}, i)})))));
  EXPECT_EQ(loop::print(loop::simplify(s)),
            "let u = (t * 4)\n"
            "y[7] = (u + 4)\n"
            "y[10] = 10\n"
            "y[6] = 4\n");
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

TEST(LoopPasses, UnrollBeforeAfter) {
  Expr r = te::var("r"), c = te::var("c"), tx = te::var("tx");
  Tensor acc = loop::make_buffer("acc", {2, 2}, DType::Float32);
  Stmt s = loop::make_for(
      r, 2, ForKind::Unrolled,
      loop::make_for(c, 2, ForKind::Unrolled,
                     loop::store(acc, {r, c}, te::cast(DType::Float32, r * ic(2) + c))));
  EXPECT_EQ(loop::print(s),
            "for r in 0 .. +2 unrolled {\n"
            "  for c in 0 .. +2 unrolled {\n"
            "    acc[r, c] = cast<f32>(((r * 2) + c))\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(loop::print(loop::unroll_loops(s)),
            "acc[0, 0] = cast<f32>(0)\n"
            "acc[0, 1] = cast<f32>(1)\n"
            "acc[1, 0] = cast<f32>(2)\n"
            "acc[1, 1] = cast<f32>(3)\n");
  // A serial loop beyond the limit stays.
  Stmt big =
      loop::make_for(r, 16, ForKind::Serial, loop::store(acc, {ic(0), ic(0)}, te::float_imm(0)));
  EXPECT_TRUE(loop::unroll_loops(big).same_as(big));
}

TEST(LoopPasses, VectorizeBeforeAfter) {
  Expr v = te::var("v"), tx = te::var("tx");
  Tensor x = te::make_input("x", {8, 16}, DType::Float32);
  Tensor y = te::make_compute_tensor("y", {8, 16}, DType::Float32);
  Stmt good = loop::make_for(
      v, 4, ForKind::Serial,
      loop::store(y, {ic(1), tx * ic(4) + v}, te::read(x, {ic(1), tx * ic(4) + v}) * 2.0));
  EXPECT_EQ(loop::print(loop::vectorize_loops(good)),
            "for v in 0 .. +4 vectorized {\n"
            "  y[1, ((tx * 4) + v)] = (x[1, ((tx * 4) + v)] * 2f)\n"
            "}\n");
  // Misaligned base (tx * 2) and a wrong width (2 x f32 = 8 bytes) stay serial.
  Stmt misaligned = loop::make_for(v, 4, ForKind::Serial,
                                   loop::store(y, {ic(1), tx * ic(2) + v}, te::float_imm(0)));
  EXPECT_TRUE(loop::vectorize_loops(misaligned).same_as(misaligned));
  Stmt narrow = loop::make_for(v, 2, ForKind::Serial,
                               loop::store(y, {ic(1), tx * ic(4) + v}, te::float_imm(0)));
  EXPECT_TRUE(loop::vectorize_loops(narrow).same_as(narrow));
}

TEST(LoopPasses, SharedArenaReusesSpaceAfterBarrier) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor y = te::make_compute_tensor("y", {32}, DType::Float32);
  Tensor a = loop::make_buffer("a", {32}, DType::Float32);  // 128 bytes
  Tensor b = loop::make_buffer("b", {3}, DType::Float32);   // 12 bytes, nested in a
  Tensor c = loop::make_buffer("c", {64}, DType::Float32);  // 256 bytes, after a barrier
  Stmt use_a =
      loop::allocate(a, MemScope::Shared,
                     loop::allocate(b, MemScope::Shared,
                                    loop::seq({loop::store(a, {tx}, te::float_imm(1)),
                                               loop::store(b, {ic(0)}, te::float_imm(1))})));
  Stmt use_c = loop::allocate(c, MemScope::Shared, loop::store(c, {tx}, te::float_imm(2)));
  Kernel k =
      wrap(loop::seq({use_a, loop::block_barrier(), use_c, loop::store(y, {tx}, te::float_imm(0))}),
           1, 32, bx, tx, {}, {y});
  Kernel planned = loop::plan_shared_arena(k);
  EXPECT_EQ(loop::print(planned).substr(0, loop::print(planned).find("for bx")),
            "kernel k grid 1 block 32 shared 256\n"
            "  out y: f32[32]\n"
            "  stage 0 s0 (hand, grid 1 block 32):\n"
            "  shared a @0 +128\n"
            "  shared b @128 +12\n"
            "  shared c @0 +256\n");
  // Without the barrier, c must sit above a and b.
  Kernel k2 = wrap(loop::seq({use_a, use_c}), 1, 32, bx, tx, {}, {y});
  Kernel p2 = loop::plan_shared_arena(k2);
  ASSERT_EQ(p2.shared.size(), 3u);
  EXPECT_EQ(p2.shared[2].offset, 160);  // 128 + 12 rounded up to the 32-byte alignment
  EXPECT_EQ(p2.launch.dynamic_shared_bytes, 416);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

TEST(LoopEqual, BoundVarsAndBuffersMatchByPosition) {
  Tensor y = te::make_compute_tensor("y", {8}, DType::Float32);
  auto build = [&](float c) {
    Expr i = te::var("i");
    Tensor t = loop::make_buffer("t", {8}, DType::Float32);
    return loop::allocate(t, MemScope::Local,
                          loop::make_for(i, 8, ForKind::Serial,
                                         loop::seq({loop::store(t, {i}, te::float_imm(c)),
                                                    loop::store(y, {i}, te::read(t, {i}))})));
  };
  EXPECT_TRUE(loop::equal(build(1.0f), build(1.0f)));
  EXPECT_FALSE(loop::equal(build(1.0f), build(2.0f)));
  Expr free_a = te::var("n"), free_b = te::var("n");
  EXPECT_FALSE(loop::equal(loop::store(y, {free_a}, te::float_imm(0)),
                           loop::store(y, {free_b}, te::float_imm(0))));
}

// Statements equal up to their parameters share a shape hash, whatever their tensors, bound
// vars, stage indices and comments; a planted constant (another row of the input), another
// dtype or another pattern of tensor accesses changes it.
TEST(LoopEqual, ShapeFollowsEqualUpToParams) {
  auto build = [](int row, int stage, const char* note, DType dt) {
    Tensor x = te::make_compute_tensor("x", {4, 8}, dt);
    Tensor y = te::make_compute_tensor("y", {8}, dt);
    Expr i = te::var("i");
    Stmt body = loop::make_for(i, 8, ForKind::Serial,
                               loop::store(y, {i}, te::read(x, {te::int_imm(row), i})));
    return std::make_tuple(loop::stage(stage, loop::seq({loop::comment(note), body})),
                           std::vector<Tensor>{x, y});
  };
  auto [a, pa] = build(1, 3, "layer 0", DType::Float32);
  auto [b, pb] = build(1, 7, "layer 1", DType::Float32);
  ASSERT_TRUE(loop::equal_up_to_params(a, b, pa, pb));
  EXPECT_EQ(loop::shape_of(a).hash, loop::shape_of(b).hash);
  // Its tensors in first-access order: the store's, then the read's.
  EXPECT_EQ(loop::shape_of(a).touched, (std::vector<Tensor>{pa[1], pa[0]}));
  auto [c, pc] = build(2, 3, "layer 0", DType::Float32);
  EXPECT_FALSE(loop::equal_up_to_params(a, c, pa, pc));
  EXPECT_NE(loop::shape_of(a).hash, loop::shape_of(c).hash);
  auto [d, pd] = build(1, 3, "layer 0", DType::Float16);
  EXPECT_NE(loop::shape_of(a).hash, loop::shape_of(d).hash);
  // y = x0 + x1 and y = x1 + x0: the same code on other tensors (a tensor is named by its first
  // access), so alike, their tensors listed in the order that matches them; y = x0 + x0 reads
  // one tensor twice, another pattern.
  Tensor x0 = te::make_compute_tensor("x0", {8}, DType::Float32);
  Tensor x1 = te::make_compute_tensor("x1", {8}, DType::Float32);
  Tensor y = te::make_compute_tensor("y", {8}, DType::Float32);
  Expr i = te::var("i");
  auto sum = [&](const Tensor& p, const Tensor& q) {
    return loop::store(y, {i}, te::read(p, {i}) + te::read(q, {i}));
  };
  const loop::StmtShape e = loop::shape_of(sum(x0, x1)), f = loop::shape_of(sum(x1, x0));
  EXPECT_EQ(e.hash, f.hash);
  EXPECT_EQ(e.touched, (std::vector<Tensor>{y, x0, x1}));
  EXPECT_EQ(f.touched, (std::vector<Tensor>{y, x1, x0}));
  EXPECT_TRUE(loop::equal_up_to_params(sum(x0, x1), sum(x1, x0), e.touched, f.touched));
  EXPECT_NE(e.hash, loop::shape_of(sum(x0, x0)).hash);
  // An allocated buffer is accessed but not touched.
  Tensor tmp = te::make_compute_tensor("tmp", {8}, DType::Float32);
  const loop::StmtShape g =
      loop::shape_of(loop::allocate(tmp, MemScope::Shared,
                                    loop::seq({loop::store(tmp, {i}, te::read(x0, {i})),
                                               loop::store(y, {i}, te::read(tmp, {i}))})));
  EXPECT_EQ(g.touched, (std::vector<Tensor>{x0, y}));
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

TEST(LoopShuffle, PrintsComparesMutatesAndVerifies) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor x = te::make_input("x", {64}, DType::Float32);
  Tensor y = te::make_compute_tensor("y", {64}, DType::Float32);
  auto build = [&](loop::ShuffleKind kind, int64_t lane) {
    Tensor acc = loop::make_buffer("acc", {1}, DType::Float32);
    return loop::allocate(acc, MemScope::Local,
                          loop::seq({loop::shuffle(acc, {ic(0)}, te::read(x, {tx}), kind, ic(lane)),
                                     loop::store(y, {tx}, te::read(acc, {ic(0)}))}));
  };
  Stmt s = build(loop::ShuffleKind::Xor, 16);
  EXPECT_EQ(loop::print(s),
            "allocate local acc: f32[1]\n"
            "acc[0] = shuffle_xor(x[tx], 16)\n"
            "y[tx] = acc[0]\n");
  EXPECT_TRUE(loop::equal(s, build(loop::ShuffleKind::Xor, 16)));
  EXPECT_FALSE(loop::equal(s, build(loop::ShuffleKind::Down, 16)));
  EXPECT_FALSE(loop::equal(s, build(loop::ShuffleKind::Xor, 8)));
  EXPECT_TRUE(loop::simplify(s).same_as(s));
  Stmt sub = loop::substitute(s, {{tx.get(), ic(3)}});
  EXPECT_EQ(loop::print(sub),
            "allocate local acc: f32[1]\n"
            "acc[0] = shuffle_xor(x[3], 16)\n"
            "y[3] = acc[0]\n");
  int shuffles = 0;
  loop::for_each_stmt(s, [&](const Stmt& n) { shuffles += n.as<loop::Shuffle>() != nullptr; });
  EXPECT_EQ(shuffles, 1);
  loop::verify(wrap(s, 1, 64, bx, tx, {x}, {y}));
  // A block that is not whole warps cannot run a full-mask shuffle.
  EXPECT_THROW(loop::verify(wrap(s, 1, 48, bx, tx, {x}, {y})), InternalError);
  // The lane must be an index.
  Tensor acc = loop::make_buffer("acc", {1}, DType::Float32);
  EXPECT_THROW(
      loop::shuffle(acc, {ic(0)}, te::read(x, {tx}), loop::ShuffleKind::Idx, te::float_imm(1.0f)),
      InternalError);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

TEST(LoopFlags, PrintsComparesMutatesAndVerifies) {
  Tensor flags = loop::make_buffer("flags", {4}, DType::Int32);
  Expr b = te::var("b");
  Stmt rel = loop::flag_release(flags, b, 0);
  Stmt wait = loop::flag_wait(flags, b + ic(1), ic(2), 1);
  EXPECT_EQ(loop::print(loop::seq({rel, wait})),
            "flag_release flags[b] (stage 0)\n"
            "flag_wait flags[(b + 1) +: 2] >= epoch * 1\n");
  EXPECT_TRUE(loop::equal(wait, loop::flag_wait(flags, b + ic(1), ic(2), 1)));
  EXPECT_FALSE(loop::equal(wait, loop::flag_wait(flags, b + ic(1), ic(2), 2)));
  EXPECT_FALSE(loop::equal(wait, loop::flag_wait(flags, b, ic(2), 1)));
  EXPECT_FALSE(loop::equal(rel, loop::flag_release(flags, b, 1)));
  EXPECT_EQ(loop::print(loop::substitute(wait, {{b.get(), ic(2)}})),
            "flag_wait flags[(2 + 1) +: 2] >= epoch * 1\n");
  EXPECT_EQ(loop::print(loop::substitute(rel, {{b.get(), ic(3)}})),
            "flag_release flags[3] (stage 0)\n");
  // Counters are int32 of rank 1; a release counts at least once per run.
  Tensor wrong = loop::make_buffer("f", {4}, DType::Float32);
  EXPECT_THROW(loop::flag_release(wrong, b, 0), InternalError);
  EXPECT_THROW(loop::flag_wait(flags, b, ic(1), 0), InternalError);
}

TEST(LoopFlags, VerifierChecksFlagsAndStageOrder) {
  Tensor flags = loop::make_buffer("flags", {4}, DType::Int32);
  auto build = [&](int wait_stage, bool own_flags, bool divergent) {
    Expr bx = te::var("bx"), tx = te::var("tx");
    Tensor y = te::make_compute_tensor("y", {4, 8}, DType::Float32);
    Kernel k;
    k.name = "flagged";
    k.launch.grid_x = 4;
    k.launch.block_x = 8;
    k.outputs = {y};
    if (own_flags) k.flags = {flags};
    k.stages.push_back({"s0", "hand", {}, {}, 4, 8});
    k.stages.push_back({"s1", "hand", {}, {}, 4, 8});
    Stmt rel = loop::flag_release(flags, bx, 0);
    if (divergent) rel = loop::if_then_else(te::lt(tx, ic(1)), rel);
    Stmt wait = loop::flag_wait(flags, (bx + ic(1)) % ic(4), ic(1), 1);
    Stmt s0 = loop::seq({loop::store(y, {bx, tx}, te::float_imm(1.0f)), rel});
    Stmt body = wait_stage == 1 ? loop::seq({loop::stage(0, s0), loop::stage(1, wait)})
                                : loop::seq({loop::stage(0, loop::seq({s0, wait}))});
    k.body =
        loop::make_for(bx, 4, ForKind::BlockIdxX, loop::make_for(tx, 8, ForKind::ThreadIdxX, body));
    return k;
  };
  Kernel ok = build(1, true, false);
  EXPECT_NO_THROW(loop::verify(ok));
  EXPECT_NE(loop::print(ok).find("  flags flags: i32[4]\n"), std::string::npos);
  // The counters must be the kernel's own.
  EXPECT_THROW(loop::verify(build(1, false, false)), InternalError);
  // A release is block-collective: never in thread-divergent code.
  EXPECT_THROW(loop::verify(build(1, true, true)), InternalError);
  // A stage may only wait on what earlier stages release, not on its own releases.
  EXPECT_THROW(loop::verify(build(0, true, false)), InternalError);
}

}  // namespace
}  // namespace souffle
