/// \file Graphviz for the whole process: one context, one layout at a time, and graphs whose
/// layout depends on their text alone.
#pragma once

#include <graphviz/gvc.h>

#include <functional>
#include <string>

namespace souffle::report {

/// Runs `f` with the process's Graphviz context while holding the lock that every use of
/// Graphviz in the process takes (reports and the explorer's layouts alike): Graphviz keeps
/// global state, so two layouts at once corrupt each other. The context lives until the process
/// ends: Graphviz 2.42's text-size cache keeps a pointer to a font name owned by the context, and
/// freeing one context makes the next layout read freed memory.
void with_graphviz(const std::function<void(GVC_t*)>& f);

/// The discipline every graph of the project is made with (agopen's last argument): Graphviz's
/// own names each object by the address of its interned name, and keeps subgraphs (clusters)
/// ordered by those names, so the same graph came out laid out differently from run to run as
/// the heap did. Here a named object's ID is the order its name was first met in, so a graph's
/// layout depends on its text (or the order it was built in) alone.
Agdisc_t* stable_disc();

/// The graph `dot` describes, read with stable_disc(); null when the text is not DOT. Call inside
/// with_graphviz; agclose() it.
Agraph_t* read_dot(const std::string& dot);

}  // namespace souffle::report
