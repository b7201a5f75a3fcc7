/// \file Small hand-built loop-IR kernels the emitter tests share.
#pragma once

#include "core/loop/arena.h"
#include "core/loop/stmt.h"
#include "core/loop/vectorize.h"
#include "core/te/builder.h"

namespace souffle::codegen::testing {

using loop::ForKind;
using loop::MemScope;
using te::Expr;

inline Expr ic(int64_t v) {
  return te::int_imm(v);
}

inline loop::StageInfo stage_info(const std::string& name, const std::string& schedule,
                                  const std::string& te_name, const std::string& node,
                                  const std::string& op_type, int64_t grid, int64_t block) {
  loop::StageInfo s;
  s.name = name;
  s.schedule = schedule;
  s.tes = {te_name};
  s.origins = {{node, op_type}};
  s.grid_x = grid;
  s.block_x = block;
  return s;
}

inline loop::Stmt bind_threads(const Expr& bx, int64_t grid, const Expr& tx, int64_t block,
                               loop::Stmt body) {
  return loop::make_for(bx, grid, ForKind::BlockIdxX,
                        loop::make_for(tx, block, ForKind::ThreadIdxX, std::move(body)));
}

/// y[i] = exp(x[i]) * 2 over 1000 floats, one element per thread.
inline loop::Kernel elementwise_kernel(DType dtype = DType::Float32) {
  te::Tensor x = te::make_input("x", {1000}, dtype);
  te::Tensor y = te::make_compute_tensor("/block.0/Mul_output_0", {1000}, dtype);
  Expr bx = te::var("bx"), tx = te::var("tx"), i = te::var("i");
  Expr value = te::exp(te::read(x, {i})) * te::imm(dtype, 2.0);
  loop::Stmt body = loop::stage(
      0, loop::let_stmt(i, bx * ic(256) + tx,
                        loop::if_then_else(te::lt(i, ic(1000)), loop::store(y, {i}, value))));
  loop::Kernel k;
  k.name = "exp_mul";
  k.inputs = {x};
  k.outputs = {y};
  k.launch.grid_x = 4;
  k.launch.block_x = 256;
  k.stages = {stage_info("exp_mul", "injective", "Mul_1", "/block.0/Mul", "Mul", 4, 256)};
  k.body = bind_threads(bx, 4, tx, 256, body);
  return k;
}

/// out[r] = max over 100 columns of x[r, c], one 32-thread block per row: a strided partial
/// per thread in a register, then a shared-memory tree.
inline loop::Kernel row_max_kernel() {
  te::Tensor x = te::make_input("x", {64, 100}, DType::Float32);
  te::Tensor out = te::make_compute_tensor("row_max", {64}, DType::Float32);
  te::Tensor red = loop::make_buffer("red", {32}, DType::Float32);
  te::Tensor acc = loop::make_buffer("acc", {1}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx"), kk = te::var("kk"), c = te::var("c"),
       s = te::var("s"), w = te::var("w");
  Expr acc0 = te::read(acc, {ic(0)});
  std::vector<loop::Stmt> body;
  body.push_back(
      loop::store(acc, {ic(0)}, te::reduce_identity(te::ReduceKind::Max, DType::Float32)));
  body.push_back(loop::make_for(
      kk, 4, ForKind::Serial,
      loop::let_stmt(
          c, kk * ic(32) + tx,
          loop::if_then_else(te::lt(c, ic(100)),
                             loop::store(acc, {ic(0)}, te::max(acc0, te::read(x, {bx, c})))))));
  body.push_back(loop::store(red, {tx}, acc0));
  body.push_back(loop::block_barrier());
  // w = 16 >> s: the tree's half width at step s.
  body.push_back(loop::make_for(
      s, 5, ForKind::Unrolled,
      loop::let_stmt(w, te::binary(te::BinaryOp::Shr, ic(16), s),
                     loop::seq({loop::if_then_else(te::lt(tx, w),
                                                   loop::store(red, {tx},
                                                               te::max(te::read(red, {tx}),
                                                                       te::read(red, {tx + w})))),
                                loop::block_barrier()}))));
  body.push_back(
      loop::if_then_else(te::eq(tx, ic(0)), loop::store(out, {bx}, te::read(red, {ic(0)}))));
  loop::Stmt inner = loop::stage(
      0, loop::allocate(red, MemScope::Shared,
                        loop::allocate(acc, MemScope::Local, loop::seq(std::move(body)))));
  loop::Kernel k;
  k.name = "row_max";
  k.inputs = {x};
  k.outputs = {out};
  k.launch.grid_x = 64;
  k.launch.block_x = 32;
  k.stages = {stage_info("row_max", "reduction, shared tree over 32 threads", "ReduceMax_2",
                         "/head/ReduceMax", "ReduceMax", 64, 32)};
  k.body = bind_threads(bx, 64, tx, 32, inner);
  return k;
}

/// Stage 0: t[i] = x[i] + 1; grid barrier; stage 1: y[i] = t[(i + 1) % 512] * t[i], and
/// total += y[i] atomically. Cooperative: stage 1 reads what other blocks wrote.
inline loop::Kernel two_stage_kernel() {
  te::Tensor x = te::make_input("x", {2, 256}, DType::Float32);
  te::Tensor t = te::make_compute_tensor("t", {2, 256}, DType::Float32);
  te::Tensor y = te::make_compute_tensor("y", {2, 256}, DType::Float32);
  te::Tensor total = te::make_compute_tensor("total", {}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx"), i = te::var("i"), j = te::var("i"), n = te::var("n");
  loop::Stmt s0 = loop::stage(
      0, loop::let_stmt(
             i, bx * ic(128) + tx,
             loop::store(t, {te::floordiv(i, ic(256)), te::floormod(i, ic(256))},
                         te::read(x, {te::floordiv(i, ic(256)), te::floormod(i, ic(256))}) + 1.0)));
  Expr rd = te::read(t, {te::floordiv(j, ic(256)), te::floormod(j, ic(256))});
  Expr rn = te::read(t, {te::floordiv(n, ic(256)), te::floormod(n, ic(256))});
  loop::Stmt s1 = loop::stage(
      1, loop::let_stmt(
             j, bx * ic(128) + tx,
             loop::let_stmt(
                 n, te::floormod(j + ic(1), ic(512)),
                 loop::seq(
                     {loop::store(y, {te::floordiv(j, ic(256)), te::floormod(j, ic(256))}, rn * rd),
                      loop::atomic_add(total, {}, rn * rd)}))));
  loop::Kernel k;
  k.name = "fused_add_mul";
  k.inputs = {x};
  k.outputs = {t, y, total};
  k.launch.grid_x = 4;
  k.launch.block_x = 128;
  k.launch.cooperative = true;
  k.stages = {stage_info("stage0_add", "injective", "Add_0", "Add_0", "Add", 4, 128),
              stage_info("stage1_mul", "injective", "Mul_1", "Mul_1", "Mul", 4, 128)};
  k.body = bind_threads(bx, 4, tx, 128, loop::seq({s0, loop::grid_barrier(), s1}));
  return k;
}

/// two_stage_kernel with per-tile flags in place of the grid barrier: stage 0 block b releases
/// counter b of t_ready once its 128 elements of t are stored; stage 1 block b reads its own
/// tile and the first element of the next block's, so it waits on counters b and (b + 1) % 4.
inline loop::Kernel flag_stage_kernel() {
  loop::Kernel k = two_stage_kernel();
  k.name = "fused_add_mul_flags";
  te::Tensor ready = loop::make_buffer("t_ready", {4}, DType::Int32);
  k.flags = {ready};
  Expr bx, tx;
  const loop::For* fb = k.body.as<loop::For>();
  bx = fb->var;
  const loop::For* ft = fb->body.as<loop::For>();
  tx = ft->var;
  const loop::Seq* q = ft->body.as<loop::Seq>();
  const loop::Stage* s0 = q->stmts[0].as<loop::Stage>();
  const loop::Stage* s1 = q->stmts[2].as<loop::Stage>();
  loop::Stmt body = loop::seq(
      {loop::stage(0, loop::seq({s0->body, loop::flag_release(ready, bx, 0)})),
       loop::stage(1, loop::seq({loop::flag_wait(ready, bx, ic(1), 1),
                                 loop::flag_wait(ready, te::floormod(bx + ic(1), ic(4)), ic(1), 1),
                                 s1->body}))});
  k.body = bind_threads(bx, 4, tx, 128, body);
  return k;
}

/// A chain of six stages over 512 floats where stages run the same code on other tensors:
/// t1 = x * 2, t2 = t1 * 2, t3 = t2 + 1, t4 = t3 * 2, then t4 copied into a shared buffer `s`
/// that lives across the last two stages, and y = s * 2 read back from it. Stages 0, 1 and 3
/// compute "a * 2" on other tensors; the others differ.
inline loop::Kernel repeated_stage_kernel() {
  te::Tensor x = te::make_input("x", {512}, DType::Float32);
  std::vector<te::Tensor> t;
  for (int i = 1; i <= 4; ++i)
    t.push_back(te::make_compute_tensor("t" + std::to_string(i), {512}, DType::Float32));
  te::Tensor y = te::make_compute_tensor("y", {512}, DType::Float32);
  te::Tensor smem = loop::make_buffer("s", {128}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx");
  auto elementwise = [&](int index, const te::Tensor& in, const te::Tensor& out, bool twice) {
    Expr i = te::var("i");
    Expr v = te::read(in, {i});
    return loop::stage(index, loop::let_stmt(i, bx * ic(128) + tx,
                                             loop::store(out, {i}, twice ? v * 2.0 : v + 1.0)));
  };
  Expr i4 = te::var("i"), i5 = te::var("i");
  loop::Stmt to_smem = loop::stage(
      4, loop::let_stmt(i4, bx * ic(128) + tx, loop::store(smem, {tx}, te::read(t[3], {i4}))));
  loop::Stmt from_smem = loop::stage(
      5, loop::let_stmt(i5, bx * ic(128) + tx, loop::store(y, {i5}, te::read(smem, {tx}) * 2.0)));
  loop::Stmt body = loop::seq(
      {elementwise(0, x, t[0], true), loop::grid_barrier(), elementwise(1, t[0], t[1], true),
       loop::grid_barrier(), elementwise(2, t[1], t[2], false), loop::grid_barrier(),
       elementwise(3, t[2], t[3], true), loop::grid_barrier(),
       loop::allocate(smem, MemScope::Shared, loop::seq({to_smem, from_smem}))});
  loop::Kernel k;
  k.name = "repeated";
  k.inputs = {x};
  k.outputs = {t[0], t[1], t[2], t[3], y};
  k.launch.grid_x = 4;
  k.launch.block_x = 128;
  k.launch.cooperative = true;
  const char* names[] = {"t1", "t2", "t3", "t4", "to_smem", "y"};
  for (int i = 0; i < 6; ++i)
    k.stages.push_back(stage_info(names[i], "injective", names[i], names[i], "Mul", 4, 128));
  k.body = bind_threads(bx, 4, tx, 128, body);
  return k;
}

/// `steps` stages (four by default), one per row t of x [steps, 128]:
/// y_t[i] = x[t, i] * 2 + y_{t-1}[i] (y_{-1}: h0), the shape of an unrolled recurrence reading
/// its input sequence a step at a time. The stages differ only in the row they read and the
/// tensors they touch; with `distinct`, step t multiplies by 2 + t instead, so no two stages
/// run the same code.
inline loop::Kernel row_steps_kernel(int steps = 4, bool distinct = false) {
  te::Tensor x = te::make_input("x", {steps, 128}, DType::Float32);
  te::Tensor h0 = te::make_input("h0", {1, 128}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx");
  std::vector<loop::Stmt> body;
  loop::Kernel k;
  k.name = "steps";
  k.inputs = {x, h0};
  te::Tensor prev = h0;
  for (int t = 0; t < steps; ++t) {
    te::Tensor y = te::make_compute_tensor("y" + std::to_string(t), {1, 128}, DType::Float32);
    Expr i = te::var("i");
    if (t > 0) body.push_back(loop::grid_barrier());
    body.push_back(loop::stage(
        t, loop::let_stmt(i, bx * ic(128) + tx,
                          loop::store(y, {ic(0), i},
                                      te::read(x, {ic(t), i}) * (distinct ? 2.0 + t : 2.0) +
                                          te::read(prev, {ic(0), i})))));
    k.outputs.push_back(y);
    k.stages.push_back(
        stage_info("step" + std::to_string(t), "injective", "y", "y", "Add", 1, 128));
    prev = y;
  }
  k.launch.grid_x = 1;
  k.launch.block_x = 128;
  k.launch.cooperative = true;
  k.body = bind_threads(bx, 1, tx, 128, loop::seq(body));
  return k;
}

/// `steps` stages, stage t filling its own output y_t [1, 128] with t: outlined, each stage's
/// call takes one argument.
inline loop::Kernel fill_steps_kernel(int steps) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  std::vector<loop::Stmt> body;
  loop::Kernel k;
  k.name = "fills";
  for (int t = 0; t < steps; ++t) {
    te::Tensor y = te::make_compute_tensor("y" + std::to_string(t), {1, 128}, DType::Float32);
    Expr i = te::var("i");
    body.push_back(loop::stage(
        t, loop::let_stmt(i, bx * ic(128) + tx,
                          loop::store(y, {ic(0), i}, te::float_imm(static_cast<double>(t))))));
    k.outputs.push_back(y);
    k.stages.push_back(
        stage_info("fill" + std::to_string(t), "injective", "y", "y", "Identity", 1, 128));
  }
  k.launch.grid_x = 1;
  k.launch.block_x = 128;
  k.body = bind_threads(bx, 1, tx, 128, loop::seq(body));
  return k;
}

/// out[r] = sum of x[r, 0..31], one warp per row and two rows per 64-thread block: a butterfly
/// of xor shuffles, then lane 0 writes.
inline loop::Kernel warp_sum_kernel() {
  te::Tensor x = te::make_input("x", {4, 32}, DType::Float32);
  te::Tensor out = te::make_compute_tensor("row_sum", {4}, DType::Float32);
  te::Tensor acc = loop::make_buffer("acc", {1}, DType::Float32);
  te::Tensor tmp = loop::make_buffer("shfl", {1}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx"), row = te::var("row"), lane = te::var("lane");
  Expr acc0 = te::read(acc, {ic(0)}), tmp0 = te::read(tmp, {ic(0)});
  std::vector<loop::Stmt> body = {loop::store(acc, {ic(0)}, te::read(x, {row, lane}))};
  for (int64_t m = 16; m >= 1; m /= 2) {
    body.push_back(loop::shuffle(tmp, {ic(0)}, acc0, loop::ShuffleKind::Xor, ic(m)));
    body.push_back(loop::store(acc, {ic(0)}, acc0 + tmp0));
  }
  body.push_back(loop::if_then_else(te::eq(lane, ic(0)), loop::store(out, {row}, acc0)));
  loop::Stmt inner = loop::let_stmt(
      row, bx * ic(2) + te::floordiv(tx, ic(32)),
      loop::let_stmt(lane, te::floormod(tx, ic(32)),
                     loop::allocate(acc, MemScope::Local,
                                    loop::allocate(tmp, MemScope::Local, loop::seq(body)))));
  loop::Kernel k;
  k.name = "row_sum";
  k.inputs = {x};
  k.outputs = {out};
  k.launch.grid_x = 2;
  k.launch.block_x = 64;
  k.stages = {stage_info("row_sum", "reduction, warp shuffles, one warp per row", "ReduceSum_3",
                         "/head/ReduceSum", "ReduceSum", 2, 64)};
  k.body = bind_threads(bx, 2, tx, 64, loop::stage(0, inner));
  return k;
}

/// y[r, c] = x[r, c] * s[r] + b[c] over 2 x 64 floats, four consecutive columns per thread:
/// float4 loads of x and b into registers, the math lane by lane, one float4 store of y.
inline loop::Kernel vector_axpb_kernel() {
  te::Tensor x = te::make_input("x", {2, 64}, DType::Float32);
  te::Tensor s = te::make_input("s", {2}, DType::Float32);
  te::Tensor b = te::make_input("b", {64}, DType::Float32);
  te::Tensor y = te::make_compute_tensor("y", {2, 64}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx"), r = te::var("r"), q = te::var("q"), v = te::var("v");
  Expr col = q * ic(4) + v;
  loop::Stmt lanes = loop::make_for(
      v, 4, ForKind::Vectorized,
      loop::store(y, {r, col}, te::read(x, {r, col}) * te::read(s, {r}) + te::read(b, {col})));
  loop::Stmt inner = loop::let_stmt(
      r, te::floordiv(tx, ic(16)),
      loop::let_stmt(q, te::floormod(tx, ic(16)), loop::lower_vector_accesses(lanes)));
  loop::Kernel k;
  k.name = "axpb";
  k.inputs = {x, s, b};
  k.outputs = {y};
  k.launch.grid_x = 1;
  k.launch.block_x = 32;
  k.stages = {stage_info("axpb", "injective grid-stride, 4-wide vectors", "Add_4", "/head/Add",
                         "Add", 1, 32)};
  k.body = bind_threads(bx, 1, tx, 32, loop::stage(0, inner));
  return k;
}

}  // namespace souffle::codegen::testing
