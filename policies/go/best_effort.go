// Best effort (RFC 0049 "Best Effort"), delegated to the host: the policy answers the
// `best-effort` action for every failure, and the host's own best effort decides. The Go twin of
// policies/best-effort (Rust).
package export_rebound_policy_strategy

import (
	"wit_component/rebound_policy_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

func Configure(params []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func RetryAfter(reason rebound_policy_types.RetryReason) rebound_policy_types.RetryAction {
	return rebound_policy_types.MakeRetryActionBestEffort()
}
