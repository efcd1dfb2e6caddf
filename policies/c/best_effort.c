// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy asks the host's own
// best-effort decision for every failure. The C twin of policies/best-effort (Rust).
#include "retry_policy.h"

bool exports_rebound_policy_strategy_configure(retry_policy_list_tuple2_string_string_t *params,
                                               retry_policy_string_t *err) {
  (void)err;
  retry_policy_list_tuple2_string_string_free(params);
  return true;
}

void exports_rebound_policy_strategy_retry_after(exports_rebound_policy_strategy_request_t *request,
                                                 exports_rebound_policy_strategy_retry_reason_t *reason,
                                                 exports_rebound_policy_strategy_retry_action_t *ret) {
  rebound_policy_host_best_effort(request, reason, ret);
  exports_rebound_policy_strategy_retry_reason_free(reason);
}
