// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
// `best-effort` action for every failure, and the host's own best effort decides. The C twin of
// policies/best-effort (Rust).
#include "retry_policy.h"

bool exports_rebound_policy_strategy_configure(retry_policy_list_tuple2_string_string_t *params,
                                               retry_policy_string_t *err) {
  (void)err;
  retry_policy_list_tuple2_string_string_free(params);
  return true;
}

void exports_rebound_policy_strategy_retry_after(exports_rebound_policy_strategy_retry_reason_t *reason,
                                                 exports_rebound_policy_strategy_retry_action_t *ret) {
  ret->tag = REBOUND_POLICY_TYPES_RETRY_ACTION_BEST_EFFORT;
  exports_rebound_policy_strategy_retry_reason_free(reason);
}
