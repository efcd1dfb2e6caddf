// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
// `best-effort` action for every failure, and the host's own best effort decides. The C++ twin
// of policies/best-effort (Rust).
#include "retry_policy_cpp.h"

namespace strategy = exports::rebound::policy::strategy;
using rebound::policy::types::RetryAction;

std::expected<void, wit::string> strategy::Configure(
    wit::vector<std::tuple<wit::string, wit::string>>) {
  return {};
}

RetryAction strategy::RetryAfter(strategy::RetryReason) {
  return RetryAction{RetryAction::BestEffort{}};
}

// libc++ reports a failed std::variant or std::expected access (a bug) through this function;
// its default prints with stdio, which needs WASI files the host does not grant. Reporting it
// to the host instead fails the call with this message, and the host applies its fail-safe.
[[noreturn]] void std::__libcpp_verbose_abort(char const *format, ...) {
  rebound::policy::host::Abort(format);
  __builtin_trap();
}
