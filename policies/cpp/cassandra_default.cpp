// The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
// most one retry, only where success is likely. The C++ twin of policies/cassandra-default
// (Rust). The request's facts are read from `failure` only where a rule needs them.
#include <type_traits>
#include <variant>

#include "retry_policy_cpp.h"

namespace strategy = exports::rebound::policy::strategy;
namespace failure = rebound::policy::failure;
namespace types = rebound::policy::types;
using types::NodeChoice;
using types::RetryAction;
using Reason = types::RetryReason;

static RetryAction rethrow() { return RetryAction{RetryAction::Rethrow{}}; }

static RetryAction retry_now(NodeChoice node) {
  return RetryAction{RetryAction::Retry{types::Retry{0, node, std::nullopt, std::nullopt}}};
}

static bool first_try() { return failure::RetryAttempts() == 0; }

// Reasons raised before the request was written anywhere: tried again on the next node.
template <class R>
constexpr bool pre_dispatch =
    std::is_same_v<R, Reason::SocketNotAvailable> || std::is_same_v<R, Reason::ServiceNotAvailable> ||
    std::is_same_v<R, Reason::NodeNotAvailable> || std::is_same_v<R, Reason::EndpointNotWritable> ||
    std::is_same_v<R, Reason::CircuitBreakerOpen> || std::is_same_v<R, Reason::BucketNotAvailable> ||
    std::is_same_v<R, Reason::BucketOpenInProgress> ||
    std::is_same_v<R, Reason::GlobalConfigLoadInProgress> ||
    std::is_same_v<R, Reason::CollectionMapRefreshInProgress> ||
    std::is_same_v<R, Reason::AuthenticationError> || std::is_same_v<R, Reason::TlsError> ||
    std::is_same_v<R, Reason::BucketAccessError> || std::is_same_v<R, Reason::ScopeNotFound> ||
    std::is_same_v<R, Reason::CollectionNotFound>;

static RetryAction decide(Reason::ReadTimeout const &r) {
  auto const &e = r.value;
  if (e.received >= e.block_for && !e.data_present && first_try()) return retry_now(NodeChoice::kSame);
  return rethrow();
}

static RetryAction decide(Reason::Unavailable const &) {
  return first_try() ? retry_now(NodeChoice::kNext) : rethrow();
}

// Asked of the policy for idempotent requests only; rethrown otherwise.
static RetryAction decide(Reason::WriteTimeout const &r) {
  if (r.value.write_type == types::WriteType::kBatchLog && failure::Idempotent() && first_try())
    return retry_now(NodeChoice::kSame);
  return rethrow();
}

static RetryAction decide(Reason::RequestAborted const &r) {
  if (r.value != types::AbortKind::kOther && failure::Idempotent()) return retry_now(NodeChoice::kNext);
  return rethrow();
}

// A closed connection.
static RetryAction decide(Reason::SocketClosedWhileInFlight const &) {
  return failure::Idempotent() ? retry_now(NodeChoice::kNext) : rethrow();
}

static RetryAction decide(Reason::ErrorResponse const &r) {
  switch (r.value) {
  case types::ServerErrorKind::kQueryValidation: // never retried
  case types::ServerErrorKind::kFunctionFailure:
  case types::ServerErrorKind::kProtocolError:
  case types::ServerErrorKind::kReadFailure:
  case types::ServerErrorKind::kWriteFailure:
    return rethrow();
  default:
    return failure::Idempotent() ? retry_now(NodeChoice::kNext) : rethrow();
  }
}

// The driver's hard-coded rules.
static RetryAction decide(Reason::Bootstrapping const &) { return retry_now(NodeChoice::kNext); }
static RetryAction decide(Reason::Unprepared const &) { return retry_now(NodeChoice::kSame); }

template <class R> static RetryAction decide(R const &) {
  return pre_dispatch<R> ? retry_now(NodeChoice::kNext) : rethrow();
}

std::expected<void, wit::string> strategy::Configure(
    wit::vector<std::tuple<wit::string, wit::string>>) {
  return {};
}

RetryAction strategy::RetryAfter(strategy::RetryReason reason) {
  // The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best effort.
  auto service = failure::Service();
  if (service == types::Service::kHttp || service == types::Service::kGrpc)
    return RetryAction{RetryAction::BestEffort{}};
  return std::visit([](auto const &r) { return decide(r); }, reason.variants);
}

// libc++ reports a failed std::variant or std::expected access (a bug) through this function;
// its default prints with stdio, which needs WASI files the host does not grant. Reporting it
// to the host instead fails the call with this message, and the host applies its fail-safe.
[[noreturn]] void std::__libcpp_verbose_abort(char const *format, ...) {
  rebound::policy::host::Abort(format);
  __builtin_trap();
}
