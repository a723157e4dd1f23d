// An output file under construction: a temporary beside the final name, created exclusively and
// locked (one writer per output), never a followed link, renamed into place only when complete.
// Every format's sink writes through one of these.
#pragma once

#include <sys/types.h>

#include <string>

#include "ooc/io.hpp"

namespace ooc {

class OutputFile {
 public:
  // Resolves `path` (a symlink to a regular file is written through: its target is replaced),
  // refuses devices, FIFOs, directories, dangling links, the input itself and an input that sits
  // at the temporary name, then creates the temporary exclusively and locks it. A leftover
  // temporary of an interrupted run (a regular file of ours, unlocked) is replaced; anything else
  // there (a link, another user's file, a file another process is writing) is refused.
  // Modes (see OutputMode): resume opens the existing temporary and locks it whole; shared
  // creates it or opens it, and locks only bytes [lock_begin, lock_end) (one writer per part).
  // keep_on_signal: not registered for removal by the signal handlers.
  // no_locks: go on where the file system cannot lock (else such a file system is refused).
  OutputFile(const std::string& path, const std::string& input_path,
             OutputMode mode = OutputMode::fresh, off_t lock_begin = 0, off_t lock_end = 0,
             bool keep_on_signal = false, bool no_locks = false);
  ~OutputFile();  // removes the temporary unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }        // as the user named it
  const std::string& target() const noexcept { return target_; }    // where it lands
  const std::string& partial() const noexcept { return partial_; }  // the temporary

  // Gives the file the mode of the file it replaces (as cp does), closes it and renames it into
  // place. Throws an io Error when closing or renaming fails (the temporary is then removed).
  void commit();
  // Removes the temporary (only if the name still refers to our file) and closes it.
  void discard() noexcept;
  // Flushes the temporary to the disk and closes it, leaving it for a resumed run.
  void keep();
  bool shared() const noexcept { return mode_ == OutputMode::shared; }

 private:
  void open_existing(const std::string& path, off_t lock_begin, off_t lock_end);
  bool lock(int fd, off_t begin = 0, off_t end = 0) const;

  std::string path_, target_, partial_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int slot_ = -1;  // in the registry of temporaries (signal-time removal)
  bool committed_ = false;
  OutputMode mode_ = OutputMode::fresh;
  bool no_locks_ = false;
};

// Async-signal-safe registries for a process's fatal-signal handlers (the library installs no
// handlers itself): temporaries to remove, and input files read through a mapping (a file cut
// short under a mapping raises SIGBUS, and the handler can then name it).
// keep_on_interrupt: left for --resume by remove_temporary_outputs(true). ino 0: the name is
// ours whatever file it holds (a journal, replaced by rename).
int register_temporary(const std::string& path, dev_t dev, ino_t ino,
                       bool keep_on_interrupt = false) noexcept;  // slot or -1
void unregister_temporary(int slot) noexcept;
int register_mapped_input(const std::string& path) noexcept;  // slot or -1
void unregister_mapped_input(int slot) noexcept;

// What a process's fatal-signal handlers call (src/cli/signals.cpp); both are async-signal-safe.
// Removes the temporaries of every output still being written (only files this process created).
// `interrupted` (a signal that asks to stop, not an error): the temporaries of resumable runs and
// their journals stay for --resume.
void remove_temporary_outputs(bool interrupted) noexcept;
// Writes the names of the input files being read through a memory mapping to `fd`, separated by
// "', '" (a file cut short under a mapping raises SIGBUS).
void write_mapped_inputs(int fd) noexcept;

// Whether a failed lock's errno says that the file system cannot lock at all.
bool no_locking(int err);
// The pid holding a write lock on bytes [begin, end) of fd's file (end 0: to its end), 0 when
// none, -1 when locks are unsupported.
pid_t lock_holder(int fd, off_t begin = 0, off_t end = 0);
// Takes a write lock on bytes [begin, end) of fd's file (0, 0: all of it): false when another
// process holds one there. A file system without locks is refused (a usage Error naming
// `partial`) unless no_locks.
bool try_lock(int fd, const std::string& partial, bool no_locks, off_t begin = 0, off_t end = 0);

// The pid of a process holding a write lock on any part of the temporary `partial`; 0 when
// none holds one (or the file does not exist).
pid_t temporary_writer(const std::string& partial);

}  // namespace ooc
