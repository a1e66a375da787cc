// RankGroup's host side: the allocation, its export through a handle file in the channel
// directory, the peers' mappings, the rendezvous and teardown barriers (files too), and the
// error a device wait recorded. The signal kernels are in signal_kernels.cu.
#include "../host_checks.hpp"
#include "signal_area.hpp"

#include <boundary/gpu/rank_ipc.hpp>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>
#include <type_traits>

namespace boundary::gpu {

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kMagic[16] = "boundary-rank/1";
constexpr auto kPoll = std::chrono::milliseconds(2);

// A rank's handle file: what a peer needs to map its memory, and what the peer checks first.
struct HandleRecord {
  char magic[16];
  std::int32_t rank;
  std::int32_t ranks;
  std::int64_t max_rows;
  std::int64_t pid;
  std::uint64_t bytes;
  cudaIpcMemHandle_t handle;
};
static_assert(std::is_trivially_copyable_v<HandleRecord>);

std::size_t allocation_bytes(std::int64_t rows) {
  return ipc::kPartialOffset + static_cast<std::size_t>(rows) * kH * 2;
}

std::string rank_name(int r) { return "rank " + std::to_string(r); }

std::filesystem::path file_of(const RankConfig& c, int r, const char* what) {
  return c.channel / ("rank" + std::to_string(r) + "." + what);
}

// Written under a temporary name, then renamed: a peer sees the whole file or none.
void publish(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    f.flush();
    if (!f) throw RankError("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RankError("cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

bool alive(std::int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Polls for `path` until the deadline. False when the deadline passes or the peer's process
// (when its pid is known) has exited: nobody will write the file then.
bool await_file(const std::filesystem::path& path, Clock::time_point deadline, std::int64_t peer_pid = 0) {
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    if (Clock::now() > deadline || (peer_pid != 0 && !alive(peer_pid))) return false;
    std::this_thread::sleep_for(kPoll);
  }
  return true;
}

HandleRecord read_handle(const std::filesystem::path& path) {
  HandleRecord h{};
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(&h), sizeof h);
  if (!f || f.peek() != std::char_traits<char>::eof())
    throw RankError("handle file '" + path.string() + "' is not " + std::to_string(sizeof h) + " bytes");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    throw RankError("handle file '" + path.string() + "' is not a boundary rank handle");
  return h;
}

}  // namespace

RankGroup::RankGroup(const RankConfig& config) : config_(config) {
  const RankConfig& c = config_;
  if (c.ranks < 1 || c.ranks > kMaxRanks)
    throw InputError("rank group: ranks " + std::to_string(c.ranks) + ", expected 1 to " + std::to_string(kMaxRanks));
  if (c.rank < 0 || c.rank >= c.ranks)
    throw InputError("rank group: rank " + std::to_string(c.rank) + ", expected 0 to " + std::to_string(c.ranks - 1));
  if (c.max_rows < 1) throw InputError("rank group: max_rows " + std::to_string(c.max_rows) + ", expected >= 1");
  if (c.timeout.count() < 1) throw InputError("rank group: timeout must be at least 1 ms");
  std::error_code ec;
  if (!std::filesystem::is_directory(c.channel, ec))
    throw InputError("rank group: channel '" + c.channel.string() + "' is not a directory");
  cuda_check(ipc::prepare_signal_kernels(), "loading the signal kernels");
  const std::size_t bytes = allocation_bytes(c.max_rows);
  cuda_check(cudaMalloc(&memory_, bytes), "cudaMalloc (rank partial and signal area)");
  mapped_.assign(static_cast<std::size_t>(c.ranks), nullptr);
  mapped_[static_cast<std::size_t>(c.rank)] = memory_;
  peer_pids_.assign(static_cast<std::size_t>(c.ranks), 0);
  try {
    // Zero flags and epoch; the partial 0xFF, so that a read of a partial nobody wrote is no valid value.
    cuda_check(cudaMemset(memory_, 0, ipc::kPartialOffset), "cudaMemset (signal area)");
    cuda_check(cudaMemset(static_cast<char*>(memory_) + ipc::kPartialOffset, 0xFF, bytes - ipc::kPartialOffset),
               "cudaMemset (partial)");
    cuda_check(cudaDeviceSynchronize(), "clearing the signal area");
    if (c.ranks > 1) rendezvous();
  } catch (...) {
    teardown();
    throw;
  }
}

// Every rank publishes its handle, maps every peer's, says so, and waits until every peer has
// mapped its own: from then on no rank frees memory a peer is about to map, and the device
// deadlines start with every rank present.
void RankGroup::rendezvous() {
  const RankConfig& c = config_;
  HandleRecord mine{};
  std::memcpy(mine.magic, kMagic, sizeof kMagic);
  mine.rank = c.rank;
  mine.ranks = c.ranks;
  mine.max_rows = c.max_rows;
  mine.pid = ::getpid();
  mine.bytes = allocation_bytes(c.max_rows);
  cuda_check(cudaIpcGetMemHandle(&mine.handle, memory_), "cudaIpcGetMemHandle");
  publish(file_of(c, c.rank, "handle"), &mine, sizeof mine);
  const std::string me = rank_name(c.rank);
  const auto deadline = Clock::now() + c.timeout;
  for (int p = 0; p < c.ranks; ++p) {
    if (p == c.rank) continue;
    const std::filesystem::path path = file_of(c, p, "handle");
    if (!await_file(path, deadline))
      throw RankError(me + ": no handle from " + rank_name(p) + " in '" + c.channel.string() + "' within " +
                      std::to_string(c.timeout.count()) + " ms: it did not start, or failed before exporting its memory");
    const HandleRecord h = read_handle(path);
    if (h.rank != p || h.ranks != c.ranks || h.max_rows != c.max_rows)
      throw RankError(me + ": '" + path.string() + "' says rank " + std::to_string(h.rank) + " of " + std::to_string(h.ranks) +
                      " with " + std::to_string(h.max_rows) + " rows; expected rank " + std::to_string(p) + " of " +
                      std::to_string(c.ranks) + " with " + std::to_string(c.max_rows));
    peer_pids_[static_cast<std::size_t>(p)] = h.pid;
    void* peer = nullptr;
    cuda_check(cudaIpcOpenMemHandle(&peer, h.handle, cudaIpcMemLazyEnablePeerAccess),
               ("cudaIpcOpenMemHandle (" + rank_name(p) + "'s partial and signal area)").c_str());
    mapped_[static_cast<std::size_t>(p)] = peer;
  }
  const char mark = 1;
  publish(file_of(c, c.rank, "open"), &mark, 1);
  for (int p = 0; p < c.ranks; ++p)
    if (p != c.rank && !await_file(file_of(c, p, "open"), deadline, peer_pids_[static_cast<std::size_t>(p)]))
      throw RankError(me + ": " + rank_name(p) + " did not map its peers' memory within " +
                      std::to_string(c.timeout.count()) + " ms" + (alive(peer_pids_[static_cast<std::size_t>(p)]) ? "" : " (it exited)"));
}

RankGroup::~RankGroup() { teardown(); }

void RankGroup::teardown() noexcept {
  if (closed_) return;
  closed_ = true;
  const RankConfig& c = config_;
  const std::string me = rank_name(c.rank);
  // No kernel of this process may still read a peer's memory when its mapping closes.
  cudaDeviceSynchronize();
  for (std::size_t p = 0; p < mapped_.size(); ++p)
    if (mapped_[p] && mapped_[p] != memory_) cudaIpcCloseMemHandle(mapped_[p]);
  bool peers_closed = true;
  if (c.ranks > 1 && memory_) {
    try {
      const char mark = 1;
      publish(file_of(c, c.rank, "closed"), &mark, 1);
    } catch (const std::exception& e) {
      std::cerr << me << ": " << e.what() << "\n";
    }
    const auto deadline = Clock::now() + c.timeout;
    for (int p = 0; p < c.ranks; ++p) {
      if (p == c.rank) continue;
      // A peer maps this rank's memory only after publishing its own handle: without one it has
      // not. With one, its pid tells whether it can still close.
      std::int64_t pid = peer_pids_[static_cast<std::size_t>(p)];
      std::error_code ec;
      if (pid == 0 && std::filesystem::exists(file_of(c, p, "handle"), ec)) {
        try {
          pid = read_handle(file_of(c, p, "handle")).pid;
        } catch (const std::exception&) {
          pid = -1;  // unreadable: wait for its closed file until the deadline
        }
      }
      if (pid == 0) continue;
      if (!await_file(file_of(c, p, "closed"), deadline, std::max<std::int64_t>(pid, 0)) && (pid < 0 || alive(pid))) {
        std::cerr << me << ": " << rank_name(p) << " may still map this rank's memory after " << c.timeout.count()
                  << " ms; it is left to the process exit, as freeing it now would be undefined\n";
        peers_closed = false;
      }
    }
  }
  if (memory_ && peers_closed) cudaFree(memory_);
  memory_ = nullptr;
  cudaGetLastError();  // errors here are reported by the checks above, not left for the next call
}

TensorView RankGroup::partial(int r, std::int64_t m) const {
  if (r < 0 || r >= config_.ranks)
    throw InputError("rank group: partial of rank " + std::to_string(r) + ", expected 0 to " + std::to_string(config_.ranks - 1));
  if (m < 1 || m > config_.max_rows)
    throw InputError("rank group: " + std::to_string(m) + " rows, expected 1 to " + std::to_string(config_.max_rows));
  return {static_cast<char*>(mapped_[static_cast<std::size_t>(r)]) + ipc::kPartialOffset, Dtype::bf16, {m, kH}};
}

std::vector<TensorView> RankGroup::partials(std::int64_t m) const {
  std::vector<TensorView> v;
  for (int r = 0; r < config_.ranks; ++r) v.push_back(partial(r, m));
  return v;
}

const std::uint64_t* RankGroup::device_epoch() const { return &static_cast<const ipc::SignalArea*>(memory_)->epoch; }

namespace {

ipc::SignalParams signal_params(const RankConfig& c, void* own, const std::vector<void*>& mapped) {
  ipc::SignalParams p{};
  p.own = static_cast<ipc::SignalArea*>(own);
  for (std::size_t r = 0; r < mapped.size(); ++r) p.areas[r] = static_cast<ipc::SignalArea*>(mapped[r]);
  p.rank = c.rank;
  p.ranks = c.ranks;
  p.timeout_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(c.timeout).count());
  p.planted = static_cast<int>(c.planted);
  return p;
}

}  // namespace

void RankGroup::wait_writable(cudaStream_t s, bool pdl) const {
  cuda_check(ipc::launch_wait_writable(signal_params(config_, memory_, mapped_), pdl, s), "launching wait_writable");
}
void RankGroup::arrive(cudaStream_t s, bool pdl) const {
  cuda_check(ipc::launch_arrive(signal_params(config_, memory_, mapped_), pdl, s), "launching arrive");
}
void RankGroup::depart(cudaStream_t s, bool pdl) const {
  cuda_check(ipc::launch_depart(signal_params(config_, memory_, mapped_), pdl, s), "launching depart");
}

std::optional<std::string> RankGroup::error() const {
  ipc::SignalArea a{};
  cuda_check(cudaMemcpy(&a, memory_, sizeof a, cudaMemcpyDeviceToHost), "reading the signal area");
  if (a.error == ipc::kNoError) return std::nullopt;
  const std::string me = rank_name(config_.rank), peer = rank_name(static_cast<int>(a.error_peer));
  const std::string waited = std::to_string(config_.timeout.count()) + " ms";
  const std::string seen = "its flag still said step " + std::to_string(a.error_seen) + ")";
  if (a.error == ipc::kReadyTimeout)
    return me + ": timed out after " + waited + " in arrive, waiting for " + peer + "'s partial of step " +
           std::to_string(a.error_epoch) + " (" + seen + ": " + peer + " died, hangs, or never arrived";
  if (a.error == ipc::kDoneTimeout)
    return me + ": timed out after " + waited + " in wait_writable, waiting for " + peer + " to finish reading step " +
           std::to_string(a.error_epoch) + " (" + seen + ": " + peer + " died, hangs, or never departed";
  return me + ": the signal area holds an unknown error " + std::to_string(a.error);
}

void RankGroup::check() const {
  if (const auto e = error()) {
    const std::string dead = dead_peers();
    throw RankError(*e + (dead.empty() ? "" : " [" + dead + "]"));
  }
}

std::string RankGroup::dead_peers() const {
  std::string s;
  for (std::size_t p = 0; p < peer_pids_.size(); ++p)
    if (peer_pids_[p] > 0 && !alive(peer_pids_[p]))
      s += (s.empty() ? "" : "; ") + rank_name(static_cast<int>(p)) + " (pid " + std::to_string(peer_pids_[p]) + ") has exited";
  return s;
}

std::uint64_t RankGroup::epoch() const {
  std::uint64_t e = 0;
  cuda_check(cudaMemcpy(&e, device_epoch(), sizeof e, cudaMemcpyDeviceToHost), "reading the epoch");
  return e;
}

}  // namespace boundary::gpu
