/// \file What the emitter wrote, line by line, as data: which kernel of the unit, which function
/// and part of the unit, which stage and which kernel boundary each line stands for, and what
/// kind of statement it is. The source map, rolling (roll.h) and the cut of a kernel into stage
/// programs for separate compilation (gpu/lto.h, through SourceMap::functions) read these
/// records; nothing reads the emitted text back to recover them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace souffle::codegen {

/// The kind of statement a line of a kernel's body belongs to, as the emitter wrote it.
enum class LineRole : uint8_t {
  Code,          ///< anything else (stage code written inline, declarations, helpers)
  Comment,       ///< a comment line
  Brace,         ///< an opening or closing brace of a block the emitter opened without a head
  Barrier,       ///< a block or grid barrier (between stages or inside one)
  StageCall,     ///< the first line of an outlined stage's call
  StageCallArg,  ///< an argument line of a call written over several lines
  ArenaPointer,  ///< a pointer into the dynamic shared arena
  If,            ///< the head of an `if`
  FlagSync,      ///< a line of a per-tile flag release or wait
  FunctionHead,  ///< the line of a function's signature that names it
  Signature,     ///< the rest of a function's head (its comments and parameter lines)
};

/// The top-level part of the translation unit a line belongs to.
enum class LinePart : uint8_t {
  Preamble,       ///< includes, helpers, declarations between functions (a packed kernel's struct)
  StageFunction,  ///< an outlined stage's `__device__` function: its comments, head and body
  Kernel,         ///< a `__global__` kernel (or a C function): its comments, head and body
};

/// A pointer the emitted code declares: a function's tensor parameter, or a pointer into the
/// shared arena.
struct EmittedPointer {
  std::string name;       ///< empty: none
  std::string type;       ///< what it points to, as printed ("float", "__half")
  bool is_const = false;  ///< a pointer to const
};

/// A function of the unit as the emitter wrote it.
struct EmittedFunction {
  std::string name;
  /// Its pointer parameters, in order (none for a kernel whose tensors come packed in one).
  std::vector<EmittedPointer> params;
};

/// One emitted line.
struct EmittedLine {
  std::string text;  ///< without its newline
  /// The unit's kernel the line belongs to (its index in emit order; a stage function belongs to
  /// the kernel it was outlined from); -1 for the preamble (includes, helpers).
  int kernel = -1;
  /// The stage (loop::Stage::index, an index into Kernel::stages) the line computes, or whose
  /// function it calls; -1 outside every stage. A call in a rolled loop runs another stage in
  /// each repetition: the first is `stage`, the others `more_stages`.
  int stage = -1;
  std::vector<int> more_stages;
  /// A barrier between stages: the kernel boundary it stands for (an index into
  /// Kernel::boundaries), -1 otherwise; a rolled barrier stands for one boundary per repetition.
  int boundary = -1;
  std::vector<int> more_boundaries;
  LineRole role = LineRole::Code;
  LinePart part = LinePart::Preamble;
  /// With part StageFunction or Kernel: the function's number in the unit (emit order, an index
  /// into EmittedUnit::functions); every line of one function has it. -1 in the preamble.
  int function = -1;
  /// In a function's body: the top-level statement of the body the line belongs to, numbered
  /// from 0 in the body (a line, a block with its braces, a call with its argument lines;
  /// comment lines belong to the statement after them); -1 outside every body (the preamble, a
  /// function's head and its closing brace). Rolling groups a kernel's body by it (the lines of
  /// the loops it writes have none; the lines it rolled keep theirs).
  int statement = -1;
  /// A line of role ArenaPointer: the pointer into the shared arena it declares.
  EmittedPointer declares;
  /// Whether a loop over repetitions of the line's statement may hold the line (roll.h): a
  /// brace, a comment, a barrier, a stage call or one of its arguments, an arena pointer, an
  /// `if` on block/thread index arithmetic, a flag release or wait whose indices are such
  /// arithmetic. Code of a stage written inline never is.
  bool repeatable = false;
};

/// Whether `s` is block/thread index arithmetic as the emitter prints it: made only of the
/// words `words` (such as "bx", "tx", "ll"), integer literals and the characters `chars`.
bool index_arithmetic(const std::string& s, const std::vector<std::string>& words,
                      const std::string& chars);

/// A translation unit as the emitter wrote it: text() is the lines joined by newlines.
struct EmittedUnit {
  std::vector<EmittedLine> lines;
  std::vector<EmittedFunction> functions;  ///< by number (EmittedLine::function)
  std::string text() const;
};

}  // namespace souffle::codegen
