// CUDA emission of loop::TimelineRecord (docs/timeline.md): thread 0 of each recorded block
// writes the global timer, its SM's cycle counter and (SM << 32) | tag.
#include "core/codegen/codegen_cuda.h"
#include "core/loop/timeline.h"

namespace souffle::codegen {

void CodeGenCuda::emit_timeline_record(const loop::TimelineRecord& r) {
  use_helper("souffle_timeline_record",
             helper_prefix() +
                 "void souffle_timeline_record(long long* rec, long long tag) {\n"
                 "  unsigned long long t;\n"
                 "  unsigned int sm;\n"
                 "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
                 "  asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
                 "  rec[0] = (long long)t;\n"
                 "  rec[1] = (long long)clock64();\n"
                 "  rec[2] = ((long long)sm << 32) | tag;\n"
                 "}\n");
  const std::string buf = buffer_name(r.buffer.get());
  const int64_t slots = r.buffer->shape[1];
  const std::string tag = std::to_string(loop::timeline_tag(r.event, r.wait, r.stage));
  const std::string what =
      std::string(loop::timeline_event_name(r.event)) +
      (r.wait != loop::TimelineWait::None ? std::string(" ") + loop::timeline_wait_name(r.wait)
                                          : std::string()) +
      ", stage " + std::to_string(r.stage);
  const std::string row = r.stride == 1
                              ? std::string("(long long)blockIdx.x")
                              : "(long long)(blockIdx.x / " + std::to_string(r.stride) + "u)";
  const std::string cond =
      r.stride == 1 ? std::string("threadIdx.x == 0")
                    : "threadIdx.x == 0 && blockIdx.x % " + std::to_string(r.stride) + "u == 0";
  line("if (" + cond + ") souffle_timeline_record(" + buf + " + (" + row + " * " +
       std::to_string(slots) + " + " + std::to_string(r.slot) + ") * " +
       std::to_string(loop::kTimelineWords) + ", " + tag + ");  // timeline: " + what);
}

}  // namespace souffle::codegen
