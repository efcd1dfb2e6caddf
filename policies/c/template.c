// A starting point for a Rebound policy in C: copy this file to a new name, change
// `exports_rebound_policy_strategy_retry_after`, and build it with ./scripts/build-guests.sh
// (see docs/policy-c.md). `retry_policy.h` is generated from wit/policy.wit by wit-bindgen.
//
// This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
// by its attempt timeout twice as long the next time, and otherwise answers the host's best
// effort, which already refuses unsafe retries of non-idempotent requests.
#include <string.h>

#include "retry_policy.h"

static uint32_t max_attempts = 3;

// Called once per instance with the policy's `params`; return false with `err` set to reject
// them. Arguments are owned by the callee: free them.
bool exports_rebound_policy_strategy_configure(retry_policy_list_tuple2_string_string_t *params,
                                               retry_policy_string_t *err) {
  bool ok = true;
  for (size_t i = 0; i < params->len; i++) {
    retry_policy_string_t *name = &params->ptr[i].f0, *value = &params->ptr[i].f1;
    if (name->len != 12 || memcmp(name->ptr, "max_attempts", 12) != 0)
      continue;
    uint32_t n = 0;
    ok = value->len > 0;
    for (size_t j = 0; j < value->len && ok; j++) {
      ok = value->ptr[j] >= '0' && value->ptr[j] <= '9';
      n = n * 10 + (uint32_t)(value->ptr[j] - '0');
    }
    if (!ok)
      retry_policy_string_dup(err, "max_attempts: expected a whole number");
    max_attempts = n;
  }
  retry_policy_list_tuple2_string_string_free(params);
  return ok;
}

// Decides for the failed request, which failed for `reason`, into `ret`. The request's facts
// are functions of the `failure` import (rebound_policy_failure_retry_attempts(), ...;
// rebound_policy_failure_request() reads them all at once).
void exports_rebound_policy_strategy_retry_after(exports_rebound_policy_strategy_retry_reason_t *reason,
                                                 exports_rebound_policy_strategy_retry_action_t *ret) {
  uint64_t fired;
  if (rebound_policy_failure_retry_attempts() >= max_attempts) {
    ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_NO_RETRY;
  } else if (rebound_policy_failure_attempt_timeout_ms(&fired)) {
    // An attempt cut by its attempt timeout: the retry best effort makes gets twice as long
    // (the request's deadline still ends it).
    rebound_policy_types_request_t request;
    rebound_policy_failure_request(&request);
    rebound_policy_host_best_effort(&request, reason, ret);
    if (ret->tag == REBOUND_POLICY_TYPES_RETRY_ACTION_RETRY) {
      ret->val.retry.attempt_timeout_ms.is_some = true;
      ret->val.retry.attempt_timeout_ms.val = 2 * fired;
    }
  } else {
    ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
  }
  exports_rebound_policy_strategy_retry_reason_free(reason);
}
