#include "core/report/graphviz.h"

#include <mutex>

namespace souffle::report {

void with_graphviz(const std::function<void(GVC_t*)>& f) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static GVC_t* const gvc = gvContext();  // never freed: see the header
  f(gvc);
}

}  // namespace souffle::report
