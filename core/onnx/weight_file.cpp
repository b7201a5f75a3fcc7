#include "core/onnx/weight_file.h"

#include <unistd.h>

#include <cerrno>

#include "core/support/error.h"

namespace souffle::onnx_import {
namespace {

/// Size and modification time: any write or truncation moves the latter. Not the status-change
/// time, which a rename over the file (that leaves its bytes alone) moves too.
bool same(const struct stat& a, const struct stat& b) {
  return a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

}  // namespace

WeightFile::WeightFile(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {
  if (::fstat(m_fd, &m_opened) != 0) {
    ::close(m_fd);
    throw UserError(m_path, "", "cannot read the model file");
  }
}

WeightFile::~WeightFile() {
  ::close(m_fd);
}

bool WeightFile::unchanged() const {
  struct stat now {};
  return ::fstat(m_fd, &now) == 0 && same(now, m_opened);
}

void WeightFile::read(uint64_t offset, size_t size, char* out) const {
  const auto changed = [this] {
    return UserError(m_path, "",
                     "the model file changed on disk after it was opened (its size or "
                     "modification time differ), so its weights cannot be read; open it again");
  };
  if (!unchanged()) throw changed();
  size_t got = 0;
  while (got < size) {
    const ssize_t r = ::pread(m_fd, out + got, size - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw UserError(m_path, "", "reading the model file's weights failed");
    if (r == 0) throw changed();  // cut short since the check
    got += static_cast<size_t>(r);
  }
  // A write that landed during the read changed the times.
  if (!unchanged()) throw changed();
}

}  // namespace souffle::onnx_import
