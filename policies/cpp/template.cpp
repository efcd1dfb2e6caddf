// A starting point for a Rebound policy in C++: copy this file to a new name, change
// `RetryAfter`, and build it with ./scripts/build-guests.sh (see docs/policy-cpp.md).
// `retry_policy_cpp.h` is generated from wit/policy.wit by wit-bindgen (C++23).
//
// This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
// by its attempt timeout twice as long the next time, and otherwise answers the host's best
// effort, which already refuses unsafe retries of non-idempotent requests.
#include <charconv>
#include <expected>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "retry_policy_cpp.h"

namespace strategy = exports::rebound::policy::strategy;
namespace failure = rebound::policy::failure;
namespace host = rebound::policy::host;
using rebound::policy::types::RetryAction;

static uint32_t max_attempts = 3;

// Called once per instance with the policy's `params` from the host configuration; an
// unexpected value refuses them (the host then refuses to load the policy).
std::expected<void, wit::string> strategy::Configure(
    wit::vector<std::tuple<wit::string, wit::string>> params) {
  for (auto const &[name, value] : params.get_view()) {
    if (name.get_view() != "max_attempts") continue;
    std::string_view text = value.get_view();
    uint32_t n = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
      return std::unexpected(wit::string::from_view("max_attempts: expected a whole number"));
    max_attempts = n;
  }
  return {};
}

// Decides for the failed request, which failed for `reason`. The request's facts are
// functions of `failure` (failure::RetryAttempts(), failure::Idempotent(), ...;
// failure::Request() reads them all at once).
RetryAction strategy::RetryAfter(strategy::RetryReason reason) {
  if (failure::RetryAttempts() >= max_attempts) return RetryAction{RetryAction::NoRetry{}};
  // An attempt cut by its attempt timeout: the retry best effort makes gets twice as long (the
  // request's deadline still ends it).
  if (std::optional<uint64_t> fired = failure::AttemptTimeoutMs()) {
    RetryAction answer = host::BestEffort(failure::Request(), std::move(reason));
    if (auto *retry = std::get_if<RetryAction::Retry>(&answer.variants))
      retry->value.attempt_timeout_ms = 2 * *fired;
    return answer;
  }
  return RetryAction{RetryAction::BestEffort{}};
}

// libc++ reports a failed std::variant or std::expected access (a bug) through this function;
// its default prints with stdio, which needs WASI files the host does not grant. Reporting it
// to the host instead fails the call with this message, and the host applies its fail-safe.
[[noreturn]] void std::__libcpp_verbose_abort(char const *format, ...) {
  rebound::policy::host::Abort(format);
  __builtin_trap();
}
