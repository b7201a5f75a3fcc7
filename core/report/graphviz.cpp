#include "core/report/graphviz.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace souffle::report {

namespace {

/// The names of one root graph and its subgraphs, nodes and edges: each named object's ID is
/// twice the order its name was first met in (even, as Graphviz's named IDs are; its anonymous
/// ones are odd, counted here too).
struct StableIds {
  std::map<std::string, IDTYPE> ids;
  std::map<IDTYPE, const std::string*> names;  ///< keys of `ids` (stable in a std::map)
  IDTYPE next_named = 2, next_anonymous = 1;
};

void* ids_open(Agraph_t*, Agdisc_t*) {
  return new StableIds;
}

long ids_map(void* state, int, char* str, IDTYPE* id, int createflag) {
  StableIds& s = *static_cast<StableIds*>(state);
  if (!str) {
    *id = s.next_anonymous;
    s.next_anonymous += 2;
    return 1;
  }
  auto it = s.ids.find(str);
  if (it == s.ids.end()) {
    if (!createflag) return 0;
    it = s.ids.emplace(str, s.next_named).first;
    s.names.emplace(s.next_named, &it->first);
    s.next_named += 2;
  }
  *id = it->second;
  return 1;
}

long ids_alloc(void*, int, IDTYPE) {
  return 0;  // no object asks for an ID of its own
}

void ids_free(void*, int, IDTYPE) {}

char* ids_print(void* state, int, IDTYPE id) {
  const StableIds& s = *static_cast<const StableIds*>(state);
  auto it = s.names.find(id);
  return it == s.names.end() ? nullptr : const_cast<char*>(it->second->c_str());
}

void ids_close(void* state) {
  delete static_cast<StableIds*>(state);
}

void ids_register(void*, int, void*) {}

Agiddisc_t g_stable_ids = {ids_open,  ids_map,   ids_alloc,   ids_free,
                           ids_print, ids_close, ids_register};

}  // namespace

void with_graphviz(const std::function<void(GVC_t*)>& f) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static GVC_t* const gvc = gvContext();  // never freed: see the header
  f(gvc);
}

Agdisc_t* stable_disc() {
  static Agdisc_t disc = {&AgMemDisc, &g_stable_ids, &AgIoDisc};
  return &disc;
}

Agraph_t* read_dot(const std::string& dot) {
  FILE* in = fmemopen(const_cast<char*>(dot.data()), dot.size(), "r");
  if (!in) return nullptr;
  Agraph_t* g = agread(in, stable_disc());
  std::fclose(in);
  return g;
}

}  // namespace souffle::report
