// RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
// key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
// effort. The C++ twin of policies/no-retry-for-robots (Rust).
#include <optional>
#include <string_view>

#include "retry_policy_cpp.h"

namespace strategy = exports::rebound::policy::strategy;
namespace failure = rebound::policy::failure;
using rebound::policy::types::RetryAction;

// The parameter `key`, if given. (A std::string would link libc++'s string code, whose error
// paths print through stdio.)
static std::optional<wit::string> key;

std::expected<void, wit::string> strategy::Configure(
    wit::vector<std::tuple<wit::string, wit::string>> params) {
  for (auto &[name, value] : params.get_view())
    if (name.get_view() == "key") key.emplace(std::move(value));
  return {};
}

RetryAction strategy::RetryAfter(strategy::RetryReason) {
  std::string_view robot_key = key ? key->get_view() : "isRobotRequest";
  if (failure::ClientContext(robot_key).has_value()) return RetryAction{RetryAction::NoRetry{}};
  return RetryAction{RetryAction::BestEffort{}};
}

// libc++ reports a failed std::variant or std::expected access (a bug) through this function;
// its default prints with stdio, which needs WASI files the host does not grant. Reporting it
// to the host instead fails the call with this message, and the host applies its fail-safe.
[[noreturn]] void std::__libcpp_verbose_abort(char const *format, ...) {
  rebound::policy::host::Abort(format);
  __builtin_trap();
}
