// Output files: exclusive, locked temporaries renamed into place (see output_file.hpp), and the
// signal-safe registries of temporaries and mapped inputs.
#include "output_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "ooc/error.hpp"
#include "ooc/io.hpp"

namespace fs = std::filesystem;

namespace ooc {
namespace {

// Fixed slots, no allocation: a signal handler walks them.
struct PathSlot {
  std::atomic<bool> used{false};
  char path[PATH_MAX];
  dev_t dev;
  ino_t ino;
  bool keep_on_interrupt;
};
constexpr int kSlots = 16;
PathSlot g_temporaries[kSlots];
PathSlot g_mapped[kSlots];
std::mutex g_slots_mutex;

int take_slot(PathSlot* slots, const std::string& path, dev_t dev, ino_t ino,
              bool keep = false) noexcept {
  if (path.size() >= PATH_MAX) return -1;
  std::lock_guard lock(g_slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (slots[i].used.load(std::memory_order_relaxed)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].dev = dev;
    slots[i].ino = ino;
    slots[i].keep_on_interrupt = keep;
    slots[i].used.store(true, std::memory_order_release);
    return i;
  }
  return -1;
}

void free_slot(PathSlot* slots, int slot) noexcept {
  if (slot >= 0 && slot < kSlots) slots[slot].used.store(false, std::memory_order_release);
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

Error not_a_file(const std::string& path, const char* verb, mode_t mode) {
  return Error(ErrorKind::usage, "output '" + path + "' " + verb + " " + file_kind(mode) +
                                     ": ooc writes a whole file and renames it into place, so it "
                                     "never writes to devices, pipes or directories; name a "
                                     "regular file");
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

// Whether the file system cannot lock at all (some network file systems): then there is no lock
// to honour, and the run goes on without one.
bool no_locking(int err) {
  return err == ENOLCK || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS;
}

// The pid holding a write lock on bytes [begin, end) of fd's file (end 0: to its end), 0 when
// none, -1 when locks are unsupported.
pid_t lock_holder(int fd, off_t begin, off_t end) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = begin;
  fl.l_len = end > begin ? end - begin : 0;
  if (::fcntl(fd, F_GETLK, &fl) != 0) return no_locking(errno) ? -1 : 0;
  return fl.l_type == F_UNLCK ? 0 : fl.l_pid;
}

// True when locked; false when another process holds a lock on these bytes. A file system that
// cannot lock at all is refused unless the user said --no-locks: there two writers of one output
// (two runs, or parts with overlapping rows) would go unnoticed and mix their rows.
bool try_lock(int fd, const std::string& partial, bool no_locks, off_t begin, off_t end) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = begin;
  fl.l_len = end > begin ? end - begin : 0;  // 0: the whole file
  if (::fcntl(fd, F_SETLK, &fl) == 0) return true;
  const int err = errno;
  if (!no_locking(err)) return false;
  if (no_locks) return true;
  throw Error(ErrorKind::usage,
              system_message("cannot lock", partial, err) +
                  ": this file system has no fcntl byte-range locks, so another writer of the "
                  "same output would go unnoticed; write to a file system with locks, or pass "
                  "--no-locks if you are sure that one process writes each row");
}

namespace {

Error busy(const std::string& path, const std::string& partial, pid_t pid) {
  return Error(ErrorKind::io, "output '" + path + "' is being written by another process" +
                                  (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                                  ", which holds '" + partial +
                                  "': wait for it to finish or write elsewhere");
}

}  // namespace

int register_temporary(const std::string& path, dev_t dev, ino_t ino,
                       bool keep_on_interrupt) noexcept {
  return take_slot(g_temporaries, path, dev, ino, keep_on_interrupt);
}
void unregister_temporary(int slot) noexcept {
  free_slot(g_temporaries, slot);
}
int register_mapped_input(const std::string& path) noexcept {
  return take_slot(g_mapped, path, 0, 0);
}
void unregister_mapped_input(int slot) noexcept {
  free_slot(g_mapped, slot);
}

void remove_temporary_outputs(bool interrupted) noexcept {
  for (PathSlot& s : g_temporaries) {
    if (!s.used.load(std::memory_order_acquire) || (interrupted && s.keep_on_interrupt)) continue;
    struct stat st {};
    // Only our own file: the name may have been taken over since.
    if (s.ino == 0 || (::lstat(s.path, &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino))
      ::unlink(s.path);
  }
}

void write_mapped_inputs(int fd) noexcept {
  bool first = true;
  for (PathSlot& s : g_mapped) {
    if (!s.used.load(std::memory_order_acquire)) continue;
    if (!first) (void)!::write(fd, "', '", 4);
    (void)!::write(fd, s.path, std::strlen(s.path));
    first = false;
  }
}

pid_t temporary_writer(const std::string& partial) {
  // A Zarr store under construction is a directory; its writers lock a file inside it.
  struct stat st {};
  const bool dir = ::lstat(partial.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  const std::string file = dir ? partial + "/.ooc-writers" : partial;
  const int fd = ::open(file.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  const pid_t pid = lock_holder(fd);
  ::close(fd);
  return pid > 0 ? pid : 0;
}

bool OutputFile::lock(int fd, off_t begin, off_t end) const {
  return try_lock(fd, partial_, no_locks_, begin, end);
}

OutputFile::OutputFile(const std::string& path, const std::string& input_path, OutputMode mode,
                       off_t lock_begin, off_t lock_end, bool keep_on_signal, bool no_locks)
    : path_(path), mode_(mode), no_locks_(no_locks) {
  if (path.empty())
    throw Error(ErrorKind::usage, "the output path is empty: name a file (or null: to discard)");
  target_ = path;
  struct stat lst {
  }, st{};
  if (::lstat(path.c_str(), &lst) == 0) {
    if (S_ISLNK(lst.st_mode)) {
      if (::stat(path.c_str(), &st) != 0)
        throw Error(ErrorKind::usage, "output '" + path +
                                          "' is a symbolic link to a file that does not exist: "
                                          "create the target or name another output");
      if (!S_ISREG(st.st_mode))  // /dev/stdout -> /proc/self/fd/1 -> a pipe, say
        throw not_a_file(path, "leads to", st.st_mode);
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved) == nullptr)
        throw Error(ErrorKind::io, system_message("cannot resolve output link", path, errno));
      target_ = resolved;
      lst = st;
    }
    if (!S_ISREG(lst.st_mode)) throw not_a_file(path, "is", lst.st_mode);
  } else if (errno != ENOENT) {
    throw Error(ErrorKind::io, system_message("cannot use output", path, errno));
  }
  partial_ = partial_path(target_);

  const fs::path p(target_);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::io, "output directory '" + dir.string() +
                                   "' does not exist: create it or write elsewhere");
  struct stat in_st {
  }, out_st{}, part_st{};
  const bool have_input = !input_path.empty() && ::stat(input_path.c_str(), &in_st) == 0;
  if (have_input && ::stat(target_.c_str(), &out_st) == 0 && same_file(in_st, out_st))
    throw Error(ErrorKind::usage, "output '" + path + "' is the input file '" + input_path +
                                      "': write the result to another path");
  if (have_input && ::stat(partial_.c_str(), &part_st) == 0 && same_file(in_st, part_st))
    throw Error(ErrorKind::usage, "input '" + input_path + "' is the temporary name of output '" +
                                      path + "' ('" + partial_ +
                                      "', written while the output is made): rename the input or "
                                      "name another output");

  if (mode != OutputMode::fresh) {
    open_existing(path, lock_begin, lock_end);
    slot_ = register_temporary(partial_, dev_, ino_, keep_on_signal);
    return;
  }
  // Create exclusively; a leftover temporary is examined, and replaced only if it is plainly an
  // interrupted run's own file.
  for (int attempt = 0; attempt < 3 && fd_ < 0; ++attempt) {
    const int fd =
        ::open(partial_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      bool locked = false;
      try {
        locked = lock(fd);
      } catch (...) {
        ::close(fd);
        ::unlink(partial_.c_str());
        throw;
      }
      if (!locked) {
        const pid_t holder = lock_holder(fd);
        ::close(fd);
        throw busy(path, partial_, holder);
      }
      struct stat mine {
      }, named{};
      if (::fstat(fd, &mine) != 0 || ::lstat(partial_.c_str(), &named) != 0 ||
          !same_file(mine, named)) {
        ::close(fd);
        throw busy(path, partial_, 0);
      }
      fd_ = fd;
      dev_ = mine.st_dev;
      ino_ = mine.st_ino;
      break;
    }
    if (errno != EEXIST)
      throw Error(ErrorKind::io, system_message("cannot create output", partial_, errno) +
                                     (errno == EACCES || errno == EROFS
                                          ? ": the directory is not writable; write elsewhere"
                                          : ""));
    struct stat old {};
    if (::lstat(partial_.c_str(), &old) != 0) continue;  // gone meanwhile: try again
    if (!S_ISREG(old.st_mode))
      throw Error(ErrorKind::io, "'" + partial_ + "', the temporary name of output '" + path +
                                     "', already exists and is " + file_kind(old.st_mode) +
                                     "; ooc never writes through it: remove it, or name another "
                                     "output");
    const int old_fd = ::open(partial_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (old_fd < 0) {
      if (errno == ENOENT) continue;
      throw Error(ErrorKind::io,
                  system_message("cannot examine leftover temporary", partial_, errno) +
                      ": remove it, or name another output");
    }
    struct stat cur {};
    if (::fstat(old_fd, &cur) != 0 || !same_file(cur, old)) {
      ::close(old_fd);
      continue;
    }
    bool locked = false;
    const pid_t holder = lock_holder(old_fd);
    try {
      locked = holder <= 0 && lock(old_fd);
    } catch (...) {
      ::close(old_fd);
      throw;
    }
    if (!locked) {
      ::close(old_fd);
      throw busy(path, partial_, holder);
    }
    if (cur.st_uid != ::geteuid() || cur.st_nlink != 1) {
      ::close(old_fd);
      throw Error(
          ErrorKind::io,
          "'" + partial_ + "', the temporary name of output '" + path + "', already exists and " +
              (cur.st_uid != ::geteuid() ? "belongs to another user" : "has other hard links") +
              ": remove it, or name another output");
    }
    // An interrupted run's temporary: nobody holds it, it is ours alone. Remove it while
    // holding its lock, so that no other starter takes it for its own meanwhile.
    ::unlink(partial_.c_str());
    ::close(old_fd);
  }
  if (fd_ < 0) throw busy(path, partial_, 0);
  slot_ = register_temporary(partial_, dev_, ino_, keep_on_signal);
}

void OutputFile::open_existing(const std::string& path, off_t lock_begin, off_t lock_end) {
  const bool shared = mode_ == OutputMode::shared;
  // A part that creates the shared file removes it again when it cannot lock it.
  bool created = false;
  int fd = shared
               ? ::open(partial_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_CREAT | O_EXCL, 0666)
               : -1;
  if (fd >= 0)
    created = true;
  else
    fd = ::open(partial_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | (shared ? O_CREAT : 0), 0666);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      throw Error(ErrorKind::usage,
                  "nothing to resume: '" + partial_ + "' does not exist; run without --resume");
    throw Error(ErrorKind::io, system_message(err == ELOOP ? "refusing the symbolic link"
                                                           : "cannot open temporary output",
                                              partial_, err) +
                                   ": remove it, or name another output");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_nlink != 1) {
    ::close(fd);
    throw Error(ErrorKind::io, "'" + partial_ + "', the temporary of output '" + path +
                                   "', is not a regular file of this user with one link: remove "
                                   "it, or name another output");
  }
  // Parts lock their own rows, a resumed run the whole file: two writers of the same rows
  // collide here, not in the file.
  bool locked = false;
  try {
    locked = shared ? lock(fd, lock_begin, lock_end) : lock(fd);
  } catch (...) {
    ::close(fd);
    if (created) ::unlink(partial_.c_str());
    throw;
  }
  if (!locked) {
    const pid_t holder = shared ? lock_holder(fd, lock_begin, lock_end) : lock_holder(fd);
    ::close(fd);
    throw busy(path, partial_, holder);
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

OutputFile::~OutputFile() {
  discard();
}

void OutputFile::commit() {
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode))
    (void)!::fchmod(fd_, old.st_mode & 07777);  // keep the mode of the file replaced, as cp does
  if (::close(fd_) != 0) {
    const int err = errno;
    fd_ = -1;
    discard();
    throw Error(ErrorKind::io, system_message("cannot finish output", partial_, err));
  }
  fd_ = -1;
  if (::rename(partial_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw Error(ErrorKind::io, system_message("cannot rename into place output", path_, err));
  }
  committed_ = true;
  unregister_temporary(slot_);
  slot_ = -1;
}

void OutputFile::keep() {
  unregister_temporary(slot_);
  slot_ = -1;
  committed_ = true;  // nothing to remove any more
  if (fd_ >= 0) {
    const int rc = ::fsync(fd_), err = errno;
    ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw Error(ErrorKind::io, system_message("cannot flush output", partial_, err));
  }
}

void OutputFile::discard() noexcept {
  unregister_temporary(slot_);
  slot_ = -1;
  // A shared temporary holds the rows of other parts too: it is never removed by one of them.
  if (!committed_ && mode_ != OutputMode::shared && !partial_.empty() && ino_ != 0) {
    struct stat st {};
    if (::lstat(partial_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
      ::unlink(partial_.c_str());
  }
  ino_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ooc
