#include <gtest/gtest.h>

#include "core/te/builder.h"
#include "core/te/program_index.h"

namespace souffle::te {
namespace {

/// x -> a = 2x -> b = a + a -> s = sum of b from a[0] (a read in the init) -> c = s + x[0];
/// outputs b and c.
TeProgram chain() {
  Tensor x = make_input("x", {8}, DType::Float32);
  Op a = compute("a", {8}, DType::Float32,
                 [&](const std::vector<Expr>& i) { return read(x, {i[0]}) * 2.0; });
  Op b = compute("b", {8}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(a->output, {i[0]}) + read(a->output, {i[0]});
  });
  Op s = reduce(
      "s", {1}, DType::Float32, ReduceKind::Sum, {8},
      [&](const std::vector<Expr>&, const std::vector<Expr>& k) { return read(b->output, {k[0]}); },
      read(a->output, {int_imm(0)}));
  Op c = compute("c", {1}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(s->output, {i[0]}) + read(x, {int_imm(0)});
  });
  TeProgram p;
  p.name = "chain";
  p.inputs = {x};
  p.ops = {a, b, s, c};
  p.outputs = {b->output, c->output};
  return p;
}

TEST(ProgramIndex, ProducersAndReaders) {
  TeProgram p = chain();
  ProgramIndex index(p);
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.producer(p.inputs[0].get()), -1);
  for (size_t i = 0; i < p.ops.size(); ++i)
    EXPECT_EQ(index.producer(p.ops[i]->output.get()), static_cast<int>(i));
  // a is read twice by b and once in s's init: each reader once, ascending.
  EXPECT_EQ(index.readers(0), (std::vector<int>{1, 2}));
  EXPECT_EQ(index.readers(1), (std::vector<int>{2}));
  EXPECT_EQ(index.readers(2), (std::vector<int>{3}));
  EXPECT_TRUE(index.readers(3).empty());
  EXPECT_TRUE(index.read_in_init(0));
  EXPECT_FALSE(index.read_in_init(1));
  EXPECT_TRUE(index.is_output(p.ops[1]->output.get()));
  EXPECT_FALSE(index.is_output(p.ops[0]->output.get()));
  EXPECT_TRUE(index.is_output(p.ops[3]->output.get()));
}

TEST(ProgramIndex, IndexesOnlyItsOwnProgram) {
  TeProgram p = chain();
  ProgramIndex index(p);
  TeProgram copy = p;  // the same ops, shared
  EXPECT_TRUE(index.indexes(copy));
  TeProgram other = chain();  // equal text, other ops
  EXPECT_FALSE(index.indexes(other));
  TeProgram fewer = p;
  fewer.ops.pop_back();
  EXPECT_FALSE(index.indexes(fewer));
  TeProgram outputs = p;
  outputs.outputs.pop_back();
  EXPECT_FALSE(index.indexes(outputs));
}

}  // namespace
}  // namespace souffle::te
