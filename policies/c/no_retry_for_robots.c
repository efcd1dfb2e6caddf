// RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
// key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
// effort. The C twin of policies/no-retry-for-robots (Rust).
#include <stdlib.h>
#include <string.h>

#include "retry_policy.h"

static retry_policy_string_t robot_key;

bool exports_rebound_policy_strategy_configure(retry_policy_list_tuple2_string_string_t *params,
                                               retry_policy_string_t *err) {
  (void)err;
  retry_policy_string_dup(&robot_key, "isRobotRequest");
  for (size_t i = 0; i < params->len; i++) {
    retry_policy_string_t *name = &params->ptr[i].f0, *value = &params->ptr[i].f1;
    if (name->len == 3 && memcmp(name->ptr, "key", 3) == 0) {
      retry_policy_string_free(&robot_key);
      retry_policy_string_dup_n(&robot_key, (const char *)value->ptr, value->len);
    }
  }
  retry_policy_list_tuple2_string_string_free(params);
  return true;
}

void exports_rebound_policy_strategy_retry_after(exports_rebound_policy_strategy_retry_reason_t *reason,
                                                 exports_rebound_policy_strategy_retry_action_t *ret) {
  retry_policy_string_t value;
  if (rebound_policy_failure_client_context(&robot_key, &value)) {
    retry_policy_string_free(&value);
    ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_NO_RETRY;
  } else {
    ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
  }
  exports_rebound_policy_strategy_retry_reason_free(reason);
}
