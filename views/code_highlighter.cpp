#include "views/code_highlighter.h"

#include <QStringList>

namespace souffle::views {

namespace {

QString wordsPattern(const QStringList& words) {
  return QStringLiteral("\\b(?:%1)\\b").arg(words.join(QLatin1Char('|')));
}

// ---- language facts ----

const QStringList kCudaKeywords = {"if",
                                   "else",
                                   "for",
                                   "while",
                                   "do",
                                   "return",
                                   "break",
                                   "continue",
                                   "const",
                                   "static",
                                   "inline",
                                   "extern",
                                   "struct",
                                   "typedef",
                                   "template",
                                   "namespace",
                                   "using",
                                   "sizeof",
                                   "volatile",
                                   "__global__",
                                   "__device__",
                                   "__host__",
                                   "__shared__",
                                   "__restrict__",
                                   "__launch_bounds__",
                                   "__forceinline__",
                                   "__syncthreads",
                                   "__syncwarp",
                                   "#include",
                                   "#define",
                                   "#pragma",
                                   "auto"};
const QStringList kCudaTypes = {
    "void",     "bool",     "char",   "short",   "int",           "long",   "float",   "double",
    "unsigned", "signed",   "size_t", "__half",  "__nv_bfloat16", "half",   "int64_t", "int32_t",
    "uint32_t", "uint64_t", "int8_t", "uint8_t", "float2",        "float4", "dim3"};
const QStringList kCudaBuiltins = {"blockIdx",
                                   "threadIdx",
                                   "blockDim",
                                   "gridDim",
                                   "warpSize",
                                   "atomicAdd",
                                   "atomicMax",
                                   "atomicMin",
                                   "__shfl_down_sync",
                                   "__shfl_xor_sync",
                                   "__shfl_sync",
                                   "cg",
                                   "this_grid",
                                   "grid_group",
                                   "sync",
                                   "__float2half",
                                   "__half2float",
                                   "__float2bfloat16",
                                   "__bfloat162float",
                                   "expf",
                                   "logf",
                                   "sqrtf",
                                   "rsqrtf",
                                   "tanhf",
                                   "erff",
                                   "fmaxf",
                                   "fminf",
                                   "fabsf",
                                   "powf",
                                   "exp",
                                   "log",
                                   "sqrt",
                                   "tanh",
                                   "erf"};
const QStringList kLoopKeywords = {
    "kernel", "for",         "in",     "if",       "else",       "stage",      "allocate", "let",
    "in",     "out",         "shared", "global",   "local",      "atomic_add", "evaluate", "grid",
    "block",  "cooperative", "serial", "unrolled", "vectorized", "parallel"};
const QStringList kLoopBuiltins = {"block_barrier", "grid_barrier", "blockIdx.x",
                                   "threadIdx.x",   "blockIdx",     "threadIdx"};
const QStringList kTeKeywords = {"sum", "max", "min", "prod", "select", "cast", "reduce"};
const QStringList kTeBuiltins = {"exp",     "log",  "sqrt",     "rsqrt",   "tanh", "erf",
                                 "sigmoid", "abs",  "pow",      "floor",   "ceil", "sin",
                                 "cos",     "relu", "floordiv", "floormod"};
const QStringList kTypes = {"f16", "bf16", "f32",  "f64", "i8",  "i16", "i32",
                            "i64", "u8",   "bool", "u16", "u32", "u64"};

}  // namespace

CodeColors CodeColors::forTheme(bool dark) {
  CodeColors c;
  if (dark) {
    c.keyword = QColor(0xc6, 0x78, 0xdd);
    c.type = QColor(0x56, 0xb6, 0xc2);
    c.number = QColor(0xd1, 0x9a, 0x66);
    c.comment = QColor(0x7f, 0x84, 0x8e);
    c.builtin = QColor(0xe5, 0xc0, 0x7b);
    c.opcode = QColor(0x61, 0xaf, 0xef);
    c.reg = QColor(0xe0, 0x6c, 0x75);
    c.directive = QColor(0x98, 0xc3, 0x79);
    c.function = QColor(0x61, 0xaf, 0xef);
    c.highlightLine = QColor(0x3e, 0x4a, 0x2e);
  } else {
    c.keyword = QColor(0x8b, 0x1e, 0x9b);
    c.type = QColor(0x00, 0x6e, 0x8a);
    c.number = QColor(0xa3, 0x4a, 0x00);
    c.comment = QColor(0x6a, 0x73, 0x7d);
    c.builtin = QColor(0x8a, 0x62, 0x00);
    c.opcode = QColor(0x00, 0x4f, 0xb3);
    c.reg = QColor(0xb3, 0x1d, 0x28);
    c.directive = QColor(0x2a, 0x7a, 0x1e);
    c.function = QColor(0x00, 0x4f, 0xb3);
    c.highlightLine = QColor(0xff, 0xf1, 0xb8);
  }
  return c;
}

CodeHighlighter::CodeHighlighter(CodeLanguage language, QTextDocument* document)
    : QSyntaxHighlighter(document), m_language(language) {
  buildRules();
}

void CodeHighlighter::setDark(bool dark) {
  if (dark == m_dark) return;
  m_dark = dark;
  buildRules();
  rehighlight();
}

void CodeHighlighter::buildRules() {
  const CodeColors c = CodeColors::forTheme(m_dark);
  auto fmt = [](const QColor& color, bool bold = false, bool italic = false) {
    QTextCharFormat f;
    f.setForeground(color);
    if (bold) f.setFontWeight(QFont::DemiBold);
    f.setFontItalic(italic);
    return f;
  };
  m_rules.clear();
  auto add = [this](const QString& pattern, const QTextCharFormat& f) {
    m_rules.push_back({QRegularExpression(pattern), f});
  };
  const QString number =
      QStringLiteral("\\b(?:0[xX][0-9a-fA-F]+|\\d+\\.?\\d*(?:[eE][-+]?\\d+)?[fFuUlL]*)\\b");
  switch (m_language) {
    case CodeLanguage::Cuda:
      add(QStringLiteral("\\b[A-Za-z_]\\w*(?=\\s*\\()"), fmt(c.function));
      add(wordsPattern(kCudaKeywords), fmt(c.keyword, true));
      add(QStringLiteral("#\\s*(?:include|define|pragma|if|endif|ifdef|ifndef)\\b.*"),
          fmt(c.directive));
      add(wordsPattern(kCudaTypes), fmt(c.type));
      add(wordsPattern(kCudaBuiltins), fmt(c.builtin));
      add(number, fmt(c.number));
      m_comment = QRegularExpression(QStringLiteral("//.*$"));
      break;
    case CodeLanguage::LoopIr:
      add(wordsPattern(kLoopKeywords), fmt(c.keyword, true));
      add(wordsPattern(kTypes), fmt(c.type));
      add(wordsPattern(kLoopBuiltins), fmt(c.builtin));
      add(number, fmt(c.number));
      m_comment = QRegularExpression(QStringLiteral("//.*$"));
      break;
    case CodeLanguage::Te:
      add(wordsPattern(kTeKeywords), fmt(c.keyword, true));
      add(wordsPattern(kTeBuiltins), fmt(c.builtin));
      add(wordsPattern(kTypes), fmt(c.type));
      add(number, fmt(c.number));
      m_comment = QRegularExpression(QStringLiteral("#.*$"));
      break;
    case CodeLanguage::Ptx:
      // Directives (.reg, .param, .loc), opcodes with their modifiers (ld.global.f32), registers
      // (%r12, %fd3, %tid.x), labels ($L__BB0_2).
      add(QStringLiteral("^\\s*[a-z][a-z0-9_]*(?:\\.[a-z0-9_]+)*"), fmt(c.opcode, true));
      add(QStringLiteral("^\\s*@!?%p\\d+\\s+[a-z][a-z0-9_]*(?:\\.[a-z0-9_]+)*"),
          fmt(c.opcode, true));
      add(QStringLiteral("(?:^|\\s)\\.[a-z_][a-z0-9_]*\\b"), fmt(c.directive));
      add(QStringLiteral("%[a-z]+[0-9]*(?:\\.[xyz])?"), fmt(c.reg));
      add(QStringLiteral("\\$[A-Za-z_][\\w$]*"), fmt(c.builtin));
      add(QStringLiteral("\\b0[fFdD][0-9A-Fa-f]{8,16}\\b|\\b\\d+\\b"), fmt(c.number));
      m_comment = QRegularExpression(QStringLiteral("//.*$"));
      break;
  }
  QTextCharFormat commentFormat = fmt(c.comment, false, true);
  m_rules.push_back({m_comment, commentFormat});
}

void CodeHighlighter::highlightBlock(const QString& text) {
  // Later rules win: comments are last, so nothing inside a comment keeps another colour.
  for (const Rule& r : m_rules) {
    QRegularExpressionMatchIterator it = r.pattern.globalMatch(text);
    while (it.hasNext()) {
      const QRegularExpressionMatch m = it.next();
      if (m.capturedLength() > 0) setFormat(m.capturedStart(), m.capturedLength(), r.format);
    }
  }
}

}  // namespace souffle::views
