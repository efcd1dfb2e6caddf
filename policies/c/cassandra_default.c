// The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
// most one retry, only where success is likely. The C twin of policies/cassandra-default (Rust).
// The request's facts are read from the `failure` import only where a rule needs them.
#include "retry_policy.h"

typedef exports_rebound_policy_strategy_retry_action_t action_t;

static void rethrow(action_t *ret) { ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_RETHROW; }

static void retry_now(action_t *ret, rebound_policy_types_node_choice_t node) {
  ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_RETRY;
  ret->val.retry.delay_ms = 0;
  ret->val.retry.node = node;
  ret->val.retry.consistency.is_some = false;
  ret->val.retry.attempt_timeout_ms.is_some = false;
}

// Reasons raised before the request was written anywhere: tried again on the next node.
static bool pre_dispatch(uint8_t tag) {
  switch (tag) {
  case REBOUND_POLICY_TYPES_RETRY_REASON_SOCKET_NOT_AVAILABLE:
  case REBOUND_POLICY_TYPES_RETRY_REASON_SERVICE_NOT_AVAILABLE:
  case REBOUND_POLICY_TYPES_RETRY_REASON_NODE_NOT_AVAILABLE:
  case REBOUND_POLICY_TYPES_RETRY_REASON_ENDPOINT_NOT_WRITABLE:
  case REBOUND_POLICY_TYPES_RETRY_REASON_CIRCUIT_BREAKER_OPEN:
  case REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_NOT_AVAILABLE:
  case REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_OPEN_IN_PROGRESS:
  case REBOUND_POLICY_TYPES_RETRY_REASON_GLOBAL_CONFIG_LOAD_IN_PROGRESS:
  case REBOUND_POLICY_TYPES_RETRY_REASON_COLLECTION_MAP_REFRESH_IN_PROGRESS:
  case REBOUND_POLICY_TYPES_RETRY_REASON_AUTHENTICATION_ERROR:
  case REBOUND_POLICY_TYPES_RETRY_REASON_TLS_ERROR:
  case REBOUND_POLICY_TYPES_RETRY_REASON_BUCKET_ACCESS_ERROR:
  case REBOUND_POLICY_TYPES_RETRY_REASON_SCOPE_NOT_FOUND:
  case REBOUND_POLICY_TYPES_RETRY_REASON_COLLECTION_NOT_FOUND:
    return true;
  default:
    return false;
  }
}

static bool first_try(void) { return rebound_policy_failure_retry_attempts() == 0; }

static void decide(const exports_rebound_policy_strategy_retry_reason_t *reason, action_t *ret) {
  switch (reason->tag) {
  // The driver's verdict methods.
  case REBOUND_POLICY_TYPES_RETRY_REASON_READ_TIMEOUT: {
    const rebound_policy_types_read_timeout_t *e = &reason->val.read_timeout;
    if (e->received >= e->block_for && !e->data_present && first_try())
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_SAME);
    else
      rethrow(ret);
    return;
  }
  case REBOUND_POLICY_TYPES_RETRY_REASON_UNAVAILABLE:
    if (first_try())
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
    else
      rethrow(ret);
    return;
  // Asked of the policy for idempotent requests only; rethrown otherwise.
  case REBOUND_POLICY_TYPES_RETRY_REASON_WRITE_TIMEOUT:
    if (reason->val.write_timeout.write_type == REBOUND_POLICY_TYPES_WRITE_TYPE_BATCH_LOG &&
        rebound_policy_failure_idempotent() && first_try())
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_SAME);
    else
      rethrow(ret);
    return;
  case REBOUND_POLICY_TYPES_RETRY_REASON_REQUEST_ABORTED:
    if (reason->val.request_aborted != REBOUND_POLICY_TYPES_ABORT_KIND_OTHER &&
        rebound_policy_failure_idempotent())
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
    else
      rethrow(ret);
    return;
  case REBOUND_POLICY_TYPES_RETRY_REASON_SOCKET_CLOSED_WHILE_IN_FLIGHT: // a closed connection
    if (rebound_policy_failure_idempotent())
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
    else
      rethrow(ret);
    return;
  case REBOUND_POLICY_TYPES_RETRY_REASON_ERROR_RESPONSE:
    switch (reason->val.error_response) {
    case REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_QUERY_VALIDATION: // never retried
    case REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_FUNCTION_FAILURE:
    case REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_PROTOCOL_ERROR:
    case REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_READ_FAILURE:
    case REBOUND_POLICY_TYPES_SERVER_ERROR_KIND_WRITE_FAILURE:
      rethrow(ret);
      return;
    default:
      if (rebound_policy_failure_idempotent())
        retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
      else
        rethrow(ret);
      return;
    }
  // The driver's hard-coded rules.
  case REBOUND_POLICY_TYPES_RETRY_REASON_BOOTSTRAPPING:
    retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
    return;
  case REBOUND_POLICY_TYPES_RETRY_REASON_UNPREPARED:
    retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_SAME);
    return;
  default:
    if (pre_dispatch(reason->tag))
      retry_now(ret, REBOUND_POLICY_TYPES_NODE_CHOICE_NEXT);
    else
      rethrow(ret);
  }
}

bool exports_rebound_policy_strategy_configure(retry_policy_list_tuple2_string_string_t *params,
                                               retry_policy_string_t *err) {
  (void)err;
  retry_policy_list_tuple2_string_string_free(params);
  return true;
}

void exports_rebound_policy_strategy_retry_after(exports_rebound_policy_strategy_retry_reason_t *reason,
                                                 action_t *ret) {
  // The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best effort.
  rebound_policy_failure_target_service_t service = rebound_policy_failure_service();
  if (service == REBOUND_POLICY_TYPES_SERVICE_HTTP || service == REBOUND_POLICY_TYPES_SERVICE_GRPC)
    ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
  else
    decide(reason, ret);
  exports_rebound_policy_strategy_retry_reason_free(reason);
}
