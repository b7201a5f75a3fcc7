#include "core/te/program_index.h"

#include "core/te/mutator.h"

namespace souffle::te {

ProgramIndex::ProgramIndex(const TeProgram& program)
    : m_ops(program.ops), m_output_list(program.outputs) {
  const size_t n = program.ops.size();
  m_producer.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    m_producer[program.ops[i]->output.get()] = static_cast<int>(i);
  }
  for (const Tensor& t : program.outputs) m_outputs.insert(t.get());
  m_readers.assign(n, {});
  m_read_in_init.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    auto scan = [&](const Expr& e, bool init) {
      if (!e.defined()) return;
      for_each_node(e, [&](const Expr& x) {
        const Read* r = x.as<Read>();
        if (!r) return;
        const int p = producer(r->tensor.get());
        if (p < 0) return;
        std::vector<int>& readers = m_readers[static_cast<size_t>(p)];
        // Ops are visited in order, so each list stays ascending.
        if (readers.empty() || readers.back() != static_cast<int>(i))
          readers.push_back(static_cast<int>(i));
        if (init) m_read_in_init[static_cast<size_t>(p)] = true;
      });
    };
    scan(program.ops[i]->body, false);
    scan(program.ops[i]->init, true);
  }
}

bool ProgramIndex::indexes(const TeProgram& program) const {
  if (program.ops.size() != m_ops.size() || program.outputs.size() != m_output_list.size())
    return false;
  for (size_t i = 0; i < m_ops.size(); ++i)
    if (program.ops[i] != m_ops[i]) return false;
  for (size_t i = 0; i < m_output_list.size(); ++i)
    if (program.outputs[i] != m_output_list[i]) return false;
  return true;
}

int ProgramIndex::producer(const TensorNode* t) const {
  auto it = m_producer.find(t);
  return it == m_producer.end() ? -1 : it->second;
}

}  // namespace souffle::te
