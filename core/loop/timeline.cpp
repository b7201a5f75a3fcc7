#include "core/loop/timeline.h"

#include <algorithm>
#include <unordered_map>

#include "core/loop/mutator.h"
#include "core/support/error.h"

namespace souffle::loop {

namespace {

/// The stages and the waits between them in program order (not inside Stage nodes).
struct Events : StmtVisitor {
  struct Event {
    const StmtNode* node;
    int stage;  ///< -1 for a wait
  };
  std::vector<Event> order;
  void visit_Stage(const Stage& n, const Stmt& s) override { order.push_back({s.get(), n.index}); }
  void visit_BlockBarrier(const BlockBarrier&, const Stmt& s) override {
    order.push_back({s.get(), -1});
  }
  void visit_GridBarrier(const GridBarrier&, const Stmt& s) override {
    order.push_back({s.get(), -1});
  }
  void visit_FlagWait(const FlagWait&, const Stmt& s) override { order.push_back({s.get(), -1}); }
  void visit_TimelineRecord(const TimelineRecord&, const Stmt&) override { ++records; }
  int records = 0;
};

class Instrument : public StmtMutator {
 public:
  Instrument(Tensor buffer, int64_t stride, std::unordered_map<const StmtNode*, int> wait_stage)
      : m_buffer(std::move(buffer)), m_stride(stride), m_wait_stage(std::move(wait_stage)) {}
  int64_t slots() const { return m_slot; }

 protected:
  Stmt mutate_Stage(const Stage& n, const Stmt& s) override {
    Stmt begin = record(TimelineEvent::StageBegin, TimelineWait::None, n.index);
    Stmt end = record(TimelineEvent::StageEnd, TimelineWait::None, n.index);
    return seq({begin, s, end});
  }
  Stmt mutate_BlockBarrier(const BlockBarrier&, const Stmt& s) override {
    return wait(s, TimelineWait::BlockBarrier);
  }
  Stmt mutate_GridBarrier(const GridBarrier&, const Stmt& s) override {
    return wait(s, TimelineWait::GridBarrier);
  }
  Stmt mutate_FlagWait(const FlagWait&, const Stmt& s) override {
    return wait(s, TimelineWait::FlagWait);
  }

 private:
  Stmt wait(const Stmt& s, TimelineWait w) {
    const int stage = m_wait_stage.at(s.get());
    Stmt begin = record(TimelineEvent::WaitBegin, w, stage);
    Stmt end = record(TimelineEvent::WaitEnd, w, stage);
    return seq({begin, s, end});
  }
  Stmt record(TimelineEvent e, TimelineWait w, int stage) {
    return timeline_record(m_buffer, e, w, stage, m_slot++, m_stride);
  }
  Tensor m_buffer;
  int64_t m_stride;
  std::unordered_map<const StmtNode*, int> m_wait_stage;
  int64_t m_slot = 0;
};

}  // namespace

bool has_timeline(const Kernel& k) {
  Events ev;
  ev.visit(k.body);
  return ev.records > 0;
}

std::optional<TimelineLayout> timeline_layout(const Kernel& k) {
  std::optional<TimelineLayout> out;
  for_each_stmt(k.body, [&](const Stmt& s) {
    const TimelineRecord* r = s.as<TimelineRecord>();
    if (!r || out) return;
    out.emplace();
    out->buffer = r->buffer->name;
    out->grid = k.launch.grid_x;
    out->rows = r->buffer->shape[0];
    out->slot_count = r->buffer->shape[1];
    out->stride = r->stride;
  });
  return out;
}

TimelineLayout instrument_timeline(Kernel& k, const TimelineOptions& options) {
  Events ev;
  ev.visit(k.body);
  SOUFFLE_CHECK(ev.records == 0, "instrument_timeline: " + k.name + " is already instrumented");
  // A wait is charged to the stage after it (the last stage for a trailing one).
  std::unordered_map<const StmtNode*, int> wait_stage;
  int last = 0, slots = 0;
  for (size_t i = 0; i < ev.order.size(); ++i) {
    slots += 2;
    if (ev.order[i].stage >= 0) {
      SOUFFLE_CHECK(ev.order[i].stage <= kTimelineMaxStage,
                    "instrument_timeline: stage index beyond the record's 24 bits");
      last = ev.order[i].stage;
      continue;
    }
    int next = -1;
    for (size_t j = i + 1; j < ev.order.size() && next < 0; ++j) next = ev.order[j].stage;
    wait_stage[ev.order[i].node] = next >= 0 ? next : last;
  }
  TimelineLayout layout;
  layout.grid = k.launch.grid_x;
  layout.slot_count = std::max(slots, 1);
  const int64_t per_block = layout.slot_count * kTimelineWords * 8;
  const int64_t fit = std::max<int64_t>(1, options.max_bytes / per_block);
  layout.stride = std::max<int64_t>(1, (layout.grid + fit - 1) / fit);
  layout.rows = (layout.grid + layout.stride - 1) / layout.stride;
  layout.buffer = k.name + "_timeline";
  Tensor buffer =
      make_buffer(layout.buffer, {layout.rows, layout.slot_count, kTimelineWords}, DType::Int64);
  Instrument ins(buffer, layout.stride, std::move(wait_stage));
  Stmt body = ins.mutate(k.body);
  SOUFFLE_CHECK(ins.slots() == slots, "instrument_timeline: slots counted twice differently");
  k.body = allocate(buffer, MemScope::Global, body);
  return layout;
}

}  // namespace souffle::loop
