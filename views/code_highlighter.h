/// \file Syntax highlighting for the code views: TE text, loop IR, CUDA C and PTX.
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>
#include <vector>

namespace souffle::views {

enum class CodeLanguage { Te, LoopIr, Cuda, Ptx };

/// Colours of the code views for one theme.
struct CodeColors {
  QColor keyword, type, number, comment, builtin, opcode, reg, directive, function;
  QColor highlightLine;  ///< background of lines of the selected node
  static CodeColors forTheme(bool dark);
};

/// Keywords, types, numbers, comments, CUDA built-ins and PTX opcodes/registers by regular
/// expressions; the rules are tables per language, the highlighter only applies them.
class CodeHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  CodeHighlighter(CodeLanguage language, QTextDocument* document);
  void setDark(bool dark);
  CodeLanguage language() const { return m_language; }

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  void buildRules();

  CodeLanguage m_language;
  bool m_dark = false;
  std::vector<Rule> m_rules;
  QRegularExpression m_comment;
};

}  // namespace souffle::views
