// A starting point for a Rebound policy in Go: copy this file to a new name, change
// RetryAfter, and build it with ./scripts/build-guests.sh (see docs/policy-go.md). The
// packages wit_component/rebound_policy_* are generated from wit/policy.wit by wit-bindgen.
//
// This template caps retries at the parameter `max_attempts` (default 3), gives an attempt cut
// by its attempt timeout twice as long the next time, and otherwise answers the host's best
// effort, which already refuses unsafe retries of non-idempotent requests.
package export_rebound_policy_strategy

import (
	"strconv"

	"wit_component/rebound_policy_failure"
	"wit_component/rebound_policy_host"
	"wit_component/rebound_policy_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

var maxAttempts uint32 = 3

// Configure is called once per instance with the policy's `params` from the host
// configuration; an Err refuses them (the host then refuses to load the policy).
func Configure(params []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	for _, param := range params {
		if param.F0 != "max_attempts" {
			continue
		}
		n, err := strconv.ParseUint(param.F1, 10, 32)
		if err != nil {
			return witTypes.Err[witTypes.Unit]("max_attempts: expected a whole number, got \"" + param.F1 + "\"")
		}
		maxAttempts = uint32(n)
	}
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

// RetryAfter decides for the failed request, which failed for reason. The request's facts are
// functions of rebound_policy_failure (RetryAttempts(), Idempotent(), ...; Request() reads them
// all at once).
func RetryAfter(reason rebound_policy_types.RetryReason) rebound_policy_types.RetryAction {
	if rebound_policy_failure.RetryAttempts() >= maxAttempts {
		return rebound_policy_types.MakeRetryActionNoRetry()
	}
	// An attempt cut by its attempt timeout: the retry best effort makes gets twice as long (the
	// request's deadline still ends it).
	if fired := rebound_policy_failure.AttemptTimeoutMs(); fired.IsSome() {
		answer := rebound_policy_host.BestEffort(rebound_policy_failure.Request(), reason)
		if answer.Tag() == rebound_policy_types.RetryAction_Retry {
			retry := answer.Retry()
			retry.AttemptTimeoutMs = witTypes.Some(2 * fired.Some())
			return rebound_policy_types.MakeRetryActionRetry(retry)
		}
		return answer
	}
	return rebound_policy_types.MakeRetryActionBestEffort()
}
