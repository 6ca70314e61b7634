package webhooks

import (
	"mailroom/internal/ids"
)

// claimToken names one claim: the node's id, a dot, a random part. The
// prefix lets ReleaseClaims find a dead node's leases.
func claimToken(node string) string {
	if node == "" {
		return ids.Secret(10)
	}
	return node + "." + ids.Secret(10)
}
