/// \file A model file kept open so that its weights are read when first used (pread), with the
/// file's size and change times checked around every read.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "core/support/tensor_data.h"

namespace souffle::onnx_import {

/// Owns an open descriptor of a model file and what fstat said of it when it was opened. A read
/// gives the bytes the file held then, or throws UserError naming the file: the file was
/// rewritten in place, cut short or grown since (its size or modification time differ, before
/// or after the read, or the read came short). A write that keeps the size within the file
/// system's clock tick of the opening (a few milliseconds) goes unseen. A file replaced by
/// another (a rename over it, as editors and exporters save) is still read through the
/// descriptor, which keeps the original.
class WeightFile final : public ByteSource {
 public:
  /// Takes `fd` (closed with this object). Throws UserError when fstat fails.
  WeightFile(int fd, std::string path);
  ~WeightFile() override;
  WeightFile(const WeightFile&) = delete;
  WeightFile& operator=(const WeightFile&) = delete;

  int fd() const { return m_fd; }
  uint64_t size() const { return static_cast<uint64_t>(m_opened.st_size); }
  const std::string& path() const { return m_path; }
  /// Whether the file is as it was when opened.
  bool unchanged() const;
  void read(uint64_t offset, size_t size, char* out) const override;

 private:
  int m_fd;
  std::string m_path;
  struct stat m_opened {};
};

}  // namespace souffle::onnx_import
