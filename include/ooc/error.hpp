// The one exception type of the library, and the exit codes that main() maps it to.
#pragma once

#include <stdexcept>
#include <string>

namespace ooc {

// What went wrong, from the user's side: it decides the exit code of the tools.
enum class ErrorKind {
  usage = 2,   // bad command line: an option value, a missing option
  input = 3,   // the input file is missing, unreadable or malformed
  io = 4,      // reading or writing failed while running (disk full, permissions)
  device = 5,  // the GPU (or its absence) stopped the run
};

// Messages say what is wrong, which file or value, and what to do about it.
class Error : public std::runtime_error {
 public:
  // resumable: running the job again (with --resume) can succeed, as when parts stopped or have
  // not run yet; under MPI a tool then exits 75 so that a batch system requeues it, and never
  // for an error that no rerun mends.
  Error(ErrorKind kind, const std::string& message, bool resumable = false)
      : std::runtime_error(message), kind_(kind), resumable_(resumable) {}
  ErrorKind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return static_cast<int>(kind_); }
  bool resumable() const noexcept { return resumable_; }

 private:
  ErrorKind kind_;
  bool resumable_ = false;
};

// strerror(errno) with the file it concerns, for I/O failures.
[[nodiscard]] std::string system_message(const std::string& what, const std::string& path, int err);

}  // namespace ooc
