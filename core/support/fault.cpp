#include "core/support/fault.h"

#include <atomic>
#include <map>
#include <mutex>

namespace souffle::fault {
namespace {

std::atomic<int> g_armed{0};

std::mutex& mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::function<void()>>& planted() {
  static std::map<std::string, std::function<void()>> m;
  return m;
}

}  // namespace

void point(const char* site) {
  if (g_armed.load(std::memory_order_relaxed) == 0) return;
  std::function<void()> thrower;
  {
    std::lock_guard<std::mutex> lock(mutex());
    auto it = planted().find(site);
    if (it == planted().end()) return;
    thrower = it->second;
  }
  thrower();
}

Planted::Planted(std::string site, std::function<void()> thrower) : m_site(std::move(site)) {
  std::lock_guard<std::mutex> lock(mutex());
  planted()[m_site] = std::move(thrower);
  g_armed.fetch_add(1);
}

Planted::~Planted() {
  std::lock_guard<std::mutex> lock(mutex());
  planted().erase(m_site);
  g_armed.fetch_sub(1);
}

}  // namespace souffle::fault
