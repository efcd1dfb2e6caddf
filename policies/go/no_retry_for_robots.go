// RFC 0049 "Accessible Context in the RetryStrategy": a request whose client context holds the
// key `isRobotRequest` (or the parameter `key`) is never retried; others get the host's best
// effort. The Go twin of policies/no-retry-for-robots (Rust).
package export_rebound_policy_strategy

import (
	"wit_component/rebound_policy_failure"
	"wit_component/rebound_policy_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

var robotKey = "isRobotRequest"

func Configure(params []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	for _, param := range params {
		if param.F0 == "key" {
			// The bindings lend the string; keep a copy.
			robotKey = string([]byte(param.F1))
		}
	}
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func RetryAfter(reason rebound_policy_types.RetryReason) rebound_policy_types.RetryAction {
	if rebound_policy_failure.ClientContext(robotKey).IsSome() {
		return rebound_policy_types.MakeRetryActionNoRetry()
	}
	return rebound_policy_types.MakeRetryActionBestEffort()
}
