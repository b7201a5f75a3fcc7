/// \file Graphviz for the whole process: one context, one layout at a time.
#pragma once

#include <graphviz/gvc.h>

#include <functional>

namespace souffle::report {

/// Runs `f` with the process's Graphviz context while holding the lock that every use of
/// Graphviz in the process takes (reports and the explorer's layouts alike): Graphviz keeps
/// global state, so two layouts at once corrupt each other. The context lives until the process
/// ends: Graphviz 2.42's text-size cache keeps a pointer to a font name owned by the context, and
/// freeing one context makes the next layout read freed memory.
void with_graphviz(const std::function<void(GVC_t*)>& f);

}  // namespace souffle::report
